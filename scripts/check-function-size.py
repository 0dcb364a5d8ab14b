#!/usr/bin/env python3
"""Fails when a function outside the tests is longer than the limit (default 120 lines).

A function is a body `{ … }` opened in namespace or class scope after a declarator with a parameter list
(lambdas and the bodies of control statements inside a function count towards the function around them).
Its length runs from the first line of its declarator to its closing brace. Comments, string and character
literals and preprocessor lines are blanked before braces are counted.

Usage: check-function-size.py [--limit N] [--list N] [DIR ...]   (default dirs: engine app ui)
--list N prints every function of N lines or more, longest first, and exits 0.
"""
import argparse
import os
import re
import sys

SUFFIXES = (".cpp", ".h", ".cu", ".cuh", ".hpp", ".cc")
SCOPE_WORDS = re.compile(r"\b(namespace|class|struct|union|enum)\b")
NOT_FUNCTION = re.compile(r"^\s*(if|for|while|switch|catch|do|else|return)\b|=\s*$|\]\s*(\([^)]*\))?\s*(mutable\s*)?(->[^{]*)?$")


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#" :
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c in " \t":
            out.append(c)
            i += 1
            continue
        line_start = c == "\n"
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, last line) of each function body of the file."""
    text = blank(open(path, encoding="utf-8", errors="replace").read())
    stack = []  # per open brace: 'scope', 'function' or 'block'
    found = []
    head_start = 0  # offset where the current declarator may start
    line_of = lambda off: text.count("\n", 0, off) + 1
    for off, c in enumerate(text):
        if c in ";":
            head_start = off + 1
        elif c == "{":
            head = text[head_start:off]
            inside_function = any(kind == "function" for kind, _ in stack)
            if inside_function:
                stack.append(("block", off))
            elif SCOPE_WORDS.search(head) and "(" not in head.split("{")[-1].split(SCOPE_WORDS.search(head).group(0))[0] and not re.search(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(->.*)?$", head.strip()):
                stack.append(("scope", off))
            elif "(" in head and not NOT_FUNCTION.search(head.strip()):
                start = head_start + len(head) - len(head.lstrip())
                m = re.search(r"([~\w:]+)\s*\(", head)
                stack.append(("function", (start, m.group(1) if m else "?")))
            else:
                stack.append(("block", off))
            head_start = off + 1
        elif c == "}":
            if stack:
                kind, info = stack.pop()
                if kind == "function":
                    start, name = info
                    found.append((name, line_of(start), line_of(off)))
            head_start = off + 1
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=120)
    parser.add_argument("--list", type=int, default=0)
    parser.add_argument("dirs", nargs="*", default=["engine", "app", "ui"])
    args = parser.parse_args()
    rows = []
    for root in args.dirs:
        for folder, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith(SUFFIXES):
                    path = os.path.join(folder, f)
                    for name, first, last in functions(path):
                        rows.append((last - first + 1, path, first, name))
    rows.sort(reverse=True)
    if args.list:
        for length, path, first, name in rows:
            if length >= args.list:
                print(f"{length:5d}  {path}:{first}  {name}")
        return 0
    over = [r for r in rows if r[0] > args.limit]
    for length, path, first, name in over:
        print(f"{path}:{first}: {name} is {length} lines (limit {args.limit}): split it into named steps")
    print(f"function size: {len(rows)} functions read, {len(over)} over {args.limit} lines")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
