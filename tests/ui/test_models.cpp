// Every item model of the designer under QAbstractItemModelTester, through the edits that change it; the
// document's undo/redo; the newest-request-wins runner; the snapshot of a 16 × 64 schedule within a frame.
#include "document/comparemodel.h"
#include "document/diagnosticsmodel.h"
#include "document/latestjobrunner.h"
#include "document/partitionmodel.h"
#include "document/projectdocument.h"
#include "document/rankmetricsmodel.h"
#include "document/simulationservice.h"
#include "document/stagecostmodel.h"
#include "document/variantlistmodel.h"

#include <QAbstractItemModelTester>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QLoggingCategory>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

using namespace dps::ui;

namespace {

/// Collects the tester's failure messages (it reports them as warnings in category qt.modeltest).
class TesterFailures {
public:
    TesterFailures()
    {
        s_failures.clear();
        s_previous = qInstallMessageHandler(&TesterFailures::handle);
    }
    ~TesterFailures() { qInstallMessageHandler(s_previous); }
    const QStringList& failures() const { return s_failures; }

private:
    static void handle(QtMsgType type, const QMessageLogContext& context, const QString& message)
    {
        if (context.category && QByteArray(context.category) == "qt.modeltest" && type != QtDebugMsg)
            s_failures << message;
        else if (s_previous)
            s_previous(type, context, message);
    }
    static inline QStringList s_failures;
    static inline QtMessageHandler s_previous = nullptr;
};

/// Runs `body` with the model under the tester and expects no failure.
template <typename Body> void underTester(QAbstractItemModel* model, Body body)
{
    TesterFailures failures;
    {
        QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::Warning);
        body();
    }
    EXPECT_TRUE(failures.failures().isEmpty()) << failures.failures().join(QLatin1Char('\n')).toStdString();
}

SnapshotPtr snapshotOf(const dps::Project& project, const std::string& variant)
{
    return computeSnapshot(project, variant, 1);
}

} // namespace

TEST(VariantListModel, PassesTheTesterThroughAddRenameRemoveUndo)
{
    ProjectDocument document;
    VariantListModel model(&document);
    underTester(&model, [&] {
        EXPECT_EQ(model.rowCount(), 2);
        EXPECT_EQ(model.columnCount(), VariantListModel::ColumnCount);
        EXPECT_TRUE(model.data(model.index(0, 0), VariantListModel::ActiveRole).toBool());
        const QString added = document.addVariant();
        EXPECT_EQ(model.rowCount(), 3);
        EXPECT_EQ(document.activeName(), added);
        EXPECT_TRUE(model.setData(model.index(2, VariantListModel::Name), QStringLiteral("mine")));
        EXPECT_EQ(model.nameAt(2), QStringLiteral("mine"));
        EXPECT_FALSE(model.setData(model.index(2, VariantListModel::Name), QStringLiteral("dualpipe")))
            << "duplicate names are refused";
        EXPECT_FALSE(model.setData(model.index(2, VariantListModel::Name), QStringLiteral("  ")));
        document.removeVariant(QStringLiteral("mine"));
        EXPECT_EQ(model.rowCount(), 2);
        document.undoStack()->undo();
        EXPECT_EQ(model.rowCount(), 3);
        document.undoStack()->undo();
        EXPECT_EQ(model.nameAt(2), added);
        document.setActiveVariant(QStringLiteral("dualpipev"));
        EXPECT_TRUE(model.data(model.index(1, 0), VariantListModel::ActiveRole).toBool());
    });
}

TEST(StageCostModel, TypedCostsOverrideAndClear)
{
    ProjectDocument document;
    StageCostModel model(&document);
    underTester(&model, [&] {
        ASSERT_EQ(model.rowCount(), 8);
        const QModelIndex f0 = model.index(0, StageCostModel::Forward);
        const double derived = model.data(f0, Qt::DisplayRole).toString().toDouble();
        EXPECT_GT(derived, 0.0);
        EXPECT_FALSE(model.data(f0, StageCostModel::OverrideRole).toBool());
        EXPECT_TRUE(model.setData(f0, QStringLiteral("123.5")));
        EXPECT_TRUE(model.data(model.index(0, StageCostModel::Forward), StageCostModel::OverrideRole).toBool());
        EXPECT_DOUBLE_EQ(*document.project().costs.stages[0].forwardUs, 123.5);
        EXPECT_FALSE(model.setData(model.index(0, StageCostModel::Forward), QStringLiteral("-1")));
        EXPECT_FALSE(model.setData(model.index(0, StageCostModel::Stage), QStringLiteral("5")));
        EXPECT_TRUE(model.setData(model.index(0, StageCostModel::Forward), QString()));
        EXPECT_FALSE(document.project().costs.stages[0].forwardUs.has_value());
        document.setActiveVariant(QStringLiteral("dualpipev"));
        EXPECT_EQ(model.rowCount(), 8);
        document.setVariantShape(dps::ScheduleKind::OneFOneB, 4, 8, 0);
        EXPECT_EQ(model.rowCount(), 4) << "1F1B on 4 ranks has 4 stages";
    });
}

