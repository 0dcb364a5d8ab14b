#include "cpuprofile.h"

#include "base/errors.h"
#include "base/fileio.h"
#include "base/format.h"
#include "base/hostinfo.h"
#include "project/filekind.h"
#include "project/jsonreader.h"
#include "project/transformercost.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace dps::machine {

namespace fs = std::filesystem;
using ordered = nlohmann::ordered_json;
using dps::detail::JsonReader;

namespace {

constexpr int kMaxShapeSize = 1 << 20;

std::uint64_t fnv1a(const std::string& text)
{
    std::uint64_t h = 14695981039346656037ull; // FNV-1a 64 offset basis and prime (Fowler, Noll, Vo)
    for (const unsigned char c : text) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

std::string hex16(std::uint64_t value)
{
    char buffer[17];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
    return buffer;
}

std::vector<std::string> words(const std::string& text)
{
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

std::string lower(std::string text)
{
    for (char& c : text)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

// ---------------------------------------------------------------------------------- JSON writing

ordered machineJson(const MachineKey& k)
{
    return ordered { { "key", k.id() }, { "cpu_model", k.cpuModel }, { "cores", k.cores },
        { "cpu_flags_hash", k.cpuFlagsHash }, { "blas_core", k.blasCore }, { "blas_version", k.blasVersion },
        { "blas_threads", k.blasThreads } };
}

ordered shapeJson(const ShapeMeasure& s)
{
    ordered gemms = ordered::array();
    for (const GemmMeasure& g : s.gemms)
        gemms.push_back(ordered { { "phase", g.phase }, { "trans_a", g.transA }, { "trans_b", g.transB }, { "m", g.m },
            { "n", g.n }, { "k", g.k }, { "beta", g.beta }, { "time_us", g.timeUs },
            { "flops_per_second", g.flopsPerSecond() } });
    ordered ops = ordered::array();
    for (const ElementwiseMeasure& e : s.elementwise)
        ops.push_back(ordered { { "op", e.op }, { "elements", e.elements }, { "bytes", e.bytes },
            { "time_us", e.timeUs }, { "bytes_per_second", e.bytesPerSecond() } });
    return ordered { { "tokens", s.shape.tokens }, { "hidden", s.shape.hidden }, { "ffn", s.shape.ffn },
        { "repetitions", s.repetitions }, { "gemm_flops_per_second", s.gemmFlopsPerSecond() }, { "gemms", gemms },
        { "elementwise", ops } };
}

ordered kernelJson(const KernelChoice& c)
{
    ordered measured = ordered::array();
    for (const KernelMeasure& m : c.measured)
        measured.push_back(
            ordered { { "core", m.core }, { "loaded", m.loaded }, { "flops_per_second", m.flopsPerSecond } });
    return ordered { { "openblas_own", c.openblasOwn }, { "candidates", c.candidates }, { "measured", measured },
        { "winner", c.winner }, { "chosen", c.chosen }, { "reason", c.reason } };
}

ordered p2pJson(const P2pProfile& p)
{
    ordered samples = ordered::array();
    for (const P2pSample& s : p.samples)
        samples.push_back(ordered { { "bytes", s.bytes }, { "time_us", s.timeUs } });
    return ordered { { "ranks", p.ranks }, { "mpirun_options", p.mpirunOptions }, { "samples", samples },
        { "latency_us", p.latencyUs }, { "bandwidth_bytes_per_us", p.bandwidthBytesPerUs } };
}

ordered numberList(const std::vector<double>& values)
{
    ordered list = ordered::array();
    for (const double v : values)
        list.push_back(v);
    return list;
}

ordered transformerStageJson(const TransformerStageMeasure& t)
{
    return ordered { { "model", t.key.model }, { "layers", t.key.layers }, { "tokens", t.key.tokens },
        { "ep", t.key.ep }, { "repetitions", t.repetitions }, { "forward_chunks_us", numberList(t.forwardChunksUs) },
        { "input_grad_us", t.inputGradUs }, { "weight_grad_us", t.weightGradUs },
        { "backward_chunks_us", numberList(t.backwardChunksUs) }, { "forward_us", t.forwardUs() },
        { "backward_us", t.backwardUs() } };
}

// ---------------------------------------------------------------------------------- JSON reading

bool boolean(const JsonReader& r, const char* key)
{
    const nlohmann::json& v = r.get(key);
    if (!v.is_boolean())
        r.fail(key, "must be true or false, got " + JsonReader::shown(v));
    return v.get<bool>();
}

double number(const JsonReader& r, const char* key, JsonReader::Bound bound)
{
    r.get(key); // "missing (required)"
    return *r.optionalNumber(key, bound);
}

std::vector<std::string> stringList(const JsonReader& r, const char* key)
{
    std::vector<std::string> out;
    const nlohmann::json& list = r.array(key);
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (!list[i].is_string())
            r.element(list, i, key).failHere("must be a string, got " + JsonReader::shown(list[i]));
        out.push_back(list[i].get<std::string>());
    }
    return out;
}

int shapeSize(const JsonReader& r, const char* key)
{
    const int v = r.integer(key, 1);
    if (v > kMaxShapeSize)
        r.fail(key, "must be at most " + std::to_string(kMaxShapeSize) + ", got " + std::to_string(v));
    return v;
}

MachineKey readMachine(const JsonReader& r)
{
    r.allowOnly({ "key", "cpu_model", "cores", "cpu_flags_hash", "blas_core", "blas_version", "blas_threads" });
    MachineKey k;
    k.cpuModel = r.string("cpu_model");
    k.cores = r.integer("cores", 1);
    k.cpuFlagsHash = r.string("cpu_flags_hash");
    k.blasCore = r.string("blas_core");
    k.blasVersion = r.string("blas_version");
    k.blasThreads = r.integer("blas_threads", 1);
    if (r.has("key") && r.string("key") != k.id())
        r.fail("key",
            "does not match the machine's fields (expected \"" + k.id() + "\", got \"" + r.string("key")
                + "\"): the file was edited");
    return k;
}

GemmMeasure readGemm(const JsonReader& r)
{
    r.allowOnly({ "phase", "trans_a", "trans_b", "m", "n", "k", "beta", "time_us", "flops_per_second" });
    GemmMeasure g;
    g.phase = r.string("phase");
    if (g.phase != "F" && g.phase != "I" && g.phase != "W")
        r.fail("phase", "must be \"F\", \"I\" or \"W\", got \"" + g.phase + "\"");
    g.transA = boolean(r, "trans_a");
    g.transB = boolean(r, "trans_b");
    g.m = shapeSize(r, "m");
    g.n = shapeSize(r, "n");
    g.k = shapeSize(r, "k");
    g.beta = number(r, "beta", JsonReader::kNonNegative);
    if (g.beta != 0.0 && g.beta != 1.0)
        r.fail("beta", "must be 0 or 1, got " + JsonReader::shown(r.get("beta")));
    g.timeUs = number(r, "time_us", JsonReader::kPositive);
    r.optionalNumber("flops_per_second", JsonReader::kNonNegative); // derived; checked, not kept
    return g;
}

ElementwiseMeasure readElementwise(const JsonReader& r)
{
    r.allowOnly({ "op", "elements", "bytes", "time_us", "bytes_per_second" });
    ElementwiseMeasure e;
    e.op = r.string("op");
    if (e.op != "gelu_forward" && e.op != "gelu_backward" && e.op != "mse_loss" && e.op != "grad_accumulate")
        r.fail("op", "must be gelu_forward, gelu_backward, mse_loss or grad_accumulate, got \"" + e.op + "\"");
    e.elements = r.unsignedInteger("elements");
    e.bytes = r.unsignedInteger("bytes");
    if (e.elements == 0)
        r.fail("elements", "must be a positive integer, got 0");
    e.timeUs = number(r, "time_us", JsonReader::kPositive);
    r.optionalNumber("bytes_per_second", JsonReader::kNonNegative);
    return e;
}

ShapeMeasure readShape(const JsonReader& r)
{
    r.allowOnly({ "tokens", "hidden", "ffn", "repetitions", "gemm_flops_per_second", "gemms", "elementwise" });
    ShapeMeasure s;
    s.shape = { shapeSize(r, "tokens"), shapeSize(r, "hidden"), shapeSize(r, "ffn") };
    s.repetitions = r.integer("repetitions", 1);
    r.optionalNumber("gemm_flops_per_second", JsonReader::kNonNegative);
    const nlohmann::json& gemms = r.array("gemms");
    for (std::size_t i = 0; i < gemms.size(); ++i)
        s.gemms.push_back(readGemm(r.element(gemms, i, "gemms").asObject()));
    const nlohmann::json& ops = r.array("elementwise");
    for (std::size_t i = 0; i < ops.size(); ++i)
        s.elementwise.push_back(readElementwise(r.element(ops, i, "elementwise").asObject()));
    return s;
}

KernelChoice readKernel(const JsonReader& r)
{
    r.allowOnly({ "openblas_own", "candidates", "measured", "winner", "chosen", "reason" });
    KernelChoice c;
    c.openblasOwn = r.string("openblas_own");
    c.candidates = stringList(r, "candidates");
    const nlohmann::json& measured = r.array("measured");
    for (std::size_t i = 0; i < measured.size(); ++i) {
        const JsonReader m = r.element(measured, i, "measured").asObject();
        m.allowOnly({ "core", "loaded", "flops_per_second" });
        c.measured.push_back(
            { m.string("core"), m.string("loaded"), number(m, "flops_per_second", JsonReader::kPositive) });
    }
    c.winner = r.string("winner");
    c.chosen = r.string("chosen");
    c.reason = r.string("reason");
    return c;
}

P2pProfile readP2p(const JsonReader& r)
{
    r.allowOnly({ "ranks", "mpirun_options", "samples", "latency_us", "bandwidth_bytes_per_us" });
    P2pProfile p;
    p.ranks = r.integer("ranks", 2);
    p.mpirunOptions = stringList(r, "mpirun_options");
    const nlohmann::json& samples = r.array("samples");
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const JsonReader s = r.element(samples, i, "samples").asObject();
        s.allowOnly({ "bytes", "time_us" });
        const std::uint64_t bytes = s.unsignedInteger("bytes");
        if (!p.samples.empty() && bytes <= p.samples.back().bytes)
            s.fail(
                "bytes", "must be larger than the previous sample's (" + std::to_string(p.samples.back().bytes) + ")");
        p.samples.push_back({ bytes, number(s, "time_us", JsonReader::kPositive) });
    }
    p.latencyUs = number(r, "latency_us", JsonReader::kNonNegative);
    p.bandwidthBytesPerUs = number(r, "bandwidth_bytes_per_us", JsonReader::kNonNegative);
    return p;
}

/// A non-empty list of positive µs.
std::vector<double> chunkList(const JsonReader& r, const char* key)
{
    std::vector<double> out;
    const nlohmann::json& list = r.array(key);
    if (list.empty())
        r.fail(key, "must hold at least one time (µs)");
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (!list[i].is_number() || !(list[i].get<double>() > 0.0) || !std::isfinite(list[i].get<double>()))
            r.element(list, i, key).failHere("must be a positive number of µs, got " + JsonReader::shown(list[i]));
        out.push_back(list[i].get<double>());
    }
    return out;
}

TransformerStageMeasure readTransformerStage(const JsonReader& r)
{
    r.allowOnly({ "model", "layers", "tokens", "ep", "repetitions", "forward_chunks_us", "input_grad_us",
        "weight_grad_us", "backward_chunks_us", "forward_us", "backward_us" });
    TransformerStageMeasure t;
    t.key.model = r.string("model");
    if (t.key.model.empty())
        r.fail("model", "must not be empty");
    t.key.layers = r.string("layers");
    if (t.key.layers.empty() || t.key.layers.find_first_not_of("EDMH") != std::string::npos)
        r.fail(
            "layers", "must be letters E, D, M, H (embedding, dense, MoE layer, head), got \"" + t.key.layers + "\"");
    t.key.tokens = shapeSize(r, "tokens");
    t.key.ep = r.integer("ep", 1);
    t.repetitions = r.integer("repetitions", 1);
    t.forwardChunksUs = chunkList(r, "forward_chunks_us");
    t.inputGradUs = number(r, "input_grad_us", JsonReader::kPositive);
    t.weightGradUs = number(r, "weight_grad_us", JsonReader::kPositive);
    t.backwardChunksUs = chunkList(r, "backward_chunks_us");
    r.optionalNumber("forward_us", JsonReader::kNonNegative); // derived; checked, not kept
    r.optionalNumber("backward_us", JsonReader::kNonNegative);
    return t;
}

std::string flopsText(double flopsPerSecond)
{
    return formatCount(flopsPerSecond) + "FLOP/s";
}

std::string bytesRateText(double bytesPerSecond)
{
    return formatBytes(bytesPerSecond) + "/s";
}

} // namespace

