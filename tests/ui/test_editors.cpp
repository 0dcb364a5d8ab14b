// The designer's model library (model and device presets), offscreen: choosing a model or device preset sets every
// field and undo restores the project; a value the engine refuses (top_k above experts, kv_heads not dividing heads, dp
// that the expert-parallel group does not divide, an unknown preset) shows the engine's message and leaves the project
// unchanged; a per-operation rate of the cluster changes the makespan and undo restores both; a zoomed F&B slot of
// DeepSeek-V3 is drawn as its two lanes with the all-to-all in its tooltip; the memory view's per-rank bars name the
// heaviest rank; the screenshot flags.
#include "document/formatting.h"
#include "document/memorybreakdown.h"
#include "document/projectdocument.h"
#include "widgets/clustereditor.h"
#include "widgets/fieldbinder.h"
#include "widgets/mainwindow.h"
#include "widgets/memorychart.h"
#include "widgets/modeleditor.h"
#include "widgets/projectpanel.h"
#include "widgets/studio.h"
#include "widgets/timelineview.h"

#include "model/transformer.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGroupBox>
#include <QLabel>
#include <QSpinBox>
#include <QTableWidget>

#include <gtest/gtest.h>

#include <algorithm>

using namespace dps::ui;

namespace {

struct Fixture {
    MainWindow window;
    Fixture()
    {
        window.setThemeMode(ThemeMode::Light);
        window.resize(1600, 1000);
        window.show();
        QApplication::processEvents();
        window.waitUntilIdle();
        QApplication::processEvents();
    }
    ProjectDocument* document() { return window.document(); }
    const dps::Project& project() { return window.document()->project(); }
    ModelEditor* model() { return window.modelEditor(); }
    QSpinBox* spin(const QString& label) { return qobject_cast<QSpinBox*>(model()->field(label)); }
    QComboBox* combo(const QString& label) { return qobject_cast<QComboBox*>(model()->field(label)); }
    std::string saved() { return dps::serializeProject(project()); }
    /// DeepSeek-V3 on 16 H800 ranks (8 per node), DualPipe with 32 microbatches: the reference case.
    void deepseekOnH800()
    {
        document()->setVariantShape(dps::ScheduleKind::DualPipe, 16, 32, 0);
        ASSERT_EQ(model()->choosePreset(QStringLiteral("deepseek-v3")), QString());
        ASSERT_EQ(window.clusterEditor()->choosePreset(QStringLiteral("h800")), QString());
        window.waitUntilIdle();
        QApplication::processEvents();
        ASSERT_TRUE(window.snapshot());
        ASSERT_TRUE(window.snapshot()->valid()) << window.snapshot()->error;
    }
};

} // namespace

