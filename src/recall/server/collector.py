"""The garbage collector of a serving process (`recall serve`).

CPython's default thresholds (700, 10, 10) run a full collection whenever enough objects have
outlived the young generations, and a server holding a thousand long polls has plenty: each
waiting request keeps a few hundred objects alive (its scope, task, frames and futures), and
a full collection walks every live object with the event loop stopped. In bench/server_bench.py's
wake rounds, full collections of 140-200 ms came about once a second; a broadcast's answers
waited behind them (the last of 1,000 at 450-500 ms; with the thresholds below, 185-215 ms and
no full collection in the whole run). The objects are alive, not garbage: collecting less often
loses nothing. Cyclic garbage is still collected, once per 50,000 allocations instead of 700.

Those young collections still walk whatever the waiting requests made since the last one: 20-38
ms, one in each broadcast round, with the crowd's answers waiting behind it. So a post that
wakes a crowd holds the collector off for a moment (`CrowdHold`): the answers go out first and
the collection runs once the hold ends, so holds never starve it.
"""

from __future__ import annotations

import asyncio
import gc

#: (allocations between young collections, young collections per middle one, middle per full).
SERVING_THRESHOLDS = (50_000, 20, 20)


def tune_for_serving() -> None:
    """Leave what start-up built (modules, the app, caches) out of every later collection, and
    collect less often (see the module's docstring). Call once, just before serving."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_THRESHOLDS)


#: Waiting checks one post must wake to hold the collector off, and for how long (seconds).
CROWD = 100
CROWD_HOLD_SECONDS = 0.5


class CrowdHold:
    """Called with the number of checks a post woke (on the event loop): for a crowd, the
    collector is disabled for CROWD_HOLD_SECONDS, unless it is already (held, or by someone
    else). When the hold ends the collection it held back runs at the next allocation."""

    def __init__(self) -> None:
        self._release: asyncio.TimerHandle | None = None

    def __call__(self, woken: int) -> None:
        if woken < CROWD or self._release is not None or not gc.isenabled():
            return
        gc.disable()
        self._release = asyncio.get_running_loop().call_later(CROWD_HOLD_SECONDS, self._end)

    @property
    def held(self) -> bool:
        """Whether this holds the collector off right now."""
        return self._release is not None

    def _end(self) -> None:
        self._release = None
        gc.enable()
