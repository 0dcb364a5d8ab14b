// dps_check_measured: checks what one dpstudio-worker run left behind against its project. Used by the
// runtime's mpirun tests (run_mpi_case.cmake).
//
//   dps_check_measured PROJECT VARIANT MEASURED_JSON EVENTS_FILE STEPS [TRACE_DIR]
//
// Checks: rank 0's part of the progress stream starts with hello and ends with done; the correctness
// check passed; every action of every rank appears exactly once per measured step, in the schedule's order;
// times are consistent; each rank's peak activation_bytes equals the simulator's peak activation bytes for
// the same schedule and model (4-byte elements on CPU), and each action's memory_bytes (so each rank's peak)
// equals the prediction `dpstudio run` makes (predict with fp32Tensors), to the byte (docs/memory.md); the
// traces exist; the measured-trace reader reads the
// file and its writer gives the same text back. Exit 0 when all hold, 1 otherwise.
#include "base/fileio.h"
#include "project/predict.h"
#include "project/project.h"
#include "sim/simulator.h"
#include "trace/measured.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

int g_failures = 0;

void fail(const std::string& what)
{
    std::cerr << "check failed: " << what << "\n";
    ++g_failures;
}

std::vector<json> readLines(const fs::path& file)
{
    std::ifstream in(file);
    std::vector<json> lines;
    for (std::string line; std::getline(in, line);) {
        if (line.empty())
            continue;
        try {
            lines.push_back(json::parse(line));
        } catch (const json::exception&) {
            fail("not a JSON line on stdout: " + line);
        }
    }
    return lines;
}

/// Rank 0's own lines (hello, done, error, its progress) reach mpirun through one pipe, so their order is
/// the worker's; other ranks' lines may overtake them on the way through mpirun (the launcher reorders).
void checkEvents(const std::vector<json>& events, const std::string& measured)
{
    std::vector<json> rank0;
    int hellos = 0;
    int dones = 0;
    for (const json& e : events) {
        const std::string kind = e.value("event", "");
        hellos += kind == "hello";
        dones += kind == "done";
        if (kind != "progress" || e.value("rank", -1) == 0)
            rank0.push_back(e);
        else if (kind == "progress" && (e.value("done", -1) < 0 || e.value("done", 0) > e.value("total", 0)))
            fail("progress event out of range: " + e.dump());
    }
    if (hellos != 1 || dones != 1)
        return fail(
            "expected one hello and one done event, got " + std::to_string(hellos) + " and " + std::to_string(dones));
    if (rank0.front().value("event", "") != "hello")
        fail("rank 0's first event is not hello: " + rank0.front().dump());
    if (rank0.back().value("event", "") != "done")
        fail("rank 0's last event is not done: " + rank0.back().dump());
    else if (rank0.back().value("output", "") != measured)
        fail("the done event names " + rank0.back().value("output", ""));
}

void checkRank(const dps::Schedule& schedule, const json& rank, int r, int steps, const dps::RankResult& predicted)
{
    // The prediction's memory of each slot: its (last) memory point's total, in list order.
    std::vector<double> slotMemory;
    std::size_t point = 0;
    for (const dps::Action& a : schedule.order[static_cast<std::size_t>(r)]) {
        point += static_cast<std::size_t>(a.size());
        slotMemory.push_back(point < predicted.memory.size() ? predicted.memory[point].totalBytes : -1.0);
    }
    const auto& order = schedule.order[static_cast<std::size_t>(r)];
    const json& actions = rank["actions"];
    if (actions.size() != order.size() * static_cast<std::size_t>(steps))
        return fail("rank " + std::to_string(r) + ": " + std::to_string(actions.size()) + " actions, expected "
            + std::to_string(order.size() * static_cast<std::size_t>(steps)));
    double peak = 0.0;
    double peakMemory = 0.0;
    for (std::size_t i = 0; i < actions.size(); ++i) {
        const json& a = actions[i];
        const std::string want = dps::toString(order[i % order.size()]);
        const std::string where = "rank " + std::to_string(r) + " action " + std::to_string(i);
        if (a["action"] != want)
            fail(where + ": " + a["action"].dump() + " where the order has " + want);
        if (a["step"] != static_cast<int>(i / order.size()))
            fail(where + ": step " + a["step"].dump());
        const double start = a["start_us"], end = a["end_us"], wait = a["wait_us"];
        if (!(start >= 0.0 && end >= start && wait >= 0.0 && wait <= end - start + 1e-3))
            fail(where + ": inconsistent times " + a.dump());
        peak = std::max(peak, a["activation_bytes"].get<double>());
        const double memory = a["memory_bytes"].get<double>();
        peakMemory = std::max(peakMemory, memory);
        if (memory != slotMemory[i % order.size()])
            fail(where + " (" + want + "): memory_bytes " + std::to_string(memory) + " but the prediction says "
                + std::to_string(slotMemory[i % order.size()]));
    }
    if (peak != predicted.peakActivationBytes)
        fail("rank " + std::to_string(r) + ": peak activation_bytes " + std::to_string(peak)
            + " but the simulator says " + std::to_string(predicted.peakActivationBytes));
    if (peakMemory != predicted.peakMemoryBytes)
        fail("rank " + std::to_string(r) + ": peak memory_bytes " + std::to_string(peakMemory)
            + " but the prediction says " + std::to_string(predicted.peakMemoryBytes));
}