TEST(ModelEditor, ChoosingAPresetSetsTheFieldsAndUndoRestores)
{
    Fixture f;
    const std::string before = f.saved();
    ModelEditor* editor = f.model();
    ASSERT_EQ(editor->choosePreset(QStringLiteral("deepseek-v3")), QString());
    f.window.waitUntilIdle(); // the totals and the stage table are computed off the GUI thread
    const dps::Project& p = f.project();
    EXPECT_EQ(p.model.kind, dps::ModelKind::Transformer);
    EXPECT_EQ(p.model.layers, 61);
    EXPECT_EQ(p.model.hidden, 7168);
    EXPECT_EQ(p.model.transformer.moe.experts, 256);
    EXPECT_TRUE(p.training.present);
    EXPECT_EQ(p.training.zero, 1);
    EXPECT_EQ(f.document()->undoStack()->count(), 1) << "a preset is one edit";
    // The fields show the preset (DeepSeek-V3 config.json: 61 layers, MLA ranks 1536/512, 256 experts top-8).
    EXPECT_EQ(editor->presetBox()->currentData().toString(), QStringLiteral("deepseek-v3"));
    EXPECT_EQ(f.combo(QStringLiteral("Kind"))->currentData().toInt(), 1);
    EXPECT_EQ(f.spin(QStringLiteral("Layers"))->value(), 61);
    EXPECT_EQ(f.spin(QStringLiteral("Hidden"))->value(), 7168);
    EXPECT_EQ(f.spin(QStringLiteral("Heads"))->value(), 128);
    EXPECT_EQ(f.spin(QStringLiteral("Vocabulary"))->value(), 129280);
    EXPECT_EQ(f.spin(QStringLiteral("Sequence length"))->value(), 4096);
    EXPECT_EQ(
        f.combo(QStringLiteral("Attention"))->currentData().toInt(), static_cast<int>(dps::model::Attention::MLA));
    EXPECT_EQ(f.spin(QStringLiteral("Q LoRA rank"))->value(), 1536);
    EXPECT_EQ(f.spin(QStringLiteral("KV LoRA rank"))->value(), 512);
    EXPECT_EQ(f.spin(QStringLiteral("Experts"))->value(), 256);
    EXPECT_EQ(f.spin(QStringLiteral("Top-k"))->value(), 8);
    EXPECT_EQ(f.spin(QStringLiteral("Expert FFN"))->value(), 2048);
    EXPECT_EQ(f.spin(QStringLiteral("Shared experts"))->value(), 1);
    EXPECT_EQ(f.spin(QStringLiteral("Dense layers"))->value(), 3);
    EXPECT_EQ(f.spin(QStringLiteral("EP group"))->value(), 64);
    EXPECT_EQ(f.spin(QStringLiteral("Nodes per token"))->value(), 4);
    EXPECT_EQ(f.combo(QStringLiteral("Dispatch dtype"))->currentText(), QStringLiteral("fp8"));
    EXPECT_EQ(f.combo(QStringLiteral("Combine dtype"))->currentText(), QStringLiteral("bf16"));
    EXPECT_EQ(f.combo(QStringLiteral("Adam moments"))->currentText(), QStringLiteral("bf16"));
    EXPECT_EQ(f.combo(QStringLiteral("ZeRO"))->currentData().toInt(), 1);
    EXPECT_TRUE(editor->field(QStringLiteral("Q LoRA rank"))->isVisibleTo(editor)) << "MLA shows its ranks";
    EXPECT_FALSE(editor->field(QStringLiteral("KV heads"))->isVisibleTo(editor)) << "and hides GQA's groups";
    // The totals are the engine's (model::totals), as formatCount writes them.
    const dps::model::Totals totals = dps::model::totals(dps::transformerOf(p.model));
    EXPECT_TRUE(editor->totalsText().contains(formatCount(totals.parametersTotal) + QStringLiteral("</b> parameters")))
        << editor->totalsText().toStdString();
    EXPECT_TRUE(editor->totalsText().contains(formatCount(totals.parametersActive) + QStringLiteral("</b> active")))
        << editor->totalsText().toStdString();
    EXPECT_TRUE(editor->totalsText().startsWith(QStringLiteral("<b>671."))) << editor->totalsText().toStdString();
    EXPECT_EQ(editor->stageTable()->rowCount(), 8) << "the default dualpipe variant's 8 stages";

    f.document()->undoStack()->undo();
    f.window.waitUntilIdle();
    EXPECT_EQ(f.saved(), before);
    // The default block model: 16 × 2·512·2048 = 33554432 parameters, 3 × 2 × that = 201326592 FLOPs per token.
    EXPECT_EQ(editor->totalsText(),
        QStringLiteral("<b>33.55 M</b> parameters · <b>201.33 MFLOP</b> per token in "
                       "training"));
    EXPECT_EQ(f.spin(QStringLiteral("Layers"))->value(), 16);
    EXPECT_EQ(f.combo(QStringLiteral("Kind"))->currentData().toInt(), 0);
    EXPECT_EQ(editor->presetBox()->currentData().toString(), QString()) << "the default project is typed by hand";
    EXPECT_FALSE(editor->field(QStringLiteral("Experts"))->isVisibleTo(editor)) << "a block model has no experts";
}