TEST(PartitionModel, TypedCountsKeepTheTotal)
{
    ProjectDocument document;
    PartitionModel model(&document);
    underTester(&model, [&] {
        ASSERT_EQ(model.rowCount(), 8);
        EXPECT_TRUE(model.setData(model.index(0, PartitionModel::Layers), 3));
        EXPECT_EQ(document.activeVariant().layerPartition, (std::vector<int> { 3, 1, 2, 2, 2, 2, 2, 2 }));
        EXPECT_FALSE(model.setData(model.index(0, PartitionModel::Layers), 9)) << "the next stage cannot give 6";
        EXPECT_TRUE(model.setData(model.index(7, PartitionModel::Layers), 4)) << "the last stage borrows backwards";
        EXPECT_EQ(document.activeVariant().layerPartition, (std::vector<int> { 3, 1, 2, 2, 2, 2, 0, 4 }));
        model.setSnapshot(snapshotOf(document.project(), document.activeVariant().name));
        EXPECT_EQ(model.data(model.index(0, PartitionModel::Ranks)).toString(), QStringLiteral("0, 7"))
            << "DualPipe holds stage 0 on ranks 0 and 7";
        EXPECT_GT(model.data(model.index(0, PartitionModel::StageTime), Qt::EditRole).toDouble(), 0.0);
        document.undoStack()->undo();
        document.undoStack()->undo();
        EXPECT_EQ(model.partition(), std::vector<int>(8, 2));
    });
}

TEST(DiagnosticsModel, ListsTheValidatorsFindings)
{
    ProjectDocument document;
    DiagnosticsModel model;
    underTester(&model, [&] {
        model.setSnapshot(snapshotOf(document.project(), "dualpipe"));
        EXPECT_EQ(model.rowCount(), 0);
        const int last
            = static_cast<int>(dps::buildSchedule(document.project(), document.activeVariant()).order[0].size()) - 1;
        document.moveAction(0, 0, last);
        const auto broken = snapshotOf(document.project(), "dualpipe");
        model.setSnapshot(broken);
        EXPECT_GT(model.rowCount(), 0);
        EXPECT_GT(model.errorCount(), 0);
        EXPECT_FALSE(model.data(model.index(0, DiagnosticsModel::Message)).toString().isEmpty());
        document.setVariantShape(dps::ScheduleKind::DualPipe, 7, 20, 0);
        model.setSnapshot(snapshotOf(document.project(), "dualpipe"));
        ASSERT_EQ(model.rowCount(), 1) << "a size that cannot be built is one finding";
        EXPECT_EQ(model.data(model.index(0, DiagnosticsModel::Rank), DiagnosticsModel::RankRole).toInt(), -1);
        model.setSnapshot(nullptr);
        EXPECT_EQ(model.rowCount(), 0);
    });
}

TEST(RankMetricsModel, OneRowPerRank)
{
    ProjectDocument document;
    RankMetricsModel model;
    underTester(&model, [&] {
        model.setSnapshot(snapshotOf(document.project(), "dualpipe"));
        ASSERT_EQ(model.rowCount(), 8);
        EXPECT_GT(model.data(model.index(3, RankMetricsModel::Busy), RankMetricsModel::ValueRole).toDouble(), 0.0);
        EXPECT_EQ(model.data(model.index(0, RankMetricsModel::PeakInflight), RankMetricsModel::ValueRole).toInt(), 9)
            << "DualPipe's peak in-flight is PP + 1";
        model.setSnapshot(snapshotOf(document.project(), "dualpipev"));
        EXPECT_EQ(model.rowCount(), 4);
    });
}

TEST(CompareModel, ColumnsAreVariants)
{
    ProjectDocument document;
    CompareModel model;
    underTester(&model, [&] {
        EXPECT_EQ(model.columnCount(), 1);
        auto compare = std::make_shared<CompareSnapshot>();
        for (const auto& v : document.project().variants)
            compare->variants.push_back(snapshotOf(document.project(), v.name));
        model.setSnapshot(compare);
        EXPECT_EQ(model.columnCount(), 3);
        EXPECT_EQ(model.rowCount(), CompareModel::MetricCount);
        EXPECT_EQ(model.headerData(1, Qt::Horizontal).toString(), QStringLiteral("dualpipe"));
        EXPECT_EQ(model.data(model.index(CompareModel::Devices, 1), CompareModel::ValueRole).toInt(), 8);
        EXPECT_EQ(model.data(model.index(CompareModel::Devices, 2), CompareModel::ValueRole).toInt(), 4);
        const double dp
            = model.data(model.index(CompareModel::ParametersPerDevice, 1), CompareModel::ValueRole).toDouble();
        const double dpv
            = model.data(model.index(CompareModel::ParametersPerDevice, 2), CompareModel::ValueRole).toDouble();
        EXPECT_DOUBLE_EQ(dpv, dp) << "both hold two stages of 2 layers per device";
        model.setSnapshot(nullptr);
        EXPECT_EQ(model.columnCount(), 1);
    });
}

