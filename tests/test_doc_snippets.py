"""Every code block in README.md and docs/*.md runs, twice, as a user would paste it.

The convention (also in docs/architecture.md, "Snippets in the docs"):

- Every fence names its language. `python` blocks run; `sh`/`bash`/`console`/`shell` blocks
  whose every command is a `recall …` command run in bash (`set -euo pipefail`) through the
  venv's `recall` script; `toml` and `json` blocks must parse; `text` is output or a diagram and
  is not code. A fence with no language, or a shell block with another command (`curl`, `pip`,
  `make`), fails this test unless it is marked.
- A marker is an HTML comment on the line before the fence (blank lines between are allowed):
  - `<!-- snippet: skip (WHY) -->`: not run, for a reason it names (a hosted model, a running
    server, a PostgreSQL server, a fragment). The reason is required.
  - `<!-- snippet: continues -->`: a `python` block that continues the page's previous one (the
    script run is the earlier blocks of its chain, then this one), as a reader pastes them into
    one session.
  - `<!-- snippet: setup` … `-->`: Python the reader does not see, run first, that the next
    block continues from (the page's examples say "the world from above" in words).
- Each page runs in a fresh temporary folder with HOME and every `RECALL_*` variable pointing
  there (nothing is written in the repository or the user's home), its runnable units in page
  order (a python chain, a shell block), and then all of them again in the same folder: a user
  re-runs a script, and the second run must pass too.

Pages are tests of their own (pytest-xdist runs them in parallel); each unit in a fresh interpreter. A unit passes when it exits 0 and
reaches the end (a marker printed after every block of it proves each block ran).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from recall.server.config import load_config

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN_LANGUAGES = {"python", "sh", "bash", "console", "shell"}
PARSE_LANGUAGES = {"toml", "json"}
TEXT_LANGUAGES = {"text"}
#: A unit gets this long before it counts as hanging (a server started by a snippet, say): the
#: README's CLI block is some twenty `recall` processes, minutes on a loaded machine.
UNIT_TIMEOUT = 600

FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(skip|continues)\b\s*(.*?)\s*-->\s*$")
SETUP_START = re.compile(r"^\s*<!--\s*snippet:\s*setup\s*$")
#: A shell command line that runs recall: optional VAR=value assignments, then `recall`.
RECALL_LINE = re.compile(r"^(\w+=\S*\s+)*recall(\s|$)")


@dataclass(eq=False)
class Block:
    page: str
    line: int  # of the opening fence (1-based), or of the setup comment
    language: str
    code: str
    marker: str = ""  # "", "skip", "continues", "setup"
    reason: str = ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    name = str(page.relative_to(ROOT))
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    marker, reason = "", ""
    i = 0
    while i < len(lines):
        text = lines[i]
        if SETUP_START.match(text):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "-->")
            found.append(Block(name, i + 1, "python", "\n".join(lines[i + 1 : end]) + "\n", "setup"))
            marker, reason, i = "", "", end + 1
            continue
        if m := MARKER.match(text):
            marker, reason = m.group(1), m.group(2).strip()
            i += 1
            continue
        if fence := FENCE.match(text):
            indent, language = fence.group(1), fence.group(2).lower()
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            code = "\n".join(line.removeprefix(indent) for line in lines[i + 1 : end]) + "\n"
            found.append(Block(name, i + 1, language, code, marker, reason))
            marker, reason, i = "", "", end + 1
            continue
        if text.strip():
            marker, reason = "", ""  # a marker belongs to the fence right after it
        i += 1
    return found


def shell_commands(code: str) -> list[str]:
    """The block's command lines, continuation lines joined, comments and blanks left out."""
    joined = re.sub(r"\\\n", " ", code)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def problem(block: Block) -> str | None:
    """Why a block can be neither run nor parsed as it is marked, or None."""
    if block.marker == "skip":
        return None if block.reason else "a skip marker must say why: <!-- snippet: skip (WHY) -->"
    if not block.language:
        return "a fence with no language: name it (```text for output or a diagram)"
    if block.language not in RUN_LANGUAGES | PARSE_LANGUAGES | TEXT_LANGUAGES:
        return f"unknown language {block.language!r}"
    if block.marker == "continues" and block.language != "python":
        return "only a python block continues another"
    if block.language in RUN_LANGUAGES - {"python"}:
        others = [c for c in shell_commands(block.code) if not RECALL_LINE.match(c)]
        if others:
            return f"a shell block with commands other than recall ({others[0]!r}): mark it skip, with why"
    return None


@dataclass
class Unit:
    """What runs in one interpreter: a python chain or a shell block."""

    kind: str  # "python" or "shell"
    blocks: list[Block] = field(default_factory=list)

    def script(self) -> str:
        parts: list[str] = []
        for block in self.blocks:
            parts.append(f"# ---- {block.where}\n{block.code}")
            done = f"snippet ran: {block.where}"
            parts.append(f"print({done!r})\n" if self.kind == "python" else f"echo {done!r}\n")
        if self.kind == "shell":
            return "set -euo pipefail\n" + "\n".join(parts)
        return "\n".join(parts)


