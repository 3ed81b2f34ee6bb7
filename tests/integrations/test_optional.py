"""The adapters are optional: `import recall` and `import recall.integrations` load no framework,
and each adapter loads only its own."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FRAMEWORKS = ("langgraph", "langchain_core", "agents", "langsmith")


def frameworks_loaded_by(imports: str) -> list[str]:
    code = f"import json, sys\n{imports}\nprint(json.dumps(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return list(json.loads(result.stdout.splitlines()[-1]))


def test_import_recall_and_recall_integrations_load_no_framework() -> None:
    assert frameworks_loaded_by("import recall, recall.integrations, recall.cli") == []


@pytest.mark.parametrize(
    ("module", "framework"),
    [("langgraph", "langgraph"), ("langchain", "langchain_core"), ("openai_agents", "agents")],
)
def test_each_adapter_loads_its_own_framework(module: str, framework: str) -> None:
    loaded = frameworks_loaded_by(f"import recall.integrations.{module}")
    assert framework in loaded
    assert "agents" not in loaded or framework == "agents"
