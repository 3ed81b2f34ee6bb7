"""What `import recall` and the `recall` command load: the model SDKs (and the serving and
vector stacks) load when a command needs them, not on every start (`recall --help` stays fast)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: Modules no command needs until it uses a model, serves, or embeds.
HEAVY = ("openai", "anthropic", "fastapi", "uvicorn", "mcp", "numpy", "scipy", "sklearn", "tokenizers", "psycopg")

PROBE = "import json, sys\n{imports}\nprint('LOADED', json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))"


def loaded_after(imports: str) -> list[str]:
    """The heavy modules loaded by `imports`, in a fresh interpreter."""
    code = PROBE.format(imports=imports, heavy=HEAVY)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("LOADED "))
    return list(json.loads(line.removeprefix("LOADED ")))


def test_import_recall_and_its_cli_load_no_model_sdk_and_no_server() -> None:
    assert loaded_after("import recall, recall.cli") == []


def test_help_loads_no_heavy_module() -> None:
    imports = "import recall.cli\nsys.argv = ['recall', '--help']\ntry: recall.cli.app()\nexcept SystemExit: pass"
    assert loaded_after(imports) == []


def test_opening_a_store_loads_no_model_sdk(tmp_path: Path) -> None:
    imports = f"from recall import Recall, Settings; Recall({str(tmp_path / 'r.db')!r}, Settings()).close()"
    assert [m for m in loaded_after(imports) if m in ("openai", "anthropic", "fastapi", "uvicorn", "mcp")] == []
