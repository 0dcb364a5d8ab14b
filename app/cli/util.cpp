#include "commands.h"

#include "base/errors.h"
#include "base/fileio.h"
#include "project/predict.h"
#include "schedule/validator.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace dps::cli {

void writeOutput(const std::string& path, const std::string& text)
{
    if (path.empty() || path == "-") {
        std::cout << text;
        std::cout.flush();
        return;
    }
    writeFileAtomic(path, text);
}

Schedule projectSchedule(const std::string& file, const Project& project, const Variant& variant)
{
    try {
        return buildSchedule(project, variant);
    } catch (const ConstraintError& e) {
        throw ConstraintError(e.rule(), file + ": " + e.what());
    }
}

const Variant& variantOf(const Project& project, const std::string& name, const std::string& file)
{
    if (name.empty())
        return project.active();
    try {
        return findVariant(project, name);
    } catch (const FormatError& e) {
        throw FormatError(file + ": --variant: " + e.what());
    }
}

bool looksLikeJsonFile(const std::string& path, const std::string& text)
{
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".json" || ext == ".JSON")
        return true;
    std::size_t first = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
    first = text.find_first_not_of(" \t\r\n", first);
    return first != std::string::npos && (text[first] == '{' || text[first] == '[');
}

CsvImport readScheduleCsv(const std::string& file, const std::string& text, const std::string& dialect)
{
    if (const auto nul = text.find('\0'); nul != std::string::npos)
        throw ParseError(file + ": not a text file (a NUL byte at offset " + std::to_string(nul)
            + "); expected a schedule CSV, one row of actions per rank");
    CsvImport imported;
    if (csvHasComms(text)) { // PyTorch's compute_comms form: its compute actions, once the whole is sound
        TorchSchedule comms;
        try {
            comms = readTorchCsv(text);
        } catch (const ParseError& e) {
            throw ParseError(file + ": " + e.what(), e.row(), e.column());
        }
        try {
            const ValidationReport report = validate(comms);
            if (!report.valid())
                throw ParseError(format(report.diagnostics.front()) + " (`dpstudio validate` lists every finding)");
            imported.schedule = computeSchedule(comms);
        } catch (const ParseError& e) {
            throw ParseError(file + ": " + e.what(), e.row(), e.column());
        }
        return imported;
    }
    try {
        imported = readCsv(text,
            dialect == "current"    ? CsvDialect::Current
                : dialect == "2024" ? CsvDialect::Legacy2024
                                    : CsvDialect::Auto);
    } catch (const ParseError& e) {
        throw ParseError(file + ": " + e.what(), e.row(), e.column());
    }
    if (imported.schedule.opCount() == 0)
        throw ParseError(file + ": "
            + (text.find_first_not_of(" \t\r\n,\xEF\xBB\xBF") == std::string::npos ? "empty" : "no actions")
            + ": a schedule CSV has one row of actions per rank, e.g. 0F0,0B0");
    for (const auto& w : imported.warnings)
        std::cerr << "dpstudio: " << file << ": " << w << "\n";
    return imported;
}

} // namespace dps::cli