// ------------------------------------------------------------------------------------- shapes

std::string shapeText(const ProbeShape& s)
{
    return std::to_string(s.tokens) + "x" + std::to_string(s.hidden) + "x" + std::to_string(s.ffn);
}

std::vector<ProbeShape> parseShapeList(const std::string& text)
{
    std::set<ProbeShape> shapes;
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        int v[3] = {};
        char x1 = 0, x2 = 0;
        char rest = 0;
        const bool ok = std::sscanf(item.c_str(), "%d%c%d%c%d%c", &v[0], &x1, &v[1], &x2, &v[2], &rest) == 5
            && x1 == 'x' && x2 == 'x';
        if (!ok || v[0] < 1 || v[1] < 1 || v[2] < 1 || v[0] > kMaxShapeSize || v[1] > kMaxShapeSize
            || v[2] > kMaxShapeSize)
            throw FormatError("shapes: \"" + item + "\" is not TxHxF with positive sizes up to "
                + std::to_string(kMaxShapeSize) + " (e.g. 256x512x2048)");
        shapes.insert({ v[0], v[1], v[2] });
    }
    if (shapes.empty())
        throw FormatError("shapes: \"" + text + "\" names no shape (expected TxHxF[,TxHxF…])");
    return { shapes.begin(), shapes.end() };
}

