// Replays inputs through a fuzz target without libFuzzer: every file named on the command line, and every
// file inside a folder named there. Exits 0 when all ran (a finding aborts), 2 when nothing could be read.
#include "fuzz_target.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

bool replay(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in)
        return false;
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    return true;
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<std::filesystem::path> files;
    for (int i = 1; i < argc; ++i) {
        const std::filesystem::path path(argv[i]);
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) {
            for (const auto& entry : std::filesystem::recursive_directory_iterator(path, ec))
                if (entry.is_regular_file())
                    files.push_back(entry.path());
        } else {
            files.push_back(path);
        }
    }
    std::size_t replayed = 0;
    for (const auto& file : files) {
        if (!replay(file)) {
            std::cerr << file.string() << ": cannot read\n";
            return 2;
        }
        ++replayed;
    }
    if (replayed == 0) {
        std::cerr << "no input to replay\n";
        return 2;
    }
    std::cout << "replayed " << replayed << " inputs\n";
    return 0;
}
