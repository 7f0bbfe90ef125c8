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
import functools
import os
import re
import subprocess
import sys
from typing import Dict, Iterator, List, Optional, Set, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import markdown_blocks  # noqa: E402
from run_examples import REPO_ROOT, default_files  # noqa: E402

SNN_RUN_COMMANDS = ("infer", "train", "eval", "export", "calibrate", "report")
LLVM_TOOLS = ("snn-compile", "snn-opt", "snn-translate")
# A command's first word: a tool, maybe behind `VAR=value` words and a path.
FIRST_TOOL = re.compile(
    r"^\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\S*/)?"
    r"(?:(snn-(?:compile|opt|translate|run))\b((?:\s+--?\S+(?:\s+\d+)?)*\s+(?:%s)\b)?"
    r"|python3\s+-m\s+(snnexport\.(?:train|make_case))\b|(?:python3\s+)?(bench/\w+\.py)"
    r"|(snnexport\.(?:train|make_case))\b)" % "|".join(SNN_RUN_COMMANDS))
FLAG = re.compile(r"(?<![\w=-])--([a-z][a-z0-9-]*)")  # after "=": a value (--a=--b)
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
CODE_SPAN = re.compile(r"`([^`]+)`")
PIPELINE_SPLIT = re.compile(r"\s(?:\||&&|;)\s")
# The tool a file's prose means when its section names none.
FILE_DEFAULTS = {
    "docs/snn-run.md": "snn-run", "docs/distributed.md": "snn-run",
    "docs/checkpoints.md": "snn-run", "docs/training.md": "snn-run",
    "docs/observability.md": "snn-run",
    "docs/planner.md": "snn-compile", "docs/passes.md": "snn-opt",
}
# Placeholders that stand for any flag in prose (`--flag=value`).
PLACEHOLDERS = {"flag"}


def tool_of(text: str) -> Optional[str]:
    """The tool `text` calls as its first word, normalised (`snn-run train`, `snnexport.train`,
    `bench/x.py`); None if it starts with anything else."""
    m = FIRST_TOOL.match(text)
    if not m:
        return None
    if m.group(1):
        command = m.group(2).split()[-1] if m.group(2) else None
        return f"{m.group(1)} {command}" if command else m.group(1)
    return m.group(3) or m.group(4) or m.group(5)


def heading_tool(text: str) -> Optional[str]:
    """The tool a heading names anywhere in it (`## The \`snn-run train\` command`)."""
    for start in re.finditer(r"snn-(?:compile|opt|translate|run)\b", text):
        return tool_of(text[start.start():])
    return None


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

    def accepts(self, tool: str, flag: str) -> bool:
        """Whether `tool` takes `--flag`: listed by its --help; or, for the LLVM tools whose
        --help leaves out MLIR's own options, not refused as unknown on a command line; or a
        pass of snn-opt named in a pipeline's prose (`--snn-plan`)."""
        if flag in self.flags(tool):
            return True
        name = tool.split()[0]
        if name in LLVM_TOOLS and self.probe(name, flag):
            return True
        return (flag.startswith("snn-") or flag == "canonicalize") and \
            flag in self.flags_of("snn-opt")

    @functools.lru_cache(maxsize=None)
    def probe(self, tool: str, flag: str) -> bool:
        """An LLVM tool refuses an unknown option by name before anything else (with --help
        it would print the help whatever the flag), so any other outcome means it knows it."""
        done = subprocess.run([os.path.join(self.bin_dir, tool), f"--{flag}=1"],
                              capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        return "Unknown command line argument" not in done.stderr

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
                for at, line_text in command_lines(block):
                    for command in PIPELINE_SPLIT.split(line_text):
                        tool = tool_of(command.lstrip("$ "))
                        for flag in FLAG.findall(command):
                            yield at, tool, flag
            number = block.body_end + 1
            continue
        heading = HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            sections = [s for s in sections if s[0] < level]
            sections.append((level, heading_tool(heading.group(2).replace("`", " "))))
        section_tool = next((t for _, t in reversed(sections) if t), default)
        # Flags of other programs: a line about torchrun names them without a tool of ours.
        if "torchrun" in line:
            section_tool = None
        for span in CODE_SPAN.findall(line):
            tool = tool_of(span) or (section_tool if span.startswith("--") else None)
            for flag in FLAG.findall(span):
                if flag not in PLACEHOLDERS:
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
            if not helps.accepts(tool, flag):
                unknown.append(f"{rel}:{line}: --{flag} is not a flag of {tool} "
                               f"(not in its --help)")
    for message in unknown:
        print(message)
    print(f"{checked} flag mentions checked against the tools' --help, {len(unknown)} unknown")
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main())
