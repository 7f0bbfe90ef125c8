#!/usr/bin/env python3
"""Fails on relative markdown links whose target does not exist (ctest docs.links).

Scans docs/*.md, README.md, python_export/README.md and every README.md under lib/, include/,
test/, bench/ and scripts/ (or the files given on the command line) for inline links and images
`[text](target)` / `![alt](target)` and reference definitions `[label]: target`, outside fenced
code blocks and inline code. A target is checked when it is relative: not a URL with a scheme
(http:, https:, mailto:, ...) and not a pure `#anchor`. It is resolved against the folder of the
file that contains it (a leading `/` means the repository root), with any `#anchor` or `?query`
removed. Every dangling link is printed as `file:line -> target`; the exit code is then 1.

Usage: check_links.py [--root DIR] [FILE.md ...]
"""
import argparse
import os
import re
import sys
from urllib.parse import unquote

# Folders whose README.md files are checked, besides the fixed files below.
README_DIRS = ("lib", "include", "test", "bench", "scripts")
SKIP_DIRS = {".git", "__pycache__", "build", "node_modules"}

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
# [text](target) or ![alt](target); text may hold one level of nested brackets. The target is
# <...> or a run without spaces (balanced parentheses allowed), optionally followed by a title.
INLINE = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"
    r"\(\s*(<[^>]*>|(?:[^\s()]|\([^\s()]*\))+)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def default_files(root):
    files = [os.path.join(root, "README.md"), os.path.join(root, "python_export", "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    for top in README_DIRS:
        for folder, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            if "README.md" in names:
                files.append(os.path.join(folder, "README.md"))
    return [f for f in files if os.path.isfile(f)]


def links(path):
    """(line number, target) of every link in the file, code excluded."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = FENCE.match(line)
            if fence is not None:
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                    fence = None
                continue
            if m:
                fence = m.group(1)
                continue
            text = CODE_SPAN.sub("", line)
            for target in INLINE.findall(text):
                yield number, target
            d = REFERENCE_DEF.match(text)
            if d:
                yield number, d.group(1)


def is_checked(target):
    return not (target.startswith("#") or SCHEME.match(target) or target.startswith("//"))


def resolve(root, path, target):
    target = target[1:-1] if target.startswith("<") and target.endswith(">") else target
    target = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not target:
        return None
    base = root if target.startswith("/") else os.path.dirname(path)
    return os.path.normpath(os.path.join(base, target.lstrip("/")))


def check(root, files):
    problems = []
    for path in files:
        for number, target in links(path):
            if not is_checked(target):
                continue
            resolved = resolve(root, path, target)
            if resolved is not None and not os.path.exists(resolved):
                problems.append(f"{os.path.relpath(path, root)}:{number} -> {target}")
    return problems


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")),
                   help="repository root (default: two folders above this script)")
    p.add_argument("files", nargs="*", help="markdown files (default: the project's docs)")
    args = p.parse_args(argv)
    root = os.path.abspath(args.root)
    files = [os.path.abspath(f) for f in args.files] or default_files(root)
    problems = check(root, files)
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} dangling link(s) in {len(files)} file(s)", file=sys.stderr)
        return 1
    print(f"checked {len(files)} file(s): no dangling relative links")
    return 0


if __name__ == "__main__":
    sys.exit(main())