void checkMeasured(const dps::Project& project, const dps::Variant& variant, const json& m, int steps)
{
    if (m.value("format_version", 0) != 1)
        fail("format_version");
    if (!m["correctness"].value("passed", false))
        fail("correctness: " + m["correctness"].dump());
    if (m["steps"].size() != static_cast<std::size_t>(steps))
        fail("steps: " + m["steps"].dump());
    if (m.value("median_step", -1) < 0 || m.value("median_step", -1) >= steps)
        fail("median_step " + m["median_step"].dump());
    // The prediction of a CPU run, as `dpstudio run` makes it (machine/costsource.h, predictWith of
    // CostSource::projectRun), with curves.
    dps::PredictOptions options;
    options.fp32Tensors = true;
    const dps::Prediction prediction = dps::predict(project, variant, options);
    if (!prediction.valid())
        return fail("prediction: " + prediction.error);
    const dps::Schedule& schedule = *prediction.schedule;
    if (m["ranks"].size() != static_cast<std::size_t>(schedule.ranks))
        return fail("ranks: " + std::to_string(m["ranks"].size()));
    for (int r = 0; r < schedule.ranks; ++r)
        checkRank(schedule, m["ranks"][static_cast<std::size_t>(r)], r, steps,
            prediction.sim.ranks[static_cast<std::size_t>(r)]);
}

void checkTraces(const fs::path& dir, int ranks)
{
    for (int r = 0; r < ranks; ++r)
        if (!fs::exists(dir / ("rank" + std::to_string(r) + ".trace.json")))
            fail("no trace of rank " + std::to_string(r) + " in " + dir.string());
    if (!fs::exists(dir / "combined.trace.json"))
        fail("no combined trace in " + dir.string());
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 6) {
        std::cerr << "usage: dps_check_measured PROJECT VARIANT MEASURED_JSON EVENTS_FILE STEPS [TRACE_DIR]\n";
        return 2;
    }
    try {
        const dps::Project project = dps::loadProject(argv[1]);
        const dps::Variant* variant = project.find(argv[2]);
        if (!variant)
            throw std::runtime_error(std::string("no variant ") + argv[2]);
        const int steps = std::stoi(argv[5]);
        std::ifstream in(argv[3]);
        const json measured = json::parse(in);
        checkEvents(readLines(argv[4]), argv[3]);
        checkMeasured(project, *variant, measured, steps);
        if (argc > 6)
            checkTraces(argv[6], variant->ranks);
        const std::string text = dps::readTextFile(argv[3]);
        const dps::MeasuredTrace trace = dps::parseMeasured(text, argv[3]);
        if (trace.ranks.size() != static_cast<std::size_t>(variant->ranks))
            fail("the measured-trace reader sees " + std::to_string(trace.ranks.size()) + " ranks");
        if (dps::serializeMeasured(trace) != text)
            fail(std::string("serializeMeasured(parseMeasured(text)) differs from the worker's ") + argv[3]);
    } catch (const std::exception& e) {
        fail(e.what());
    }
    if (g_failures == 0)
        std::cout << "all checks passed: " << argv[3] << "\n";
    return g_failures == 0 ? 0 : 1;
}
