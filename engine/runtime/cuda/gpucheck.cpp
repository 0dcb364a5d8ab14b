// dpstudio-gpucheck: the measuring half of scripts/gpu-check.sh. Each subcommand prints rows of the check's
// table on stdout, one per line, tab-separated: CHECK, MEASURED, THRESHOLD, PASS|FAIL|SKIPPED; human notes go
// to stderr. Exit status: 0 when every row passed or was skipped, 1 when a row failed, 2 for bad arguments.
//
//   kernels                        each kernel and GEMM against the CPU backend, fp32 and bf16
//   gemm [--hidden H] [--tokens T] the model's GEMMs against a large square GEMM, TFLOP/s
//   correctness --label L --measured M.json --dtype fp32|bf16 [--comm C]
//                                  a run's correctness check with the CUDA thresholds
//   compare --label L --project P --costs C.json --measured M.json
//                                  measured makespan against the calibrated prediction; overlap vs F + B
// correctness and compare also take --error TEXT: the run did not happen; print FAIL rows saying why.
//   make-project --out P --kind K --ranks R --microbatches M [--layers N --hidden H --ffn F --seq S
//                --microbatch-size B --dtype D]
//                                  writes a project for the runs
// Every measuring subcommand takes --skip REASON: print its rows as SKIPPED with the reason (the dry run).
#include "cudabackend.h"
#include "gpuinfo.h"
#include "project/project.h"
#include "runtime/cpubackend.h"
#include "sim/calibrate.h"
#include "trace/measured.h"
#include "launch/report.h"
#include "base/errors.h"
#include "base/fileio.h"

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
        return value.empty() ? fallback : std::stoi(value);
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

/// ‖a − b‖ / ‖b‖ in double.
double relativeError(const std::vector<float>& a, const std::vector<float>& b)
{
    double diff = 0.0;
    double norm = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = static_cast<double>(a[i]) - b[i];
        diff += d * d;
        norm += static_cast<double>(b[i]) * b[i];
    }
    return norm == 0.0 ? std::sqrt(diff) : std::sqrt(diff / norm);
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
        std::string why = args.get("skip");
        if (why.empty() && listGpus(&why).empty())
            why = why.empty() ? "no GPU" : why;
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

// ------------------------------------------------------------------ GEMM throughput

/// Seconds per call of `body` on lane 0, from CUDA events, after `warmup` untimed calls.
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
    const auto span = gpu.lastActionSpan();
    return span ? (span->endUs - span->startUs) * 1e-6 / repeats : 0.0;
}

/// TFLOP/s of the six GEMMs of one layer's F, I and W (T tokens, hidden h, ffn f) and of an n×n×n GEMM.
std::pair<double, double> gemmThroughput(bool bf16, int tokens, int hidden, int ffn, int square)
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
    const int T_ = tokens;
    const double layerSeconds = timeGemms(
        gpu,
        [&] {
            gpu.gemm(0, N, T, T_, ffn, hidden, 1.0f, x.data(), w1.data(), 0.0f, h.data()); // F: H = X·W1ᵀ
            gpu.gemm(0, N, T, T_, hidden, ffn, 1.0f, h.data(), w2.data(), 0.0f, y.data()); // F: Y = A·W2ᵀ
            gpu.gemm(0, N, N, T_, ffn, hidden, 1.0f, y.data(), w2.data(), 0.0f, h.data()); // I: dA = dY·W2
            gpu.gemm(0, N, N, T_, hidden, ffn, 1.0f, h.data(), w1.data(), 0.0f, x.data()); // I: dX = dH·W1
            gpu.gemm(0, T, N, hidden, ffn, T_, 1.0f, y.data(), h.data(), 1.0f, dw2.data()); // W: dW2 += dYᵀ·A
            gpu.gemm(0, T, N, ffn, hidden, T_, 1.0f, h.data(), x.data(), 1.0f, dw1.data()); // W: dW1 += dHᵀ·X
        },
        2, 5);
    const double layerFlops = 6.0 * 2.0 * tokens * static_cast<double>(hidden) * ffn;
    Tensor a = t(square, square), b = t(square, square), c = t(square, square);
    for (Tensor* tensor : { &a, &b, &c })
        gpu.setZero(0, tensor->data(), tensor->bytes());
    const double squareSeconds = timeGemms(
        gpu, [&] { gpu.gemm(0, N, N, square, square, square, 1.0f, a.data(), b.data(), 0.0f, c.data()); }, 2, 5);
    const double squareFlops = 2.0 * std::pow(static_cast<double>(square), 3);
    return { layerFlops / layerSeconds * 1e-12, squareFlops / squareSeconds * 1e-12 };
}

