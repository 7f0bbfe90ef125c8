#!/usr/bin/env python3
"""Runs the shell and Python blocks of the project's Markdown files as a reader would paste them.

Each file's blocks run in order in a scratch directory that looks like the repository root (its
top-level entries are symbolic links, `build` points at the build tree), so a block written for
the root (`build/bin/snn-compile ...`, `python_export/...`) runs as written while the files it
makes land in the scratch directory. The shell's variables and working directory carry from one
block to the next, as in one terminal. `/tmp` in a block means the scratch directory's `tmp/`, so
two files never share files. PYTHONPATH is not set: a block that needs it sets it, as a reader
must. The directives that mark blocks (not run, shortened, expected output) are described in
markdown_blocks.py and docs/testing.md.

Prints one line per block and the counts of blocks run and marked not run; exits 1 on the first
block that fails or prints what its `expect` block or transcript does not show.

Usage:
  run_examples.py [--root DIR] --build-dir DIR --work-dir DIR [FILE.md...]   run the blocks
  run_examples.py [--root DIR] --list [FILE.md...]                        count, run nothing
  run_examples.py ... --update FILE.md                                  rewrite shown output
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import markdown_blocks  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_TIMEOUT = 600.0
TMP_PATH = re.compile(r"(?<![\w/.$-])/tmp(?=/|\s|$|['\"])")
STATE_SKIP = {"PWD", "OLDPWD", "SHLVL", "_"}
HEREDOC_END = "SPIKEMESH_DOC_BLOCK_END"


def default_files(root: str) -> List[str]:
    """README.md, python_export/README.md and docs/*.md: the pages a reader pastes from."""
    files = [os.path.join(root, "README.md"), os.path.join(root, "python_export", "README.md")]
    docs = os.path.join(root, "docs")
    files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return files


class Scratch:
    """The scratch directory of one Markdown file and the shell state its blocks share."""

    def __init__(self, root: str, build_dir: str, work_dir: str) -> None:
        self.dir = os.path.abspath(work_dir)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(os.path.join(self.dir, "tmp"))
        os.makedirs(os.path.join(self.dir, "home"))
        for entry in os.listdir(root):
            if entry not in (".git", "build") and not entry.startswith("build-"):
                os.symlink(os.path.join(root, entry), os.path.join(self.dir, entry))
        os.symlink(os.path.abspath(build_dir), os.path.join(self.dir, "build"))
        self.env_file = os.path.join(self.dir, ".doctest-env")
        self.cwd_file = os.path.join(self.dir, ".doctest-cwd")
        with open(self.cwd_file, "w") as f:
            f.write(self.dir + "\n")
        # A reader's fresh shell: no PYTHONPATH, and no device profile yet (the blocks show
        # what planning says without one).
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "SPIKEMESH_DEVICE_PROFILE", "XDG_CACHE_HOME",
                            "SPIKEMESH_KERNEL_CROSSOVERS")}
        env.update(HOME=os.path.join(self.dir, "home"), TMPDIR=os.path.join(self.dir, "tmp"),
                   PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        with open(self.env_file, "w") as f:
            for key, value in env.items():
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                    f.write(f"export {key}={shell_quote(value)}\n")

    def localize(self, text: str) -> str:
        return TMP_PATH.sub(os.path.join(self.dir, "tmp"), text)

    def script(self, body: str) -> str:
        """A bash script that restores the shared state, runs `body`, and saves the state."""
        skip = "|".join(sorted(STATE_SKIP))
        save = (f"export -p | grep -Ev '^declare -x ({skip})(=|$)' > {shell_quote(self.env_file)}; "
                f"pwd > {shell_quote(self.cwd_file)}")
        return (f"set -eo pipefail\nsource {shell_quote(self.env_file)}\n"
                f"cd \"$(cat {shell_quote(self.cwd_file)})\"\ntrap {shell_quote(save)} EXIT\n"
                f"{body}\n")

    def run(self, body: str, timeout: float, merge_stderr: bool) -> Tuple[int, str, str]:
        script = self.script(body)
        if merge_stderr:  # a transcript shows what the terminal shows
            script = f"exec 2>&1\n{script}"
        # The environment comes from the state file; bash itself needs only a PATH. The block
        # runs in its own process group so a timeout ends the ranks it started too.
        process = subprocess.Popen(["bash", "-c", script], cwd=self.dir,
                                   env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            return 124, out, err + f"\n(timed out after {timeout:g} s)"
        return process.returncode, out, err


def shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def block_body(block: markdown_blocks.Block, text: str) -> str:
    if block.language == "python":
        return f"/usr/bin/python3 - <<'{HEREDOC_END}'\n{text}\n{HEREDOC_END}"
    return text


def transcript(text: str) -> List[Tuple[str, str]]:
    """(command, shown output) pairs of a `console` block: `$ ` lines, `\\` continuing them."""
    steps: List[Tuple[str, List[str]]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("$ "):
            command = [lines[i][2:]]
            while command[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                command.append(lines[i])
            steps.append(("\n".join(command), []))
        elif steps:
            steps[-1][1].append(lines[i])
        elif lines[i].strip():
            raise markdown_blocks.DirectiveError(f"console block: output before any '$ ' line")
        i += 1
    return [(command, "\n".join(output)) for command, output in steps]


def show_failure(block: markdown_blocks.Block, why: str, out: str, err: str) -> None:
    print(f"FAIL {block.where()} ({block.language}): {why}")
    for name, text in (("stdout", out), ("stderr", err)):
        tail = text.strip().split("\n")[-40:]
        if text.strip():
            print(f"  --- {name} (last {len(tail)} lines)")
            print("\n".join("  | " + line for line in tail))


def run_transcript(block, scratch: Scratch, timeout: float, updates: Dict) -> bool:
    shown_parts = []
    for command, shown in transcript(block.text):
        code, out, _ = scratch.run(scratch.localize(apply_replacements(block, command)),
                                   timeout, merge_stderr=True)
        out = out.replace(os.path.join(scratch.dir, "tmp"), "/tmp")
        shown_parts.append(f"$ {command}\n{out.rstrip()}")
        if code != 0 and not re.search(r"^error:", out, re.M):
            show_failure(block, f"'{command.splitlines()[0]}' exited {code}", out, "")
            return False
        if not markdown_blocks.output_matches(shown, out) and updates is None:
            show_failure(block, f"'{command.splitlines()[0]}' printed other output than shown",
                         out, "")
            return False
    if updates is not None:
        updates[block.body_start] = (block.body_end, "\n".join(shown_parts))
    return True


def apply_replacements(block: markdown_blocks.Block, text: str) -> str:
    """`text` (the block or one of its transcript's commands) with the block's replacements."""
    for old, new in block.replacements:
        if old not in block.text:
            raise markdown_blocks.DirectiveError(
                f"{block.where()}: 'doctest: replace' text {old!r} is not in the block")
        text = text.replace(old, new)
    return text


def run_block(block, scratch: Scratch, updates) -> bool:
    timeout = block.timeout or DEFAULT_TIMEOUT
    if block.language == "console":
        return run_transcript(block, scratch, timeout, updates)
    body = block_body(block, scratch.localize(apply_replacements(block, block.text)))
    code, out, err = scratch.run(body, timeout, merge_stderr=False)
    if code != 0:
        show_failure(block, f"exited {code}", out, err)
        return False
    out = out.replace(os.path.join(scratch.dir, "tmp"), "/tmp")
    if block.expected is not None:
        if updates is not None:
            updates[block.expected.body_start] = (block.expected.body_end, out.rstrip())
        elif not markdown_blocks.output_matches(block.expected.text, out):
            show_failure(block, f"output differs from the block at {block.expected.where()}",
                         out, err)
            return False
    return True


def run_file(path: str, args) -> bool:
    rel = os.path.relpath(path, args.root)
    blocks = markdown_blocks.parse(path, rel)
    name = re.sub(r"[^A-Za-z0-9]+", "_", rel)
    scratch = Scratch(args.root, args.build_dir, os.path.join(args.work_dir, name))
    updates = {} if args.update else None
    ran = skipped = 0
    for block in blocks:
        if not block.is_program:
            continue
        if block.skip_reason is not None:
            skipped += 1
            print(f"skip {block.where()}: {block.skip_reason}")
            continue
        start = time.monotonic()
        if not run_block(block, scratch, updates):
            return False
        ran += 1
        print(f"ok   {block.where()} ({block.language}, {time.monotonic() - start:.1f} s)",
              flush=True)
    if updates:
        rewrite(path, updates)
    print(f"{rel}: {ran} blocks run, {skipped} marked not run")
    return True


def rewrite(path: str, updates: Dict[int, Tuple[int, str]]) -> None:
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for start in sorted(updates, reverse=True):
        end, text = updates[start]
        lines[start:end] = text.split("\n") if text else []
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def list_files(files: List[str], root: str) -> int:
    totals = [0, 0, 0]
    for path in files:
        rel = os.path.relpath(path, root)
        blocks = markdown_blocks.parse(path, rel)
        counts = [sum(b.runs for b in blocks), sum(b.is_program and not b.runs for b in blocks),
                  sum(not b.is_program for b in blocks)]
        totals = [t + c for t, c in zip(totals, counts)]
        print(f"{rel}: {counts[0]} run, {counts[1]} marked not run, {counts[2]} not programs")
        for block in blocks:
            if block.skip_reason is not None:
                print(f"  not run {block.where()}: {block.skip_reason}")
    print(f"total: {totals[0]} blocks run, {totals[1]} marked not run, "
          f"{totals[2]} not programs (output, formats, IR)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=REPO_ROOT, help="repository root (default: this checkout)")
    parser.add_argument("--build-dir", help="build tree (its bin/ holds the tools)")
    parser.add_argument("--work-dir", help="where the scratch directories go")
    parser.add_argument("--list", action="store_true", help="count the blocks, run nothing")
    parser.add_argument("--update", action="store_true",
                        help="rewrite transcripts and expect blocks with the output printed now")
    parser.add_argument("files", nargs="*", help="Markdown files (default: every doc)")
    args = parser.parse_args()
    args.root = os.path.abspath(args.root)
    files = [os.path.abspath(f) for f in args.files] or default_files(args.root)
    try:
        if args.list:
            return list_files(files, args.root)
        if not args.build_dir or not args.work_dir:
            parser.error("--build-dir and --work-dir are needed to run blocks")
        return 0 if all(run_file(path, args) for path in files) else 1
    except markdown_blocks.DirectiveError as e:
        print(f"error: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
