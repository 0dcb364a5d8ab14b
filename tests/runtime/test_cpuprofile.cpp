// The CPU device profile as data (engine/machine/cpuprofile.h): the file round-trips and refuses bad files
// naming the field, the machine key and the cache, the BLAS kernel rule, the p2p fit.
#include "machine/cpuprofile.h"

#include "base/errors.h"
#include "project/presets.h"
#include "support/transformers.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace {

using namespace dps;
using namespace dps::machine;
namespace fs = std::filesystem;

MachineKey sampleKey()
{
    MachineKey k;
    k.cpuModel = "Intel X";
    k.cores = 2;
    k.cpuFlagsHash = cpuFlagsHash("b a");
    k.blasCore = "SkylakeX";
    k.blasVersion = "OpenBLAS 0.3.21";
    k.blasThreads = 1;
    return k;
}

CpuProfile sampleProfile()
{
    CpuProfile p;
    p.machine = sampleKey();
    p.kernel = "SkylakeX";
    p.probedAt = "2025-01-31T12:00:00Z";
    p.probeSeconds = 9.5;
    ShapeMeasure s;
    s.shape = { 256, 512, 2048 };
    s.repetitions = 12;
    s.gemms.push_back({ "F", false, true, 256, 2048, 512, 0, 10.0 });
    s.gemms.push_back({ "W", true, false, 512, 2048, 256, 1, 30.0 });
    s.elementwise.push_back({ "gelu_forward", 524288, 4194304, 100.0 });
    s.elementwise.push_back({ "grad_accumulate", 2097152, 25165824, 2000.0 });
    p.shapes.push_back(s);
    KernelChoice c;
    c.openblasOwn = "SkylakeX";
    c.candidates = { "SkylakeX", "Haswell", "Zen" };
    c.measured = { { "SkylakeX", "SkylakeX", 9e10 }, { "Haswell", "Haswell", 6e10 } };
    c.winner = "SkylakeX";
    c.chosen = "";
    c.reason = "measured fastest";
    p.kernelChoice = c;
    P2pProfile q;
    q.mpirunOptions = { "--oversubscribe", "--mca", "btl", "self,vader" };
    q.samples = { { 8, 2.008 }, { 1000, 3.0 }, { 1000000, 1002.0 } };
    q.latencyUs = 2;
    q.bandwidthBytesPerUs = 1000;
    p.p2p = q;
    return p;
}

/// The sample profile's JSON with `from` replaced by `to` (which must occur once).
std::string edited(const std::string& from, const std::string& to)
{
    std::string text = serializeCpuProfile(sampleProfile());
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from << " occurs twice";
    return text.replace(at, from.size(), to);
}

std::string parseError(const std::string& text)
{
    try {
        parseCpuProfile(text, "p.json");
    } catch (const FormatError& e) {
        return e.what();
    }
    return "(parsed)";
}

// ------------------------------------------------------------------------------------- file

TEST(CpuProfile, RoundTripsEveryField)
{
    const CpuProfile p = sampleProfile();
    const std::string text = serializeCpuProfile(p);
    const CpuProfile q = parseCpuProfile(text, "p.json");
    EXPECT_EQ(serializeCpuProfile(q), text);
    EXPECT_EQ(q.machine, p.machine);
    EXPECT_EQ(q.kernel, "SkylakeX");
    EXPECT_EQ(q.probeSeconds, 9.5);
    ASSERT_EQ(q.shapes.size(), 1u);
    EXPECT_EQ(q.shapes[0].shape, (ProbeShape { 256, 512, 2048 }));
    ASSERT_EQ(q.shapes[0].gemms.size(), 2u);
    EXPECT_TRUE(q.shapes[0].gemms[1].transA);
    EXPECT_EQ(q.shapes[0].gemms[1].beta, 1.0);
    EXPECT_EQ(q.shapes[0].elementwise[1].op, "grad_accumulate");
    ASSERT_TRUE(q.kernelChoice);
    EXPECT_EQ(q.kernelChoice->measured[1].flopsPerSecond, 6e10);
    ASSERT_TRUE(q.p2p);
    EXPECT_EQ(q.p2p->samples[2].bytes, 1000000u);
    EXPECT_EQ(q.p2p->mpirunOptions[3], "self,vader");
}