std::string shapeListText(const std::vector<ProbeShape>& shapes)
{
    std::string text;
    for (const ProbeShape& s : shapes)
        text += (text.empty() ? "" : ",") + shapeText(s);
    return text;
}

std::vector<ProbeShape> projectShapes(const Project& project)
{
    std::set<ProbeShape> shapes;
    const ModelDesc& m = project.model;
    for (const Variant& v : project.variants) {
        const long long mb = v.microbatchSize > 0 ? v.microbatchSize : m.microbatchSize;
        const long long tokens = mb * m.seqLen;
        if (mb < 1 || m.seqLen < 1 || m.hidden < 1 || m.ffn < 1 || tokens > kMaxShapeSize || m.hidden > kMaxShapeSize
            || m.ffn > kMaxShapeSize)
            throw FormatError("variant \"" + v.name + "\": tokens per microbatch (" + std::to_string(tokens)
                + "), hidden and ffn must be between 1 and " + std::to_string(kMaxShapeSize));
        shapes.insert({ static_cast<int>(tokens), m.hidden, m.ffn });
    }
    return { shapes.begin(), shapes.end() };
}

// ------------------------------------------------------------------------------------- transformer stages

std::string TransformerStageKey::text() const
{
    return layers + ", T=" + std::to_string(tokens) + ", ep " + std::to_string(ep) + " of " + model;
}

