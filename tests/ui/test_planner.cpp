// The Planner panel, offscreen: the candidates' table model under QAbstractItemModelTester, sorted by
// its columns; the search run in the background with progress and cancel; the scatter (a graph per kind, the
// Pareto front, the selection) and "Add as variant" as one undoable edit; the memory field's parsing and its
// error; the comparison's step time, tokens/s and tokens/s per device and its "same devices" mode. With
// DPS_PLANNER_SCREENSHOT=FILE (and DPS_PLANNER_PROJECT=PROJECT, default: DeepSeek-V3 on 256 × 8 H800 built from
// the presets) one more test renders the panel planning 2048 devices, global batch 15360, 80 GB, to FILE.
#include "document/comparemodel.h"
#include "document/formatting.h"
#include "document/plannermodel.h"
#include "document/projectdocument.h"
#include "widgets/compareview.h"
#include "widgets/mainwindow.h"
#include "widgets/plannerpanel.h"

#include "project/presets.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QLoggingCategory>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QTest>

#include <qcustomplot.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

using namespace dps::ui;

namespace {

/// The default project (16 layers, sequence 128, microbatch 2; DualPipe on 8 ranks, DualPipeV on 4, 20
/// microbatches each) planned on 8 devices at its global batch 20 × 2 = 40 sequences, three kinds.
dps::PlanRequest smallRequest()
{
    dps::PlanRequest r;
    r.devices = 8;
    r.globalBatch = 40;
    r.kinds = { dps::ScheduleKind::OneFOneB, dps::ScheduleKind::DualPipe, dps::ScheduleKind::DualPipeV };
    return r;
}

/// Ticks exactly the kinds of smallRequest().
void chooseSmallKinds(PlannerPanel& panel)
{
    const auto& kinds = dps::generatedKinds();
    const auto wanted = smallRequest().kinds;
    for (std::size_t i = 0; i < kinds.size(); ++i)
        panel.kindBoxes()[i]->setChecked(std::count(wanted.begin(), wanted.end(), kinds[i]) > 0);
}

template <typename Body> void underTester(QAbstractItemModel* model, Body body)
{
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    body();
}

double valueAt(const PlannerModel& model, int row, int column)
{
    return model.data(model.index(row, column), PlannerModel::ValueRole).toDouble();
}

dps::Project deepseekOnH800()
{
    if (const char* path = std::getenv("DPS_PLANNER_PROJECT"))
        return dps::loadProject(path);
    ProjectDocument document;
    EXPECT_EQ(document.applyModelPreset(QStringLiteral("deepseek-v3")), QString());
    EXPECT_EQ(document.applyDevicePreset(QStringLiteral("h800")), QString());
    dps::Project p = document.project();
    p.cluster.nodes = 256;
    p.cluster.gpusPerNode = 8;
    return p;
}

} // namespace

