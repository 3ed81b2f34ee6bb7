"""Processes in tests: a real `recall serve` started and stopped, and looking at processes
(Linux /proc): is one gone, which are another's children."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

#: The `recall` command of the virtualenv the tests run in.
RECALL = str(Path(sys.executable).with_name("recall"))


@contextmanager
def server_process(db: str | Path, port: int, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """`recall serve` on `db` at loopback `port`, once it answers /healthz; stopped (SIGTERM) after."""
    proc = subprocess.Popen(
        [RECALL, "serve", "--db", str(db), "--port", str(port), "--rate-limit", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {proc.stderr.read() if proc.stderr else ''!r}")
            time.sleep(0.05)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)


def gone(pid: int) -> bool:
    """The process has exited (a zombie waiting to be reaped counts as exited)."""
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True


def children(pid: int) -> list[int]:
    """Pids of the processes whose parent is `pid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == pid:  # after the name: state, ppid, ...
            found.append(int(stat.parent.name))
    return found
