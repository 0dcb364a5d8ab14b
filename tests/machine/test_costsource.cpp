// The one rule of what a prediction is fed (machine/costsource.h): the order of the costs, the rules of a run
// of our engine, the placement of a run's ranks on its hosts, and which runs are predicted for this machine.
#include "machine/costsource.h"

#include "base/hostinfo.h"
#include "support/variants.h"

#include <gtest/gtest.h>

using namespace dps;

namespace {

/// A measured trace whose ranks ran on `hosts` (one name per rank).
MeasuredTrace onHosts(const std::vector<std::string>& hosts)
{
    MeasuredTrace trace;
    for (std::size_t r = 0; r < hosts.size(); ++r) {
        MeasuredRank rank;
        rank.rank = static_cast<int>(r);
        rank.host = hosts[r];
        trace.ranks.push_back(rank);
    }
    return trace;
}

/// The default project's block model on 4 ranks of 1F1B with one microbatch: every action is on the
/// critical path, so each message between hosts adds its extra latency once.
Project fourRanksOneMicrobatch(double interNodeLatencyUs)
{
    Project project = test::withOnlyVariant(defaultProject(), ScheduleKind::GPipe, 4, 1, "gpipe4");
    project.cluster.interNodeLatencyUs = interNodeLatencyUs;
    project.cluster.interNodeBandwidthBytesPerUs = project.cluster.bandwidthBytesPerUs;
    return project;
}

} // namespace

TEST(CostSource, RanksArePlacedOnTheHostsTheyRanOn)
{
    EXPECT_EQ(
        machine::measuredRankNodes(onHosts({ "hostA", "hostA", "hostB", "hostB" })), (std::vector<int> { 0, 0, 1, 1 }));
    EXPECT_EQ(machine::measuredRankNodes(onHosts({ "b", "a", "b", "c" })), (std::vector<int> { 0, 1, 0, 2 }));
    EXPECT_TRUE(machine::measuredRankNodes(onHosts({ "hostA", "hostA" })).empty()); // one host: no placement
    EXPECT_TRUE(machine::measuredRankNodes(onHosts({ "hostA", "" })).empty()); // a rank without a host
}

TEST(CostSource, TransfersBetweenHostsTakeTheInterNodeLink)
{
    const std::vector<int> nodes { 0, 0, 1, 1 };
    const auto makespan = [](const Project& project, std::vector<int> rankNode) {
        machine::CostSource source = machine::CostSource::projectRun("cpu");
        source.rankNode = std::move(rankNode);
        const Prediction p = machine::predictWith(source, project, "gpipe4", false);
        EXPECT_TRUE(p.valid()) << p.error;
        return p.makespanUs;
    };
    // The same link between hosts as inside one: the placement changes nothing.
    const Project same = fourRanksOneMicrobatch(defaultProject().cluster.latencyUs);
    const double base = makespan(same, {});
    EXPECT_DOUBLE_EQ(makespan(same, nodes), base);
    // 1000 µs more between hosts: the forward crosses ranks 1 -> 2 once, the backward 2 -> 1 once, both on
    // the critical path of one microbatch.
    const Project slow = fourRanksOneMicrobatch(defaultProject().cluster.latencyUs + 1000.0);
    EXPECT_DOUBLE_EQ(makespan(slow, {}), base);
    EXPECT_NEAR(makespan(slow, nodes), base + 2000.0, 1e-6);
    // Hosts { 0, 1, 0, 1 }: every one of the 3 boundaries crosses, both ways.
    EXPECT_NEAR(makespan(slow, { 0, 1, 0, 1 }), base + 6000.0, 1e-6);

    machine::CostSource source = machine::CostSource::projectRun("cpu");
    source.rankNode = nodes;
    EXPECT_NE(source.label(slow).find("; ranks on 2 hosts (0–1; 2–3): transfers between hosts take the "
                                      "inter-node link (latency 1 ms"),
        std::string::npos)
        << source.label(slow);
}

TEST(CostSource, CostsAreLaidInOrderProjectFileMachineFlags)
{
    Project project = fourRanksOneMicrobatch(defaultProject().cluster.latencyUs);
    machine::CostSource source;
    // A costs file types F of stage 1 as 70 µs; the flags type W of every stage as 5 µs and win over the file's W.
    CostsFile file;
    file.stages.resize(2);
    file.stages[1].forwardUs = 70.0;
    file.stages[1].weightGradUs = 9.0;
    source.costsFile = file;
    source.costsFileName = "fit.json";
    source.everyStage.stage.weightGradUs = 5.0;
    const Project costed = machine::costedProject(source, project);
    const Prediction p = machine::predictWith(source, project, "", false);
    ASSERT_TRUE(p.valid()) << p.error;
    EXPECT_DOUBLE_EQ(p.costs.stages[1].forwardUs, 70.0);
    EXPECT_DOUBLE_EQ(p.costs.stages[1].weightGradUs, 5.0);
    EXPECT_DOUBLE_EQ(p.costs.stages[0].weightGradUs, 5.0);
    EXPECT_DOUBLE_EQ(*costed.costs.stages[1].forwardUs, 70.0);
    EXPECT_EQ(source.costsNote("the project's model and costs"),
        "the project's model and costs, then fit.json, then the --cost flags");
    EXPECT_EQ(machine::CostSource {}.costsNote("unit costs"), "unit costs");
}