TEST(PlannerModel, ShowsEveryCandidateAndSortsByAnyColumn)
{
    const auto result = std::make_shared<const dps::PlanResult>(dps::plan(dps::defaultProject(), smallRequest()));
    ASSERT_GE(result->candidates.size(), 3u);
    PlannerModel model;
    underTester(&model, [&] {
        EXPECT_EQ(model.rowCount(), 0);
        model.setResult(result, false);
        ASSERT_EQ(model.rowCount(), static_cast<int>(result->candidates.size()));
        EXPECT_EQ(model.columnCount(), PlannerModel::ColumnCount);
        for (int row = 0; row < model.rowCount(); ++row) {
            const dps::PlanCandidate& c = result->candidates[row];
            EXPECT_EQ(model.candidateAt(row), row) << "the planner's order: best step time first";
            EXPECT_EQ(valueAt(model, row, PlannerModel::Step), c.stepUs);
            EXPECT_EQ(model.data(model.index(row, PlannerModel::Step)).toString(), formatTime(c.stepUs));
            EXPECT_EQ(
                model.data(model.index(row, PlannerModel::PeakMemory)).toString(), formatBytes(c.peakMemoryBytes));
            EXPECT_EQ(model.data(model.index(row, PlannerModel::Microbatches)).toString(),
                QStringLiteral("%1 × %2").arg(c.microbatches).arg(c.microbatchSize));
            EXPECT_EQ(c.microbatches * c.microbatchSize * c.dp, 40) << "every candidate does the global batch";
            // 40 sequences × 128 tokens = 5120 tokens per step, over the step time.
            EXPECT_DOUBLE_EQ(valueAt(model, row, PlannerModel::TokensPerSecond), 5120.0 / c.stepUs * 1e6);
            EXPECT_DOUBLE_EQ(valueAt(model, row, PlannerModel::TokensPerSecondPerDevice), 5120.0 / c.stepUs * 1e6 / 8);
            EXPECT_EQ(model.data(model.index(row, PlannerModel::Recompute)).toString(), QStringLiteral("—"))
                << "the block model has no recompute policy";
            EXPECT_EQ(model.data(model.index(row, PlannerModel::Pareto)).toString().isEmpty(), !c.pareto);
        }
        EXPECT_LE(valueAt(model, 0, PlannerModel::Step), valueAt(model, model.rowCount() - 1, PlannerModel::Step));

        model.sort(PlannerModel::PeakMemory, Qt::AscendingOrder);
        for (int row = 1; row < model.rowCount(); ++row)
            EXPECT_LE(valueAt(model, row - 1, PlannerModel::PeakMemory), valueAt(model, row, PlannerModel::PeakMemory));
        for (int row = 0; row < model.rowCount(); ++row) {
            const int c = model.data(model.index(row, 0), PlannerModel::CandidateRole).toInt();
            EXPECT_EQ(model.rowOf(c), row);
            EXPECT_EQ(valueAt(model, row, PlannerModel::Step), result->candidates[c].stepUs);
        }
        model.sort(PlannerModel::TokensPerSecond, Qt::DescendingOrder);
        EXPECT_EQ(valueAt(model, 0, PlannerModel::Step), result->candidates[0].stepUs)
            << "the most tokens/s is the shortest step at a fixed global batch";
        model.sort(PlannerModel::Kind, Qt::AscendingOrder);
        for (int row = 1; row < model.rowCount(); ++row)
            EXPECT_LE(model.data(model.index(row - 1, PlannerModel::Kind)).toString(),
                model.data(model.index(row, PlannerModel::Kind)).toString());
        model.setResult(nullptr);
        EXPECT_EQ(model.rowCount(), 0);
    });
}

TEST(PlannerModel, PartitionTextShortensRuns)
{
    EXPECT_EQ(partitionText({ 1, 5, 5, 5, 2 }), QStringLiteral("1,5×3,2"));
    EXPECT_EQ(partitionText({ 4 }), QStringLiteral("4"));
    EXPECT_EQ(partitionText({ 2, 2, 1, 1 }), QStringLiteral("2×2,1×2"));
    EXPECT_EQ(partitionText({}), QString());
}

TEST(PlannerPanel, TheMemoryFieldTakesUnitsAndNamesWhatIsWrong)
{
    ProjectDocument document;
    PlannerPanel panel(&document);
    panel.memoryField()->setText(QStringLiteral("80GiB"));
    EXPECT_EQ(panel.memoryLimitBytes(), 80.0 * 1024 * 1024 * 1024);
    EXPECT_EQ(panel.memoryError()->text(), QStringLiteral("= 80 GiB"));
    panel.memoryField()->setText(QStringLiteral("80GB"));
    EXPECT_EQ(panel.memoryLimitBytes(), 80e9);
    panel.memoryField()->setText(QStringLiteral("80e9"));
    EXPECT_EQ(panel.memoryLimitBytes(), 80e9);
    EXPECT_EQ(panel.memoryError()->text(), QStringLiteral("= %1").arg(formatBytes(80e9)));
    panel.memoryField()->setText(QStringLiteral("80XB"));
    EXPECT_TRUE(panel.memoryError()->text().contains(QStringLiteral("memory limit")))
        << panel.memoryError()->text().toStdString();
    EXPECT_FALSE(panel.startPlan()) << "nothing starts with a bad limit";
    EXPECT_TRUE(panel.planButton()->isEnabled());
    panel.memoryField()->clear();
    EXPECT_EQ(panel.memoryLimitBytes(), 0.0) << "empty: the cluster's memory";
    EXPECT_TRUE(panel.memoryError()->text().isEmpty());
}

