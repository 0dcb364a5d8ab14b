#pragma once
// The one way the engine, the CLI and the GUI read a whole file and write one atomically.
#include <filesystem>
#include <string>

namespace dps {

/// Reads a whole file as bytes. Throws IoError("FILE: cannot read: <reason>") when it is missing,
/// unreadable or a directory.
std::string readTextFile(const std::filesystem::path& path);

/// Writes `text` to `path` atomically: a temporary file beside it is written, flushed and fsync'ed, then
/// renamed over `path`, so a reader sees the old file or the new one, never a part. A failure leaves
/// `path` as it was and removes the temporary. Throws IoError("FILE: cannot write: <reason>").
void writeFileAtomic(const std::filesystem::path& path, const std::string& text);

} // namespace dps
