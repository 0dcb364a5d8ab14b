#pragma once
// Packing plain values into bytes for Comm::gather/broadcast (all ranks run the same binary, so the
// layout is native).
#include "backend.h"

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace dps::runtime {

class ByteWriter {
public:
    template <typename T> void put(const T& value)
    {
        static_assert(std::is_trivially_copyable_v<T>);
        const auto* p = reinterpret_cast<const char*>(&value);
        m_bytes.insert(m_bytes.end(), p, p + sizeof(T));
    }
    void putString(const std::string& text)
    {
        put(static_cast<std::uint64_t>(text.size()));
        m_bytes.insert(m_bytes.end(), text.begin(), text.end());
    }
    std::vector<char>& bytes() { return m_bytes; }

private:
    std::vector<char> m_bytes;
};

/// Reads what ByteWriter wrote; throws RuntimeError when the bytes run out.
class ByteReader {
public:
    explicit ByteReader(const std::vector<char>& bytes)
        : m_bytes(bytes)
    {
    }
    template <typename T> T get()
    {
        static_assert(std::is_trivially_copyable_v<T>);
        need(sizeof(T));
        T value;
        std::memcpy(&value, m_bytes.data() + m_offset, sizeof(T));
        m_offset += sizeof(T);
        return value;
    }
    std::string getString()
    {
        const auto n = static_cast<std::size_t>(get<std::uint64_t>());
        need(n);
        std::string text(m_bytes.data() + m_offset, n);
        m_offset += n;
        return text;
    }
    bool atEnd() const { return m_offset == m_bytes.size(); }

private:
    void need(std::size_t n) const
    {
        if (m_offset + n > m_bytes.size())
            throw RuntimeError("truncated message from another rank");
    }
    const std::vector<char>& m_bytes;
    std::size_t m_offset = 0;
};

} // namespace dps::runtime