TEST(PlannerPanel, PlansInTheBackgroundDrawsTheFrontAndAddsTheSelectionAsOneUndoableEdit)
{
    ProjectDocument document;
    PlannerPanel panel(&document);
    panel.resize(1400, 800);
    panel.show();
    QApplication::processEvents();
    EXPECT_EQ(panel.devicesField()->value(), 8) << "the default project's DualPipe: 8 ranks × dp 1";
    EXPECT_EQ(panel.globalBatchField()->value(), 40) << "20 microbatches × 2 sequences";
    chooseSmallKinds(panel);
    ASSERT_TRUE(panel.startPlan());
    EXPECT_FALSE(panel.planButton()->isEnabled());
    EXPECT_TRUE(panel.cancelButton()->isEnabled());
    ASSERT_TRUE(panel.waitUntilIdle());
    EXPECT_TRUE(panel.planButton()->isEnabled());
    EXPECT_FALSE(panel.cancelButton()->isEnabled());
    EXPECT_EQ(panel.progressBar()->value(), 100);

    const PlanResultPtr result = panel.service()->current();
    ASSERT_TRUE(result);
    const dps::PlanResult expected = dps::plan(document.project(), smallRequest());
    ASSERT_EQ(result->candidates.size(), expected.candidates.size());
    EXPECT_EQ(result->candidates.front().stepUs, expected.candidates.front().stepUs);
    EXPECT_EQ(panel.model()->rowCount(), static_cast<int>(result->candidates.size()));
    EXPECT_TRUE(panel.summary()->text().contains(QStringLiteral("%1 simulated").arg(result->simulated)))
        << panel.summary()->text().toStdString();

    // One scatter per kind, each point at (peak memory, step time) of its candidate; the front; the selection.
    std::size_t points = 0, onFront = 0;
    for (dps::ScheduleKind kind : smallRequest().kinds) {
        const auto mine = std::count_if(result->candidates.begin(), result->candidates.end(),
            [&](const dps::PlanCandidate& c) { return c.kind == kind; });
        QCPGraph* graph = panel.kindGraph(kind);
        ASSERT_EQ(graph != nullptr, mine > 0);
        if (graph) {
            EXPECT_EQ(graph->dataCount(), mine);
            EXPECT_EQ(graph->name(), QString::fromUtf8(dps::kindDisplayName(kind).data()));
            points += static_cast<std::size_t>(graph->dataCount());
        }
    }
    EXPECT_EQ(points, result->candidates.size());
    for (const auto& c : result->candidates)
        onFront += c.pareto ? 1 : 0;
    ASSERT_TRUE(panel.paretoGraph());
    EXPECT_EQ(static_cast<std::size_t>(panel.paretoGraph()->dataCount()), onFront);
    EXPECT_EQ(panel.paretoGraph()->lineStyle(), QCPGraph::lsStepLeft);
    ASSERT_EQ(panel.selectionGraph()->dataCount(), 1) << "the best candidate is selected";
    EXPECT_EQ(panel.selectionGraph()->data()->at(0)->value, result->candidates[0].stepUs);

    ASSERT_GE(result->candidates.size(), 2u);
    // Clicking a point selects its candidate's row (the point farthest from the others, so that no neighbour is hit).
    panel.plot()->replot();
    const double divisor
        = panel.plot()->xAxis->label().contains(QStringLiteral("GiB")) ? 1024.0 * 1024 * 1024 : 1024.0 * 1024;
    std::vector<QPointF> pixels;
    for (const auto& c : result->candidates)
        pixels.push_back(panel.kindGraph(c.kind)->coordsToPixels(c.peakMemoryBytes / divisor, c.stepUs));
    int loneliest = 0;
    double loneliestGap = -1.0;
    for (std::size_t i = 0; i < pixels.size(); ++i) {
        double gap = 1e9;
        for (std::size_t j = 0; j < pixels.size(); ++j)
            if (i != j)
                gap = std::min(gap, QLineF(pixels[i], pixels[j]).length());
        if (gap > loneliestGap) {
            loneliestGap = gap;
            loneliest = static_cast<int>(i);
        }
    }
    ASSERT_GT(loneliestGap, 10.0) << "a point apart from the others";
    QTest::mouseClick(panel.plot(), Qt::LeftButton, {}, pixels[loneliest].toPoint());
    EXPECT_EQ(panel.selectedCandidates(), (std::vector<int> { loneliest }));
    panel.selectCandidates({ 1, 0 });
    EXPECT_EQ(panel.selectedCandidates(), (std::vector<int> { 0, 1 }));
    EXPECT_EQ(panel.selectionGraph()->dataCount(), 2);
    EXPECT_EQ(panel.addButton()->text(), QStringLiteral("Add 2 as Variants"));

    const auto before = document.project().variants.size();
    EXPECT_EQ(panel.addSelectedAsVariants(), QString());
    ASSERT_EQ(document.project().variants.size(), before + 2);
    EXPECT_EQ(document.project().variants[before].name, result->candidates[0].variant.name);
    EXPECT_EQ(document.activeName().toStdString(), result->candidates[0].variant.name);
    EXPECT_EQ(document.project().variants[before + 1].microbatches, result->candidates[1].microbatches);
    EXPECT_EQ(document.project().variants[before + 1].dp, result->candidates[1].dp);
    // The added variant predicts the candidate's step time exactly (the planner's promise, through the document).
    const dps::Prediction added = dps::predict(document.project(), result->candidates[0].variant.name);
    EXPECT_EQ(added.stepUs, result->candidates[0].stepUs);
    document.undoStack()->undo();
    EXPECT_EQ(document.project().variants.size(), before) << "one edit: one undo";
}

