#include "processtree.h"

#include <QDir>
#include <QFile>
#include <QHash>

#include <csignal>
#include <optional>
#include <sys/types.h>

namespace dps::ui {

namespace {

struct StatLine {
    char state = '?';
    qint64 parent = 0;
};

/// State and parent from /proc/PID/stat ("pid (comm) S ppid …"; comm may hold spaces and parentheses).
std::optional<StatLine> readStat(qint64 pid)
{
    QFile file(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!file.open(QIODevice::ReadOnly))
        return std::nullopt;
    const QByteArray text = file.readAll();
    const qsizetype close = text.lastIndexOf(')');
    if (close < 0)
        return std::nullopt;
    const QList<QByteArray> fields = text.mid(close + 1).trimmed().split(' ');
    if (fields.size() < 2 || fields.at(0).isEmpty())
        return std::nullopt;
    return StatLine { fields.at(0).at(0), fields.at(1).toLongLong() };
}

QMultiHash<qint64, qint64> childrenByParent()
{
    QMultiHash<qint64, qint64> children;
    const QStringList entries = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString& entry : entries) {
        bool numeric = false;
        const qint64 pid = entry.toLongLong(&numeric);
        if (!numeric)
            continue;
        if (const auto stat = readStat(pid); stat && stat->state != 'Z')
            children.insert(stat->parent, pid);
    }
    return children;
}

} // namespace

QList<qint64> descendantProcesses(qint64 pid)
{
    const QMultiHash<qint64, qint64> children = childrenByParent();
    QList<qint64> found;
    QList<qint64> frontier { pid };
    while (!frontier.isEmpty()) {
        const qint64 parent = frontier.takeFirst();
        for (const qint64 child : children.values(parent)) {
            if (found.contains(child) || child == pid)
                continue;
            found.push_back(child);
            frontier.push_back(child);
        }
    }
    return found;
}

void signalProcesses(const QList<qint64>& pids, int signal)
{
    for (const qint64 pid : pids)
        if (pid > 1)
            ::kill(static_cast<pid_t>(pid), signal);
}

bool processIsAlive(qint64 pid)
{
    const auto stat = readStat(pid);
    return stat && stat->state != 'Z' && stat->state != 'X';
}

} // namespace dps::ui
