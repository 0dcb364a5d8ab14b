#include "fileio.h"

#include "base/errors.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace dps {

std::string readTextFile(const std::filesystem::path& path)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw IoError(path.string() + ": cannot read: is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw IoError(path.string() + ": cannot read: " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad())
        throw IoError(path.string() + ": cannot read: " + std::strerror(errno));
    return text.str();
}

namespace {

[[noreturn]] void throwWriteError(const std::filesystem::path& path, const std::string& reason)
{
    throw IoError(path.string() + ": cannot write: " + reason);
}

/// A name beside `path` no other writer in this process or another one picks at the same time.
std::filesystem::path temporaryBeside(const std::filesystem::path& path)
{
    static int counter = 0;
    std::filesystem::path tmp = path;
    tmp += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    return tmp;
}

/// Writes, flushes and syncs `text` to a new file; returns "" or the reason it failed.
std::string writeSynced(const std::filesystem::path& file, const std::string& text)
{
    std::FILE* f = std::fopen(file.c_str(), "wb");
    if (!f)
        return std::strerror(errno);
    std::string reason;
    if (std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0)
        reason = std::strerror(errno);
    if (std::fclose(f) != 0 && reason.empty())
        reason = std::strerror(errno);
    return reason;
}

} // namespace

void writeFileAtomic(const std::filesystem::path& path, const std::string& text)
{
    std::error_code ec;
    if (!path.has_filename() || std::filesystem::is_directory(path, ec))
        throwWriteError(path, "is a directory");
    const std::filesystem::path tmp = temporaryBeside(path);
    std::string reason = writeSynced(tmp, text);
    if (reason.empty() && std::rename(tmp.c_str(), path.c_str()) != 0)
        reason = std::strerror(errno);
    if (!reason.empty()) {
        std::filesystem::remove(tmp, ec);
        throwWriteError(path, reason);
    }
}

} // namespace dps