TEST(PlannerPanel, NothingFitsNamesTheSmallestPeakAndWhere)
{
    ProjectDocument document;
    PlannerPanel panel(&document);
    chooseSmallKinds(panel);
    panel.memoryField()->setText(QStringLiteral("1MiB"));
    ASSERT_TRUE(panel.startPlan());
    ASSERT_TRUE(panel.waitUntilIdle());
    const PlanResultPtr result = panel.service()->current();
    ASSERT_TRUE(result);
    ASSERT_TRUE(result->candidates.empty());
    ASSERT_GT(result->smallestPeakBytes, 1024.0 * 1024.0);
    EXPECT_EQ(result->memoryLimitBytes, 1024.0 * 1024.0);
    EXPECT_EQ(panel.model()->rowCount(), 0);
    EXPECT_TRUE(panel.summary()->text().contains(
        QStringLiteral("Nothing fits 1 MiB: the smallest peak memory is %1 (%2, rank %3)")
            .arg(formatBytes(result->smallestPeakBytes), QString::fromStdString(result->smallestPeakCandidate))
            .arg(result->smallestPeakRank)))
        << panel.summary()->text().toStdString();
    EXPECT_FALSE(panel.addButton()->isEnabled());
    EXPECT_EQ(
        panel.addSelectedAsVariants(), QStringLiteral("Select one or more candidates in the table or the plot first."));
    EXPECT_EQ(panel.kindGraph(dps::ScheduleKind::DualPipe), nullptr);
    EXPECT_EQ(panel.paretoGraph(), nullptr);
}

TEST(PlannerPanel, CancelStopsTheSearchAndShowsWhatItHad)
{
    ProjectDocument document;
    document.reset(deepseekOnH800());
    PlannerPanel panel(&document);
    panel.devicesField()->setValue(2048);
    panel.globalBatchField()->setValue(15360);
    panel.memoryField()->setText(QStringLiteral("80GB"));
    ASSERT_TRUE(panel.startPlan());
    panel.cancelPlan(); // before the worker's first candidate: its progress callback answers false
    ASSERT_TRUE(panel.waitUntilIdle());
    const PlanResultPtr result = panel.service()->current();
    ASSERT_TRUE(result);
    EXPECT_TRUE(result->cancelled);
    EXPECT_LT(result->simulated, result->enumerated);
    EXPECT_TRUE(panel.summary()->text().startsWith(QStringLiteral("Cancelled")))
        << panel.summary()->text().toStdString();
    EXPECT_TRUE(panel.planButton()->isEnabled());
}