double TransformerStageMeasure::forwardUs() const
{
    double sum = 0.0;
    for (const double us : forwardChunksUs)
        sum += us;
    return sum;
}

double TransformerStageMeasure::backwardUs() const
{
    double sum = 0.0;
    for (const double us : backwardChunksUs)
        sum += us;
    return sum;
}

const TransformerStageMeasure* CpuProfile::transformerStage(const TransformerStageKey& key) const
{
    for (const TransformerStageMeasure& t : transformerStages)
        if (t.key == key)
            return &t;
    return nullptr;
}

std::string transformerModelSignature(const model::Transformer& m, const std::string& gating)
{
    std::string text = std::string(model::attentionName(m.attention)) + " h" + std::to_string(m.hidden) + " heads"
        + std::to_string(m.heads) + " kv" + std::to_string(m.kvHeads) + " hd" + std::to_string(m.headDim);
    if (m.attention == model::Attention::MLA)
        text += " mla(q" + std::to_string(m.mla.qLoraRank) + " kv" + std::to_string(m.mla.kvLoraRank) + " nope"
            + std::to_string(m.mla.qkNopeHeadDim) + " rope" + std::to_string(m.mla.qkRopeHeadDim) + " v"
            + std::to_string(m.mla.vHeadDim) + ")";
    text += " ffn" + std::to_string(m.ffn) + " vocab" + std::to_string(m.vocab) + (m.tiedEmbeddings ? " tied" : "")
        + " seq" + std::to_string(m.seqLen);
    if (m.isMoe())
        text += " moe(e" + std::to_string(m.moe.experts) + " k" + std::to_string(m.moe.topK) + " f"
            + std::to_string(m.moe.expertFfn) + " shared" + std::to_string(m.moe.sharedExperts) + " dense_ffn"
            + std::to_string(m.moe.denseFfn) + " " + gating + ")";
    return text;
}

std::string transformerGatingOf(const ModelDesc& model)
{
    return model.preset.rfind("deepseek", 0) == 0 ? "deepseek-v3" : "mixtral";
}

std::vector<TransformerStageKey> transformerStageKeys(const Project& project, const Variant& variant)
{
    if (project.model.kind != ModelKind::Transformer)
        throw FormatError("model.kind: transformer stages need a transformer model");
    const model::Transformer m = transformerOf(project.model, microbatchSizeOf(project, variant));
    const std::string signature = transformerModelSignature(m, transformerGatingOf(project.model));
    const int ep = m.isMoe() ? std::max(1, m.moe.ep) : 1;
    const std::vector<int> partition = effectivePartition(project, variant);
    std::vector<TransformerStageKey> keys;
    int layer = 0;
    for (std::size_t s = 0; s < partition.size(); ++s) {
        TransformerStageKey key;
        key.model = signature;
        key.tokens = static_cast<int>(m.tokens());
        if (s == 0)
            key.layers += "E";
        bool moe = false;
        for (int k = 0; k < partition[s]; ++k, ++layer) {
            moe = moe || m.isMoeLayer(layer);
            key.layers += m.isMoeLayer(layer) ? "M" : "D";
        }
        if (s + 1 == partition.size())
            key.layers += "H";
        key.ep = moe ? ep : 1; // a stage without MoE layers exchanges nothing
        keys.push_back(std::move(key));
    }
    return keys;
}

