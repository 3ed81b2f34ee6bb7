"""Loading a benchmark script as a module, for tests of its functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

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