TEST(ModelEditor, ABadValueShowsTheEnginesMessageAndChangesNothing)
{
    Fixture f;
    ModelEditor* editor = f.model();
    ASSERT_EQ(editor->choosePreset(QStringLiteral("deepseek-v3")), QString());
    const std::string before = f.saved();
    const int edits = f.document()->undoStack()->count();
    auto* message = editor->findChild<QLabel*>(QStringLiteral("fieldMessage"));
    ASSERT_TRUE(message);
    EXPECT_FALSE(message->isVisibleTo(editor));

    f.spin(QStringLiteral("Top-k"))->setValue(257);
    EXPECT_EQ(editor->message(), QStringLiteral("model.moe.top_k: 257 exceeds model.moe.experts 256"));
    EXPECT_TRUE(message->isVisibleTo(editor));
    EXPECT_EQ(f.saved(), before) << "refused: nothing applied";
    EXPECT_EQ(f.document()->undoStack()->count(), edits);
    EXPECT_EQ(f.spin(QStringLiteral("Top-k"))->value(), 8) << "the box goes back to the project's value";

    f.spin(QStringLiteral("Top-k"))->setValue(4);
    EXPECT_EQ(editor->message(), QString()) << "an accepted edit clears the message";
    EXPECT_FALSE(message->isVisibleTo(editor));
    EXPECT_EQ(f.project().model.transformer.moe.topK, 4);

    f.spin(QStringLiteral("EP group"))->setValue(48);
    EXPECT_EQ(editor->message(), QStringLiteral("model.moe.ep: 48 does not divide model.moe.experts 256"));
    EXPECT_EQ(f.project().model.transformer.moe.ep, 64);

    ASSERT_EQ(editor->choosePreset(QStringLiteral("llama3-8b")), QString());
    const std::string llama = f.saved();
    EXPECT_TRUE(editor->field(QStringLiteral("KV heads"))->isVisibleTo(editor)) << "GQA shows its groups";
    f.spin(QStringLiteral("KV heads"))->setValue(5);
    EXPECT_EQ(editor->message(), QStringLiteral("model.kv_heads: 5 does not divide model.heads 32"));
    EXPECT_EQ(f.saved(), llama);
    EXPECT_EQ(f.spin(QStringLiteral("KV heads"))->value(), 8);

    const QString unknown = editor->choosePreset(QStringLiteral("gpt-5"));
    EXPECT_TRUE(unknown.startsWith(QStringLiteral("unknown model preset \"gpt-5\""))) << unknown.toStdString();
    EXPECT_EQ(editor->message(), unknown);
    EXPECT_EQ(f.saved(), llama);
}

TEST(ModelEditor, TurningTheMixtureOfExpertsOnAndOffIsOneEditEach)
{
    Fixture f;
    ModelEditor* editor = f.model();
    ASSERT_EQ(editor->choosePreset(QStringLiteral("llama3-8b")), QString());
    QGroupBox* moe = nullptr;
    for (QGroupBox* g : editor->findChildren<QGroupBox*>())
        if (g->isCheckable())
            moe = g;
    ASSERT_TRUE(moe) << "the mixture of experts is a checkable group";
    EXPECT_FALSE(moe->isChecked());
    moe->setChecked(true);
    // Mixtral's shape as the starting point: 8 experts, top-2, experts of the dense FFN's size (14336).
    EXPECT_EQ(f.project().model.transformer.moe.experts, 8);
    EXPECT_EQ(f.project().model.transformer.moe.topK, 2);
    EXPECT_EQ(f.project().model.transformer.moe.expertFfn, 14336);
    EXPECT_EQ(f.spin(QStringLiteral("Experts"))->value(), 8);
    moe->setChecked(false);
    EXPECT_EQ(f.project().model.transformer.moe.experts, 0);
    f.document()->undoStack()->undo();
    EXPECT_EQ(f.project().model.transformer.moe.experts, 8);
    EXPECT_TRUE(moe->isChecked());
}

