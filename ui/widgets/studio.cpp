#include "widgets/studio.h"

#include "widgets/compareview.h"
#include "widgets/filecontroller.h"
#include "widgets/mainwindow.h"
#include "widgets/memorychart.h"
#include "widgets/runworkspace.h"
#include "widgets/theme.h"
#include "widgets/timelineview.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QImage>
#include <QSettings>

#include <cstdio>
#include <cstring>

static void initUiResources()
{
    Q_INIT_RESOURCE(studio);
}

namespace dps::ui {

bool wantsScreenshot(int argc, char** argv)
{
    for (int i = 1; i < argc; ++i)
        if (std::strncmp(argv[i], "--screenshot", 12) == 0 || std::strncmp(argv[i], "--compare-screenshot", 20) == 0)
            return true;
    return false;
}

void initStudioResources()
{
    initUiResources();
}

bool parseStudioOptions(const QStringList& arguments, StudioOptions& options, QString& error)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(QObject::tr("Design, simulate and compare pipeline-parallel schedules."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("project"), QObject::tr("A project file (*.dpstudio.json) to open."),
        QStringLiteral("[PROJECT]"));
    const QCommandLineOption shot(QStringLiteral("screenshot"),
        QObject::tr("Render the main window offscreen to <file> (PNG) and exit."), QStringLiteral("file"));
    const QCommandLineOption compare(QStringLiteral("compare-screenshot"),
        QObject::tr("Render the comparison view offscreen to <file> (PNG) and exit."), QStringLiteral("file"));
    const QCommandLineOption measured(QStringLiteral("measured"),
        QObject::tr("Overlay a run's measured trace (measured.json of `dpstudio run`) on the prediction."),
        QStringLiteral("file"));
    const QCommandLineOption theme(
        QStringLiteral("theme"), QObject::tr("Palette: system, light or dark."), QStringLiteral("mode"));
    const QCommandLineOption size(
        QStringLiteral("size"), QObject::tr("Screenshot size, e.g. 1600x1000."), QStringLiteral("WxH"));
    const QCommandLineOption panel(QStringLiteral("panel"),
        QObject::tr("Raise a panel first: project, model, cluster, partition, metrics, memory, run."),
        QStringLiteral("name"));
    const QCommandLineOption memoryView(QStringLiteral("memory-view"),
        QObject::tr("The memory chart's view: all (every rank over time), ranks (every rank's parts at its peak) or "
                    "a rank number."),
        QStringLiteral("view"));
    const QCommandLineOption zoomSlot(QStringLiteral("zoom-slot"),
        QObject::tr("Zoom the timeline onto the slot at position P of rank R (an overlapped F&B slot then shows its "
                    "two lanes)."),
        QStringLiteral("R:P"));
    const QCommandLineOption path(
        QStringLiteral("critical-path"), QObject::tr("Turn on the timeline's critical path (View → Critical Path)."));
    const QCommandLineOption comms(QStringLiteral("comms"),
        QObject::tr("Turn on the timeline's sends and receives (View → Sends and Receives): PyTorch's lowering of "
                    "the schedule, its sends and receives timed where they sit."));
    parser.addOptions({ shot, compare, measured, theme, size, panel, memoryView, zoomSlot, path, comms });
    if (!parser.parse(arguments)) {
        error = parser.errorText();
        return false;
    }
    if (parser.isSet(QStringLiteral("help")))
        parser.showHelp(0);
    if (parser.isSet(QStringLiteral("version")))
        parser.showVersion();
    options.screenshot = parser.value(shot);
    options.compareScreenshot = parser.value(compare);
    options.theme = parser.value(theme);
    options.measured = parser.value(measured);
    options.project = parser.positionalArguments().value(0);
    if (parser.positionalArguments().size() > 1) {
        error = QObject::tr("one project at most (got %1)").arg(parser.positionalArguments().size());
        return false;
    }
    options.panel = parser.value(panel);
    options.criticalPath = parser.isSet(path);
    options.comms = parser.isSet(comms);
    if (parser.isSet(memoryView)) {
        const QString view = parser.value(memoryView);
        bool number = false;
        const int rank = view.toInt(&number);
        if (view == QLatin1String("all"))
            options.memoryView = -1;
        else if (view == QLatin1String("ranks"))
            options.memoryView = MemoryChart::kPerRankParts;
        else if (number && rank >= 0)
            options.memoryView = rank;
        else {
            error = QObject::tr("--memory-view: expected all, ranks or a rank number, got '%1'").arg(view);
            return false;
        }
    }
    if (parser.isSet(zoomSlot)) {
        const QStringList rp = parser.value(zoomSlot).split(QLatin1Char(':'));
        bool okRank = false, okPosition = false;
        options.zoomRank = rp.value(0).toInt(&okRank);
        options.zoomPosition = rp.value(1).toInt(&okPosition);
        if (rp.size() != 2 || !okRank || !okPosition || options.zoomRank < 0 || options.zoomPosition < 0) {
            error = QObject::tr("--zoom-slot: expected RANK:POSITION, got '%1'").arg(parser.value(zoomSlot));
            return false;
        }
    }
    if (parser.isSet(size)) {
        const QStringList wh = parser.value(size).split(QLatin1Char('x'));
        options.size = QSize(wh.value(0).toInt(), wh.value(1).toInt());
        // At most 16384 a side: Qt's raster paint device refuses larger images (QPainter::begin fails).
        if (wh.size() != 2 || options.size.width() < 200 || options.size.height() < 200 || options.size.width() > 16384
            || options.size.height() > 16384) {
            error = QObject::tr("--size: expected WxH from 200x200 to 16384x16384, got '%1'").arg(parser.value(size));
            return false;
        }
    }
    return true;
}

namespace {

void settle(QWidget& window, const QSize& size)
{
    window.resize(size);
    window.show();
    QApplication::processEvents();
}

bool saveImage(const QImage& image, const QString& path)
{
    if (image.save(path))
        return true;
    std::fprintf(stderr, "dualpipe-studio: cannot write %s\n", qPrintable(path));
    return false;
}

int renderShots(MainWindow& window, const StudioOptions& options)
{
    if (!options.screenshot.isEmpty()
        && !saveImage(renderMainWindow(window, options.size, options), options.screenshot))
        return 2;
    if (!options.compareScreenshot.isEmpty()
        && !saveImage(renderCompareView(window, options.size), options.compareScreenshot))
        return 2;
    return 0;
}

} // namespace

QImage renderMainWindow(MainWindow& window, const QSize& size, const StudioOptions& view)
{
    if (view.comms)
        window.timeline()->commsAction()->setChecked(true);
    settle(window, size);
    window.waitUntilIdle();
    QApplication::processEvents();
    if (!view.panel.isEmpty() && !window.raisePanel(view.panel))
        std::fprintf(stderr, "dualpipe-studio: --panel: no panel named %s\n", qPrintable(view.panel));
    if (view.memoryView && !window.memoryChart()->setRank(*view.memoryView))
        std::fprintf(
            stderr, "dualpipe-studio: --memory-view: the project's active variant has no rank %d\n", *view.memoryView);
    if (view.criticalPath) {
        window.timeline()->setCriticalPathShown(true);
        window.runs()->overlayPanel()->showCriticalPathTab();
    }
    if (view.zoomRank >= 0)
        window.timeline()->zoomToBlock(view.zoomRank, view.zoomPosition);
    QApplication::processEvents();
    window.timeline()->replot();
    QApplication::processEvents();
    return window.grab().toImage();
}

QImage renderCompareView(MainWindow& window, const QSize& size)
{
    CompareView* view = window.compareView();
    settle(*view, size);
    window.showCompare();
    QApplication::processEvents();
    window.waitUntilIdle();
    QApplication::processEvents();
    return view->grab().toImage();
}

int runStudio(const StudioOptions& options)
{
    const QString savedTheme = QSettings().value(QStringLiteral("theme")).toString();
    const QString theme
        = !options.theme.isEmpty() ? options.theme : (options.headless() ? QStringLiteral("light") : savedTheme);
    MainWindow window;
    window.setThemeMode(parseThemeMode(theme));
    window.files()->setRemembersRecent(!options.headless());
    QString failure;
    QObject::connect(window.files(), &FileController::failed, [&failure](const QString& text) { failure = text; });
    if (!options.project.isEmpty() && !window.files()->openFile(options.project) && options.headless()) {
        std::fprintf(stderr, "dualpipe-studio: %s\n", qPrintable(failure));
        return 1;
    }
    if (!options.measured.isEmpty()) {
        window.waitUntilIdle();
        QString error;
        if (!window.runs()->loadMeasured(options.measured, &error) && options.headless()) {
            std::fprintf(stderr, "dualpipe-studio: %s\n", qPrintable(error));
            return 1;
        }
    }
    if (options.headless())
        return renderShots(window, options);
    window.restoreLayout();
    window.show();
    return QApplication::exec();
}

} // namespace dps::ui
