"""Without OpenTelemetry (the `otel` extra not installed) recall runs as before: the same context,
byte for byte, as with tracing on; OTEL_* variables are then ignored with one warning."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from recall import Recall, Settings, telemetry
from tests.telemetry.conftest import Recorded
from tests.telemetry.test_spans import fill

#: Run in a fresh interpreter where `import opentelemetry…` fails, as on an install without the extra.
WITHOUT = """
import json, logging, sys
sys.modules["opentelemetry"] = None  # every `import opentelemetry.…` raises ImportError
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
from recall import Recall, Settings, telemetry
from recall.telemetry.setup import configure_from_env
configured = configure_from_env({"OTEL_TRACES_EXPORTER": "otlp"})
with Recall(sys.argv[1], Settings(index_interval=0)) as mem:
    context = mem.world("w").agent("agent-b").context(chat="new", max_tokens=600)
print(json.dumps({"context": context.to_dict(), "active": telemetry.active(),
                  "configured": configured.tracer_provider is not None or configured.meter_provider is not None}))
"""


def build(db: Path) -> dict[str, object]:
    with Recall(db, Settings(index_interval=0)) as mem:
        return mem.world("w").agent("agent-b").context(chat="new", max_tokens=600).to_dict()


def test_the_context_is_the_same_with_tracing_on_off_and_without_opentelemetry(tmp_path: Path, otel: Recorded) -> None:
    db = tmp_path / "recall.db"
    with Recall(db, Settings()) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("agent-b")
        fill(world, days=12)
        mem.refresh_index()  # every vector is there: each build below reads the same index
    traced = build(db)
    assert otel.spans("recall.context.ranking")  # traced, phases and all

    telemetry.use_providers()  # the API's own no-op providers: nothing records
    assert build(db) == traced

    done = subprocess.run([sys.executable, "-c", WITHOUT, str(db)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    without = json.loads(done.stdout)
    assert without == {"context": traced, "active": False, "configured": False}
    # One line that names the extra, and recall went on.
    assert "the 'otel' extra is not installed" in done.stderr and 'pip install "recall-memory[otel]"' in done.stderr