TEST(ClusterEditor, ADevicePresetSetsTheClusterAndDpMeetsTheExpertGroup)
{
    Fixture f;
    ClusterEditor* editor = f.window.clusterEditor();
    const std::string before = f.saved();
    ASSERT_EQ(editor->choosePreset(QStringLiteral("h800")), QString());
    EXPECT_EQ(f.project().cluster.device, "h800");
    EXPECT_EQ(f.project().cluster.deviceFlops, 989.4e12);
    EXPECT_EQ(f.project().cluster.gpusPerNode, 8);
    EXPECT_EQ(editor->presetBox()->currentData().toString(), QStringLiteral("h800"));
    EXPECT_DOUBLE_EQ(qobject_cast<QDoubleSpinBox*>(editor->field(QStringLiteral("Peak")))->value(), 989.4);
    EXPECT_DOUBLE_EQ(qobject_cast<QDoubleSpinBox*>(editor->field(QStringLiteral("Inter-node bandwidth")))->value(), 50);
    EXPECT_EQ(qobject_cast<QSpinBox*>(editor->field(QStringLiteral("GPUs per node")))->value(), 8);
    EXPECT_NEAR(
        qobject_cast<QDoubleSpinBox*>(editor->field(QStringLiteral("All-to-all compute share")))->value(), 15.2, 1e-9)
        << "20 of 132 SMs, shown with one decimal";
    f.document()->undoStack()->undo();
    EXPECT_EQ(f.saved(), before);
    EXPECT_EQ(editor->presetBox()->currentData().toString(), QString());

    f.deepseekOnH800();
    // dp 1 × pp 16 devices, each rank's EP group of 64 on consecutive devices, 8 devices per node: every rank on
    // its own 8 nodes (128 in all), so every pipeline hop crosses nodes and an EP group spans 8 nodes.
    EXPECT_EQ(editor->placementText(),
        QStringLiteral("<b>dualpipe</b>: dp 1 × pp 16 = 16 devices, laid out as 64 replicas per rank (the "
                       "expert-parallel group), over 128 node(s) of 8; 15 of 15 pipeline hops cross nodes; an "
                       "expert-parallel group of 64 spans 8 node(s), 7 of a device's 63 peers in its node."));
    FieldBinder* variant = f.window.projectPanel()->binder();
    auto* dp = qobject_cast<QSpinBox*>(variant->field(QStringLiteral("Data-parallel (dp)")));
    ASSERT_TRUE(dp);
    const std::string deepseek = f.saved();
    dp->setValue(96);
    EXPECT_TRUE(f.window.projectPanel()->message().contains(QStringLiteral("model.moe.ep")))
        << f.window.projectPanel()->message().toStdString();
    EXPECT_TRUE(f.window.projectPanel()->message().contains(QStringLiteral("variants[0].dp")))
        << f.window.projectPanel()->message().toStdString();
    EXPECT_EQ(f.saved(), deepseek);
    EXPECT_EQ(dp->value(), 1);
    dp->setValue(128);
    EXPECT_EQ(f.window.projectPanel()->message(), QString());
    EXPECT_EQ(f.document()->activeVariant().dp, 128);
}

