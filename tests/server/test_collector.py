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


def test_a_post_that_wakes_a_crowd_holds_the_collector_off_for_a_moment() -> None:
    """The crowd's answers go out before a collection; the hold ends on its own, and it never
    turns on a collector someone else turned off. In a process of its own, as above."""
    code = (
        "import asyncio, gc, json\n"
        "from recall.server.collector import CROWD, CrowdHold\n"
        "from recall.server.inbox import Notifier\n"
        "async def main():\n"
        "    seen = []\n"
        "    hold = CrowdHold()\n"
        "    notifier = Notifier(on_wake=hold)\n"
        "    def wake(n):\n"
        "        for i in range(n):\n"
        "            notifier.subscribe('w', f'a{len(seen)}-{i}')\n"
        "        notifier.notify('w')\n"
        "    wake(CROWD - 1)\n"
        "    seen.append([gc.isenabled(), hold.held])  # a few woken: no hold\n"
        "    wake(CROWD)\n"
        "    seen.append([gc.isenabled(), hold.held])  # a crowd: held\n"
        "    loop = asyncio.get_running_loop()\n"
        "    deadline = loop.time() + 10\n"
        "    while hold.held and loop.time() < deadline:\n"
        "        await asyncio.sleep(0.01)\n"
        "    seen.append([gc.isenabled(), hold.held])  # released\n"
        "    gc.disable()\n"
        "    wake(CROWD)\n"
        "    seen.append([gc.isenabled(), hold.held])  # off, and not ours to turn on\n"
        "    return seen\n"
        "print(json.dumps(asyncio.run(main())))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [[True, False], [False, True], [True, False], [False, False]]
