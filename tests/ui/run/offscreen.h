#pragma once
// main() for the run panel's QtTest binaries: the offscreen platform and a private runtime folder are
// set before the QApplication exists, so the tests run without a display and without warnings; QSettings
// write to a throw-away location (QStandardPaths' test mode), not the user's.
#include <QApplication>
#include <QDir>
#include <QStandardPaths>
#include <QTest>

#include <sys/stat.h>
#include <unistd.h>

namespace dps::test {

inline void prepareOffscreen()
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) {
        const QString dir = QDir::tempPath() + QStringLiteral("/dps-xdg-%1").arg(::getuid());
        QDir().mkpath(dir);
        ::chmod(QFile::encodeName(dir).constData(), 0700);
        qputenv("XDG_RUNTIME_DIR", QFile::encodeName(dir));
    }
    QStandardPaths::setTestModeEnabled(true);
}

} // namespace dps::test

#define DPS_OFFSCREEN_TEST_MAIN(TestClass)                                                                             \
    int main(int argc, char** argv)                                                                                    \
    {                                                                                                                  \
        dps::test::prepareOffscreen();                                                                                 \
        QApplication app(argc, argv);                                                                                  \
        TestClass test;                                                                                                \
        return QTest::qExec(&test, argc, argv);                                                                        \
    }
