#pragma once
// What app/studio/main.cpp calls: the command line of dualpipe-studio as a value type, and running the
// window (or rendering it offscreen for --screenshot / --compare-screenshot).
#include <QSize>
#include <QString>
#include <QStringList>

#include <optional>

class QImage;

namespace dps::ui {

class MainWindow;

struct StudioOptions {
    QString project; ///< a project file to open; empty = the embedded default project
    QString screenshot; ///< --screenshot FILE: render the main window to FILE and exit
    QString compareScreenshot; ///< --compare-screenshot FILE: render the comparison view to FILE and exit
    QString measured; ///< --measured FILE: overlay this measured.json (a run's trace) on the prediction
    QString theme; ///< --theme system|light|dark (default: the saved choice; light for screenshots)
    QSize size { 1600, 1000 }; ///< --size WxH of a screenshot
    QString panel; ///< --panel NAME: raise that dock first ("model", "cluster", "project", ...)
    std::optional<int> memoryView; ///< --memory-view all|ranks|N: MemoryChart::setRank's value (-1, -2, N)
    int zoomRank = -1; ///< --zoom-slot R:P: zoom the timeline onto slot P of rank R (−1: fitted)
    int zoomPosition = -1;
    bool criticalPath = false; ///< --critical-path: the timeline's "Critical path" toggle on
    bool comms = false; ///< --comms: the timeline's "Sends and Receives" toggle on
    bool headless() const { return !screenshot.isEmpty() || !compareScreenshot.isEmpty(); }
};

/// True when argv asks for a screenshot (checked before the QApplication exists, to pick the offscreen
/// platform).
bool wantsScreenshot(int argc, char** argv);

/// Parses the arguments (argv without the program name is fine too). On a usage error returns false and
/// sets `error`; --help and --version are handled by printing and exiting.
bool parseStudioOptions(const QStringList& arguments, StudioOptions& options, QString& error);

/// Loads the embedded icons and resources of the ui library (call once after the QApplication exists).
void initStudioResources();

/// Opens the window (or renders the screenshots) and runs the event loop; returns the exit code.
int runStudio(const StudioOptions& options);

/// Renders the whole main window at `size` after the simulation settled, with the panel, memory view and
/// zoom of `view` (its panel, memoryView, zoomRank, zoomPosition, criticalPath and comms; the defaults change
/// nothing).
QImage renderMainWindow(MainWindow& window, const QSize& size, const StudioOptions& view = {});
/// Renders the comparison view at `size` after every variant and the sweep settled.
QImage renderCompareView(MainWindow& window, const QSize& size);

} // namespace dps::ui
