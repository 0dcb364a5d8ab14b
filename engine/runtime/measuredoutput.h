#pragma once
// What rank 0 writes after a run: measured.json (format in docs/worker-protocol.md) and, on request, Chrome
// traces of the median step (one per rank with distributedInfo, plus a combined one).
#include "correctness.h"
#include "executor.h"
#include "schedule/schedule.h"
#include "trace/chrometrace.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace dps::runtime {

/// Newest measured.json format the worker writes.
inline constexpr int kMeasuredFormatVersion = 1;

/// Everything measured.json holds.
struct MeasuredRun {
    std::string command;
    std::string host;
    std::string cpu;
    std::string device; ///< the backend's device description
    std::string mpiVersion;
    std::string backend; ///< "cpu", "cuda"
    std::string comm; ///< "mpi", "thread", "nccl", "mpi-host"
    /// How the backend and comm were chosen (JobChoice::description), e.g. "backend cpu, comm mpi: cpu
    /// (auto: cuda: not built)"; written as backend_choice when not empty.
    std::string backendChoice;
    std::string variant;
    int threads = 1;
    int warmup = 0;
    CorrectnessReport correctness;
    /// records[r] = rank r's records of the measured steps (step numbered from 0 after the warm-up).
    std::vector<std::vector<ActionRecord>> records;
    nlohmann::ordered_json project; ///< the project that ran
    std::vector<std::string> warnings;
};

/// Makespan of each measured step: the latest action end over all ranks (µs).
std::vector<double> stepMakespans(const std::vector<std::vector<ActionRecord>>& records);
/// The step whose makespan is the median (the lower one of the middle two for an even count); 0 when none.
int medianStep(const std::vector<double>& makespans);

/// The measured.json document.
nlohmann::ordered_json measuredJson(const MeasuredRun& run, const Schedule& schedule);

/// The measured timeline of one step: one slice per action (an overlapped slot's halves both span it),
/// memory after every action, and a flow for every message between ranks (sent at the producer's end,
/// arrived when the consumer stopped waiting).
Timeline measuredTimeline(const MeasuredRun& run, const Schedule& schedule, int step);

/// Writes measured.json atomically and, when traceDir is not empty, the median step's traces: one per
/// rank (rank<r>.trace.json) and combined.trace.json. Throws IoError naming the file.
void writeMeasuredOutputs(const MeasuredRun& run, const Schedule& schedule, const std::filesystem::path& output,
    const std::filesystem::path& traceDir);

} // namespace dps::runtime
