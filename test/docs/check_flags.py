#!/usr/bin/env python3
"""Fails when a doc names a command-line flag that the tool's `--help` does not list.

A flag (`--name`, `--name=value`) is checked against the tool it belongs to:
- on a command line in a code block, the tool that line calls (`build/bin/snn-run train ...`,
  `snn-compile ...`, `/usr/bin/python3 -m snnexport.train ...`, `python3 bench/NAME.py ...`);
- in an inline code span that starts with a tool (`snn-run infer --verbose`), that tool;
- in an inline code span that starts with the flag (`--resume`), the tool of the section: the
  nearest heading above that names one (`## snn-run train`), else the file's default below.
`snn-run` without a subcommand stands for the union of its subcommands' flags. Flags of other
programs (torchrun, pip, ...) are not checked: their lines and sections name no tool here.

Usage: check_flags.py [--root DIR] --bin DIR [FILE.md ...]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from typing import Dict, Iterator, List, Optional, Set, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import markdown_blocks  # noqa: E402
from run_examples import REPO_ROOT, default_files  # noqa: E402

SNN_RUN_COMMANDS = ("infer", "train", "eval", "export", "calibrate")
TOOL = re.compile(
    r"(?:^|[\s/`(])(snn-(?:compile|opt|translate)|snn-run(?:\s+(?:--\S+\s+(?:\d+\s+)?)*"
    r"(?:infer|train|eval|export|calibrate))?|snn-run)(?=[\s`]|$)"
    r"|python3\s+-m\s+(snnexport\.(?:train|make_case))|python3\s+(bench/\w+\.py)")
FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
CODE_SPAN = re.compile(r"`([^`]+)`")
# The tool a file's prose means when its section names none.
FILE_DEFAULTS = {
    "docs/snn-run.md": "snn-run", "docs/distributed.md": "snn-run",
    "docs/checkpoints.md": "snn-run", "docs/training.md": "snn-run",
    "docs/planner.md": "snn-compile", "docs/passes.md": "snn-opt",
}


def tool_of(text: str) -> Optional[str]:
    """The tool the text calls first, normalised (`snn-run train`, `snnexport.train`)."""
    m = TOOL.search(text)
    if not m:
        return None
    if m.group(2) or m.group(3):
        return m.group(2) or m.group(3)
    words = m.group(1).split()
    command = [w for w in words[1:] if w in SNN_RUN_COMMANDS]
    return f"snn-run {command[0]}" if command else words[0]


class HelpTexts:
    """Flags each tool's `--help` lists, asked once per tool."""

    def __init__(self, root: str, bin_dir: str) -> None:
        self.root, self.bin_dir = root, bin_dir
        self.cache: Dict[str, Set[str]] = {}

    def command(self, tool: str) -> List[str]:
        if tool.startswith("snnexport."):
            return ["/usr/bin/python3", "-m", tool, "--help"]
        if tool.startswith("bench/"):
            return ["/usr/bin/python3", os.path.join(self.root, tool), "--help"]
        words = tool.split()
        return [os.path.join(self.bin_dir, words[0])] + words[1:] + ["--help"]

    def flags(self, tool: str) -> Set[str]:
        if tool == "snn-run":
            return set().union(self.flags_of("snn-run"),
                               *(self.flags_of(f"snn-run {c}") for c in SNN_RUN_COMMANDS))
        if tool.startswith("snn-run "):  # the launcher's flags stand before the command
            return self.flags_of(tool) | self.flags_of("snn-run")
        return self.flags_of(tool)

    def flags_of(self, tool: str) -> Set[str]:
        if tool not in self.cache:
            env = dict(os.environ, PYTHONPATH=os.path.join(self.root, "python_export"))
            done = subprocess.run(self.command(tool), capture_output=True, text=True, env=env,
                                  timeout=120)
            if done.returncode != 0:
                raise RuntimeError(f"'{' '.join(self.command(tool))}' exited {done.returncode}:"
                                   f" {done.stderr.strip()[:300]}")
            self.cache[tool] = set(FLAG.findall(done.stdout + done.stderr))
        return self.cache[tool]


def command_lines(block: markdown_blocks.Block) -> Iterator[Tuple[int, str]]:
    """(line, command) of a code block, `\\` continuations joined, comments dropped."""
    lines = block.text.split("\n")
    i = 0
    while i < len(lines):
        start, text = i, lines[i]
        while text.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text.rstrip()[:-1] + " " + lines[i]
        yield block.line + 1 + start, re.sub(r"(^|\s)#.*$", "", text)
        i += 1


def mentions(path: str, rel: str) -> Iterator[Tuple[int, Optional[str], str]]:
    """(line, tool, flag) of every flag the file names, with the tool it belongs to."""
    blocks = {b.line: b for b in markdown_blocks.parse(path, rel)}
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    sections: List[Tuple[int, Optional[str]]] = []  # (heading level, tool) stack
    default = FILE_DEFAULTS.get(rel)
    number = 0
    while number < len(lines):
        line = lines[number]
        block = blocks.get(number + 1)
        if block is not None:
            if block.language not in ("json", "mlir", "c++", "cpp"):
                for at, command in command_lines(block):
                    tool = tool_of(command)
                    for flag in FLAG.findall(command):
                        yield at, tool, flag
            number = block.body_end + 1
            continue
        heading = HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            sections = [s for s in sections if s[0] < level]
            sections.append((level, tool_of(heading.group(2).replace("`", " "))))
        section_tool = next((t for _, t in reversed(sections) if t), default)
        for span in CODE_SPAN.findall(line):
            tool = tool_of(span) or (section_tool if span.startswith("--") else None)
            for flag in FLAG.findall(span):
                yield number + 1, tool, flag
        number += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=REPO_ROOT, help="repository root (default: this checkout)")
    parser.add_argument("--bin", required=True, help="the build's bin/ (the tools)")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    files = [os.path.abspath(f) for f in args.files] or default_files(root)
    helps = HelpTexts(root, os.path.abspath(args.bin))
    checked, unknown = 0, []
    for path in files:
        rel = os.path.relpath(path, root)
        for line, tool, flag in mentions(path, rel):
            if tool is None:
                continue
            checked += 1
            if flag not in helps.flags(tool):
                unknown.append(f"{rel}:{line}: --{flag} is not a flag of {tool} "
                               f"(not in its --help)")
    for message in unknown:
        print(message)
    print(f"{checked} flag mentions checked against the tools' --help, {len(unknown)} unknown")
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main())
