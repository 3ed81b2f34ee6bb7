"""The search index worker: a process of its own that keeps a store's search index up to date.

Embedding is CPU work; in the server's process it would compete with the event loop for the
GIL and a core (measured: the targeted wake-up p99 with 1,000 waiters rose from ~40 to ~52 ms).
So `recall serve` runs this worker as a child process at a lower CPU priority, and anyone may
run it by hand (`recall index`) beside other processes that write the same SQLite file.

Nothing needs to be handed over: the index keeps its progress in the database (a watermark of
copied messages, an `embedded` flag per item), so the worker finds its work by looking, wakes
every `index_interval` seconds, and picks up after a crash or restart where the last one stopped.
A child started by the server ends with it, even when the server is killed with SIGKILL.

    python -m recall.search.worker DB [--parent PID] [--once]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
from dataclasses import replace

from recall.search.indexer import BackgroundIndexer
from recall.search.open import open_search_index
from recall.search.pending import Progress, copy_messages, embed_all
from recall.settings import Settings
from recall.store import is_postgres_url, open_store
from recall.telemetry.setup import configure_from_env

logger = logging.getLogger("recall.search.worker")

#: Niceness of a worker started by the server: the server's requests come first.
WORKER_NICENESS = 10
_PR_SET_PDEATHSIG = 1
#: What OpenBLAS, OpenMP and MKL read for their thread counts.
_BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def run_worker(
    db: str,
    settings: Settings,
    *,
    once: bool = False,
    parent: int | None = None,
    stop: threading.Event | None = None,
    progress: Progress | None = None,
) -> int:
    """Index `db` until `stop` is set or the process `parent` is gone (or, with `once`, until
    nothing is pending, telling `progress` how far it is); returns the work done with `once`,
    else 0."""
    interval = settings.index_interval if settings.index_interval > 0 else 2.0
    store = open_store(db)
    try:
        index, _ = open_search_index(store, replace(settings, index_interval=0))
        if index is None:
            return 0
        if once:
            done = 0
            # Again while posts arrive meanwhile: "once" leaves nothing pending it could see.
            while work := copy_messages(index, progress) + embed_all(index, settings.embed_batch, progress=progress):
                done += work
            return done
        stop = stop or threading.Event()
        indexer = BackgroundIndexer(index, batch=settings.embed_batch, interval=interval).start()
        try:
            while not stop.wait(min(interval, 1.0)):
                if parent is not None and os.getppid() != parent:
                    logger.info("the server (pid %d) is gone; the index worker stops", parent)
                    break
        finally:
            indexer.stop()
    finally:
        store.close()
    return 0


def start_worker_process(db: str) -> subprocess.Popen[bytes]:
    """Start a worker for `db` as a child of this process (which it watches, to end with it)."""
    location = db if is_postgres_url(db) else os.path.abspath(db)
    command = [sys.executable, "-m", "recall.search.worker", location, "--parent", str(os.getpid())]
    # One thread for the model (onnxruntime, see embeddings.runtime_threads) and for BLAS: the
    # worker then leaves a core to the server it runs beside. Set before the child imports
    # numpy; a value the user exported wins.
    env = {**{name: "1" for name in _BLAS_THREAD_VARIABLES}, **os.environ}
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, env=env)


def stop_worker_process(process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Ask the worker to stop after its current batch; kill it if it does not in time."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _die_with_parent() -> None:
    """Linux: have the kernel send SIGTERM when the parent dies (the `getppid` check in the loop
    covers other systems, within a second)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m recall.search.worker", description=__doc__.split("\n\n")[0])
    parser.add_argument("db", help="the store: a SQLite file or a postgresql:// URL")
    parser.add_argument("--parent", type=int, default=None, help="stop when this process is gone")
    parser.add_argument("--once", action="store_true", help="index everything pending, then exit")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.parent is not None:
        _die_with_parent()
        os.nice(WORKER_NICENESS)
        if os.getppid() != args.parent:  # the parent died before the death signal was armed
            return 0
    # The server's OTEL_* variables, inherited: the batches' spans and metrics go where its own go.
    telemetry = configure_from_env()
    try:
        run_worker(args.db, Settings.from_env(), once=args.once, parent=args.parent, stop=stop)
    finally:
        telemetry.shutdown()  # what is buffered is exported before the process ends
    return 0


if __name__ == "__main__":
    sys.exit(main())
