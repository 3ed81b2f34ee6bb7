"""Loading a benchmark script as a module, for tests of its functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_bench_script(name: str) -> ModuleType:
    """`bench/NAME.py` as a module. bench/ is not a package: the scripts import their shared
    module (bench_report) from beside them, as they do when run as `python bench/NAME.py`."""
    if str(BENCH) not in sys.path:
        sys.path.append(str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def locomo_turns(session: int, lines: list[tuple[str, str]]) -> list[dict[str, str]]:
    """A LoCoMo session's turns, `D<session>:<n>` numbered from 1."""
    return [
        {"speaker": speaker, "dia_id": f"D{session}:{number}", "text": text}
        for number, (speaker, text) in enumerate(lines, start=1)
    ]


def alice_and_bob(bob_on_rex: str = "Good to hear. My dog Rex learned a new trick.") -> dict[str, Any]:
    """A tiny LoCoMo conversation: Alice (speaker_a) and Bob, two sessions of four turns whose
    words barely overlap, so each question's evidence is found by its own words. `bob_on_rex`
    is turn D1:4."""
    return {
        "speaker_a": "Alice",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": locomo_turns(
            1,
            [
                ("Alice", "Hi Bob, I finally bought a saxophone last weekend."),
                ("Bob", "Nice! I have been painting landscapes in the mountains."),
                ("Alice", "My sister Clara is visiting from Lisbon next month."),
                ("Bob", bob_on_rex),
            ],
        ),
        "session_2_date_time": "10:37 am on 27 June, 2023",
        "session_2": locomo_turns(
            2,
            [
                ("Alice", "Clara arrived and we toured the old harbour together."),
                ("Bob", "I sold my first painting at a gallery downtown."),
                ("Alice", "I practiced saxophone every evening this week."),
                ("Bob", "Rex and I went hiking by the lake."),
            ],
        ),
    }