TEST(ClusterEditor, APerOperationRateChangesTheMakespanAndUndoRestoresIt)
{
    Fixture f;
    ClusterEditor* editor = f.window.clusterEditor();
    ASSERT_EQ(f.model()->choosePreset(QStringLiteral("llama3-8b")), QString());
    ASSERT_EQ(editor->choosePreset(QStringLiteral("h100-sxm")), QString());
    f.window.waitUntilIdle();
    QApplication::processEvents();
    ASSERT_TRUE(f.window.snapshot() && f.window.snapshot()->valid());
    const auto number
        = [&](const char* label) { return qobject_cast<QDoubleSpinBox*>(editor->field(QString::fromUtf8(label))); };
    auto* perOperation = qobject_cast<QCheckBox*>(editor->field(QStringLiteral("Per-operation model")));
    auto* sms = qobject_cast<QSpinBox*>(editor->field(QStringLiteral("SMs")));
    QDoubleSpinBox* gemm = number("GEMM efficiency");
    ASSERT_TRUE(perOperation && sms && gemm);
    // The preset fills the group (its sources: the H100 datasheet's 132 SMs and 3.35 TB/s, the measured best-shape
    // BF16 GEMM 792.1 of 989 TFLOP/s = 80.1 %, FP8 73.4 %, flash attention 60 % / 45 %, memory 90 %).
    EXPECT_TRUE(perOperation->isChecked());
    EXPECT_TRUE(sms->isVisibleTo(editor));
    EXPECT_EQ(sms->value(), 132);
    EXPECT_DOUBLE_EQ(number("HBM bandwidth")->value(), 3350);
    EXPECT_DOUBLE_EQ(gemm->value(), 80.1);
    EXPECT_DOUBLE_EQ(number("FP8 GEMM efficiency")->value(), 73.4);
    EXPECT_DOUBLE_EQ(number("Attention forward efficiency")->value(), 60);
    EXPECT_DOUBLE_EQ(number("Attention backward efficiency")->value(), 45);
    EXPECT_DOUBLE_EQ(number("Memory efficiency")->value(), 90);
    // No all-to-all rate measured on the H100 preset: the inter-node link's bandwidth, and the box says so.
    EXPECT_DOUBLE_EQ(number("Dispatch inter-node rate")->value(), 0);
    EXPECT_EQ(number("Combine inter-node rate")->text(), QStringLiteral("the inter-node link's"));
    const std::string before = f.saved();
    const double makespan = f.window.snapshot()->makespanUs;
    const int edits = f.document()->undoStack()->index();

    // Half the GEMM rate: the project holds 0.4 and every stage's GEMMs take longer.
    gemm->setValue(40);
    f.window.waitUntilIdle();
    QApplication::processEvents();
    EXPECT_EQ(editor->message(), QString());
    ASSERT_TRUE(f.project().cluster.kernels);
    EXPECT_EQ(f.project().cluster.kernels->gemmEfficiency, 0.4);
    EXPECT_EQ(f.document()->undoStack()->index(), edits + 1);
    ASSERT_TRUE(f.window.snapshot()->valid());
    EXPECT_GT(f.window.snapshot()->makespanUs, makespan * 1.2) << "GEMMs are most of a llama3-8b layer's time";
    f.document()->undoStack()->undo();
    f.window.waitUntilIdle();
    QApplication::processEvents();
    EXPECT_EQ(f.saved(), before);
    EXPECT_EQ(f.project().cluster.kernels->gemmEfficiency, 0.801);
    EXPECT_EQ(f.window.snapshot()->makespanUs, makespan);
    EXPECT_DOUBLE_EQ(gemm->value(), 80.1);

    // Refused, with the field named as the file reader names it; nothing changes.
    gemm->setValue(120);
    EXPECT_EQ(editor->message(), QStringLiteral("cluster.kernels.gemm_efficiency: must be in (0, 1], got 1.2"));
    EXPECT_EQ(f.saved(), before);
    EXPECT_DOUBLE_EQ(gemm->value(), 80.1);
    sms->setValue(0);
    EXPECT_EQ(editor->message(), QStringLiteral("cluster.kernels.sm_count: must be a positive integer, got 0"));
    EXPECT_EQ(sms->value(), 132);
    number("HBM bandwidth")->setValue(0);
    EXPECT_EQ(editor->message(),
        QStringLiteral("cluster.kernels.hbm_bandwidth_bytes_per_us: must be a positive number, got 0"));
    EXPECT_EQ(f.saved(), before);
    EXPECT_EQ(f.document()->undoStack()->index(), edits) << "nothing refused was pushed";

    // Off: every FLOP at the flat efficiency (45 %), the fields hidden; undo brings the preset's rates back.
    perOperation->setChecked(false);
    f.window.waitUntilIdle();
    QApplication::processEvents();
    EXPECT_EQ(editor->message(), QString());
    EXPECT_FALSE(f.project().cluster.kernels.has_value());
    EXPECT_FALSE(sms->isVisibleTo(editor));
    EXPECT_NE(f.window.snapshot()->makespanUs, makespan);
    f.document()->undoStack()->undo();
    f.window.waitUntilIdle();
    QApplication::processEvents();
    EXPECT_EQ(f.saved(), before);
    EXPECT_EQ(f.window.snapshot()->makespanUs, makespan);
    EXPECT_TRUE(perOperation->isChecked());
    EXPECT_TRUE(sms->isVisibleTo(editor));

    // The H800 preset carries DeepEP's measured all-to-all rates (46 and 45 GB/s).
    ASSERT_EQ(editor->choosePreset(QStringLiteral("h800")), QString());
    EXPECT_DOUBLE_EQ(number("Dispatch inter-node rate")->value(), 46);
    EXPECT_DOUBLE_EQ(number("Combine inter-node rate")->value(), 45);

    // The cpu preset has no per-operation rates: the box goes off with it.
    ASSERT_EQ(editor->choosePreset(QStringLiteral("cpu")), QString());
    EXPECT_FALSE(perOperation->isChecked());
    EXPECT_FALSE(sms->isVisibleTo(editor));
}

