#pragma once
// RankProgressWidget: one thin bar per rank ("rank 2 ▕████░░░▏ step 3/4 · 12/40"), painted in one
// widget so a run with many ranks stays compact. A rank named by an error event is drawn in red.
#include "run/progressstream.h"

#include <QWidget>

class QPainter;

namespace dps::ui {

class RankProgressWidget : public QWidget {
    Q_OBJECT
public:
    explicit RankProgressWidget(QWidget* parent = nullptr);

    void setProgress(const RunProgress& progress);
    /// Shows `ranks` empty rows (before a run starts: how many ranks will run).
    void setRankCount(int ranks);
    const RunProgress& progress() const { return m_progress; }
    /// Height of one rank's row in pixels.
    int rowHeight() const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    void paintRow(QPainter& painter, const RankProgress& rank, int y, int labelWidth, int textWidth) const;
    QString rowText(const RankProgress& rank) const;

    RunProgress m_progress;
};

} // namespace dps::ui