// ------------------------------------------------------------------------------------- key

std::string MachineKey::id() const
{
    return hex16(fnv1a(cpuModel + "\n" + std::to_string(cores) + "\n" + cpuFlagsHash + "\n" + blasCore + "\n"
        + blasVersion + "\n" + std::to_string(blasThreads)));
}

std::string cpuFlagsHash(const std::string& flags)
{
    std::vector<std::string> list = words(flags);
    std::sort(list.begin(), list.end());
    std::string joined;
    for (const std::string& f : list)
        joined += (joined.empty() ? "" : " ") + f;
    return hex16(fnv1a(joined));
}

// ------------------------------------------------------------------------------------- measures

double GemmMeasure::flops() const
{
    return 2.0 * m * n * k;
}

double GemmMeasure::flopsPerSecond() const
{
    return timeUs > 0 ? flops() / (timeUs * 1e-6) : 0.0;
}

double ElementwiseMeasure::bytesPerSecond() const
{
    return timeUs > 0 ? static_cast<double>(bytes) / (timeUs * 1e-6) : 0.0;
}

double ElementwiseMeasure::nsPerElement() const
{
    return elements > 0 ? timeUs * 1e3 / static_cast<double>(elements) : 0.0;
}

double ShapeMeasure::gemmFlopsPerSecond() const
{
    double flops = 0, us = 0;
    for (const GemmMeasure& g : gemms) {
        flops += g.flops();
        us += g.timeUs;
    }
    return us > 0 ? flops / (us * 1e-6) : 0.0;
}

// ------------------------------------------------------------------------------------- file

std::string serializeCpuProfile(const CpuProfile& p)
{
    ordered j;
    // Without transformer stages the file is format 1's, which older builds read.
    j["format_version"] = p.transformerStages.empty() ? 1 : 2;
    j["kind"] = "dpstudio-cpu-profile";
    j["machine"] = machineJson(p.machine);
    j["kernel"] = p.kernel;
    j["probed_at"] = p.probedAt;
    j["probe_seconds"] = p.probeSeconds;
    j["blas_kernel"] = p.kernelChoice ? kernelJson(*p.kernelChoice) : ordered();
    j["shapes"] = ordered::array();
    for (const ShapeMeasure& s : p.shapes)
        j["shapes"].push_back(shapeJson(s));
    j["p2p"] = p.p2p ? p2pJson(*p.p2p) : ordered();
    if (!p.transformerStages.empty()) {
        j["transformer_stages"] = ordered::array();
        for (const TransformerStageMeasure& t : p.transformerStages)
            j["transformer_stages"].push_back(transformerStageJson(t));
    }
    return j.dump(2) + "\n";
}

CpuProfile parseCpuProfile(const std::string& text, const std::string& source)
{
    const nlohmann::json root = JsonReader::parse(text, source);
    refuseOtherFileKind(root, FileKind::CpuProfile, "a CPU profile", source);
    CpuProfile p;
    p.formatVersion = JsonReader::checkVersion(root, source, kCpuProfileFormatVersion);
    const JsonReader r(root, "", source);
    r.allowOnly({ "format_version", "kind", "machine", "kernel", "probed_at", "probe_seconds", "blas_kernel", "shapes",
        "p2p", "transformer_stages" });
    if (r.string("kind") != "dpstudio-cpu-profile")
        r.fail("kind", "must be \"dpstudio-cpu-profile\", got \"" + r.string("kind") + "\"");
    p.machine = readMachine(r.object("machine"));
    p.kernel = r.string("kernel");
    p.probedAt = r.string("probed_at");
    p.probeSeconds = number(r, "probe_seconds", JsonReader::kNonNegative);
    if (!r.get("blas_kernel").is_null())
        p.kernelChoice = readKernel(r.object("blas_kernel"));
    const nlohmann::json& shapes = r.array("shapes");
    for (std::size_t i = 0; i < shapes.size(); ++i)
        p.shapes.push_back(readShape(r.element(shapes, i, "shapes").asObject()));
    if (!r.get("p2p").is_null())
        p.p2p = readP2p(r.object("p2p"));
    if (r.has("transformer_stages")) {
        if (p.formatVersion < 2)
            r.fail("transformer_stages", "needs format_version 2, the file has " + std::to_string(p.formatVersion));
        const nlohmann::json& stages = r.array("transformer_stages");
        for (std::size_t i = 0; i < stages.size(); ++i)
            p.transformerStages.push_back(readTransformerStage(r.element(stages, i, "transformer_stages").asObject()));
    }
    return p;
}

