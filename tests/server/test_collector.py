"""`recall serve` tunes the garbage collector for a crowd of long polls: start-up's objects are
frozen out of later collections and young collections are rarer (server/collector.py). Checked
in a process of its own, so this test process keeps its collector as it was."""

from __future__ import annotations

import json
import subprocess
import sys

from recall.server.collector import SERVING_THRESHOLDS


def test_serving_freezes_start_up_and_raises_the_thresholds() -> None:
    code = (
        "import gc, json\n"
        "from recall.server.collector import tune_for_serving\n"
        "before = gc.get_threshold()\n"
        "tune_for_serving()\n"
        "print(json.dumps([before, gc.get_threshold(), gc.get_freeze_count()]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, after, frozen = json.loads(out)
    assert before == [700, 10, 10]
    assert tuple(after) == SERVING_THRESHOLDS
    assert frozen > 1000  # the modules and objects start-up made
