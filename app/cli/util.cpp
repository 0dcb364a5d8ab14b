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
    const CsvImport imported = dps::readScheduleCsv(file, text,
        dialect == "current"    ? CsvDialect::Current
            : dialect == "2024" ? CsvDialect::Legacy2024
                                : CsvDialect::Auto);
    for (const auto& w : imported.warnings)
        std::cerr << "dpstudio: " << file << ": " << w << "\n";
    return imported;
}

} // namespace dps::cli
