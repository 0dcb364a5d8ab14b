#include "commands.h"

#include "schedule/errors.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace dps::cli {

std::string readFile(const std::string& path)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw IoError(path + ": cannot read: is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw IoError(path + ": cannot read: " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad())
        throw IoError(path + ": cannot read: " + std::strerror(errno));
    return ss.str();
}

void writeOutput(const std::string& path, const std::string& text)
{
    if (path.empty() || path == "-") {
        std::cout << text;
        std::cout.flush();
        return;
    }
    const std::filesystem::path target(path);
    std::error_code dirError;
    if (std::filesystem::is_directory(target, dirError))
        throw IoError(path + ": cannot write: is a directory");
    std::filesystem::path tmp = target;
    tmp += ".tmp-dpstudio";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out)
            throw IoError(path + ": cannot write: " + std::strerror(errno));
        out << text;
        out.flush();
        if (!out)
            throw IoError(path + ": cannot write: " + std::strerror(errno));
    }
    std::error_code ec;
    std::filesystem::rename(tmp, target, ec);
    if (ec) {
        std::error_code ignored; // keep the rename's reason for the message
        std::filesystem::remove(tmp, ignored);
        throw IoError(path + ": cannot write: " + ec.message());
    }
}

Schedule projectSchedule(const std::string& file, const Project& project, const Variant& variant)
{
    try {
        return buildSchedule(project, variant);
    } catch (const ConstraintError& e) {
        throw ConstraintError(e.rule(), file + ": " + e.what());
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
