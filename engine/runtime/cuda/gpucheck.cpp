// dpstudio-gpucheck: the measuring half of scripts/gpu-check.sh. Each subcommand prints rows of the check's
// one table on stdout, one per line, tab-separated: CHECK, MEASURED, THRESHOLD, PASS|FAIL|SKIPPED|INFO; the
// CHECK starts with its section's number (the table is sorted by it); human notes go to stderr. Exit status:
// 0 when every row passed, was skipped or is reported (INFO), 1 when a row failed, 2 for bad arguments.
//
//   1 kernels                    each kernel and GEMM against the CPU backend, fp32 and bf16
//   2 reference --project P --dtype D [--microbatches N]
//                                the project's whole model, sequentially, on the GPU against the CPU backend:
//                                loss and gradient errors with the worker's CUDA thresholds
//   2 correctness --label L --measured M.json --dtype fp32|bf16 [--comm C] [--section N]
//                                a pipelined run's correctness check (against the sequential run on its GPU);
//                                the row goes in section N (default 2; 6 for the tiny transformers)
//   3 gemm [--hidden H --tokens T --ffn F] [--device PRESET]
//                                TFLOP/s of one layer's six GEMMs at those shapes against the device preset's
//                                peak (resources/presets/devices/): bf16 must reach the preset's efficiency
//   4 overlap [--hidden H --tokens T --ffn F --layers L --dtype D]
//                                one stage's F, its B, and both overlapped on the two lanes: the slot's time
//                                against F + B (device time, CUDA events)
//   5 compare --label L --project P --first M1.json --costs C.json --measured M2.json
//                                the first run's makespan against the project's (device preset) prediction,
//                                the second run's against the prediction calibrated on the first; the
//                                overlapped slots of the run against F + B as the calibration fits them
//   6 a2a --label L --log RUN.log
//                                the run report's "a2a hidden" lines (`dpstudio run` of an MoE with expert
//                                parallelism: per rank, the share of the expert all-to-all the other half of an
//                                overlapped F&B slot hid, beside the prediction's), reported; "not reported"
//                                when the report has none
//   make-project --out P --kind K --ranks R --microbatches M [--layers N --hidden H --ffn F --seq S
//                --microbatch-size B --dtype D --device PRESET]
//                                writes a project for the runs (the cluster of the device preset)
//   device-preset [--device PRESET]
//                                prints the device preset id --device auto stands for (for `dpstudio init`)
// correctness and compare also take --error TEXT: the run did not happen; print FAIL rows saying why. Every
// measuring subcommand takes --skip REASON: print its rows as SKIPPED with the reason (the dry run). --device
// auto (the default) picks the preset from the first GPU's name (presetForGpu below), h200 without a GPU.
#include "base/errors.h"
#include "base/fileio.h"
#include "base/hostinfo.h"
#include "cudabackend.h"
#include "gpuinfo.h"
#include "machine/costsource.h"
#include "project/presets.h"
#include "project/project.h"
#include "runtime/correctness.h"
#include "runtime/cpubackend.h"
#include "runtime/stagemath.h"
#include "sim/calibrate.h"
#include "trace/measured.h"

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace dps;
using namespace dps::runtime;

