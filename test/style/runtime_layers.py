#!/usr/bin/env python3
"""Checks the runtime's layering: a part includes only itself and the parts it may use.

    runtime_layers.py ROOT

The parts of the runtime and their order come from docs/architecture.md's
Layout (the folders listed under `Runtime/`, top to bottom). Each part X
(lib/Runtime/X/ and include/snn/Runtime/X/) states in lib/Runtime/X/README.md,
on one line, which parts it may use:

    May use: Support, Kernels, Autograd

(`May use: none` for the bottom part). Fails, naming file:line, on
- a README without exactly one such line, or naming an unknown part, or a part
  that does not come above X in the Layout (that would allow a cycle);
- a folder of lib/Runtime or include/snn/Runtime that the Layout does not list;
- an `#include "snn/Runtime/P/..."` (or <...>) in X's files where P is neither
  X nor on X's May-use line.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]snn/Runtime/([^">]*)[">]')
MAY_USE = re.compile(r"^May use:(.*)$")
SOURCE_SUFFIXES = (".h", ".hpp", ".inc", ".def", ".cpp", ".cc")


def layout_parts(root, problems):
    """The runtime's parts in docs/architecture.md's Layout block, in order."""
    path = os.path.join(root, "docs", "architecture.md")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    parts, indent = [], None
    for line in lines:
        stripped = line.lstrip()
        depth = len(line) - len(stripped)
        if indent is None:
            if re.match(r"Runtime/\s", stripped):
                indent = depth
            continue
        m = re.match(r"(\w+)/\s", stripped)
        if not m or depth <= indent:
            break
        parts.append(m.group(1))
    if not parts:
        problems.append(f"{path}: no `Runtime/` folder list with its parts "
                        "below it in the Layout block")
    return parts


def read_may_use(readme, part, parts, problems):
    """The parts on `readme`'s May-use line (None when it has no valid line)."""
    if not os.path.isfile(readme):
        problems.append(f"{readme}: missing (it must say `May use: ...`)")
        return None
    with open(readme, encoding="utf-8") as f:
        found = [(n, MAY_USE.match(l.strip())) for n, l in enumerate(f, 1)]
    found = [(n, m) for n, m in found if m]
    if len(found) != 1:
        problems.append(f"{readme}: needs exactly one `May use: ...` line "
                        f"(the parts above {part} it may use, or `none`); "
                        f"found {len(found)}")
        return None
    line, m = found[0]
    text = m.group(1).strip().rstrip(".")
    names = [] if text == "none" else [n.strip() for n in text.split(",")]
    above = parts[:parts.index(part)]
    ok = True
    for name in names:
        if name not in parts:
            problems.append(f"{readme}:{line}: May use names unknown part "
                            f"'{name}' (parts: {', '.join(parts)})")
            ok = False
        elif name not in above:
            problems.append(f"{readme}:{line}: {part} may not use {name}: it "
                            f"does not come above {part} in docs/architecture.md's Layout")
            ok = False
    return set(names) if ok else None


def check_includes(folder, part, allowed, rule, problems):
    """Every include of another part in `folder`'s sources is on `allowed`."""
    for dirpath, _, files in os.walk(folder):
        for name in sorted(files):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    used = m.group(1).split("/")[0]
                    if used != part and used not in allowed:
                        problems.append(f"{path}:{n}: {line.strip()}: {part} may not "
                                        f"use {used} ({rule})")


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    os.chdir(root)
    problems = []
    parts = layout_parts(root, problems)
    for top in ("lib/Runtime", os.path.join("include", "snn", "Runtime")):
        for name in sorted(os.listdir(top)):
            if os.path.isdir(os.path.join(top, name)) and name not in parts:
                problems.append(f"{top}/{name}: not a part of the runtime in "
                                "docs/architecture.md's Layout")
    for part in parts:
        readme = os.path.join("lib", "Runtime", part, "README.md")
        allowed = read_may_use(readme, part, parts, problems)
        if allowed is None:
            continue
        rule = f"May use: {', '.join(p for p in parts if p in allowed) or 'none'} in {readme}"
        for top in ("lib/Runtime", os.path.join("include", "snn", "Runtime")):
            check_includes(os.path.join(top, part), part, allowed, rule, problems)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} layering problem(s) in the runtime")
        return 1
    print(f"runtime layers: {len(parts)} parts, every include allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