TEST(Timeline, AZoomedFAndBSlotOfDeepSeekV3ShowsItsTwoLanes)
{
    Fixture f;
    f.deepseekOnH800();
    const SimulationSnapshot& s = *f.window.snapshot();
    TimelineView* timeline = f.window.timeline();
    TimelinePlottable* lane = timeline->lane(0);
    const TimelineBlock* slot = nullptr;
    for (const auto& b : s.blocks.blocks(0))
        if (b.action.overlapped) {
            slot = &b;
            break;
        }
    ASSERT_TRUE(slot) << "DualPipe overlaps F and B in its steady state";
    const dps::OverlapLayout layout = s.costs.overlapLayout(slot->action.op.stage, slot->action.backward.stage);
    ASSERT_FALSE(layout.segments.empty()) << "ep 64: the all-to-all runs on its own lane";
    ASSERT_GT(layout.commUs, 0.0);
    EXPECT_LT(lane->blockRect(*slot).width(), TimelinePlottable::kLaneMinWidthPx) << "fitted: the slot is narrow";
    EXPECT_TRUE(lane->laneRects(*slot).empty()) << "and drawn flat";

    timeline->zoomToBlock(slot->rank, slot->position, 0.4);
    QApplication::processEvents();
    timeline->replot();
    const QRectF block = lane->blockRect(*slot);
    ASSERT_GT(block.width(), 200.0);
    const auto rects = lane->laneRects(*slot);
    ASSERT_EQ(rects.size(), layout.segments.size()) << "every piece of the slot is on screen";
    int comm = 0;
    int sampled = 0;
    const QImage image = timeline->grab().toImage();
    const double ratio = image.devicePixelRatio();
    for (const auto& r : rects) {
        EXPECT_GE(r.rect.left(), block.left() - 0.5);
        EXPECT_LE(r.rect.right(), block.right() + 0.5);
        if (r.segment.lane == dps::Chunk::Comm) {
            ++comm;
            EXPECT_NEAR(r.rect.top(), block.center().y(), 0.5) << "communication in the lower half";
            EXPECT_NEAR(r.rect.bottom(), block.bottom(), 0.5);
        } else {
            EXPECT_NEAR(r.rect.top(), block.top(), 0.5) << "compute in the upper half";
            EXPECT_NEAR(r.rect.bottom(), block.center().y(), 0.5);
            if (r.rect.width() >= 40.0) { // filled with its half's kind colour (sampled clear of a centred label)
                const QColor c = image.pixelColor(
                    static_cast<int>((r.rect.left() + 2) * ratio), static_cast<int>((r.rect.top() + 2) * ratio));
                const auto kind = r.segment.backwardHalf ? slot->action.backward.kind : slot->action.op.kind;
                EXPECT_EQ(c.rgb(), kindColor(kind).rgb()) << "at x " << r.rect.left();
                ++sampled;
            }
        }
    }
    EXPECT_GT(comm, 0);
    EXPECT_GT(sampled, 0) << "some compute piece is wide enough to sample";
    const QString tip = timeline->tooltipAt(block.center());
    EXPECT_TRUE(tip.contains(QStringLiteral("expert all-to-all %1, of which hidden under compute %2")
                                 .arg(formatTime(layout.commUs), formatTime(layout.hiddenCommUs))))
        << tip.toStdString();

    timeline->fitAll();
    timeline->replot();
    EXPECT_TRUE(lane->laneRects(*slot).empty()) << "fitted again: flat";
}