TEST(CpuProfile, DerivedRatesAreWrittenWithTheirUnits)
{
    const std::string text = serializeCpuProfile(sampleProfile());
    // 2·256·2048·512 = 536,870,912 FLOP in 10 µs; 4 MiB in 100 µs.
    EXPECT_NE(text.find("\"flops_per_second\": 53687091200000.0"), std::string::npos) << text;
    EXPECT_NE(text.find("\"bytes_per_second\": 41943040000.0"), std::string::npos) << text;
    // The shape's GEMMs: (536,870,912 + 536,870,912) FLOP in 40 µs.
    EXPECT_NE(text.find("\"gemm_flops_per_second\": 26843545600000.0"), std::string::npos) << text;
    EXPECT_NE(text.find("\"key\": \"34dbf86bce5d551f\""), std::string::npos) << text;
}

TEST(CpuProfile, AbsentPartsAreNull)
{
    CpuProfile p = sampleProfile();
    p.kernelChoice.reset();
    p.p2p.reset();
    const std::string text = serializeCpuProfile(p);
    EXPECT_NE(text.find("\"blas_kernel\": null"), std::string::npos);
    EXPECT_NE(text.find("\"p2p\": null"), std::string::npos);
    const CpuProfile q = parseCpuProfile(text, "p.json");
    EXPECT_FALSE(q.kernelChoice);
    EXPECT_FALSE(q.p2p);
}

TEST(CpuProfile, RefusesBadFilesNamingTheField)
{
    EXPECT_EQ(parseError(edited("\"m\": 512", "\"m\": 0")),
        "p.json: shapes[0].gemms[1].m: must be a positive integer, got 0");
    EXPECT_EQ(parseError(edited("\"beta\": 1.0", "\"beta\": 0.5")),
        "p.json: shapes[0].gemms[1].beta: must be 0 or 1, got 0.5");
    EXPECT_EQ(parseError(edited("\"time_us\": 100.0", "\"time_us\": -1")),
        "p.json: shapes[0].elementwise[0].time_us: must be a positive number, got -1");
    EXPECT_EQ(parseError(edited("\"op\": \"gelu_forward\"", "\"op\": \"relu\"")),
        "p.json: shapes[0].elementwise[0].op: must be gelu_forward, gelu_backward, mse_loss or grad_accumulate, got "
        "\"relu\"");
    EXPECT_EQ(parseError(edited("\"blas_core\": \"SkylakeX\",", "")), "p.json: machine.blas_core: missing (required)");
    EXPECT_EQ(parseError(edited("\"format_version\": 1", "\"format_version\": 3")),
        "p.json: format_version 3 is newer than this build reads (2)");
    EXPECT_EQ(parseError(edited("\"repetitions\": 12", "\"repetitions\": 12, \"extra\": 1")),
        "p.json: shapes[0].extra: unknown field");
    EXPECT_EQ(
        parseError(edited("\"cores\": 2", "\"cores\": 3")),
        "p.json: machine.key: does not match the machine's fields (expected \"" + [] {
            MachineKey k = sampleKey();
            k.cores = 3;
            return k.id();
        }() + "\", got \"34dbf86bce5d551f\"): the file was edited");
    EXPECT_EQ(parseError(edited("\"bytes\": 1000,", "\"bytes\": 8,")),
        "p.json: p2p.samples[1].bytes: must be larger than the previous sample's (8)");
    EXPECT_EQ(parseError(edited("\"kind\": \"dpstudio-cpu-profile\"", "\"kind\": \"x\"")),
        "p.json: kind: must be \"dpstudio-cpu-profile\", got \"x\"");
    EXPECT_EQ(parseError(edited("\"trans_a\": true", "\"trans_a\": 1")),
        "p.json: shapes[0].gemms[1].trans_a: must be true or false, got 1");
    EXPECT_EQ(parseError("{"),
        "p.json: not valid JSON: parse error at line 1, column 2: syntax error while parsing "
        "object key - unexpected end of input; expected string literal");
}

// ------------------------------------------------------------------------------------- transformer stages