CpuProfile loadCpuProfile(const fs::path& path)
{
    return parseCpuProfile(readTextFile(path), path.string());
}

// ------------------------------------------------------------------------------------- cache

fs::path cpuProfileCacheDir()
{
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && *xdg && fs::path(xdg).is_absolute())
        return fs::path(xdg) / "dpstudio";
    const char* home = std::getenv("HOME");
    if (home && *home)
        return fs::path(home) / ".cache" / "dpstudio";
    return {};
}

fs::path cpuProfileCachePath(const MachineKey& key)
{
    const fs::path dir = cpuProfileCacheDir();
    return dir.empty() ? fs::path() : dir / ("cpu-" + key.id() + ".json");
}

std::optional<CpuProfile> cachedCpuProfile(const MachineKey& key)
{
    const fs::path path = cpuProfileCachePath(key);
    std::error_code ec;
    if (path.empty() || !fs::is_regular_file(path, ec))
        return std::nullopt;
    try {
        CpuProfile p = loadCpuProfile(path);
        if (p.machine == key)
            return p;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

fs::path saveCpuProfileToCache(const CpuProfile& profile)
{
    const fs::path path = cpuProfileCachePath(profile.machine);
    if (path.empty())
        throw IoError("no cache folder: neither XDG_CACHE_HOME nor HOME is set");
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec)
        throw IoError(path.parent_path().string() + ": cannot create the cache folder: " + ec.message());
    writeFileAtomic(path, serializeCpuProfile(profile));
    return path;
}

bool profileHasShapes(const CpuProfile& profile, const std::vector<ProbeShape>& shapes)
{
    std::set<ProbeShape> have, want(shapes.begin(), shapes.end());
    for (const ShapeMeasure& s : profile.shapes)
        have.insert(s.shape);
    return have == want;
}

bool profileCoversShapes(const CpuProfile& profile, const std::vector<ProbeShape>& shapes)
{
    std::set<ProbeShape> have;
    for (const ShapeMeasure& s : profile.shapes)
        have.insert(s.shape);
    return std::all_of(shapes.begin(), shapes.end(), [&](const ProbeShape& s) { return have.count(s) > 0; });
}

void scaleComputeTimes(CpuProfile& profile, double factor)
{
    for (ShapeMeasure& s : profile.shapes) {
        for (GemmMeasure& g : s.gemms)
            g.timeUs *= factor;
        for (ElementwiseMeasure& e : s.elementwise)
            e.timeUs *= factor;
    }
    for (TransformerStageMeasure& t : profile.transformerStages) {
        for (double& chunk : t.forwardChunksUs)
            chunk *= factor;
        for (double& chunk : t.backwardChunksUs)
            chunk *= factor;
        t.inputGradUs *= factor;
        t.weightGradUs *= factor;
    }
}

// ------------------------------------------------------------------------------------- kernel rule

CpuFeatures cpuFeaturesFromFlags(const std::string& flags)
{
    CpuFeatures f;
    for (const std::string& w : words(flags)) {
        f.avx |= w == "avx";
        f.avx2 |= w == "avx2";
        f.fma |= w == "fma";
        f.avx512f |= w == "avx512f";
        f.avx512bw |= w == "avx512bw";
        f.avx512vl |= w == "avx512vl";
        f.avx512dq |= w == "avx512dq";
        f.avx512bf16 |= w == "avx512_bf16";
    }
    return f;
}

CpuFeatures hostCpuFeatures()
{
    return cpuFeaturesFromFlags(cpuInfoField("flags"));
}

IsaLevel isaLevel(const CpuFeatures& f)
{
    if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx2 && f.fma)
        return IsaLevel::Avx512;
    if (f.avx2 && f.fma)
        return IsaLevel::Avx2;
    return f.avx ? IsaLevel::Avx : IsaLevel::Sse;
}