int runGemm(const Args& args)
{
    const int hidden = args.integer("hidden", 4096);
    const int tokens = args.integer("tokens", 4096);
    const int square = args.integer("square", 8192);
    std::string why = args.get("skip");
    if (why.empty() && listGpus(&why).empty())
        why = why.empty() ? "no GPU" : why;
    for (const bool bf16 : { false, true }) {
        const std::string check = std::string("3 model GEMMs h=") + std::to_string(hidden) + " T="
            + std::to_string(tokens) + " vs " + std::to_string(square) + "^3, " + (bf16 ? "bf16" : "fp32 (TF32 off)");
        const std::string threshold = ">= 70% of the square GEMM";
        if (!why.empty()) {
            skippedRow(check, threshold, why);
            continue;
        }
        const auto [model, reference] = gemmThroughput(bf16, tokens, hidden, 4 * hidden, square);
        const double ratio = reference > 0 ? model / reference : 0.0;
        row(check,
            number("%.1f", model) + " vs " + number("%.1f", reference) + " TFLOP/s = " + number("%.0f%%", 100 * ratio),
            threshold, ratio >= 0.70);
    }
    return 0;
}

// ------------------------------------------------------------------ runs: correctness, calibrated prediction

int runCorrectness(const Args& args)
{
    const std::string label = "2 " + args.required("label");
    const bool bf16 = args.get("dtype", "fp32") == "bf16";
    const double lossLimit = bf16 ? 1e-2 : 1e-5;
    const double gradLimit = bf16 ? 1e-3 : 1e-8;
    const std::string threshold = "loss <= " + number("%.0e", lossLimit) + ", grad <= " + number("%.0e", gradLimit);
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
    const bool pass
        = c.passed && trace.backend == "cuda" && sameComm && c.maxLossError <= lossLimit && c.maxGradError <= gradLimit;
    row(label,
        "loss " + number("%.1e", c.maxLossError) + ", grad " + number("%.1e", c.maxGradError) + " (" + trace.backend
            + ", " + trace.comm + ")",
        threshold, pass);
    if (!sameComm)
        std::cerr << "gpucheck: " << label << ": expected comm " << expectedComm << ", the run used " << trace.comm
                  << "\n";
    return 0;
}

int runCompare(const Args& args)
{
    const std::string label = "4 " + args.required("label");
    if (args.has("skip")) {
        skippedRow(label + ": makespan vs calibrated", "within 10%", args.get("skip"));
        skippedRow(label + ": overlapped slot vs F+B", "reported", args.get("skip"));
        return 0;
    }
    if (args.has("error")) {
        row(label + ": makespan vs calibrated", args.get("error"), "within 10%", false);
        return 0;
    }
    Project project = loadProject(args.required("project"));
    const CostsFile costs = parseCostsFile(
        readTextFile(args.required("costs")),
        args.get("costs"));
    applyCostsFile(project.costs, costs);
    const MeasuredTrace measured = loadMeasured(args.required("measured"));
    const SimResult predicted
        = launch::predictRun(project, measured.variant.empty() ? project.activeVariant : measured.variant, "cuda");
    const double actual = measured.medianMakespanUs();
    const double error = predicted.makespanUs > 0 ? (actual - predicted.makespanUs) / predicted.makespanUs : 1.0;
    row(label + ": makespan vs calibrated",
        number("%.0f", actual) + " us vs " + number("%.0f", predicted.makespanUs) + " us ("
            + number("%+.1f%%", 100 * error) + ")",
        "within 10%", std::abs(error) <= 0.10);
    const Calibration fit = calibrate(measuredSlots(measured), measuredStageCount(measured, &project));
    const std::string overlap = fit.overlapSamples > 0 ? number("%.2f", fit.costs.overlapFactor.value_or(0.0))
            + " x (F + B) over " + std::to_string(fit.overlapSamples) + " slots"
                                                       : std::string("no overlapped slots measured");
    std::cout << label << ": overlapped slot vs F+B\t" << overlap << "\treported\tINFO\n";
    return 0;
}

// ------------------------------------------------------------------ projects for the runs

int makeProject(const Args& args)
{
    Project p = defaultProject();
    p.name = "gpu check";
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

int usage(const std::string& message)
{
    std::cerr << "dpstudio-gpucheck: " << message << "\n"
              << "usage: dpstudio-gpucheck kernels|gemm|correctness|compare|make-project [--name value]... "
                 "[--skip REASON]\n";
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
        { "gemm", runGemm },
        { "correctness", runCorrectness },
        { "compare", runCompare },
        { "make-project", makeProject },
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