/// The sample profile with two transformer stages: a dense first stage (one F chunk) and an MoE stage of one
/// layer with ep 2 (F: 4 chunks around its 3 exchanges, B: 3 around 2).
CpuProfile transformerProfile()
{
    CpuProfile p = sampleProfile();
    TransformerStageMeasure dense;
    dense.key = { "gqa h64", "EDD", 32, 1 };
    dense.repetitions = 7;
    dense.forwardChunksUs = { 120.5 };
    dense.inputGradUs = 130.25;
    dense.weightGradUs = 40.0;
    dense.backwardChunksUs = { 165.0 };
    TransformerStageMeasure moe;
    moe.key = { "gqa h64", "MH", 32, 2 };
    moe.repetitions = 5;
    moe.forwardChunksUs = { 10.0, 0.5, 20.0, 30.0 };
    moe.inputGradUs = 70.0;
    moe.weightGradUs = 25.0;
    moe.backwardChunksUs = { 40.0, 25.0, 15.0 };
    p.transformerStages = { dense, moe };
    return p;
}

TEST(CpuProfile, TransformerStagesRoundTripAsFormat2)
{
    const CpuProfile p = transformerProfile();
    const std::string text = serializeCpuProfile(p);
    EXPECT_NE(text.find("\"format_version\": 2"), std::string::npos) << text;
    // Derived sums are written for readers: 10 + 0.5 + 20 + 30 and 40 + 25 + 15.
    EXPECT_NE(text.find("\"forward_us\": 60.5"), std::string::npos) << text;
    EXPECT_NE(text.find("\"backward_us\": 80.0"), std::string::npos) << text;
    const CpuProfile q = parseCpuProfile(text, "p.json");
    EXPECT_EQ(serializeCpuProfile(q), text);
    ASSERT_EQ(q.transformerStages.size(), 2u);
    EXPECT_EQ(q.transformerStages[1].key, (TransformerStageKey { "gqa h64", "MH", 32, 2 }));
    EXPECT_EQ(q.transformerStages[1].forwardChunksUs, (std::vector<double> { 10.0, 0.5, 20.0, 30.0 }));
    EXPECT_EQ(q.transformerStages[1].forwardUs(), 60.5);
    EXPECT_EQ(q.transformerStages[1].backwardUs(), 80.0);
    EXPECT_EQ(q.transformerStages[0].inputGradUs, 130.25);
    EXPECT_EQ(q.transformerStages[0].weightGradUs, 40.0);
    EXPECT_EQ(q.transformerStages[0].repetitions, 7);
    const TransformerStageMeasure* found = q.transformerStage({ "gqa h64", "EDD", 32, 1 });
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->backwardChunksUs, (std::vector<double> { 165.0 }));
    EXPECT_EQ(q.transformerStage({ "gqa h64", "EDD", 32, 2 }), nullptr); // another ep is another stage
    EXPECT_EQ(q.transformerStage({ "gqa h64", "EDD", 64, 1 }), nullptr); // other tokens too
}

TEST(CpuProfile, ScalingTheComputeTimesLeavesTheP2pFit)
{
    CpuProfile p = transformerProfile();
    scaleComputeTimes(p, 1.25);
    EXPECT_EQ(p.shapes[0].gemms[0].timeUs, 12.5);
    EXPECT_EQ(p.shapes[0].gemms[1].timeUs, 37.5);
    EXPECT_EQ(p.shapes[0].elementwise[0].timeUs, 125.0);
    EXPECT_EQ(p.shapes[0].elementwise[1].timeUs, 2500.0);
    EXPECT_EQ(p.transformerStages[0].forwardChunksUs, (std::vector<double> { 150.625 }));
    EXPECT_EQ(p.transformerStages[0].inputGradUs, 162.8125);
    EXPECT_EQ(p.transformerStages[0].weightGradUs, 50.0);
    EXPECT_EQ(p.transformerStages[1].backwardChunksUs, (std::vector<double> { 50.0, 31.25, 18.75 }));
    EXPECT_EQ(p.transformerStages[1].forwardUs(), 75.625);
    ASSERT_TRUE(p.p2p);
    EXPECT_EQ(p.p2p->latencyUs, 2.0);
    EXPECT_EQ(p.p2p->bandwidthBytesPerUs, 1000.0);
    EXPECT_EQ(p.p2p->samples[2].timeUs, 1002.0);
}