IsaLevel blasCoreIsaLevel(const std::string& core)
{
    // OpenBLAS 0.3.x driver/others/dynamic.c: the x86-64 core types and the kernels they load.
    static const std::vector<std::pair<std::string, IsaLevel>> kCores
        = { { "skylakex", IsaLevel::Avx512 }, { "cooperlake", IsaLevel::Avx512 },
              { "sapphirerapids", IsaLevel::Avx512 }, { "haswell", IsaLevel::Avx2 }, { "zen", IsaLevel::Avx2 },
              { "sandybridge", IsaLevel::Avx }, { "bulldozer", IsaLevel::Avx }, { "piledriver", IsaLevel::Avx },
              { "steamroller", IsaLevel::Avx }, { "excavator", IsaLevel::Avx }, { "prescott", IsaLevel::Sse },
              { "core2", IsaLevel::Sse }, { "penryn", IsaLevel::Sse }, { "dunnington", IsaLevel::Sse },
              { "nehalem", IsaLevel::Sse }, { "atom", IsaLevel::Sse }, { "nano", IsaLevel::Sse },
              { "barcelona", IsaLevel::Sse }, { "bobcat", IsaLevel::Sse }, { "opteron", IsaLevel::Sse },
              { "opteron_sse3", IsaLevel::Sse }, { "athlon", IsaLevel::Sse }, { "katmai", IsaLevel::Sse },
              { "coppermine", IsaLevel::Sse }, { "northwood", IsaLevel::Sse }, { "banias", IsaLevel::Sse } };
    const std::string name = lower(core);
    for (const auto& [known, level] : kCores)
        if (name == known)
            return level;
    return IsaLevel::Unknown;
}

std::vector<std::string> blasCoreCandidates(const CpuFeatures& features)
{
    switch (isaLevel(features)) {
    case IsaLevel::Avx512:
        if (features.avx512bf16)
            return { "SkylakeX", "Cooperlake", "Haswell", "Zen" };
        return { "SkylakeX", "Haswell", "Zen" };
    case IsaLevel::Avx2:
        return { "Haswell", "Zen" };
    default:
        return {};
    }
}

BlasCoreDecision chooseBlasCore(
    const CpuFeatures& features, const std::string& openblasOwn, const std::string& measuredWinner)
{
    const std::vector<std::string> candidates = blasCoreCandidates(features);
    const auto isCandidate = [&](const std::string& core) {
        return std::any_of(
            candidates.begin(), candidates.end(), [&](const std::string& c) { return lower(c) == lower(core); });
    };
    const bool isOwn = !measuredWinner.empty() && lower(measuredWinner) == lower(openblasOwn);
    if (!measuredWinner.empty() && (isCandidate(measuredWinner) || isOwn)) {
        if (isOwn)
            return { "", "measured fastest at the model's shapes" };
        return { measuredWinner, "measured fastest at the model's shapes (OpenBLAS's own: " + openblasOwn + ")" };
    }
    const IsaLevel cpu = isaLevel(features);
    const IsaLevel own = blasCoreIsaLevel(openblasOwn);
    if (!candidates.empty() && own != IsaLevel::Unknown && own < cpu)
        return { candidates.front(),
            "OpenBLAS chose " + openblasOwn + ", whose kernels lack the "
                + (cpu == IsaLevel::Avx512 ? std::string("AVX-512") : std::string("AVX2/FMA")) + " this CPU has" };
    return { "",
        "OpenBLAS's own " + (openblasOwn.empty() ? std::string("choice") : openblasOwn)
            + (candidates.empty() ? " (no AVX2/FMA: nothing to choose from)" : " matches the CPU's features") };
}

std::string kernelWinner(const std::vector<KernelMeasure>& measured)
{
    const KernelMeasure* best = nullptr;
    for (const KernelMeasure& m : measured)
        if (!best || m.flopsPerSecond > best->flopsPerSecond)
            best = &m;
    if (!best)
        return {};
    return best->core.empty() ? best->loaded : best->core;
}

// ------------------------------------------------------------------------------------- p2p fit

void fitP2p(P2pProfile& p2p)
{
    std::set<std::uint64_t> sizes;
    for (const P2pSample& s : p2p.samples)
        sizes.insert(s.bytes);
    if (sizes.size() < 2)
        throw FormatError("p2p.samples: the fit needs at least 2 sizes, got " + std::to_string(sizes.size()));
    // Minimise Σ w (L + c·b − t)² with w = 1/t² and c = 1/bandwidth: the 2×2 normal equations.
    double sw = 0, swb = 0, swbb = 0, swt = 0, swbt = 0;
    for (const P2pSample& s : p2p.samples) {
        const double w = 1.0 / (s.timeUs * s.timeUs);
        const auto b = static_cast<double>(s.bytes);
        sw += w;
        swb += w * b;
        swbb += w * b * b;
        swt += w * s.timeUs;
        swbt += w * b * s.timeUs;
    }
    const double det = sw * swbb - swb * swb;
    double latency = (swt * swbb - swb * swbt) / det;
    double slope = (sw * swbt - swb * swt) / det;
    if (latency < 0) {
        latency = 0;
        slope = swbt / swbb;
    }
    if (slope < 0) { // no growth with size: a constant time
        slope = 0;
        latency = swt / sw;
    }
    p2p.latencyUs = latency;
    p2p.bandwidthBytesPerUs = slope > 0 ? 1.0 / slope : 0.0;
}

