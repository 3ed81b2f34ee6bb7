"""Looking at processes from tests (Linux /proc): is one gone, which are another's children."""

from __future__ import annotations

from pathlib import Path


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