TEST(CostSource, ARunOfTheEngineMovesFp32TensorsOnTheCpuBackend)
{
    Project project = fourRanksOneMicrobatch(defaultProject().cluster.latencyUs);
    project.model.dtype = DType::BF16;
    const Prediction plain = machine::predictWith(machine::CostSource {}, project, "", false);
    const Prediction cpuRun = machine::predictWith(machine::CostSource::projectRun("cpu"), project, "", false);
    const Prediction gpuRun = machine::predictWith(machine::CostSource::projectRun("cuda"), project, "", false);
    ASSERT_TRUE(plain.valid() && cpuRun.valid() && gpuRun.valid());
    // fp32 tensors are twice bf16's: every message and activation of the block model doubles.
    EXPECT_DOUBLE_EQ(cpuRun.p2pBytes, 2.0 * plain.p2pBytes);
    EXPECT_DOUBLE_EQ(gpuRun.p2pBytes, plain.p2pBytes);
    EXPECT_DOUBLE_EQ(cpuRun.peakActivationBytes, 2.0 * plain.peakActivationBytes);
}

TEST(CostSource, AProjectThatCannotBePredictedIsAnErrorNotAnException)
{
    const Project project = fourRanksOneMicrobatch(defaultProject().cluster.latencyUs);
    const Prediction p = machine::predictWith(machine::CostSource {}, project, "nope", false);
    EXPECT_FALSE(p.valid());
    EXPECT_NE(p.error.find("no variant named 'nope'"), std::string::npos) << p.error;
}

TEST(CostSource, ARunOfAnotherHostIsPredictedForTheProjectsDevices)
{
    MeasuredTrace trace = onHosts({ "elsewhere", "elsewhere" });
    trace.host = "elsewhere";
    trace.cpu = "another CPU";
    trace.backend = "cpu";
    machine::MachineProfile profile;
    profile.file = "cpu.json";
    const machine::CostSource source = machine::costSourceOfRun(trace, profile);
    EXPECT_FALSE(source.profile); // measured elsewhere: this machine's profile does not apply
    EXPECT_TRUE(source.engineRun);
    EXPECT_EQ(source.backend, "cpu");
    EXPECT_TRUE(source.rankNode.empty());
    EXPECT_EQ(source.label(fourRanksOneMicrobatch(2.0)).rfind("the project's devices (", 0), 0u);

    trace.host = hostName();
    trace.cpu = cpuModelName();
    EXPECT_TRUE(machine::costSourceOfRun(trace, profile).profile); // a CPU run of this machine
    trace.backend = "cuda";
    EXPECT_FALSE(machine::costSourceOfRun(trace, profile).profile);
}

TEST(CostSource, TheProfileSaysWhatItsCheckFoundAndWhetherItsTimesFollowIt)
{
    machine::MachineProfile profile;
    profile.file = "/x/cpu.json";
    profile.probed = true;
    EXPECT_EQ(profile.description(), "probed CPU profile, /x/cpu.json");
    profile.drift = -0.064;
    EXPECT_EQ(
        profile.description(), "probed CPU profile, /x/cpu.json; checked now: this machine's GEMMs -6.4 % against it");
    profile.scaledBy = -0.064;
    EXPECT_EQ(profile.description(),
        "probed CPU profile, /x/cpu.json; checked now: this machine's GEMMs -6.4 % against it, its times scaled to "
        "that");
    profile.scaledBy.reset();
    profile.reprobedForDrift = true;
    profile.drift = 0.276;
    EXPECT_EQ(profile.description(),
        "probed CPU profile, /x/cpu.json; probed again now: this machine's GEMMs ran +27.6 % against the cached "
        "profile");
    profile.scaledBy = -0.149; // the check repeated against the fresh profile, two ranks' GEMMs at once
    EXPECT_EQ(profile.description(),
        "probed CPU profile, /x/cpu.json; probed again now: this machine's GEMMs ran +27.6 % against the cached "
        "profile, and -14.9 % against the new one as the ranks compute together, its times scaled to that");
}