TEST(CompareModel, StepTimeTokensPerSecondAndTheSameDevicesMode)
{
    const dps::Project project = dps::defaultProject();
    CompareModel model;
    auto compare = std::make_shared<CompareSnapshot>();
    for (const auto& v : project.variants)
        compare->variants.push_back(computeSnapshot(project, v.name, 1));
    model.setSnapshot(compare);
    const auto value = [&](int metric, int column) {
        return model.data(model.index(metric, column), CompareModel::ValueRole).toDouble();
    };
    // 20 microbatches × 2 sequences × 128 tokens × dp 1 = 5120 tokens per step for both variants.
    for (int column : { 1, 2 }) {
        const double step = value(CompareModel::StepTime, column);
        ASSERT_GT(step, 0.0);
        EXPECT_GE(step, value(CompareModel::Makespan, column));
        EXPECT_DOUBLE_EQ(value(CompareModel::TokensPerSecond, column), 5120.0 / step * 1e6);
        EXPECT_EQ(model.data(model.index(CompareModel::TokensPerSecond, column)).toString(),
            formatCount(5120.0 / step * 1e6));
    }
    EXPECT_EQ(value(CompareModel::Devices, 1), 8);
    EXPECT_EQ(value(CompareModel::Devices, 2), 4);
    EXPECT_DOUBLE_EQ(value(CompareModel::TokensPerSecondPerDevice, 1), value(CompareModel::TokensPerSecond, 1) / 8);
    EXPECT_DOUBLE_EQ(value(CompareModel::TokensPerSecondPerDevice, 2), value(CompareModel::TokensPerSecond, 2) / 4);

    // Same devices: DualPipeV moves onto 8 devices as 2 replicas of 10 microbatches (the same 5120 tokens).
    QStringList notes;
    const dps::Project same = onSameDevicesProject(project, &notes);
    EXPECT_TRUE(notes.isEmpty()) << notes.join(QLatin1Char('\n')).toStdString();
    ASSERT_EQ(same.variants.size(), 2u);
    EXPECT_EQ(same.variants[0].dp, 1);
    EXPECT_EQ(same.variants[0].microbatches, 20);
    EXPECT_EQ(same.variants[1].dp, 2);
    EXPECT_EQ(same.variants[1].microbatches, 10);
    auto sameCompare = std::make_shared<CompareSnapshot>();
    for (const auto& v : same.variants)
        sameCompare->variants.push_back(computeSnapshot(same, v.name, 1));
    model.setSnapshot(sameCompare);
    EXPECT_EQ(value(CompareModel::Devices, 1), 8);
    EXPECT_EQ(value(CompareModel::Devices, 2), 8);
    EXPECT_EQ(value(CompareModel::DataParallel, 2), 2);
    EXPECT_DOUBLE_EQ(value(CompareModel::TokensPerSecond, 2), 5120.0 / value(CompareModel::StepTime, 2) * 1e6);

    // 7 microbatches cannot be split over 2 replicas at the same global batch: the variant stays, the reason shown.
    dps::Project odd = project;
    odd.variants[1].microbatches = 7;
    notes.clear();
    const dps::Project kept = onSameDevicesProject(odd, &notes);
    ASSERT_EQ(notes.size(), 1);
    EXPECT_TRUE(notes[0].contains(QStringLiteral("dualpipev"))) << notes[0].toStdString();
    EXPECT_EQ(kept.variants[1].microbatches, 7);
    EXPECT_EQ(kept.variants[1].dp, 1);
}

TEST(MainWindow, PlannerDockAndTheComparisonsSameDevicesToggle)
{
    MainWindow window;
    window.setThemeMode(ThemeMode::Light);
    window.resize(1600, 1000);
    window.show();
    QApplication::processEvents();
    window.waitUntilIdle();
    ASSERT_TRUE(window.planner());
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("plannerDock"));
    ASSERT_TRUE(dock);
    EXPECT_FALSE(dock->isVisible()) << "hidden until asked for";
    window.showPlanner();
    QApplication::processEvents();
    EXPECT_TRUE(window.planner()->isVisible());

    window.showCompare();
    window.waitUntilIdle();
    CompareModel* model = window.compareView()->model();
    ASSERT_EQ(model->columnCount(), 3);
    EXPECT_EQ(model->data(model->index(CompareModel::Devices, 2), CompareModel::ValueRole).toInt(), 4);
    window.compareView()->sameDevicesBox()->setChecked(true);
    window.waitUntilIdle();
    EXPECT_EQ(model->data(model->index(CompareModel::Devices, 2), CompareModel::ValueRole).toInt(), 8);
    EXPECT_EQ(model->data(model->index(CompareModel::Microbatches, 2), CompareModel::ValueRole).toInt(), 10);
    window.compareView()->sameDevicesBox()->setChecked(false);
    window.waitUntilIdle();
    EXPECT_EQ(model->data(model->index(CompareModel::Devices, 2), CompareModel::ValueRole).toInt(), 4);
    window.compareView()->close();
}

