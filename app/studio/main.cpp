// dualpipe-studio: the designer's entry point. Everything else lives in the ui libraries (dps::ui, over
// dps::uidocument and dps::uirun).
//
//   dualpipe-studio [PROJECT]                                 open the window
//   dualpipe-studio --screenshot out.png [PROJECT]            render the main window offscreen and exit
//   dualpipe-studio --compare-screenshot out.png [PROJECT]    render the comparison view offscreen and exit
#include "widgets/studio.h"

#include "base/version.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QIcon>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv)
{
    // A screenshot never needs a display: choose the offscreen platform before Qt starts.
    if (dps::ui::wantsScreenshot(argc, argv) && !std::getenv("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    if (!std::getenv("XDG_RUNTIME_DIR") && dps::ui::wantsScreenshot(argc, argv)) {
        const QByteArray dir = QDir::tempPath().toUtf8() + "/dualpipe-studio-runtime";
        QDir().mkpath(QString::fromUtf8(dir));
        QFile::setPermissions(QString::fromUtf8(dir), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        qputenv("XDG_RUNTIME_DIR", dir);
    }

    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("DualPipe Studio"));
    QApplication::setApplicationName(QStringLiteral("dualpipe-studio"));
    QApplication::setApplicationDisplayName(QStringLiteral("DualPipe Studio"));
    QApplication::setApplicationVersion(QStringLiteral(DPS_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("dualpipe-studio"));
    dps::ui::initStudioResources();
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/dualpipe-studio.svg")));

    dps::ui::StudioOptions options;
    QString error;
    if (!dps::ui::parseStudioOptions(QApplication::arguments(), options, error)) {
        std::fprintf(stderr, "dualpipe-studio: %s (try --help)\n", qPrintable(error));
        return 2;
    }
    return dps::ui::runStudio(options);
}
