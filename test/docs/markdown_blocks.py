"""Fenced code blocks of a Markdown file and the doc-test directives that annotate them.

A directive is an HTML comment on the lines right before a block (blank lines allowed between),
so it does not show when the Markdown is rendered:

    <!-- doctest: skip: REASON -->          the block is not run; REASON says why
    <!-- doctest: replace OLD => NEW -->    run the block with OLD replaced by NEW (smaller sizes)
    <!-- doctest: expect -->                this block is the output of the run block before it
    <!-- doctest: timeout SECONDS -->       a longer limit for one slow block

Blocks whose info string is `sh`, `bash` or `python` are run; a `console` block is a transcript
(`$ command` lines, each followed by its output) whose commands are run and whose output is
compared. Other blocks (no language, `json`, `mlir`, `text`, ...) are not programs and are only
counted. docs/testing.md documents the conventions for writers of docs.
"""
from __future__ import annotations

import dataclasses
import re
from typing import List, Optional, Tuple

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")
DIRECTIVE = re.compile(r"^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$")
RUN_LANGUAGES = {"sh", "bash", "python"}
TRANSCRIPT_LANGUAGES = {"console"}


@dataclasses.dataclass
class Block:
    """One fenced code block: where it starts, its language, its text and its directives."""

    path: str
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    skip_reason: Optional[str] = None
    replacements: List[Tuple[str, str]] = dataclasses.field(default_factory=list)
    is_expected_output: bool = False
    timeout: Optional[float] = None
    expected: Optional["Block"] = None  # the `expect` block that follows a run block
    body_start: int = 0  # 0-based index of the first line inside the fence
    body_end: int = 0  # 0-based index of the closing fence

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES | TRANSCRIPT_LANGUAGES and self.skip_reason is None

    @property
    def is_program(self) -> bool:
        return self.language in RUN_LANGUAGES | TRANSCRIPT_LANGUAGES

    def where(self) -> str:
        return f"{self.path}:{self.line}"


class DirectiveError(ValueError):
    """A doctest directive that cannot be understood (named by file and line)."""


def _apply_directive(block: Block, text: str, where: str) -> None:
    if text.startswith("skip"):
        reason = text[len("skip"):].lstrip(":").strip()
        if not reason:
            raise DirectiveError(f"{where}: 'doctest: skip' needs a reason")
        block.skip_reason = reason
    elif text.startswith("replace "):
        old, sep, new = text[len("replace "):].partition("=>")
        if not sep or not old.strip():
            raise DirectiveError(f"{where}: 'doctest: replace' wants 'OLD => NEW', got {text!r}")
        block.replacements.append((old.strip(), new.strip()))
    elif text == "expect":
        block.is_expected_output = True
    elif text.startswith("timeout "):
        try:
            block.timeout = float(text.split()[1])
        except (IndexError, ValueError):
            raise DirectiveError(f"{where}: 'doctest: timeout' wants a number of seconds") from None
    else:
        raise DirectiveError(f"{where}: unknown doctest directive {text!r}")


def parse(path: str, display_path: Optional[str] = None) -> List[Block]:
    """Every fenced block of `path`, in order, with its directives applied."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    shown = display_path or path
    blocks: List[Block] = []
    pending: List[Tuple[str, str]] = []  # directives waiting for the next block
    i = 0
    while i < len(lines):
        directive = DIRECTIVE.match(lines[i])
        fence = FENCE.match(lines[i])
        if directive:
            pending.append((directive.group(1), f"{shown}:{i + 1}"))
        elif fence:
            marker, language = fence.group(1), fence.group(2).lower()
            end = i + 1
            while end < len(lines) and not (
                    lines[end].lstrip().startswith(marker[0] * len(marker))
                    and lines[end].strip().strip(marker[0]) == ""):
                end += 1
            block = Block(shown, i + 1, language, "\n".join(lines[i + 1:end]),
                          body_start=i + 1, body_end=end)
            for text, where in pending:
                _apply_directive(block, text, where)
            pending = []
            if block.is_expected_output:
                previous = blocks[-1] if blocks else None
                if previous is None or not previous.is_program:
                    raise DirectiveError(f"{block.where()}: 'doctest: expect' follows no program")
                previous.expected = block
            blocks.append(block)
            i = end
        elif lines[i].strip() and pending:
            where = pending[0][1]
            raise DirectiveError(f"{where}: doctest directive is not followed by a code block")
        i += 1
    if pending:
        raise DirectiveError(f"{pending[0][1]}: doctest directive at the end of the file")
    return blocks


def output_matches(expected: str, actual: str) -> bool:
    """Whether `actual` fits `expected`, where `...` stands for any text.

    A line that is only `...` matches any number of lines (none included); `...` inside a line
    matches any text on that line. Trailing spaces and blank lines at either end are ignored.
    """
    def lines_of(text: str) -> List[str]:
        return [line.rstrip() for line in text.strip("\n").split("\n")] if text.strip() else []

    pattern = []
    for line in lines_of(expected):
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(".*?".join(re.escape(part) for part in line.split("...")) + r"\n")
    return re.fullmatch("".join(pattern), "".join(l + "\n" for l in lines_of(actual))) is not None