TEST(PlannerPanel, TensorContextAndZeroFieldsRestrictTheSearchAndTheTableShowsThemWithMfu)
{
    // Llama 3 8B on 16 H100s: TP "2", CP "1", ZeRO "1, 3" give exactly the engine's search with those lists.
    dps::Project project = dps::defaultProject();
    const dps::ModelPreset preset = dps::modelPreset("llama3-8b");
    project.model = preset.model;
    project.model.layers = 8;
    project.training = preset.training;
    project.cluster = dps::devicePreset("h100-sxm");
    project.costs = dps::CostSettings {};
    for (dps::Variant& v : project.variants)
        v.layerPartition.clear();
    ProjectDocument document;
    document.reset(project);
    PlannerPanel panel(&document);
    panel.resize(1400, 800);
    panel.show();
    QApplication::processEvents();
    panel.devicesField()->setValue(16);
    panel.globalBatchField()->setValue(16);
    panel.tpField()->setText(QStringLiteral("2"));
    panel.cpField()->setText(QStringLiteral("1"));
    panel.zeroField()->setText(QStringLiteral("1, 3"));
    ASSERT_TRUE(panel.startPlan());
    ASSERT_TRUE(panel.waitUntilIdle());
    const PlanResultPtr result = panel.service()->current();
    ASSERT_TRUE(result);
    dps::PlanRequest request;
    request.devices = 16;
    request.globalBatch = 16;
    request.tps = { 2 };
    request.cps = { 1 };
    request.zeros = { 1, 3 };
    const dps::PlanResult expected = dps::plan(document.project(), request);
    ASSERT_FALSE(expected.candidates.empty());
    ASSERT_EQ(result->candidates.size(), expected.candidates.size());
    bool zero3 = false;
    for (int row = 0; row < panel.model()->rowCount(); ++row) {
        const dps::PlanCandidate& c = result->candidates[static_cast<std::size_t>(
            panel.model()->data(panel.model()->index(row, 0), PlannerModel::CandidateRole).toInt())];
        EXPECT_EQ(c.tp, 2);
        EXPECT_EQ(panel.model()->data(panel.model()->index(row, PlannerModel::Tp)).toString(), QStringLiteral("2"));
        EXPECT_EQ(panel.model()->data(panel.model()->index(row, PlannerModel::Zero)).toInt(), c.zero);
        EXPECT_EQ(panel.model()->data(panel.model()->index(row, PlannerModel::Mfu)).toString(), formatPercent(c.mfu));
        zero3 = zero3 || c.zero == 3;
    }
    EXPECT_TRUE(zero3);
    EXPECT_EQ(PlannerModel::columnName(PlannerModel::Mfu), QStringLiteral("MFU"));

    // A list that is not one names its field; the model's refusal of a size is the engine's message.
    panel.tpField()->setText(QStringLiteral("2,x"));
    EXPECT_FALSE(panel.startPlan());
    EXPECT_TRUE(panel.summary()->text().startsWith(QStringLiteral("TP: 'x' is not a size")))
        << panel.summary()->text().toStdString();
    panel.tpField()->setText(QStringLiteral("3"));
    ASSERT_TRUE(panel.startPlan());
    ASSERT_TRUE(panel.waitUntilIdle());
    EXPECT_TRUE(panel.summary()->text().contains(QStringLiteral("3 does not divide model.heads 32")))
        << panel.summary()->text().toStdString();
}

// Renders the docs' picture (docs/images/planner-deepseek-v3.png); only when DPS_PLANNER_SCREENSHOT names a file.
TEST(PlannerPanel, ScreenshotOfDeepSeekV3On2048H800)
{
    const char* out = std::getenv("DPS_PLANNER_SCREENSHOT");
    if (!out)
        GTEST_SKIP() << "set DPS_PLANNER_SCREENSHOT=FILE to render the planner's screenshot";
    applyThemeMode(ThemeMode::Light);
    ProjectDocument document;
    document.reset(deepseekOnH800());
    PlannerPanel panel(&document);
    panel.resize(1600, 1000);
    panel.show();
    QApplication::processEvents();
    panel.devicesField()->setValue(2048);
    panel.globalBatchField()->setValue(15360); // DeepSeek-V3 report §4.2: the batch at the end of pre-training
    panel.memoryField()->setText(QStringLiteral("80GB"));
    ASSERT_TRUE(panel.startPlan());
    ASSERT_TRUE(panel.waitUntilIdle(300000));
    ASSERT_TRUE(panel.service()->current());
    ASSERT_FALSE(panel.service()->current()->candidates.empty()) << "DeepSeek-V3 on 2048 H800s fits 80 GB";
    QApplication::processEvents();
    panel.plot()->replot();
    ASSERT_TRUE(panel.grab().toImage().save(QString::fromUtf8(out)));
}
