#pragma once
// Typed exceptions of the engine libraries. Each carries a message that names what is wrong and where
// (file, row/column, field, rank or action). A bad *schedule* is not an exception: the validator returns
// diagnostics as data. These are for input that cannot even be represented.
#include <stdexcept>
#include <string>

namespace dps {

/// Base of every exception the engine throws on purpose. what() is one line a user can act on.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Text that does not follow a grammar: an action cell, a CSV row, a JSON field.
/// row and column are 1-based where known (0 = not applicable).
class ParseError : public Error {
public:
    ParseError(const std::string& message, int row = 0, int column = 0)
        : Error(message)
        , m_row(row)
        , m_column(column)
    {
    }
    int row() const { return m_row; }
    int column() const { return m_column; }

private:
    int m_row;
    int m_column;
};

/// A generator's size rule is broken (e.g. "DualPipe needs an even number of ranks"). rule() is a short
/// identifier of the rule, e.g. "dualpipe.even-ranks", for tests and tools.
class ConstraintError : public Error {
public:
    ConstraintError(std::string rule, const std::string& message)
        : Error(message)
        , m_rule(std::move(rule))
    {
    }
    const std::string& rule() const { return m_rule; }

private:
    std::string m_rule;
};

/// A file is in a format we know but its content is wrong: missing field, wrong type, newer version.
class FormatError : public Error {
public:
    using Error::Error;
};

/// A file could not be read or written at all (missing, no permission, disk full).
class IoError : public Error {
public:
    using Error::Error;
};

} // namespace dps