namespace {

// ------------------------------------------------------------------ rows and arguments

int g_failed = 0;

void row(const std::string& check, const std::string& measured, const std::string& threshold, bool pass)
{
    std::cout << check << '\t' << measured << '\t' << threshold << '\t' << (pass ? "PASS" : "FAIL") << '\n';
    g_failed += pass ? 0 : 1;
}

void skippedRow(const std::string& check, const std::string& threshold, const std::string& reason)
{
    std::cout << check << '\t' << reason << '\t' << threshold << "\tSKIPPED\n";
}

void reportedRow(const std::string& check, const std::string& measured)
{
    std::cout << check << '\t' << measured << "\treported\tINFO\n";
}

/// The prediction of a run of `variant` (empty: the active one) on the cuda backend, as dpstudio run's report
/// makes it for the project's devices (machine/costsource.h). Throws FormatError when it has no figures.
Prediction predictCudaRun(const Project& project, const std::string& variant)
{
    Prediction p = machine::predictWith(machine::CostSource::projectRun("cuda"), project, variant, false);
    if (!p.valid())
        throw FormatError("variant '" + p.variantName + "': " + p.error);
    return p;
}

/// Why the GPU rows cannot run: --skip's reason, else "no GPU" when none is visible; "" to run them.
std::string skipReason(const std::string& requested)
{
    std::string why = requested;
    if (why.empty() && listGpus(&why).empty())
        why = why.empty() ? "no GPU" : why;
    return why;
}

std::string number(const char* format, double value)
{
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// --name value pairs after the subcommand.
class Args {
public:
    Args(int argc, char** argv)
    {
        for (int i = 2; i < argc; ++i) {
            const std::string key = argv[i];
            if (key.rfind("--", 0) != 0 || i + 1 >= argc)
                throw UsageError("expected --name value, got '" + key + "'");
            m_values[key.substr(2)] = argv[++i];
        }
    }
    std::string get(const std::string& name, const std::string& fallback = "") const
    {
        const auto it = m_values.find(name);
        return it == m_values.end() ? fallback : it->second;
    }
    std::string required(const std::string& name) const
    {
        const std::string value = get(name);
        if (value.empty())
            throw UsageError("--" + name + " is required");
        return value;
    }
    int integer(const std::string& name, int fallback) const
    {
        const std::string value = get(name);
        if (value.empty())
            return fallback;
        try {
            return std::stoi(value);
        } catch (const std::exception&) {
            throw UsageError("--" + name + ": expected an integer, got '" + value + "'");
        }
    }
    bool has(const std::string& name) const { return m_values.count(name) > 0; }

private:
    std::map<std::string, std::string> m_values;
};

// ------------------------------------------------------------------ kernels against the CPU backend

std::vector<float> randomFloats(std::size_t n, unsigned seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(rng);
    return v;
}

/// The same inputs on the GPU and the CPU; runs an op on both and compares outputs.
class KernelBench {
public:
    explicit KernelBench(bool bf16)
        : m_gpu(CudaBackendOptions { 0, bf16 })
        , m_bf16(bf16)
    {
    }

    /// Tensors of `rows × cols` random values, uploaded to both backends.
    int input(std::size_t rows, std::size_t cols, unsigned seed)
    {
        const auto values = randomFloats(rows * cols, seed);
        m_gpuTensors.emplace_back(m_gpu, rows, cols, MemoryCategory::Workspace);
        m_cpuTensors.emplace_back(m_cpu, rows, cols, MemoryCategory::Workspace);
        m_gpu.uploadFloats(0, m_gpuTensors.back().data(), values.data(), values.size());
        m_cpu.uploadFloats(0, m_cpuTensors.back().data(), values.data(), values.size());
        return static_cast<int>(m_gpuTensors.size() - 1);
    }

    /// Runs `op` on both backends (it gets the backend and the tensors' data by index) and compares tensor
    /// `output`.
    double compare(int output, const std::function<void(Backend&, const std::function<void*(int)>&)>& op)
    {
        op(m_gpu, [&](int i) { return m_gpuTensors[static_cast<std::size_t>(i)].data(); });
        op(m_cpu, [&](int i) { return m_cpuTensors[static_cast<std::size_t>(i)].data(); });
        return relativeError(download(m_gpu, m_gpuTensors, output), download(m_cpu, m_cpuTensors, output));
    }

    Backend& gpu() { return m_gpu; }
    Backend& cpu() { return m_cpu; }
    void* gpuData(int i) { return m_gpuTensors[static_cast<std::size_t>(i)].data(); }
    void* cpuData(int i) { return m_cpuTensors[static_cast<std::size_t>(i)].data(); }
    std::size_t elements(int i) const { return m_gpuTensors[static_cast<std::size_t>(i)].elements(); }
    bool bf16() const { return m_bf16; }

private:
    static std::vector<float> download(Backend& b, std::vector<Tensor>& tensors, int i)
    {
        const Tensor& t = tensors[static_cast<std::size_t>(i)];
        std::vector<float> out(t.elements());
        b.synchronize();
        b.downloadFloats(0, out.data(), t.data(), out.size());
        return out;
    }

    CudaBackend m_gpu;
    CpuBackend m_cpu { 1 };
    bool m_bf16;
    std::vector<Tensor> m_gpuTensors;
    std::vector<Tensor> m_cpuTensors;
};

struct KernelRow {
    std::string name;
    std::function<double(KernelBench&)> measure;
};

std::vector<KernelRow> kernelRows()
{
    constexpr int m = 256;
    constexpr int n = 320;
    constexpr int k = 384;
    auto gemm = [](Transpose ta, Transpose tb) {
        return [=](KernelBench& b) {
            const int a = b.input(ta == Transpose::Yes ? k : m, ta == Transpose::Yes ? m : k, 1);
            const int w = b.input(tb == Transpose::Yes ? n : k, tb == Transpose::Yes ? k : n, 2);
            const int c = b.input(m, n, 3);
            return b.compare(c, [&](Backend& be, const auto& data) {
                be.gemm(0, ta, tb, m, n, k, 1.0f, data(a), data(w), 0.0f, data(c));
            });
        };
    };
    return {
        { "GEMM NN (X W)", gemm(Transpose::No, Transpose::No) },
        { "GEMM NT (dY W^T)", gemm(Transpose::No, Transpose::Yes) },
        { "GEMM TN (dY^T X)", gemm(Transpose::Yes, Transpose::No) },
        { "GELU forward",
            [](KernelBench& b) {
                const int x = b.input(4096, 33, 4);
                const int y = b.input(4096, 33, 5);
                return b.compare(y, [&](Backend& be, const auto& d) { be.geluForward(0, d(x), d(y), b.elements(x)); });
            } },
        { "GELU backward",
            [](KernelBench& b) {
                const int x = b.input(4096, 33, 6);
                const int g = b.input(4096, 33, 7);
                return b.compare(
                    g, [&](Backend& be, const auto& d) { be.geluBackward(0, d(x), d(g), d(g), b.elements(x)); });
            } },
        { "MSE gradient",
            [](KernelBench& b) {
                const int y = b.input(4096, 17, 8);
                const int t = b.input(4096, 17, 9);
                const int g = b.input(4096, 17, 10);
                double loss = 0.0;
                return b.compare(
                    g, [&](Backend& be, const auto& d) { be.mseLoss(0, d(y), d(t), b.elements(y), d(g), &loss); });
            } },
        { "MSE loss",
            [](KernelBench& b) {
                const int y = b.input(4096, 17, 11);
                const int t = b.input(4096, 17, 12);
                const int g = b.input(4096, 17, 13);
                double lossGpu = 0.0;
                double lossCpu = 0.0;
                b.gpu().mseLoss(0, b.gpuData(y), b.gpuData(t), b.elements(y), b.gpuData(g), &lossGpu);
                b.cpu().mseLoss(0, b.cpuData(y), b.cpuData(t), b.elements(y), b.cpuData(g), &lossCpu);
                b.gpu().synchronize();
                return std::abs(lossGpu - lossCpu) / lossCpu;
            } },
        { "accumulate (y += a x)",
            [](KernelBench& b) {
                const int x = b.input(5000, 3, 14);
                const int y = b.input(5000, 3, 15);
                return b.compare(y, [&](Backend& be, const auto& d) { be.axpy(0, b.elements(x), 0.5f, d(x), d(y)); });
            } },
        { "conversion round trip",
            [](KernelBench& b) {
                const int x = b.input(1000, 7, 16);
                return b.compare(x, [](Backend&, const auto&) {});
            } },
    };
}

int runKernels(const Args& args)
{
    for (const bool bf16 : { false, true }) {
        const std::string dtype = bf16 ? "bf16" : "fp32";
        const double tolerance = bf16 ? 1e-2 : 1e-5;
        const std::string threshold = "rel. error <= " + number("%.0e", tolerance);
        const std::string why = skipReason(args.get("skip"));
        std::unique_ptr<KernelBench> bench;
        for (const KernelRow& r : kernelRows()) {
            const std::string check = "1 kernel " + r.name + " " + dtype;
            if (!why.empty()) {
                skippedRow(check, threshold, why);
                continue;
            }
            bench = std::make_unique<KernelBench>(bf16); // fresh tensors per row
            const double error = r.measure(*bench);
            row(check, number("%.2e", error), threshold, error <= tolerance);
        }
    }
    return 0;
}

// ------------------------------------------------------------------ the device preset

/// The device preset of a GPU by its name ("NVIDIA H200" → h200); "" when no preset matches. The names are
/// those nvidia-smi and cudaGetDeviceProperties give (H100 PCIe has lower clocks than the SXM preset: close
/// enough for the check, and said in its row).
std::string presetForGpu(const std::string& name)
{
    const std::pair<const char*, const char*> table[] = {
        { "H200", "h200" },
        { "H100", "h100-sxm" },
        { "H800", "h800" },
        { "B200", "b200" },
        { "A100", "a100-80g" },
        { "MI300X", "mi300x" },
    };
    for (const auto& [needle, preset] : table)
        if (name.find(needle) != std::string::npos)
            return preset;
    return "";
}

/// --device: a preset id, or auto (the first GPU's preset, else h200 with a note on stderr).
std::string devicePresetId(const Args& args)
{
    const std::string requested = args.get("device", "auto");
    if (requested != "auto")
        return requested;
    const auto gpus = listGpus();
    const std::string found = gpus.empty() ? std::string() : presetForGpu(gpus.front().name);
    if (found.empty())
        std::cerr << "gpucheck: no device preset for "
                  << (gpus.empty() ? std::string("this machine (no GPU)") : gpus.front().name) << ": using h200\n";
    return found.empty() ? "h200" : found;
}

// ------------------------------------------------------------------ the model against the CPU reference

/// The project's model as one stage (the same arithmetic as any partition: stages run one after another).
ModelSpec wholeModel(const Project& p)
{
    ModelSpec spec;
    spec.hidden = p.model.hidden;
    spec.ffn = p.model.ffn;
    spec.tokens = p.model.microbatchSize * p.model.seqLen;
    spec.partition = { p.model.layers };
    spec.seed = p.seed;
    return spec;
}

int runModelReference(const Args& args)
{
    const bool bf16 = args.get("dtype", "fp32") == "bf16";
    const std::string dtype = bf16 ? "bf16" : "fp32";
    const Thresholds limits = thresholdsFor("cuda", bf16 ? DType::BF16 : DType::FP32);
    const std::string check = "2 model on the GPU vs the CPU reference, " + dtype;
    const std::string threshold = "loss <= " + number("%.0e", limits.loss) + ", grad <= " + number("%.0e", limits.grad);
    const std::string why = skipReason(args.get("skip"));
    if (!why.empty()) {
        skippedRow(check, threshold, why);
        return 0;
    }
    const ModelSpec spec = wholeModel(loadProject(args.required("project")));
    std::vector<int> microbatches(static_cast<std::size_t>(args.integer("microbatches", 4)));
    for (std::size_t m = 0; m < microbatches.size(); ++m)
        microbatches[m] = static_cast<int>(m);
    CudaBackend gpu(CudaBackendOptions { 0, bf16 });
    CpuBackend cpu(std::max(1, cpuCoreCount()));
    const Reference onGpu = runReference(gpu, spec, microbatches);
    const Reference onCpu = runReference(cpu, spec, microbatches);
    double lossError = 0.0;
    for (const auto& [m, loss] : onCpu.losses)
        lossError = std::max(lossError, dps::runtime::relativeError(onGpu.losses.at(m), loss));
    double gradError = 0.0;
    for (int l = 0; l < spec.totalLayers(); ++l)
        for (const Matrix which : { Matrix::W1, Matrix::W2 })
            gradError = std::max(gradError,
                gradientMetric(onGpu.stages[0]->gradient(gpu, l, which), onCpu.stages[0]->gradient(cpu, l, which)));
    row(check,
        "loss " + number("%.1e", lossError) + ", grad " + number("%.1e", gradError) + " ("
            + std::to_string(spec.totalLayers()) + " layers, " + std::to_string(microbatches.size()) + " microbatches)",
        threshold, lossError <= limits.loss && gradError <= limits.grad);
    return 0;
}

// ------------------------------------------------------------------ GEMM throughput against the preset's peak

/// Seconds per call of `body`, from CUDA events (the action clock), after `warmup` untimed calls.
double timeGemms(CudaBackend& gpu, const std::function<void()>& body, int warmup, int repeats)
{
    for (int i = 0; i < warmup; ++i)
        body();
    gpu.synchronize();
    gpu.stepStarted();
    gpu.actionStarted("gemm");
    for (int i = 0; i < repeats; ++i)
        body();
    gpu.actionFinished();
    gpu.synchronize();
    const auto us = gpu.lastActionDeviceUs();
    return us ? *us * 1e-6 / repeats : 0.0;
}

/// TFLOP/s of the six GEMMs of one layer's F, I and W (T tokens, hidden h, ffn f), as StageMath issues them.
double layerGemmTflops(bool bf16, int tokens, int hidden, int ffn)
{
    CudaBackend gpu(CudaBackendOptions { 0, bf16 });
    auto t = [&](int rows, int cols) {
        return Tensor(gpu, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols), MemoryCategory::Workspace);
    };
    Tensor x = t(tokens, hidden), w1 = t(ffn, hidden), h = t(tokens, ffn), w2 = t(hidden, ffn), y = t(tokens, hidden);
    Tensor dw1 = t(ffn, hidden), dw2 = t(hidden, ffn);
    for (Tensor* tensor : { &x, &w1, &h, &w2, &y, &dw1, &dw2 })
        gpu.setZero(0, tensor->data(), tensor->bytes());
    const auto N = Transpose::No;
    const auto T = Transpose::Yes;
    const double seconds = timeGemms(
        gpu,
        [&] {
            gpu.gemm(0, N, T, tokens, ffn, hidden, 1.0f, x.data(), w1.data(), 0.0f, h.data()); // F: H = X·W1ᵀ
            gpu.gemm(0, N, T, tokens, hidden, ffn, 1.0f, h.data(), w2.data(), 0.0f, y.data()); // F: Y = A·W2ᵀ
            gpu.gemm(0, N, N, tokens, ffn, hidden, 1.0f, y.data(), w2.data(), 0.0f, h.data()); // I: dA = dY·W2
            gpu.gemm(0, N, N, tokens, hidden, ffn, 1.0f, h.data(), w1.data(), 0.0f, x.data()); // I: dX = dH·W1
            gpu.gemm(0, T, N, hidden, ffn, tokens, 1.0f, y.data(), h.data(), 1.0f, dw2.data()); // W: dW2 += dYᵀ·A
            gpu.gemm(0, T, N, ffn, hidden, tokens, 1.0f, h.data(), x.data(), 1.0f, dw1.data()); // W: dW1 += dHᵀ·X
        },
        2, 5);
    const double flops = 6.0 * 2.0 * tokens * static_cast<double>(hidden) * ffn;
    return seconds > 0 ? flops / seconds * 1e-12 : 0.0;
}

int runGemm(const Args& args)
{
    const int hidden = args.integer("hidden", 2048);
    const int tokens = args.integer("tokens", 2048);
    const int ffn = args.integer("ffn", 4 * hidden);
    const std::string preset = devicePresetId(args);
    const ClusterDesc device = devicePreset(preset);
    const double peak = device.deviceFlops * 1e-12;
    const std::string shapes
        = "h=" + std::to_string(hidden) + " T=" + std::to_string(tokens) + " f=" + std::to_string(ffn);
    const std::string why = skipReason(args.get("skip"));
    for (const bool bf16 : { true, false }) {
        const std::string check
            = std::string("3 GEMM TFLOP/s, a layer's six at ") + shapes + ", " + (bf16 ? "bf16" : "fp32 (TF32 off)");
        // The preset's peak is the dense BF16 tensor-core figure: bf16 must reach the efficiency the
        // prediction assumes; fp32 without TF32 runs on the CUDA cores and is reported against the same peak.
        const std::string threshold = bf16 ? ">= " + number("%.0f", 100 * device.efficiency) + "% of the " + preset
                + " peak " + number("%.1f", peak) + " (its efficiency)"
                                           : "reported";
        if (!why.empty()) {
            skippedRow(check, threshold, why);
            continue;
        }
        const double tflops = layerGemmTflops(bf16, tokens, hidden, ffn);
        const std::string measured = number("%.1f", tflops) + " TFLOP/s = " + number("%.1f%%", 100 * tflops / peak)
            + " of " + number("%.1f", peak);
        if (bf16)
            row(check, measured, threshold, tflops >= device.efficiency * peak);
        else
            reportedRow(check, measured + " (the " + preset + " peak is dense BF16)");
    }
    return 0;
}

// ------------------------------------------------------------------ F&B overlap

/// Median of a few values.
double middle(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

int runOverlap(const Args& args)
{
    const int hidden = args.integer("hidden", 2048);
    const int tokens = args.integer("tokens", 2048);
    const int ffn = args.integer("ffn", 4 * hidden);
    const int layers = args.integer("layers", 4);
    const bool bf16 = args.get("dtype", "bf16") == "bf16";
    const std::string check = "4 overlapped F&B slot vs F + B, a stage of " + std::to_string(layers)
        + " layers h=" + std::to_string(hidden) + " T=" + std::to_string(tokens) + ", " + (bf16 ? "bf16" : "fp32");
    const std::string why = skipReason(args.get("skip"));
    if (!why.empty()) {
        skippedRow(check, "reported", why);
        return 0;
    }
    CudaBackend gpu(CudaBackendOptions { 0, bf16 });
    ModelSpec spec;
    spec.hidden = hidden;
    spec.ffn = ffn;
    spec.tokens = tokens;
    spec.partition = { layers, layers };
    spec.seed = 1;
    const StageParams params(gpu, spec, 1); // a middle stage: it sends its input gradient back
    const StageMath math(gpu, spec);
    const std::vector<float> input = microbatchInput(spec, 0);
    auto tensor = [&] {
        Tensor x(
            gpu, static_cast<std::size_t>(tokens), static_cast<std::size_t>(hidden), MemoryCategory::Communication);
        gpu.uploadFloats(0, x.data(), input.data(), x.elements());
        return x;
    };
    auto timed = [&](const std::function<void()>& body) {
        gpu.actionStarted("timed");
        body();
        gpu.actionFinished();
        gpu.synchronize();
        return gpu.lastActionDeviceUs().value_or(0.0);
    };
    std::vector<double> forward, backward, overlapped;
    gpu.stepStarted();
    for (int repeat = 0; repeat < 6; ++repeat) {
        SavedActivations a, b, c;
        double loss = 0.0;
        // Inputs and output gradients are uploaded before the timed regions: only the stage's work is timed.
        Tensor inputs[3] = { tensor(), tensor(), tensor() };
        Tensor gradients[3] = { tensor(), tensor(), tensor() };
        gpu.synchronize();
        const double f = timed([&] { math.forward(0, params, std::move(inputs[0]), a, false, nullptr, &loss); });
        math.forward(0, params, std::move(inputs[2]), c, false, nullptr, &loss);
        const double bw = timed([&] { math.backward(0, params, a, std::move(gradients[0]), true); });
        const double fb = timed([&] {
            gpu.runConcurrently(
                [&](Lane lane) { math.forward(lane, params, std::move(inputs[1]), b, false, nullptr, &loss); },
                [&](Lane lane) { math.backward(lane, params, c, std::move(gradients[2]), true); });
        });
        math.backward(0, params, b, std::move(gradients[1]), true);
        gpu.synchronize();
        if (repeat == 0)
            continue; // warm-up: first cuBLAS calls, the allocator's first blocks
        forward.push_back(f);
        backward.push_back(bw);
        overlapped.push_back(fb);
    }
    const double f = middle(forward);
    const double b = middle(backward);
    const double fb = middle(overlapped);
    const double ratio = f + b > 0 ? fb / (f + b) : 0.0;
    reportedRow(check,
        "F " + number("%.3f", f / 1000) + " ms + B " + number("%.3f", b / 1000) + " ms; F&B "
            + number("%.3f", fb / 1000) + " ms = " + number("%.2f", ratio) + " x (F + B), gain "
            + number("%+.1f%%", 100 * (1 - ratio)));
    return 0;
}

// ------------------------------------------------------------------ runs: correctness, predicted makespan

int runCorrectness(const Args& args)
{
    const std::string label = args.get("section", "2") + " " + args.required("label");
    const bool bf16 = args.get("dtype", "fp32") == "bf16";
    const Thresholds limits = thresholdsFor("cuda", bf16 ? DType::BF16 : DType::FP32);
    const std::string threshold = "loss <= " + number("%.0e", limits.loss) + ", grad <= " + number("%.0e", limits.grad);
    if (args.has("skip")) {
        skippedRow(label, threshold, args.get("skip"));
        return 0;
    }
    if (args.has("error")) {
        row(label, args.get("error"), threshold, false);
        return 0;
    }
    const MeasuredTrace trace = loadMeasured(args.required("measured"));
    const auto& c = trace.correctness;
    const std::string expectedComm = args.get("comm");
    const bool sameComm = expectedComm.empty() || expectedComm == trace.comm;
    const bool pass = c.passed && trace.backend == "cuda" && sameComm && c.maxLossError <= limits.loss
        && c.maxGradError <= limits.grad;
    row(label,
        "loss " + number("%.1e", c.maxLossError) + ", grad " + number("%.1e", c.maxGradError) + " (" + trace.backend
            + ", " + trace.comm + ")",
        threshold, pass);
    if (!sameComm)
        std::cerr << "gpucheck: " << label << ": expected comm " << expectedComm << ", the run used " << trace.comm
                  << "\n";
    return 0;
}

/// The lines of a `dpstudio run` log that carry "a2a hidden" (the run report's per-rank share of the expert
/// all-to-all hidden under the other half of an overlapped slot, engine/launch/report.h), each from its "rank"
/// on, blanks collapsed, joined with "; "; "" when there are none.
std::string allToAllHiddenLines(std::istream& log)
{
    std::string joined;
    for (std::string line; std::getline(log, line);) {
        const std::size_t at = line.find("a2a hidden");
        if (at == std::string::npos)
            continue;
        const std::size_t rank = line.rfind("rank", at);
        std::string text;
        for (char c : line.substr(rank == std::string::npos ? 0 : rank)) {
            const bool blank = c == ' ' || c == '\t' || c == '\r';
            if (blank && (text.empty() || text.back() == ' '))
                continue;
            text += blank ? ' ' : c;
        }
        while (!text.empty() && text.back() == ' ')
            text.pop_back();
        joined += (joined.empty() ? "" : "; ") + text;
    }
    return joined;
}

int runAllToAll(const Args& args)
{
    const std::string check = "6 " + args.required("label") + ": a2a hidden (run report, per rank)";
    if (args.has("skip")) {
        skippedRow(check, "reported", args.get("skip"));
        return 0;
    }
    const std::string path = args.required("log");
    std::ifstream log(path);
    if (!log) {
        reportedRow(check, "not reported (cannot read the run's log " + path + ")");
        return 0;
    }
    const std::string lines = allToAllHiddenLines(log);
    reportedRow(check, lines.empty() ? "not reported (the run report has no \"a2a hidden\" line)" : lines);
    return 0;
}

/// "1234 us vs 1300 us (-5.1%)"; the error is (measured − predicted) / predicted.
std::string versus(double measured, double predicted, double* error)
{
    *error = predicted > 0 ? (measured - predicted) / predicted : 1.0;
    return number("%.0f", measured) + " us measured vs " + number("%.0f", predicted) + " us predicted ("
        + number("%+.1f%%", 100 * *error) + ")";
}

int runCompare(const Args& args)
{
    const std::string label = "5 " + args.required("label");
    const std::string presetCheck = label + ": makespan, device preset prediction";
    const std::string calibratedCheck = label + ": makespan, calibrated prediction (second run)";
    const std::string overlapCheck = "4 " + args.required("label") + ": overlapped slots vs F + B (calibration fit)";
    if (args.has("skip")) {
        skippedRow(presetCheck, "reported", args.get("skip"));
        skippedRow(calibratedCheck, "within 10%", args.get("skip"));
        skippedRow(overlapCheck, "reported", args.get("skip"));
        return 0;
    }
    const Project project = loadProject(args.required("project"));
    if (!args.get("first").empty()) {
        const MeasuredTrace first = loadMeasured(args.get("first"));
        const SimResult predicted = predictCudaRun(project, first.variant).sim;
        double error = 0.0;
        const std::string text = versus(first.medianMakespanUs(), predicted.makespanUs, &error);
        reportedRow(
            presetCheck, text + " [" + (project.cluster.device.empty() ? "typed" : project.cluster.device) + "]");
    }
    if (args.has("error")) {
        row(calibratedCheck, args.get("error"), "within 10%", false);
        return 0;
    }
    Project calibrated = project;
    applyCostsFile(calibrated.costs, parseCostsFile(readTextFile(args.required("costs")), args.get("costs")));
    const MeasuredTrace measured = loadMeasured(args.required("measured"));
    const SimResult predicted = predictCudaRun(calibrated, measured.variant).sim;
    double error = 0.0;
    const std::string text = versus(measured.medianMakespanUs(), predicted.makespanUs, &error);
    row(calibratedCheck, text, "within 10%", std::abs(error) <= 0.10);
    const Calibration fit = calibrate(measuredSlots(measured), measuredStageCount(measured, &project));
    reportedRow(overlapCheck,
        fit.overlapSamples > 0 ? number("%.2f", fit.costs.overlapFactor.value_or(0.0)) + " x (F + B) over "
                + std::to_string(fit.overlapSamples) + " slots"
                               : std::string("no overlapped slots measured"));
    return 0;
}

// ------------------------------------------------------------------ projects for the runs

int makeProject(const Args& args)
{
    Project p = defaultProject();
    p.name = "gpu check";
    if (args.has("device"))
        p.cluster = devicePreset(devicePresetId(args));
    p.model.layers = args.integer("layers", 8);
    p.model.hidden = args.integer("hidden", 256);
    p.model.ffn = args.integer("ffn", 4 * p.model.hidden);
    p.model.seqLen = args.integer("seq", 64);
    p.model.microbatchSize = args.integer("microbatch-size", 2);
    p.model.dtype = args.get("dtype", "fp32") == "bf16" ? DType::BF16 : DType::FP32;
    const auto kind = parseKind(args.required("kind"));
    if (!kind)
        throw UsageError("--kind: unknown schedule kind '" + args.get("kind") + "'");
    Variant v;
    v.name = "check";
    v.kind = *kind;
    v.ranks = args.integer("ranks", 2);
    v.microbatches = args.integer("microbatches", 8);
    p.variants = { v };
    p.activeVariant = v.name;
    buildSchedule(p, p.variants.front()); // refuses impossible sizes now, not in the run
    saveProject(p, args.required("out"));
    return 0;
}

int printDevicePreset(const Args& args)
{
    std::cout << devicePresetId(args) << "\n";
    return 0;
}

int usage(const std::string& message)
{
    std::cerr << "dpstudio-gpucheck: " << message << "\n"
              << "usage: dpstudio-gpucheck kernels|reference|gemm|overlap|correctness|compare|a2a|make-project|"
                 "device-preset "
                 "[--name value]... [--skip REASON]\n";
    return 2;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2)
        return usage("a subcommand is required");
    const std::string command = argv[1];
    const std::map<std::string, std::function<int(const Args&)>> commands {
        { "kernels", runKernels },
        { "reference", runModelReference },
        { "gemm", runGemm },
        { "overlap", runOverlap },
        { "correctness", runCorrectness },
        { "compare", runCompare },
        { "a2a", runAllToAll },
        { "make-project", makeProject },
        { "device-preset", printDevicePreset },
    };
    const auto it = commands.find(command);
    if (it == commands.end())
        return usage("unknown subcommand '" + command + "'");
    try {
        const int rc = it->second(Args(argc, argv));
        return rc != 0 ? rc : (g_failed > 0 ? 1 : 0);
    } catch (const UsageError& e) {
        return usage(e.what());
    } catch (const std::exception& e) {
        std::cerr << "dpstudio-gpucheck " << command << ": " << e.what() << "\n";
        return 1;
    }
}
