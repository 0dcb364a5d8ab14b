// main() of the Qt UI tests: the offscreen platform is chosen before the QApplication exists (so test
// discovery at build time works without a display), settings go to a throw-away location, then GoogleTest.
#include "widgets/studio.h"

#include <QApplication>
#include <QDir>
#include <QStandardPaths>

#include <gtest/gtest.h>

int main(int argc, char** argv)
{
    qputenv("QT_QPA_PLATFORM", "offscreen");
    const QString runtime = QDir::tempPath() + QStringLiteral("/dps-ui-tests-runtime");
    QDir().mkpath(runtime);
    QFile::setPermissions(runtime, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    qputenv("XDG_RUNTIME_DIR", runtime.toUtf8());
    // No CPU profile of the user's cache: a test that wants one writes it here (engine/machine/machinecosts.h).
    const QString cache
        = QDir::tempPath() + QStringLiteral("/dps-ui-tests-cache-%1").arg(QCoreApplication::applicationPid());
    QDir(cache).removeRecursively();
    QDir().mkpath(cache);
    qputenv("XDG_CACHE_HOME", cache.toUtf8());
    QStandardPaths::setTestModeEnabled(true);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("DualPipe Studio Tests"));
    QApplication::setApplicationName(QStringLiteral("dualpipe-studio-tests"));
    dps::ui::initStudioResources();
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
