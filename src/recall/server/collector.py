"""The garbage collector of a serving process (`recall serve`).

CPython's default thresholds (700, 10, 10) run a full collection whenever enough objects have
outlived the young generations, and a server holding a thousand long polls has plenty: each
waiting request keeps a few hundred objects alive (its scope, task, frames and futures), and
a full collection walks every live object with the event loop stopped. In bench/server_bench.py's
wake rounds, full collections of 140-200 ms came about once a second; a broadcast's answers
waited behind them (the last of 1,000 at 450-500 ms; with the thresholds below, 185-215 ms and
no full collection in the whole run). The objects are alive, not garbage: collecting less often
loses nothing. Cyclic garbage is still collected, once per 50,000 allocations instead of 700.
"""

from __future__ import annotations

import gc

#: (allocations between young collections, young collections per middle one, middle per full).
SERVING_THRESHOLDS = (50_000, 20, 20)


def tune_for_serving() -> None:
    """Leave what start-up built (modules, the app, caches) out of every later collection, and
    collect less often (see the module's docstring). Call once, just before serving."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_THRESHOLDS)