TEST(MemoryChart, PerRankBarsNameTheHeaviestRankAndWhy)
{
    Fixture f;
    f.deepseekOnH800();
    MemoryChart* chart = f.window.memoryChart();
    chart->setRank(MemoryChart::kPerRankParts);
    ASSERT_EQ(chart->plot()->plottableCount(), RankMemoryParts::PartCount)
        << "parameters, gradients, optimizer state, activations, the engine's buffers";
    for (int i = 0; i < RankMemoryParts::PartCount; ++i) {
        auto* bars = qobject_cast<QCPBars*>(chart->plot()->plottable(i));
        ASSERT_TRUE(bars);
        EXPECT_EQ(bars->dataCount(), 16) << "one bar per rank";
    }
    const SimulationSnapshot& s = *f.window.snapshot();
    const auto parts = memoryParts(s);
    const HeaviestRank heaviest = heaviestRank(parts);
    // 61 layers over 16 stages: stages 0-12 get 4 layers, 13-15 get 3. DualPipe rank r holds stages r and 15 − r:
    // ranks 0 and 15 hold the embedding (129280 × 7168) and the head besides 7 layers, and with dp 1 nothing
    // shards their optimizer state (the preset's FP32 master weights and BF16 moments, 8 bytes a parameter),
    // which outweighs the eighth layer's FP8-cached activations of ranks 3-12: ranks 0 and 15 are heaviest,
    // by their optimizer state first, against a median rank of 8 layers.
    EXPECT_EQ(heaviest.rank, 0);
    EXPECT_EQ(heaviest.sharedWith, 1) << "rank 15";
    ASSERT_FALSE(heaviest.byPart.empty());
    EXPECT_EQ(heaviest.byPart.front().first, RankMemoryParts::Optimizer) << describeHeaviest(heaviest);
    EXPECT_TRUE(chart->summaryText().startsWith(QString::fromStdString(describeHeaviest(heaviest))))
        << chart->summaryText().toStdString();
    EXPECT_TRUE(chart->summaryText().startsWith(QStringLiteral("rank 0 heaviest, with 1 other rank: peak ")))
        << chart->summaryText().toStdString();
    chart->setRank(-1);
    EXPECT_EQ(chart->plot()->graphCount(), chart->plot()->plottableCount()) << "back to curves over time";
    EXPECT_TRUE(chart->plot()->xAxis->label().startsWith(QStringLiteral("time")));
}

TEST(StudioOptions, ParsesThePanelMemoryViewAndZoomFlags)
{
    StudioOptions options;
    QString error;
    ASSERT_TRUE(
        parseStudioOptions({ QStringLiteral("x"), QStringLiteral("--screenshot"), QStringLiteral("a.png"),
                               QStringLiteral("--panel"), QStringLiteral("model"), QStringLiteral("--memory-view"),
                               QStringLiteral("ranks"), QStringLiteral("--zoom-slot"), QStringLiteral("3:41") },
            options, error))
        << error.toStdString();
    EXPECT_EQ(options.panel, QStringLiteral("model"));
    EXPECT_EQ(options.memoryView, MemoryChart::kPerRankParts);
    EXPECT_EQ(options.zoomRank, 3);
    EXPECT_EQ(options.zoomPosition, 41);
    StudioOptions bad;
    EXPECT_FALSE(parseStudioOptions(
        { QStringLiteral("x"), QStringLiteral("--memory-view"), QStringLiteral("some") }, bad, error));
    EXPECT_EQ(error, QStringLiteral("--memory-view: expected all, ranks or a rank number, got 'some'"));
    EXPECT_FALSE(
        parseStudioOptions({ QStringLiteral("x"), QStringLiteral("--zoom-slot"), QStringLiteral("3") }, bad, error));
    EXPECT_EQ(error, QStringLiteral("--zoom-slot: expected RANK:POSITION, got '3'"));
    Fixture f;
    EXPECT_TRUE(f.window.raisePanel(QStringLiteral("model")));
    EXPECT_FALSE(f.window.raisePanel(QStringLiteral("nothing")));
}
