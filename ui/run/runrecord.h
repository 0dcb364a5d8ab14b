#pragma once
// One run of a project as the runs history keeps it: the measured file and the few facts a list shows
// (date, hardware, backend, step time, correctness). Read from a measured.json (issue 4's format)
// tolerantly: the history must list a run even when the file lacks a field.
#include <QDateTime>
#include <QJsonObject>
#include <QString>

namespace dps::ui {

enum class Correctness { Unknown, Passed, Failed };

struct RunRecord {
    QString measuredPath; ///< absolute path of the measured.json
    QDateTime date; ///< when the run ended
    QString variant;
    int ranks = 0;
    QString host;
    QString hardware; ///< GPU names for cuda runs, else the CPU model
    QString backend; ///< "cpu" or "cuda"
    QString comm; ///< "mpi" or "nccl"
    int steps = 0; ///< measured steps
    double stepTimeUs = 0.0; ///< makespan of the median step; 0 when unknown
    Correctness correctness = Correctness::Unknown;
    double maxLossError = 0.0;
    double maxGradError = 0.0;

    bool operator==(const RunRecord&) const = default;
};

/// The record of a measured.json. Returns false, with `error` set, when the file cannot be read or is
/// not a JSON object; missing fields keep their defaults. `date` is the file's modification time.
bool readRunRecord(const QString& measuredPath, RunRecord& record, QString* error = nullptr);

/// "passed", "FAILED" or "unknown".
QString correctnessText(Correctness correctness);

/// The record as a JSON object for the history index; `measuredPath` is written relative to `base` when
/// it lies inside it.
QJsonObject recordToJson(const RunRecord& record, const QString& base);
/// The inverse of recordToJson (relative paths resolved against `base`); tolerant of missing fields.
RunRecord recordFromJson(const QJsonObject& object, const QString& base);

} // namespace dps::ui