TEST(CpuProfile, WithoutTransformerStagesTheFileStaysFormat1)
{
    // Older builds (format 1) keep reading a profile of the block model only.
    const std::string text = serializeCpuProfile(sampleProfile());
    EXPECT_NE(text.find("\"format_version\": 1"), std::string::npos);
    EXPECT_EQ(text.find("transformer_stages"), std::string::npos);
    EXPECT_TRUE(parseCpuProfile(text, "p.json").transformerStages.empty());
}

TEST(CpuProfile, RefusesBadTransformerStagesNamingTheField)
{
    const std::string good = serializeCpuProfile(transformerProfile());
    const auto edit = [&](const std::string& from, const std::string& to) {
        std::string text = good;
        const auto at = text.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        return text.replace(at, from.size(), to);
    };
    EXPECT_EQ(parseError(edit("\"layers\": \"MH\"", "\"layers\": \"MX\"")),
        "p.json: transformer_stages[1].layers: must be letters E, D, M, H (embedding, dense, MoE layer, head), got "
        "\"MX\"");
    EXPECT_EQ(parseError(edit("\"ep\": 2", "\"ep\": 0")),
        "p.json: transformer_stages[1].ep: must be a positive integer, got 0");
    EXPECT_EQ(parseError(edit("\"forward_chunks_us\": [\n        120.5\n      ]", "\"forward_chunks_us\": []")),
        "p.json: transformer_stages[0].forward_chunks_us: must hold at least one time (µs)");
    EXPECT_EQ(parseError(edit("        0.5,", "        -0.5,")),
        "p.json: transformer_stages[1].forward_chunks_us[1]: must be a positive number of µs, got -0.5");
    EXPECT_EQ(parseError(edit("\"weight_grad_us\": 25.0", "\"weight_grad_us\": 0")),
        "p.json: transformer_stages[1].weight_grad_us: must be a positive number, got 0");
    EXPECT_EQ(parseError(edit("\"format_version\": 2", "\"format_version\": 1")),
        "p.json: transformer_stages: needs format_version 2, the file has 1");
}

TEST(CpuProfile, TransformerStageKeysFollowThePartition)
{
    // DeepSeek-V3 tiny: 8 layers, the first 3 dense, ep 2; two stages of 4 layers.
    const Project p = test::tinyDeepSeekDualPipe();
    Variant v = p.variants.front();
    const std::vector<TransformerStageKey> keys = transformerStageKeys(p, v);
    ASSERT_EQ(keys.size(), 2u);
    EXPECT_EQ(keys[0].layers, "EDDDM");
    EXPECT_EQ(keys[1].layers, "MMMMH");
    EXPECT_EQ(keys[0].tokens, 32); // seq_len 32 × microbatch 1
    EXPECT_EQ(keys[0].ep, 2);
    EXPECT_EQ(keys[0].model, keys[1].model);
    EXPECT_EQ(keys[0].model,
        "mla h64 heads4 kv4 hd16 mla(q32 kv32 nope16 rope8 v16) ffn168 vocab256 seq32 moe(e256 k8 f16 shared1 "
        "dense_ffn168 deepseek-v3)");
    // Stages without MoE layers exchange nothing: ep 1 whatever the model's.
    v.layerPartition = { 3, 5 };
    EXPECT_EQ(transformerStageKeys(p, v)[0].layers, "EDDD");
    EXPECT_EQ(transformerStageKeys(p, v)[0].ep, 1);
    // Twice the microbatch is another T; the block model has no transformer stages.
    v.microbatchSize = 2;
    EXPECT_EQ(transformerStageKeys(p, v)[1].tokens, 64);
    EXPECT_THROW(transformerStageKeys(defaultProject(), defaultProject().variants[0]), FormatError);
}

// ------------------------------------------------------------------------------------- shapes

