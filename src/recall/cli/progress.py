"""Progress of long work on stderr: a bar on a terminal, plain lines elsewhere (a log, a pipe).

A command that may run for minutes (`recall index --once`, the first `recall search` after an
import) says how far it is, so nobody waits on a silent prompt; a plain line comes at most every
EVERY seconds of a piece of work, and once when it completes.
"""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

#: Seconds between two plain lines of one piece of work.
EVERY = 2.0


class ProgressReport:
    """A `pending.Progress` for `console` (stderr), for the length of a `with` block: on a
    terminal a bar per piece of work; otherwise lines like `embedded 1,200/5,882 items`."""

    def __init__(self, console: Console, every: float = EVERY, after: float = 0.0) -> None:
        """`after`: seconds a piece of work runs silent (work done sooner shows nothing)."""
        self._console = console
        self._every = every
        self._after = after
        #: When each piece of work was first told of (monotonic seconds).
        self._began: dict[str, float] = {}
        self._bar: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        #: When each piece of work last printed a line (monotonic seconds).
        self._printed: dict[str, float] = {}

    def __enter__(self) -> ProgressReport:
        if self._console.is_terminal:
            columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            self._bar = Progress(*columns, console=self._console)
            self._bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __call__(self, verb: str, noun: str, done: int, total: int) -> None:
        key = f"{verb} {noun}"
        now = time.monotonic()
        if now - self._began.setdefault(key, now) < self._after and key not in self._printed:
            return
        if self._bar is not None:
            task = self._tasks.get(key)
            if task is None:
                task = self._tasks[key] = self._bar.add_task(f"{verb} {noun}", total=total)
            self._bar.update(task, completed=done, total=total)
            self._printed[key] = now
            return
        if done < total and now - self._printed.get(key, float("-inf")) < self._every:
            return
        self._printed[key] = now
        self._console.print(f"{verb} {done:,}/{total:,} {noun}", markup=False, highlight=False)
