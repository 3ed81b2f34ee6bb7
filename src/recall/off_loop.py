"""The Python API's `a`-prefixed methods: each blocking method as a coroutine that runs it in a
worker thread, so an asyncio (or trio) program awaits recall without stalling its event loop.

The store's drivers (SQLite, psycopg's synchronous connection pool) block, so a thread is what
keeps the loop free; the service is thread-safe (the server calls it from a thread pool). A
cancelled await lets the call finish in its thread (it is one transaction: stored wholly or
not at all) and then raises the cancellation: nothing is left half-written.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def off_loop(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """`method` as a coroutine method of the same class and signature, run in a worker thread
    (anyio's, at most 40 at once by default)."""

    @functools.wraps(method)
    async def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        import anyio.to_thread  # imported late: `import recall` stays light

        return await anyio.to_thread.run_sync(functools.partial(method, self, *args, **kwargs))

    run.__name__ = f"a{method.__name__}"
    run.__qualname__ = run.__qualname__.rsplit(".", 1)[0] + f".{run.__name__}"
    run.__doc__ = f"`{method.__name__}` as a coroutine, run in a worker thread (`recall.off_loop`).\n\n" + (
        method.__doc__ or ""
    )
    return run
