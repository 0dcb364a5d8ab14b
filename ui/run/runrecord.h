#pragma once
// One run of a project as the runs history keeps it: the measured file and the few facts a list shows
// (date, hardware, backend, step time, correctness). Read from a measured.json with the engine's one
// reader (dps::loadMeasured, engine/trace/measured.h), tolerantly: the history must list a run even when
// that strict reader refuses the file (a missing field, a newer format_version); the record then keeps
// what is known (the path and the date) and the reason.
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
    QString hardware; ///< the device description for cuda runs, else the CPU model
    QString backend; ///< "cpu" or "cuda"
    QString comm; ///< "mpi" or "nccl"
    int steps = 0; ///< measured steps
    double stepTimeUs = 0.0; ///< makespan of the median step; 0 when unknown
    Correctness correctness = Correctness::Unknown;
    double maxLossError = 0.0;
    double maxGradError = 0.0;
    QString problem; ///< why the measured trace could not be read in full; empty when it was

    bool operator==(const RunRecord&) const = default;
};

/// The record of a measured.json; `date` is the file's modification time. Returns false, with `error`
/// set ("cannot read …"), when the file cannot be read at all. When dps::loadMeasured refuses its content
/// (FormatError: not JSON, a field missing or of the wrong type, a newer format_version), returns true
/// with only `measuredPath` and `date` filled and `problem` set to the reader's message (naming the file
/// and the field); the other fields keep their defaults.
bool readRunRecord(const QString& measuredPath, RunRecord& record, QString* error = nullptr);

/// "passed", "FAILED" or "unknown".
QString correctnessText(Correctness correctness);

/// The record as a JSON object for the history index; `measuredPath` is written relative to `base` when
/// it lies inside it.
QJsonObject recordToJson(const RunRecord& record, const QString& base);
/// The inverse of recordToJson (relative paths resolved against `base`); tolerant of missing fields.
RunRecord recordFromJson(const QJsonObject& object, const QString& base);

} // namespace dps::ui