TEST(CpuProfile, ShapeLists)
{
    const std::vector<ProbeShape> shapes = parseShapeList("256x512x2048,32x1024x4096,256x512x2048");
    ASSERT_EQ(shapes.size(), 2u);
    EXPECT_EQ(shapes[0], (ProbeShape { 32, 1024, 4096 }));
    EXPECT_EQ(shapeListText(shapes), "32x1024x4096,256x512x2048");
    EXPECT_THROW(parseShapeList("256x512"), FormatError);
    EXPECT_THROW(parseShapeList("256x512x0"), FormatError);
    EXPECT_THROW(parseShapeList("256x512x2048x1"), FormatError);
    EXPECT_THROW(parseShapeList(""), FormatError);
    try {
        parseShapeList("1x2");
    } catch (const FormatError& e) {
        EXPECT_STREQ(e.what(), "shapes: \"1x2\" is not TxHxF with positive sizes up to 1048576 (e.g. 256x512x2048)");
    }
}

TEST(CpuProfile, ProjectShapesAreTheWorkersMatrices)
{
    // The default project: microbatch 2 × sequence 128 = 256 tokens, hidden 512, ffn 2048.
    EXPECT_EQ(projectShapes(defaultProject()), (std::vector<ProbeShape> { { 256, 512, 2048 } }));
    Project p = defaultProject();
    p.variants[1].microbatchSize = 1;
    EXPECT_EQ(projectShapes(p), (std::vector<ProbeShape> { { 128, 512, 2048 }, { 256, 512, 2048 } }));
}

// ------------------------------------------------------------------------------------- key and cache

TEST(CpuProfile, MachineKeyIsFnvOfItsFields)
{
    EXPECT_EQ(cpuFlagsHash(""), "cbf29ce484222325"); // FNV-1a 64 of nothing: the offset basis
    EXPECT_EQ(cpuFlagsHash("avx2  b\na"), "610cfbc1e4987cc3"); // of "a avx2 b": sorted, one space
    EXPECT_EQ(cpuFlagsHash("a b avx2"), cpuFlagsHash("avx2 a b"));
    EXPECT_EQ(sampleKey().id(), "34dbf86bce5d551f");
}

TEST(CpuProfile, MachineKeyChangesWithEachField)
{
    const std::string base = sampleKey().id();
    MachineKey k = sampleKey();
    k.cpuModel = "AMD Y";
    EXPECT_NE(k.id(), base);
    k = sampleKey();
    k.cores = 4;
    EXPECT_NE(k.id(), base);
    k = sampleKey();
    k.blasCore = "Prescott";
    EXPECT_NE(k.id(), base);
    k = sampleKey();
    k.cpuFlagsHash = cpuFlagsHash("a b avx512f");
    EXPECT_NE(k.id(), base);
    k = sampleKey();
    k.blasVersion = "OpenBLAS 0.3.26";
    EXPECT_NE(k.id(), base);
    k = sampleKey();
    k.blasThreads = 2;
    EXPECT_NE(k.id(), base);
}

class CacheTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        std::string pattern = (fs::temp_directory_path() / "dps-cache-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        m_dir = pattern;
        const char* xdg = std::getenv("XDG_CACHE_HOME");
        const char* home = std::getenv("HOME");
        m_oldXdg = xdg ? std::optional<std::string>(xdg) : std::nullopt;
        m_oldHome = home ? std::optional<std::string>(home) : std::nullopt;
        ::setenv("XDG_CACHE_HOME", m_dir.c_str(), 1);
    }
    void TearDown() override
    {
        restore("XDG_CACHE_HOME", m_oldXdg);
        restore("HOME", m_oldHome);
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }
    static void restore(const char* name, const std::optional<std::string>& value)
    {
        if (value)
            ::setenv(name, value->c_str(), 1);
        else
            ::unsetenv(name);
    }
    fs::path m_dir;
    std::optional<std::string> m_oldXdg, m_oldHome;
};