std::string implausibleP2p(const P2pProfile& p2p)
{
    if (p2p.latencyUs < kMaxPlausibleP2pLatencyUs)
        return {};
    return "the ping-pong took " + formatTime(p2p.latencyUs) + " a message (more than "
        + formatTime(kMaxPlausibleP2pLatencyUs)
        + " on one host: the ranks were not running while they were timed); probe again on a quieter machine";
}

// ------------------------------------------------------------------------------------- table

std::string formatCpuProfile(const CpuProfile& p)
{
    const MachineKey& k = p.machine;
    std::string text = "cpu profile: " + k.cpuModel + ", " + std::to_string(k.cores) + " cores, "
        + std::to_string(k.blasThreads) + " BLAS thread" + (k.blasThreads == 1 ? "" : "s") + ", " + k.blasVersion
        + "\n";
    text += "machine key " + k.id() + " (flags " + k.cpuFlagsHash + ", OpenBLAS own core " + k.blasCore + "), probed "
        + p.probedAt + " in " + formatNumber(p.probeSeconds, 1) + " s\n";
    if (p.kernelChoice) {
        const KernelChoice& c = *p.kernelChoice;
        std::vector<std::vector<std::string>> rows { { "BLAS kernel", "F+I+W GEMMs", "" } };
        for (const KernelMeasure& m : c.measured) {
            const std::string name = m.core.empty() ? m.loaded + " (OpenBLAS's own)" : m.core;
            const std::string shown = m.core.empty() ? m.loaded : m.core;
            rows.push_back({ name, flopsText(m.flopsPerSecond), shown == c.winner ? "fastest" : "" });
        }
        text += "\n" + formatTable(rows, 1);
        text
            += "kernel: " + (c.chosen.empty() ? "OpenBLAS's own " + c.openblasOwn : c.chosen) + " (" + c.reason + ")\n";
    }
    for (const ShapeMeasure& s : p.shapes) {
        text += "\nshape T×h×f = " + std::to_string(s.shape.tokens) + "×" + std::to_string(s.shape.hidden) + "×"
            + std::to_string(s.shape.ffn) + " (kernel " + p.kernel + ", median of " + std::to_string(s.repetitions)
            + "): GEMMs " + flopsText(s.gemmFlopsPerSecond()) + "\n";
        std::vector<std::vector<std::string>> rows { { "op", "m×n×k", "time", "rate" } };
        for (const GemmMeasure& g : s.gemms)
            rows.push_back(
                { g.phase + " gemm " + (g.transA ? "T" : "N") + (g.transB ? "T" : "N") + (g.beta != 0 ? " +=" : ""),
                    std::to_string(g.m) + "×" + std::to_string(g.n) + "×" + std::to_string(g.k), formatTime(g.timeUs),
                    flopsText(g.flopsPerSecond()) });
        for (const ElementwiseMeasure& e : s.elementwise)
            rows.push_back({ e.op, formatCount(static_cast<double>(e.elements)) + " elements", formatTime(e.timeUs),
                bytesRateText(e.bytesPerSecond()) });
        text += formatTable(rows, 2);
    }
    if (p.p2p) {
        const P2pProfile& q = *p.p2p;
        text += "\np2p, " + std::to_string(q.ranks) + " ranks on this host (ping-pong, one way):\n";
        std::vector<std::vector<std::string>> rows { { "size", "time" } };
        for (const P2pSample& s : q.samples)
            rows.push_back({ formatBytes(static_cast<double>(s.bytes)), formatTime(s.timeUs) });
        text += formatTable(rows, 0);
        text += "fit: latency " + formatTime(q.latencyUs) + ", bandwidth "
            + (q.bandwidthBytesPerUs > 0 ? bytesRateText(q.bandwidthBytesPerUs * 1e6) : std::string("unlimited"))
            + "\n";
    } else {
        text += "\np2p: not measured (mpirun could not run two ranks)\n";
    }
    if (!p.transformerStages.empty()) {
        text += "\ntransformer stages (compute per microbatch, the expert all-to-all taken out; parts: E embedding, D "
                "dense layer, M MoE layer, H head and loss):\n";
        std::vector<std::vector<std::string>> rows { { "parts", "T", "ep", "F", "I", "W", "B", "chunks F/B",
            "model" } };
        for (const TransformerStageMeasure& t : p.transformerStages)
            rows.push_back(
                { t.key.layers, std::to_string(t.key.tokens), std::to_string(t.key.ep), formatTime(t.forwardUs()),
                    formatTime(t.inputGradUs), formatTime(t.weightGradUs), formatTime(t.backwardUs()),
                    std::to_string(t.forwardChunksUs.size()) + "/" + std::to_string(t.backwardChunksUs.size()),
                    t.key.model });
        text += formatTable(rows, 3);
    }
    return text;
}

} // namespace dps::machine
