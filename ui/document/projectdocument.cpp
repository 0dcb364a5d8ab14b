#include "document/projectdocument.h"

#include "document/blockindex.h"

#include "project/presets.h"
#include "schedule/lowering.h"

#include <QFileInfo>
#include <QUndoCommand>

#include <algorithm>
#include <numeric>

namespace dps::ui {

/// One edit: the whole project before and after (a project is small; a copy keeps undo exact).
class ProjectEditCommand : public QUndoCommand {
public:
    ProjectEditCommand(ProjectDocument* document, const QString& text, Project before, Project after, int mergeKey)
        : QUndoCommand(text)
        , m_document(document)
        , m_before(std::move(before))
        , m_after(std::move(after))
        , m_mergeKey(mergeKey)
    {
    }
    void undo() override { m_document->assign(m_before); }
    void redo() override { m_document->assign(m_after); }
    int id() const override { return m_mergeKey; }
    bool mergeWith(const QUndoCommand* other) override
    {
        const auto* next = dynamic_cast<const ProjectEditCommand*>(other);
        if (!next || next->m_mergeKey != m_mergeKey || m_mergeKey < 0)
            return false;
        m_after = next->m_after;
        return true;
    }

private:
    ProjectDocument* m_document;
    Project m_before;
    Project m_after;
    int m_mergeKey;
};

namespace {

/// Drops partitions that no longer fit the model or the variant (layers or stage count changed).
void normalize(Project& project)
{
    for (auto& v : project.variants) {
        const int stages = stageCount(v);
        const int sum = std::accumulate(v.layerPartition.begin(), v.layerPartition.end(), 0);
        if (!v.layerPartition.empty()
            && (static_cast<int>(v.layerPartition.size()) != stages || sum != project.model.layers))
            v.layerPartition.clear();
    }
    if (!project.variants.empty() && !project.find(project.activeVariant))
        project.activeVariant = project.variants.front().name;
}

std::optional<double>& costSlot(StageCostOverride& o, CostField field)
{
    switch (field) {
    case CostField::Forward:
        return o.forwardUs;
    case CostField::InputGrad:
        return o.inputGradUs;
    case CostField::WeightGrad:
        return o.weightGradUs;
    case CostField::Backward:
        return o.backwardUs;
    case CostField::Overlap:
        break;
    }
    return o.overlapUs;
}

} // namespace

ProjectDocument::ProjectDocument(QObject* parent)
    : QObject(parent)
    , m_project(defaultProject())
{
    connect(&m_undo, &QUndoStack::cleanChanged, this, [this] { emit titleChanged(displayName()); });
}

const Variant& ProjectDocument::activeVariant() const
{
    const Variant* v = m_project.find(m_project.activeVariant);
    return v ? *v : m_project.variants.front();
}

QString ProjectDocument::displayName() const
{
    const QString name = m_path.isEmpty() ? tr("untitled") : QFileInfo(m_path).fileName();
    return isModified() ? name + QStringLiteral(" *") : name;
}

void ProjectDocument::reset(const Project& project, const QString& path)
{
    m_undo.clear();
    m_path = path;
    assign(project);
    m_undo.setClean();
    emit titleChanged(displayName());
}

void ProjectDocument::markSaved(const QString& path)
{
    m_path = path;
    m_undo.setClean();
    emit titleChanged(displayName());
}

void ProjectDocument::assign(const Project& project)
{
    m_project = project;
    emit changed();
}

Variant* ProjectDocument::activeMutable(Project& project) const
{
    for (auto& v : project.variants)
        if (v.name == project.activeVariant)
            return &v;
    return project.variants.empty() ? nullptr : &project.variants.front();
}

void ProjectDocument::edit(const QString& text, const std::function<void(Project&)>& change, int mergeKey)
{
    Project after = m_project;
    change(after);
    normalize(after);
    m_undo.push(new ProjectEditCommand(this, text, m_project, std::move(after), mergeKey));
}

QString ProjectDocument::checkProject(const Project& project)
{
    try {
        if (project.model.kind == ModelKind::Transformer)
            model::check(transformerOf(project.model));
        validateProject(project);
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

QString ProjectDocument::editChecked(const QString& text, const std::function<void(Project&)>& change, int mergeKey)
{
    Project after = m_project;
    change(after);
    normalize(after);
    const QString error = checkProject(after);
    if (!error.isEmpty() && error != checkProject(m_project))
        return error;
    m_undo.push(new ProjectEditCommand(this, text, m_project, std::move(after), mergeKey));
    return {};
}

QString ProjectDocument::applyModelPreset(const QString& id)
{
    ModelPreset preset;
    try {
        preset = modelPreset(id.toStdString());
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return editChecked(tr("Model preset %1").arg(id), [&](Project& p) {
        p.model = preset.model;
        p.training = preset.training;
    });
}

QString ProjectDocument::applyDevicePreset(const QString& id)
{
    ClusterDesc cluster;
    try {
        cluster = devicePreset(id.toStdString());
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return editChecked(tr("Device preset %1").arg(id), [&](Project& p) { p.cluster = cluster; });
}

void ProjectDocument::setActiveVariant(const QString& name)
{
    if (name == activeName() || !m_project.find(name.toStdString()))
        return;
    edit(tr("Activate %1").arg(name), [&](Project& p) { p.activeVariant = name.toStdString(); });
}

QString ProjectDocument::uniqueName(const QString& base) const
{
    QString name = base;
    for (int i = 2; m_project.find(name.toStdString()); ++i)
        name = QStringLiteral("%1-%2").arg(base).arg(i);
    return name;
}

QString ProjectDocument::addVariant()
{
    const QString name = uniqueName(activeName());
    edit(tr("Add variant %1").arg(name), [&](Project& p) {
        Variant copy = activeVariant();
        copy.name = name.toStdString();
        p.variants.push_back(copy);
        p.activeVariant = copy.name;
    });
    return name;
}

void ProjectDocument::removeVariant(const QString& name)
{
    if (m_project.variants.size() <= 1 || !m_project.find(name.toStdString()))
        return;
    edit(tr("Remove variant %1").arg(name),
        [&](Project& p) { std::erase_if(p.variants, [&](const Variant& v) { return v.name == name.toStdString(); }); });
}

bool ProjectDocument::renameVariant(const QString& from, const QString& to)
{
    const QString trimmed = to.trimmed();
    if (trimmed.isEmpty() || trimmed == from || m_project.find(trimmed.toStdString()))
        return false;
    edit(tr("Rename %1 to %2").arg(from, trimmed), [&](Project& p) {
        for (auto& v : p.variants)
            if (v.name == from.toStdString())
                v.name = trimmed.toStdString();
        if (p.activeVariant == from.toStdString())
            p.activeVariant = trimmed.toStdString();
    });
    return true;
}

void ProjectDocument::setVariantShape(ScheduleKind kind, int ranks, int microbatches, int stagesPerRank)
{
    edit(tr("Change %1").arg(activeName()), [&](Project& p) {
        Variant* v = activeMutable(p);
        if (!v)
            return;
        v->kind = kind;
        v->ranks = ranks;
        v->microbatches = microbatches;
        v->stagesPerRank = stagesPerRank;
        v->order.reset();
        v->commOrder.reset();
    });
}

void ProjectDocument::setPartition(const std::vector<int>& layersPerStage)
{
    edit(tr("Change the layer partition"), [&](Project& p) {
        if (Variant* v = activeMutable(p))
            v->layerPartition = layersPerStage;
    });
}

void ProjectDocument::setStageCost(int stage, CostField field, std::optional<double> valueUs)
{
    if (stage < 0)
        return;
    edit(tr("Set the cost of stage %1").arg(stage), [&](Project& p) {
        if (static_cast<int>(p.costs.stages.size()) <= stage)
            p.costs.stages.resize(stage + 1);
        costSlot(p.costs.stages[stage], field) = valueUs;
    });
}

void ProjectDocument::moveAction(int rank, int from, int to)
{
    std::vector<std::vector<Action>> order;
    try {
        order = activeVariant().order ? *activeVariant().order : buildSchedule(m_project, activeVariant()).order;
    } catch (const std::exception&) {
        return;
    }
    if (rank < 0 || rank >= static_cast<int>(order.size()) || from == to)
        return;
    const int n = static_cast<int>(order[rank].size());
    if (from < 0 || from >= n || to < 0 || to >= n)
        return;
    const QString what = QString::fromStdString(toString(order[rank][from]));
    moveElement(order[rank], from, to);
    const bool dropsComms = activeVariant().commOrder.has_value();
    edit(tr("Move %1 on rank %2").arg(what).arg(rank), [&](Project& p) {
        if (Variant* v = activeMutable(p)) {
            v->order = order;
            v->commOrder.reset();
        }
    });
    if (dropsComms)
        emit notice(tr("Moving %1 dropped the sends and receives placed by hand: they were for the old order, so "
                       "%2's are PyTorch's lowering of the new one again (Ctrl+Z brings them back).")
                        .arg(what, activeName()));
}

std::optional<TorchSchedule> ProjectDocument::commProgram() const
{
    const Variant& v = activeVariant();
    try {
        const Schedule schedule = buildSchedule(m_project, v);
        if (std::optional<TorchSchedule> placed = commProgramOf(m_project, v, schedule))
            return placed;
        return lowerToComms(schedule);
    } catch (const std::exception&) { // an order that cannot be built or lowered (it deadlocks)
        return std::nullopt;
    }
}

bool ProjectDocument::moveCommAction(int rank, int from, int to)
{
    std::optional<TorchSchedule> program = commProgram();
    if (!program || rank < 0 || rank >= static_cast<int>(program->rows.size()) || from == to)
        return false;
    std::vector<Step>& row = program->rows[static_cast<std::size_t>(rank)];
    const int n = static_cast<int>(row.size());
    if (from < 0 || from >= n || to < 0 || to >= n)
        return false;
    const Step step = row[static_cast<std::size_t>(from)];
    if (!step.isComm() || !isPointToPoint(step.comm.kind))
        return false;
    moveElement(row, from, to);
    edit(tr("Move %1 on rank %2").arg(QString::fromStdString(toString(step))).arg(rank), [&](Project& p) {
        if (Variant* v = activeMutable(p))
            v->commOrder = program->rows;
    });
    return true;
}

void ProjectDocument::regenerate()
{
    const Variant& active = activeVariant();
    const bool custom = active.kind == ScheduleKind::Custom; // an imported order is the schedule itself
    if (!(active.order && !custom) && !active.commOrder)
        return;
    edit(tr("Regenerate %1").arg(activeName()), [&](Project& p) {
        if (Variant* v = activeMutable(p)) {
            if (!custom)
                v->order.reset();
            v->commOrder.reset();
        }
    });
}

QString ProjectDocument::addImportedVariant(const Schedule& schedule, const QString& baseName)
{
    const QString name = uniqueName(baseName);
    edit(tr("Import %1").arg(name), [&](Project& p) {
        Variant v;
        v.name = name.toStdString();
        v.kind = ScheduleKind::Custom;
        v.ranks = schedule.ranks;
        v.microbatches = schedule.microbatches;
        v.stagesPerRank = schedule.stagesPerRank;
        v.order = schedule.order;
        p.variants.push_back(std::move(v));
        p.activeVariant = name.toStdString();
    });
    return name;
}

} // namespace dps::ui