TEST_F(CacheTest, FolderFollowsXdgThenHome)
{
    EXPECT_EQ(cpuProfileCacheDir(), m_dir / "dpstudio");
    EXPECT_EQ(cpuProfileCachePath(sampleKey()), m_dir / "dpstudio" / "cpu-34dbf86bce5d551f.json");
    ::setenv("XDG_CACHE_HOME", "relative/dir", 1); // not absolute: ignored (XDG Base Directory spec)
    ::setenv("HOME", "/home/someone", 1);
    EXPECT_EQ(cpuProfileCacheDir(), fs::path("/home/someone/.cache/dpstudio"));
    ::unsetenv("XDG_CACHE_HOME");
    ::unsetenv("HOME");
    EXPECT_EQ(cpuProfileCacheDir(), fs::path());
    EXPECT_EQ(cpuProfileCachePath(sampleKey()), fs::path());
    EXPECT_FALSE(cachedCpuProfile(sampleKey()));
    EXPECT_THROW(saveCpuProfileToCache(sampleProfile()), IoError);
}

TEST_F(CacheTest, KeyedByMachine)
{
    EXPECT_FALSE(cachedCpuProfile(sampleKey()));
    const fs::path path = saveCpuProfileToCache(sampleProfile());
    EXPECT_EQ(path, m_dir / "dpstudio" / "cpu-34dbf86bce5d551f.json");
    const std::optional<CpuProfile> cached = cachedCpuProfile(sampleKey());
    ASSERT_TRUE(cached);
    EXPECT_EQ(serializeCpuProfile(*cached), serializeCpuProfile(sampleProfile()));
    EXPECT_TRUE(profileHasShapes(*cached, { { 256, 512, 2048 } }));
    EXPECT_FALSE(profileHasShapes(*cached, { { 256, 512, 2048 }, { 32, 1024, 4096 } }));
    EXPECT_FALSE(profileHasShapes(*cached, { { 128, 512, 2048 } }));

    MachineKey other = sampleKey();
    other.blasCore = "Prescott"; // OpenBLAS detected another core: another machine as far as the cache goes
    EXPECT_FALSE(cachedCpuProfile(other));
    other = sampleKey();
    other.blasThreads = 2;
    EXPECT_FALSE(cachedCpuProfile(other));

    std::ofstream(path) << "{ not json"; // a damaged cache file counts as none
    EXPECT_FALSE(cachedCpuProfile(sampleKey()));
}

TEST_F(CacheTest, AFileUnderAnotherKeysNameIsNotUsed)
{
    CpuProfile p = sampleProfile();
    p.machine.cores = 8;
    fs::create_directories(m_dir / "dpstudio");
    std::ofstream(cpuProfileCachePath(sampleKey())) << serializeCpuProfile(p);
    EXPECT_FALSE(cachedCpuProfile(sampleKey()));
}

// ------------------------------------------------------------------------------------- kernel rule

constexpr const char* kAvx512Flags = "fpu sse sse2 avx fma avx2 avx512f avx512dq avx512cd avx512bw avx512vl";
constexpr const char* kAvx512Bf16Flags = "fpu avx fma avx2 avx512f avx512dq avx512bw avx512vl avx512_bf16";
constexpr const char* kAvx2Flags = "fpu sse sse2 avx fma avx2";

TEST(BlasKernelRule, FlagsToIsaLevelAndCandidates)
{
    struct Row {
        const char* flags;
        IsaLevel level;
        std::vector<std::string> candidates;
    };
    const std::vector<Row> table = {
        { kAvx512Flags, IsaLevel::Avx512, { "SkylakeX", "Haswell", "Zen" } },
        { kAvx512Bf16Flags, IsaLevel::Avx512, { "SkylakeX", "Cooperlake", "Haswell", "Zen" } },
        // AVX-512 F without BW/VL/DQ (Knights Landing): not what the SkylakeX kernels need.
        { "avx fma avx2 avx512f avx512cd", IsaLevel::Avx2, { "Haswell", "Zen" } },
        { kAvx2Flags, IsaLevel::Avx2, { "Haswell", "Zen" } },
        { "avx avx2", IsaLevel::Avx, {} }, // AVX2 without FMA
        { "sse sse2 avx", IsaLevel::Avx, {} },
        { "sse sse2 sse4_2", IsaLevel::Sse, {} },
        { "", IsaLevel::Sse, {} },
    };
    for (const Row& row : table) {
        const CpuFeatures f = cpuFeaturesFromFlags(row.flags);
        EXPECT_EQ(isaLevel(f), row.level) << row.flags;
        EXPECT_EQ(blasCoreCandidates(f), row.candidates) << row.flags;
    }
}

