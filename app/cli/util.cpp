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
        std::filesystem::remove(tmp, ec);
        throw IoError(path + ": cannot write: " + ec.message());
    }
}

} // namespace dps::cli
