#!/usr/bin/env python3
"""Lists the functions of C++ sources by length (lines), longest first.

    function_lengths.py lib/Runtime/Distributed/*.cpp [--top N] [--max L]

A brace counter, not a parser: comments, preprocessor lines, string and
character literals are blanked out, then every `{` outside a function body whose preceding text
(back to the last `;`, `{` or `}` at that level) looks like a signature
(`...)`, optionally followed by const, noexcept, override, a trailing return
type or a constructor's initializer list) opens a function. Lambdas and
local classes count towards the function that contains them. A function's
length runs from the first line of its signature to its closing brace.

--max L: exit 1 when a function is longer than L lines (prints those).
"""
import argparse
import re
import sys

SIGNATURE_END = re.compile(
    r"\)\s*(const\b|noexcept\b|override\b|final\b|mutable\b|&|->[^;{}]*|\s)*$")
INIT_LIST = re.compile(r"\)\s*:\s*[\w:<>]+\s*[({]")


def blank(text):
    """Comments, preprocessor lines, strings and character literals as spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#" and text[text.rfind("\n", 0, i) + 1:i].strip() == "":
            j = i
            while True:  # a preprocessor line, with its continuations
                j = text.find("\n", j)
                if j < 0 or text[j - 1] != "\\":
                    break
                j += 1
            j = n if j < 0 else j
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def name_of(header):
    """The function's name: the qualified identifier before its `(`."""
    init = re.search(r"\)\s*:(?!:)", header)  # a constructor's initializers
    if init:
        header = header[:init.start() + 1]
    depth = 0
    for k in range(len(header) - 1, -1, -1):
        ch = header[k]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                m = re.search(r"([~\w:]+(?:operator\s*[^\s(]+)?)\s*$",
                              header[:k])
                if m:
                    return m.group(1)
    m = re.search(r"([~\w:]+)\s*\(", header)
    return m.group(1) if m else header.strip()[:40]


def functions(path):
    text = blank(open(path, encoding="utf-8").read())
    line = 1
    stack = []         # kinds of the open braces: scope, function, other
    header_start = 0   # index where the current declaration's text begins
    opened = []        # (name, first line) of the open function
    result = []
    for i, ch in enumerate(text):
        if ch == "\n":
            line += 1
            continue
        in_function = "function" in stack
        if ch == "{":
            if in_function:
                stack.append("other")
                continue
            header = text[header_start:i]
            flat = " ".join(header.split())
            if re.match(r'^(namespace\b|extern\s*""\s*$)', flat) or (
                    re.search(r"\b(class|struct|union|enum)\b", flat)
                    and "(" not in flat):
                stack.append("scope")
                header_start = i + 1
            elif SIGNATURE_END.search(flat) or INIT_LIST.search(flat):
                stack.append("function")
                first = header_start + len(header) - len(header.lstrip())
                opened.append((name_of(flat), text.count("\n", 0, first) + 1))
            else:
                stack.append("other")  # brace initializer: keep the header
        elif ch == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "function":
                name, first = opened.pop()
                result.append((line - first + 1, name, path, first))
                header_start = i + 1
            elif kind == "scope":
                header_start = i + 1
        elif ch == ";" and not in_function and (not stack or stack[-1] != "other"):
            header_start = i + 1
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--max", type=int, default=0)
    args = parser.parse_args()
    everything = []
    for path in args.files:
        everything += functions(path)
    everything.sort(key=lambda f: (-f[0], f[2], f[3]))
    for length, name, path, first in everything[:args.top]:
        print(f"{length:5d}  {name}  ({path}:{first})")
    if args.max:
        over = [f for f in everything if f[0] > args.max]
        if over:
            print(f"{len(over)} function(s) longer than {args.max} lines",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