TEST(BlasKernelRule, CoreNamesToIsaLevel)
{
    EXPECT_EQ(blasCoreIsaLevel("SkylakeX"), IsaLevel::Avx512);
    EXPECT_EQ(blasCoreIsaLevel("COOPERLAKE"), IsaLevel::Avx512);
    EXPECT_EQ(blasCoreIsaLevel("Zen"), IsaLevel::Avx2);
    EXPECT_EQ(blasCoreIsaLevel("Haswell"), IsaLevel::Avx2);
    EXPECT_EQ(blasCoreIsaLevel("Sandybridge"), IsaLevel::Avx);
    EXPECT_EQ(blasCoreIsaLevel("Prescott"), IsaLevel::Sse);
    EXPECT_EQ(blasCoreIsaLevel("Nehalem"), IsaLevel::Sse);
    EXPECT_EQ(blasCoreIsaLevel("NeoverseN1"), IsaLevel::Unknown);
    EXPECT_EQ(blasCoreIsaLevel(""), IsaLevel::Unknown);
}

TEST(BlasKernelRule, Decisions)
{
    struct Row {
        const char* flags;
        const char* own;
        const char* winner;
        const char* chosen;
    };
    const std::vector<Row> table = {
        // OpenBLAS fell back below the CPU's ISA (the "Prescott on an AVX-512 CPU"): corrected.
        { kAvx512Flags, "Prescott", "", "SkylakeX" },
        { kAvx512Flags, "Sandybridge", "", "SkylakeX" },
        { kAvx512Flags, "Haswell", "", "SkylakeX" },
        { kAvx2Flags, "Prescott", "", "Haswell" },
        { kAvx2Flags, "Nehalem", "", "Haswell" },
        // OpenBLAS's own has the CPU's ISA: kept.
        { kAvx512Flags, "SkylakeX", "", "" },
        { kAvx512Bf16Flags, "Cooperlake", "", "" },
        { kAvx2Flags, "Zen", "", "" },
        { kAvx2Flags, "Haswell", "", "" },
        // A measured winner among the candidates wins, also over a core of a higher ISA (Zen 4: Zen kernels).
        { kAvx512Bf16Flags, "Cooperlake", "Zen", "Zen" },
        { kAvx512Flags, "SkylakeX", "haswell", "haswell" },
        { kAvx512Flags, "Prescott", "Haswell", "Haswell" },
        // ... unless it is OpenBLAS's own (nothing to set) ...
        { kAvx512Flags, "SkylakeX", "SkylakeX", "" },
        { "sse sse2", "Prescott", "Prescott", "" },
        // ... and a winner that is not a candidate for this CPU is ignored.
        { kAvx2Flags, "Haswell", "SkylakeX", "" },
        { kAvx512Flags, "Prescott", "Nehalem", "SkylakeX" },
        // Nothing to choose from without AVX2+FMA; a core name the rule does not know is kept.
        { "sse sse2 avx", "Prescott", "", "" },
        { kAvx512Flags, "SapphireRapidsPlus", "", "" },
    };
    for (const Row& row : table)
        EXPECT_EQ(chooseBlasCore(cpuFeaturesFromFlags(row.flags), row.own, row.winner).core, row.chosen)
            << row.flags << " / own " << row.own << " / winner " << row.winner;
}

TEST(BlasKernelRule, ReasonsSayWhy)
{
    EXPECT_EQ(chooseBlasCore(cpuFeaturesFromFlags(kAvx512Flags), "Prescott", "").reason,
        "OpenBLAS chose Prescott, whose kernels lack the AVX-512 this CPU has");
    EXPECT_EQ(chooseBlasCore(cpuFeaturesFromFlags(kAvx2Flags), "Prescott", "").reason,
        "OpenBLAS chose Prescott, whose kernels lack the AVX2/FMA this CPU has");
    EXPECT_EQ(chooseBlasCore(cpuFeaturesFromFlags(kAvx512Flags), "SkylakeX", "Haswell").reason,
        "measured fastest at the model's shapes (OpenBLAS's own: SkylakeX)");
    EXPECT_EQ(chooseBlasCore(cpuFeaturesFromFlags(kAvx512Flags), "SkylakeX", "").reason,
        "OpenBLAS's own SkylakeX matches the CPU's features");
}

