#include "widgets/modeleditor.h"

#include "document/formatting.h"
#include "widgets/fieldbinder.h"
#include "widgets/presetbox.h"

#include "model/transformer.h"
#include "project/modelinfo.h"
#include "project/presets.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <memory>
#include <stdexcept>

namespace dps::ui {

namespace {

using model::Attention;
using model::Recompute;

bool isTransformer(const Project& p)
{
    return p.model.kind == ModelKind::Transformer;
}

/// Element types of the all-to-all as bytes per element.
const std::vector<std::pair<QString, int>>& wireTypes()
{
    static const std::vector<std::pair<QString, int>> types
        = { { QStringLiteral("fp8"), 1 }, { QStringLiteral("bf16"), 2 }, { QStringLiteral("fp32"), 4 } };
    return types;
}

/// A block model turned into a transformer keeps its shared fields (layers, hidden, ffn, sequence,
/// microbatch, dtype) and, when it has no attention shape yet, gets MHA with heads of 128 (64, or one head,
/// when 128 does not divide hidden) and the 32000-token vocabulary of Llama 2 (Touvron et al. 2023), to be
/// edited from there.
void becomeTransformer(Project& p)
{
    p.model.kind = ModelKind::Transformer;
    model::Transformer& t = p.model.transformer;
    if (t.heads > 0 && t.vocab > 0)
        return;
    const int h = p.model.hidden;
    t.headDim = h % 128 == 0 ? 128 : (h % 64 == 0 ? 64 : h);
    t.heads = h / t.headDim;
    t.kvHeads = t.heads;
    t.attention = Attention::MHA;
    t.vocab = 32000;
}

QString presetLabel(const std::string& id)
{
    return id.empty() ? handTypedPresetLabel() : QString::fromStdString(id);
}

QTableWidgetItem* cell(const QString& text, bool number = true)
{
    auto* item = new QTableWidgetItem(text);
    item->setTextAlignment((number ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    return item;
}

QFormLayout* newForm()
{
    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setLabelAlignment(Qt::AlignLeft);
    return form;
}

} // namespace

ModelEditor::ModelEditor(ProjectDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_message(createMessageLabel())
    , m_binder(new FieldBinder(document, m_message, this))
{
    auto* content = new QWidget;
    auto* column = new QVBoxLayout(content);
    column->setContentsMargins(6, 0, 6, 6);
    column->addWidget(setupShape());
    column->addWidget(setupAttention());
    column->addWidget(setupMoe());
    column->addWidget(setupTraining());
    m_stagesTitle = new QLabel;
    m_stagesTitle->setWordWrap(true);
    m_stages = new QTableWidget(0, 8);
    m_stages->setHorizontalHeaderLabels({ tr("Stage"), tr("Layers"), tr("Parameters"), tr("F"), tr("B"), tr("F&B"),
        tr("Activations"), tr("All-to-all") });
    m_stages->verticalHeader()->hide();
    m_stages->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_stages->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_stages->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_stages->setAlternatingRowColors(true);
    m_stages->setMinimumHeight(fontMetrics().height() * 8);
    m_stages->setToolTip(tr("Per stage, on one device, for one microbatch: parameters held, F, full backward B and an "
                            "overlapped F&B slot of the stage with itself, activations kept from F until I, and the "
                            "expert all-to-all bytes one F sends (dispatch + combine)"));
    column->addWidget(m_stagesTitle);
    column->addWidget(m_stages);
    column->addStretch(1);
    auto* scroll = new QScrollArea;
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 6, 0, 0);
    layout->addWidget(setupHeader());
    layout->addWidget(scroll, 1);
    m_binder->onRefresh([this] { refresh(); });
    refresh();
}

QWidget* ModelEditor::setupHeader()
{
    auto* header = new QWidget;
    auto* column = new QVBoxLayout(header);
    column->setContentsMargins(6, 0, 6, 0);
    auto* form = newForm();
    m_preset = newPresetBox(
        modelPresets(), tr("Choosing a preset replaces the model and the training state (undo with Ctrl+Z)"), this,
        [this](const QString& id) { choosePreset(id); }, [this] { refresh(); });
    form->addRow(tr("Preset:"), m_preset);
    m_binder->addChoice(
        form, tr("Kind:"), { { tr("block (Linear–GELU–Linear)"), 0 }, { tr("transformer"), 1 } },
        [](const Project& p) { return isTransformer(p) ? 1 : 0; },
        [](Project& p, int v) {
            if (v == 1)
                becomeTransformer(p);
            else
                p.model.kind = ModelKind::Block;
        });
    column->addLayout(form);
    m_totals = new QLabel;
    m_totals->setWordWrap(true);
    m_totals->setTextFormat(Qt::RichText);
    m_totals->setToolTip(tr("Parameters of the whole model (embedding and head once each, once when tied), those one "
                            "token uses, and 3 × the forward FLOPs per token (attention and LM head included, the "
                            "embedding lookup not)"));
    column->addWidget(m_totals);
    column->addWidget(m_message);
    return header;
}

QGroupBox* ModelEditor::setupShape()
{
    auto* form = newForm();
    m_shapeForm = form;
    m_binder->addInt(
        form, tr("Layers:"), 1, 4096, [](const Project& p) { return p.model.layers; },
        [](Project& p, int v) { p.model.layers = v; });
    m_binder->addInt(
        form, tr("Hidden:"), 1, 1 << 20, [](const Project& p) { return p.model.hidden; },
        [](Project& p, int v) { p.model.hidden = v; });
    m_binder
        ->addInt(
            form, tr("FFN:"), 1, 1 << 22, [](const Project& p) { return p.model.ffn; },
            [](Project& p, int v) { p.model.ffn = v; })
        ->setToolTip(tr("Intermediate size of a dense layer (SwiGLU for a transformer)"));
    m_binder->addInt(
        form, tr("Vocabulary:"), 1, 1 << 24, [](const Project& p) { return p.model.transformer.vocab; },
        [](Project& p, int v) { p.model.transformer.vocab = v; });
    m_binder->addCheck(
        form, tr("Tied embeddings"), [](const Project& p) { return p.model.transformer.tiedEmbeddings; },
        [](Project& p, bool v) { p.model.transformer.tiedEmbeddings = v; });
    m_binder->addInt(
        form, tr("Sequence length:"), 1, 1 << 22, [](const Project& p) { return p.model.seqLen; },
        [](Project& p, int v) { p.model.seqLen = v; });
    m_binder->addInt(
        form, tr("Microbatch size:"), 1, 1 << 16, [](const Project& p) { return p.model.microbatchSize; },
        [](Project& p, int v) { p.model.microbatchSize = v; });
    m_binder->addChoice(
        form, tr("Dtype:"),
        { { QStringLiteral("fp32"), static_cast<int>(DType::FP32) },
            { QStringLiteral("bf16"), static_cast<int>(DType::BF16) } },
        [](const Project& p) { return static_cast<int>(p.model.dtype); },
        [](Project& p, int v) { p.model.dtype = static_cast<DType>(v); });
    m_binder
        ->addChoice(
            form, tr("Recompute:"),
            { { tr("none"), static_cast<int>(Recompute::None) },
                { tr("selective (attention core)"), static_cast<int>(Recompute::Selective) },
                { tr("full (layer inputs only)"), static_cast<int>(Recompute::Full) },
                { tr("norm-up-projection (DeepSeek-V3)"), static_cast<int>(Recompute::NormUpProjection) } },
            [](const Project& p) { return static_cast<int>(p.model.recompute); },
            [](Project& p, int v) { p.model.recompute = static_cast<Recompute>(v); })
        ->setToolTip(tr("What the backward recomputes instead of keeping (Korthikanti et al. 2022); a variant may "
                        "override it"));
    auto* box = new QGroupBox(tr("Shape"));
    box->setLayout(form);
    return box;
}

QGroupBox* ModelEditor::setupAttention()
{
    auto* form = newForm();
    m_attentionForm = form;
    m_binder->addChoice(
        form, tr("Attention:"),
        { { tr("MHA (multi-head)"), static_cast<int>(Attention::MHA) },
            { tr("GQA (grouped query)"), static_cast<int>(Attention::GQA) },
            { tr("MLA (multi-head latent)"), static_cast<int>(Attention::MLA) } },
        [](const Project& p) { return static_cast<int>(p.model.transformer.attention); },
        [](Project& p, int v) {
            auto& t = p.model.transformer;
            t.attention = static_cast<Attention>(v);
            if (t.attention == Attention::MHA)
                t.kvHeads = t.heads;
        });
    m_binder->addInt(
        form, tr("Heads:"), 1, 1 << 16, [](const Project& p) { return p.model.transformer.heads; },
        [](Project& p, int v) {
            auto& t = p.model.transformer;
            if (t.attention == Attention::MHA || t.kvHeads == t.heads)
                t.kvHeads = v;
            t.heads = v;
        });
    m_binder
        ->addInt(
            form, tr("KV heads:"), 1, 1 << 16, [](const Project& p) { return p.model.transformer.kvHeads; },
            [](Project& p, int v) { p.model.transformer.kvHeads = v; })
        ->setToolTip(tr("Key-value heads (GQA groups); each serves heads ÷ kv_heads query heads"));
    m_binder
        ->addInt(
            form, tr("Head dim:"), 0, 1 << 16, [](const Project& p) { return p.model.transformer.headDim; },
            [](Project& p, int v) { p.model.transformer.headDim = v; })
        ->setSpecialValueText(tr("hidden ÷ heads"));
    m_binder
        ->addInt(
            form, tr("Q LoRA rank:"), 0, 1 << 20, [](const Project& p) { return p.model.transformer.mla.qLoraRank; },
            [](Project& p, int v) { p.model.transformer.mla.qLoraRank = v; })
        ->setSpecialValueText(tr("none (direct)"));
    m_binder->addInt(
        form, tr("KV LoRA rank:"), 1, 1 << 20, [](const Project& p) { return p.model.transformer.mla.kvLoraRank; },
        [](Project& p, int v) { p.model.transformer.mla.kvLoraRank = v; });
    m_binder->addInt(
        form, tr("QK nope head dim:"), 0, 1 << 16,
        [](const Project& p) { return p.model.transformer.mla.qkNopeHeadDim; },
        [](Project& p, int v) { p.model.transformer.mla.qkNopeHeadDim = v; });
    m_binder->addInt(
        form, tr("QK rope head dim:"), 0, 1 << 16,
        [](const Project& p) { return p.model.transformer.mla.qkRopeHeadDim; },
        [](Project& p, int v) { p.model.transformer.mla.qkRopeHeadDim = v; });
    m_binder->addInt(
        form, tr("V head dim:"), 1, 1 << 16, [](const Project& p) { return p.model.transformer.mla.vHeadDim; },
        [](Project& p, int v) { p.model.transformer.mla.vHeadDim = v; });
    m_attentionGroup = new QGroupBox(tr("Attention"));
    m_attentionGroup->setLayout(form);
    m_attentionGroup->setToolTip(tr("MLA: DeepSeek-V2 §2.1 — low-rank query and key-value projections with decoupled "
                                    "rotary dimensions"));
    return m_attentionGroup;
}

QGroupBox* ModelEditor::setupMoe()
{
    auto* form = newForm();
    m_moeForm = form;
    const auto moeInt = [&](const QString& label, int min, int max, int model::Moe::*field) {
        return m_binder->addInt(
            form, label, min, max, [field](const Project& p) { return p.model.transformer.moe.*field; },
            [field](Project& p, int v) { p.model.transformer.moe.*field = v; });
    };
    moeInt(tr("Experts:"), 0, 1 << 16, &model::Moe::experts)->setToolTip(tr("Routed experts per MoE layer"));
    moeInt(tr("Top-k:"), 0, 1 << 10, &model::Moe::topK)->setToolTip(tr("Routed experts each token goes to"));
    moeInt(tr("Expert FFN:"), 1, 1 << 22, &model::Moe::expertFfn)
        ->setToolTip(tr("Intermediate size of one expert (SwiGLU)"));
    moeInt(tr("Shared experts:"), 0, 1 << 10, &model::Moe::sharedExperts)
        ->setToolTip(tr("Always-active experts of the same size"));
    moeInt(tr("Dense layers:"), 0, 4096, &model::Moe::denseLayers)
        ->setToolTip(tr("The first k layers are dense SwiGLU MLPs"));
    moeInt(tr("Dense FFN:"), 0, 1 << 22, &model::Moe::denseFfn)->setSpecialValueText(tr("= FFN"));
    moeInt(tr("EP group:"), 1, 1 << 16, &model::Moe::ep)
        ->setToolTip(tr("Expert-parallel group size, formed across the data-parallel replicas of one stage; 1 = no "
                        "all-to-all. It must divide the variant's dp when dp > 1."));
    m_binder->addChoice(
        form, tr("Dispatch dtype:"), wireTypes(),
        [](const Project& p) { return p.model.transformer.moe.dispatchBytes; },
        [](Project& p, int v) { p.model.transformer.moe.dispatchBytes = v; });
    m_binder->addChoice(
        form, tr("Combine dtype:"), wireTypes(), [](const Project& p) { return p.model.transformer.moe.combineBytes; },
        [](Project& p, int v) { p.model.transformer.moe.combineBytes = v; });
    moeInt(tr("Nodes per token:"), 0, 1 << 16, &model::Moe::maxNodesPerToken)->setSpecialValueText(tr("no limit"));
    m_moeGroup = new QGroupBox(tr("Mixture of experts"));
    m_moeGroup->setCheckable(true);
    m_moeGroup->setLayout(form);
    m_moeGroup->setToolTip(tr("DeepSeek-V3 report §2.1.2; Mixtral. Unchecked: a dense model."));
    connect(m_moeGroup, &QGroupBox::toggled, this, [this](bool on) {
        m_binder->apply(
            on ? tr("Turn on the mixture of experts") : tr("Turn off the mixture of experts"), [on](Project& p) {
                model::Moe& moe = p.model.transformer.moe;
                if (!on) {
                    moe = model::Moe {};
                    return;
                }
                // Mixtral's shape (8 experts, top-2, experts as large as the dense FFN) as the starting point.
                moe.experts = 8;
                moe.topK = 2;
                moe.expertFfn = p.model.ffn;
                moe.ep = 1;
            });
    });
    return m_moeGroup;
}

QGroupBox* ModelEditor::setupTraining()
{
    auto* form = newForm();
    m_binder
        ->addChoice(
            form, tr("Optimizer state:"), { { tr("bytes per parameter (Costs)"), 0 }, { tr("Adam, as set below"), 1 } },
            [](const Project& p) { return p.training.present ? 1 : 0; },
            [](Project& p, int v) { p.training.present = v == 1; })
        ->setToolTip(tr("Adam with the settings below, or the Costs panel's optimizer bytes per parameter"));
    m_binder->addCheck(
        form, tr("fp32 master weights"), [](const Project& p) { return p.training.masterWeights; },
        [](Project& p, bool v) {
            p.training.masterWeights = v;
            p.training.present = true;
        });
    m_binder
        ->addChoice(
            form, tr("Adam moments:"), { { QStringLiteral("fp32"), 4 }, { QStringLiteral("bf16"), 2 } },
            [](const Project& p) { return p.training.momentBytes; },
            [](Project& p, int v) {
                p.training.momentBytes = v;
                p.training.present = true;
            })
        ->setToolTip(tr("Bytes of each of Adam's two moments (DeepSeek-V3 keeps them in bf16)"));
    m_binder->addChoice(
        form, tr("Gradients:"),
        { { QStringLiteral("fp32"), static_cast<int>(DType::FP32) },
            { QStringLiteral("bf16"), static_cast<int>(DType::BF16) } },
        [](const Project& p) { return static_cast<int>(p.training.gradientDtype); },
        [](Project& p, int v) {
            p.training.gradientDtype = static_cast<DType>(v);
            p.training.present = true;
        });
    m_binder
        ->addChoice(
            form, tr("ZeRO:"),
            { { tr("0 (every replica holds it all)"), 0 }, { tr("1 (optimizer state sharded over dp)"), 1 },
                { tr("2 (and the gradients)"), 2 }, { tr("3 (and the parameters: FSDP)"), 3 } },
            [](const Project& p) { return p.training.zero; },
            [](Project& p, int v) {
                p.training.zero = v;
                p.training.present = true;
            })
        ->setToolTip(
            tr("ZeRO (Rajbhandari et al. 2020) shards state over the dp × cp replicas holding the same "
               "parameters (a routed expert's over dp × cp ÷ ep): 1 the optimizer state, 2 also the gradients, "
               "3 (FSDP) also the parameters, gathered layer by layer in F and B"));
    auto* box = new QGroupBox(tr("Training state"));
    box->setLayout(form);
    return box;
}

QWidget* ModelEditor::field(const QString& label) const
{
    return m_binder->field(label);
}

QString ModelEditor::choosePreset(const QString& id)
{
    return m_binder->report(m_document->applyModelPreset(id));
}

QString ModelEditor::message() const
{
    return m_binder->message();
}

QString ModelEditor::totalsText() const
{
    return m_totals->text();
}

void ModelEditor::refresh()
{
    const Project& p = m_document->project();
    const bool transformer = isTransformer(p);
    {
        const QSignalBlocker block(m_preset);
        int index = m_preset->findData(QString::fromStdString(p.model.preset));
        if (index < 0) { // a preset this build does not ship: shown as it is named
            m_preset->addItem(presetLabel(p.model.preset), QString::fromStdString(p.model.preset));
            index = m_preset->count() - 1;
        }
        m_preset->setCurrentIndex(index);
    }
    for (const QString& name : { tr("Vocabulary"), tr("Tied embeddings"), tr("Recompute") })
        if (QWidget* w = field(name))
            m_shapeForm->setRowVisible(w, transformer);
    m_attentionGroup->setVisible(transformer);
    m_moeGroup->setVisible(transformer);
    const Attention attention = p.model.transformer.attention;
    const bool mla = attention == Attention::MLA;
    m_attentionForm->setRowVisible(field(tr("KV heads")), attention == Attention::GQA);
    m_attentionForm->setRowVisible(field(tr("Head dim")), !mla);
    for (const QString& name :
        { tr("Q LoRA rank"), tr("KV LoRA rank"), tr("QK nope head dim"), tr("QK rope head dim"), tr("V head dim") })
        m_attentionForm->setRowVisible(field(name), mla);
    {
        const QSignalBlocker block(m_moeGroup);
        m_moeGroup->setChecked(p.model.transformer.moe.experts > 0);
    }
    const bool present = p.training.present;
    for (const QString& name : { tr("fp32 master weights"), tr("Adam moments"), tr("Gradients"), tr("ZeRO") })
        if (QWidget* w = field(name))
            w->setEnabled(present);
    requestInfo();
}

namespace {

/// What the header and the stage table show, computed off the GUI thread.
struct InfoResult {
    ModelInfo info;
    bool moe = false;
    QString variant;
    QString totalsError; ///< why there are no totals
    QString stagesError; ///< why there is no stage table
};

InfoResult computeInfo(const Project& p, const Variant& v)
{
    InfoResult r;
    r.variant = QString::fromStdString(v.name);
    r.moe = isTransformer(p) && p.model.transformer.moe.experts > 0;
    try {
        r.info = modelInfo(p, v);
        return r;
    } catch (const std::exception& e) {
        r.stagesError = QString::fromUtf8(e.what());
    }
    // The variant cannot be built: a transformer's totals need no variant.
    try {
        if (!isTransformer(p))
            throw std::runtime_error(r.stagesError.toStdString());
        const model::Totals t = model::totals(transformerOf(p.model));
        r.info.parametersTotal = t.parametersTotal;
        r.info.parametersActive = t.parametersActive;
        r.info.flopsPerTokenTraining = t.flopsPerTokenTraining;
    } catch (const std::exception& e) {
        r.totalsError = QString::fromUtf8(e.what());
    }
    return r;
}

} // namespace

void ModelEditor::requestInfo()
{
    const Project project = m_document->project();
    const Variant variant = m_document->activeVariant();
    m_info.submit([this, project, variant]() -> std::function<void()> {
        auto result = std::make_shared<InfoResult>(computeInfo(project, variant));
        return [this, result] {
            const InfoResult& r = *result;
            if (!r.totalsError.isEmpty())
                m_totals->setText(tr("<i>no totals: %1</i>").arg(r.totalsError.toHtmlEscaped()));
            else
                m_totals->setText(
                    tr("<b>%1</b> parameters%2 · <b>%3FLOP</b> per token in training")
                        .arg(formatCount(r.info.parametersTotal))
                        .arg(r.moe ? tr(", <b>%1</b> active").arg(formatCount(r.info.parametersActive)) : QString())
                        .arg(formatCount(r.info.flopsPerTokenTraining)));
            if (!r.stagesError.isEmpty()) {
                m_stagesTitle->setText(
                    tr("<b>Stages of %1</b>: %2").arg(r.variant.toHtmlEscaped(), r.stagesError.toHtmlEscaped()));
                m_stages->setRowCount(0);
                return;
            }
            m_stagesTitle->setText(
                tr("<b>Stages of %1</b> (one device, one microbatch)").arg(r.variant.toHtmlEscaped()));
            m_stages->setRowCount(static_cast<int>(r.info.stages.size()));
            for (int row = 0; row < static_cast<int>(r.info.stages.size()); ++row) {
                const StageInfo& s = r.info.stages[row];
                m_stages->setItem(row, 0, cell(QString::number(s.stage)));
                m_stages->setItem(row, 1, cell(QString::number(s.layers)));
                m_stages->setItem(row, 2, cell(formatCount(s.parameters)));
                m_stages->setItem(row, 3, cell(formatTime(s.fUs)));
                m_stages->setItem(row, 4, cell(formatTime(s.bUs)));
                m_stages->setItem(row, 5, cell(formatTime(s.fbUs)));
                m_stages->setItem(row, 6, cell(formatBytes(s.activationBytes)));
                m_stages->setItem(row, 7, cell(s.a2aBytes > 0 ? formatBytes(s.a2aBytes) : QStringLiteral("—")));
            }
        };
    });
}

} // namespace dps::ui