TEST(ProjectDocument, EveryEditIsUndoable)
{
    ProjectDocument document;
    const std::string original = dps::serializeProject(document.project());
    EXPECT_FALSE(document.isModified());
    document.edit(
        QStringLiteral("layers"), [](dps::Project& p) { p.model.layers = 24; }, 7);
    document.edit(
        QStringLiteral("layers"), [](dps::Project& p) { p.model.layers = 32; }, 7);
    EXPECT_EQ(document.undoStack()->count(), 1) << "edits of one field merge";
    EXPECT_TRUE(document.activeVariant().layerPartition.empty()) << "a partition that no longer sums is dropped";
    document.setVariantShape(dps::ScheduleKind::OneFOneB, 4, 8, 0);
    document.regenerate();
    document.moveAction(0, 0, 1);
    EXPECT_TRUE(document.activeVariant().order.has_value());
    document.regenerate();
    EXPECT_FALSE(document.activeVariant().order.has_value());
    EXPECT_TRUE(document.isModified());
    while (document.undoStack()->canUndo())
        document.undoStack()->undo();
    EXPECT_EQ(dps::serializeProject(document.project()), original);
    EXPECT_FALSE(document.isModified());
    EXPECT_EQ(document.displayName(), QStringLiteral("untitled"));
}

TEST(LatestJobRunner, TheNewestRequestWins)
{
    LatestJobRunner runner;
    std::vector<int> delivered;
    for (int i = 0; i < 5; ++i)
        runner.submit([i, &delivered]() -> std::function<void()> {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            return [i, &delivered] { delivered.push_back(i); };
        });
    ASSERT_TRUE(runner.waitUntilIdle(5000));
    ASSERT_FALSE(delivered.empty());
    EXPECT_EQ(delivered.back(), 4);
    EXPECT_EQ(delivered.size(), 1u) << "superseded results are dropped";
}

TEST(SimulationService, DeliversSnapshotsOffTheGuiThread)
{
    ProjectDocument document;
    SimulationService service;
    int delivered = 0;
    QObject::connect(&service, &SimulationService::snapshotChanged, [&] { ++delivered; });
    service.request(document.project(), "dualpipe");
    service.request(document.project(), "dualpipev");
    ASSERT_TRUE(service.waitUntilIdle());
    ASSERT_TRUE(service.current());
    EXPECT_EQ(service.current()->variantName, "dualpipev");
    EXPECT_TRUE(service.current()->valid());
    EXPECT_GE(delivered, 1);
}

TEST(Snapshot, SixteenRanksBySixtyFourMicrobatchesWithinAFrame)
{
    dps::Project project = dps::defaultProject();
    project.model.layers = 32;
    project.variants[0].ranks = 16;
    project.variants[0].microbatches = 64;
    project.variants[0].layerPartition.clear();
    double best = 1e9;
    for (int i = 0; i < 5; ++i) {
        QElapsedTimer timer;
        timer.start();
        const auto s = computeSnapshot(project, "dualpipe", 1);
        best = std::min(best, timer.nsecsElapsed() / 1e6);
        ASSERT_TRUE(s->valid()) << s->error;
        EXPECT_EQ(s->blocks.rankCount(), 16);
    }
    EXPECT_LT(best, 16.0) << "build + validate + simulate + layout of 16 × 64 took " << best << " ms";
}

TEST(Snapshot, AnInvalidOrderIsLaidOutInListOrderWithTheOffendersMarked)
{
    dps::Project project = dps::defaultProject();
    const auto good = computeSnapshot(project, "dualpipe", 1);
    ASSERT_TRUE(good->valid());
    auto order = dps::buildSchedule(project, project.variants[0]).order;
    std::rotate(order[0].begin(), order[0].begin() + 1, order[0].end());
    project.variants[0].order = order;
    const auto bad = computeSnapshot(project, "dualpipe", 2, good.get());
    EXPECT_FALSE(bad->valid());
    EXPECT_FALSE(bad->timed);
    EXPECT_EQ(bad->blocks.rankCount(), 8);
    EXPECT_EQ(bad->blocks.blocks(0).size(), order[0].size());
    bool marked = false;
    for (int r = 0; r < 8; ++r)
        for (const auto& b : bad->blocks.blocks(r))
            marked = marked || b.invalid;
    EXPECT_TRUE(marked);
    EXPECT_EQ(describeWait(*bad, 0, 0), "not simulated: the order is invalid");
    EXPECT_NE(describeWait(*good, 1, 0).find("rank"), std::string::npos);
}