TEST(BlasKernelRule, WinnerIsTheFastestMeasured)
{
    EXPECT_EQ(kernelWinner({}), "");
    EXPECT_EQ(
        kernelWinner({ { "SkylakeX", "SkylakeX", 5e10 }, { "Haswell", "Haswell", 7e10 }, { "Zen", "Zen", 6e10 } }),
        "Haswell");
    // OpenBLAS's own (no OPENBLAS_CORETYPE) is named by the core it loaded.
    EXPECT_EQ(kernelWinner({ { "SkylakeX", "SkylakeX", 5e10 }, { "", "Prescott", 8e10 } }), "Prescott");
}

// ------------------------------------------------------------------------------------- p2p fit

TEST(P2pFit, ExactLineIsRecovered)
{
    P2pProfile p;
    p.samples = { { 8, 2.008 }, { 1000, 3.0 }, { 1000000, 1002.0 } }; // 2 µs + bytes / (1000 bytes/µs)
    fitP2p(p);
    EXPECT_NEAR(p.latencyUs, 2.0, 1e-9);
    EXPECT_NEAR(p.bandwidthBytesPerUs, 1000.0, 1e-6);
}

TEST(P2pFit, NegativeLatencyRefitsThroughTheOrigin)
{
    // Two points: the line through them has intercept -0.5 µs. Through the origin with weights 1/t²:
    // 1/bw = Σ b·t/t² / Σ b²/t² = (1000 + 800) / (1e6 + 640000), bw = 911.1 bytes/µs.
    P2pProfile p;
    p.samples = { { 1000, 1.0 }, { 2000, 2.5 } };
    fitP2p(p);
    EXPECT_EQ(p.latencyUs, 0.0);
    EXPECT_NEAR(p.bandwidthBytesPerUs, 1.64e6 / 1800.0, 1e-9);
}

TEST(P2pFit, ConstantTimeIsUnlimitedBandwidth)
{
    P2pProfile p;
    p.samples = { { 8, 5.0 }, { 1000000, 4.0 } };
    fitP2p(p);
    // Weighted mean of 5 and 4 with weights 1/25 and 1/16: (5/25 + 4/16) / (1/25 + 1/16) = 0.45 / 0.1025.
    EXPECT_NEAR(p.latencyUs, 0.45 / 0.1025, 1e-12);
    EXPECT_EQ(p.bandwidthBytesPerUs, 0.0);
}

TEST(P2pFit, NeedsTwoSizes)
{
    P2pProfile p;
    p.samples = { { 8, 5.0 } };
    EXPECT_THROW(fitP2p(p), FormatError);
}

// ------------------------------------------------------------------------------------- table

TEST(CpuProfile, TableShowsTheFigures)
{
    const std::string text = formatCpuProfile(sampleProfile());
    EXPECT_NE(text.find("cpu profile: Intel X, 2 cores, 1 BLAS thread, OpenBLAS 0.3.21\n"), std::string::npos) << text;
    EXPECT_NE(text.find("machine key 34dbf86bce5d551f"), std::string::npos) << text;
    EXPECT_NE(text.find("kernel: OpenBLAS's own SkylakeX (measured fastest)\n"), std::string::npos) << text;
    EXPECT_NE(text.find("F gemm NT"), std::string::npos) << text;
    EXPECT_NE(text.find("W gemm TN +="), std::string::npos) << text;
    EXPECT_NE(text.find("fit: latency 2 µs, bandwidth 953.67 MiB/s\n"), std::string::npos) << text;
    EXPECT_EQ(text.find("transformer stages"), std::string::npos) << text;
    const std::string stages = formatCpuProfile(transformerProfile());
    EXPECT_NE(stages.find("transformer stages (compute per microbatch"), std::string::npos) << stages;
    EXPECT_NE(stages.find("MH     32  2    60.5 µs      70 µs  25 µs   80 µs         4/3  gqa h64"), std::string::npos)
        << stages;
}

} // namespace