def units_of(blocks: list[Block]) -> list[Unit]:
    runnable = [b for b in blocks if b.marker != "skip" and b.language in RUN_LANGUAGES]
    python = [b for b in runnable if b.language == "python"]
    units: list[Unit] = []
    chain: list[Block] = []
    for block in runnable:
        if block.language != "python":
            units.append(Unit("shell", [block]))
            continue
        # A chain re-runs the blocks it continues, as a reader's script holds them all.
        chain = [*chain, block] if block.marker == "continues" else [block]
        following = python[python.index(block) + 1 :]
        if following and following[0].marker == "continues":
            continue  # run with what continues it (a setup alone shows nothing)
        units.append(Unit("python", chain))
    return units


ALL_BLOCKS = {str(page.relative_to(ROOT)): blocks_of(page) for page in PAGES}


def environment(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("RECALL_") and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HOME")
    }
    bin_dir = str(Path(sys.executable).parent)
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", COLUMNS="120")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p)
    return env


@dataclass
class PageRun:
    ran: list[str] = field(default_factory=list)  # block places, once per pass
    failures: list[str] = field(default_factory=list)


def run_page(page: str, folder: Path) -> PageRun:
    """Run every unit of `page` in `folder`, in page order, then all of them again."""
    result = PageRun()
    home = folder / "home"
    home.mkdir(parents=True)
    env = environment(home)
    units = units_of(ALL_BLOCKS[page])
    for attempt in ("first run", "second run"):
        for n, unit in enumerate(units):
            path = folder.parent / f"{folder.name}-unit{n}.{'py' if unit.kind == 'python' else 'sh'}"
            path.write_text(unit.script(), encoding="utf-8")
            command = [sys.executable, str(path)] if unit.kind == "python" else ["bash", str(path)]
            try:
                done = subprocess.run(
                    command,
                    cwd=folder,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=UNIT_TIMEOUT,
                )
            except subprocess.TimeoutExpired:
                result.failures.append(f"{unit.blocks[-1].where} ({attempt}): still running after {UNIT_TIMEOUT} s")
                break
            ran = [b.where for b in unit.blocks if f"snippet ran: {b.where}" in done.stdout]
            result.ran += ran
            if done.returncode != 0 or len(ran) != len(unit.blocks):
                tail = (done.stderr or done.stdout)[-3000:]
                result.failures.append(
                    f"{unit.blocks[-1].where} ({attempt}) exited {done.returncode}:\n{tail}\n--- the script:\n{unit.script()}"
                )
        if result.failures:
            break
    return result


def test_every_block_is_run_parsed_or_marked_with_a_reason() -> None:
    problems = [f"{b.where}: {why}" for blocks in ALL_BLOCKS.values() for b in blocks if (why := problem(b))]
    assert not problems, "\n".join(problems)
    counts = {
        "run": sum(b.marker != "skip" and b.language in RUN_LANGUAGES for bs in ALL_BLOCKS.values() for b in bs),
        "skipped": sum(b.marker == "skip" for bs in ALL_BLOCKS.values() for b in bs),
    }
    # The docs hold dozens of runnable blocks: a parser that finds none would pass vacuously.
    assert counts["run"] >= 20, counts


@pytest.mark.starts_first
@pytest.mark.parametrize("page", [p for p, blocks in ALL_BLOCKS.items() if units_of(blocks)])
def test_the_snippets_of_a_page_run_twice(page: str, tmp_path: Path) -> None:
    run = run_page(page, tmp_path / "page")
    assert not run.failures, "\n\n".join(run.failures)
    runnable = [
        b.where for b in ALL_BLOCKS[page] if b.marker != "skip" and b.language in RUN_LANGUAGES and b.marker != "setup"
    ]
    # Every unmarked runnable block ran, on both passes (a chain re-runs what it continues).
    assert set(runnable) <= set(run.ran), sorted(set(runnable) - set(run.ran))
    assert all(run.ran.count(w) >= 2 for w in runnable)


def test_skipped_python_blocks_are_still_python() -> None:
    """A skip says a block cannot run here, not that it may be broken: each still compiles as a
    script (a top-level `await` does not, and fails a user who pastes it into a file)."""
    broken = []
    for b in (b for bs in ALL_BLOCKS.values() for b in bs if b.language == "python" and b.marker == "skip"):
        try:
            compile(b.code, b.where, "exec")
        except SyntaxError as exc:
            broken.append(f"{b.where}: {exc}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize(
    "block",
    [b for bs in ALL_BLOCKS.values() for b in bs if b.language in PARSE_LANGUAGES and b.marker != "skip"],
    ids=lambda b: b.where,
)
def test_data_blocks_parse(block: Block, tmp_path: Path) -> None:
    if block.language == "json":
        json.loads(block.code)
        return
    tomllib.loads(block.code)
    # A TOML block is a `recall serve --config` file (or part of one): the server must accept it.
    path = tmp_path / "recall.toml"
    path.write_text(block.code, encoding="utf-8")
    assert load_config(path, environ={}).port > 0
