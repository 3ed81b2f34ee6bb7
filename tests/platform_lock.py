"""What `pip install recall-memory` resolves to on every platform and Python recall supports,
written to `tests/platforms.lock.json` (committed) and checked by `tests/test_platforms.py`.

Each platform and Python is resolved by uv (which evaluates environment markers for the target,
as pip's `--platform` does not) with wheels only, the way a user without a compiler installs:
the core install, and the core with every extra. A requirement with no wheel for a platform makes
the resolution fail, and the lock says so for that platform. Run it, with the package index
reachable, after changing pyproject.toml's dependencies:

    .venv/bin/python -m tests.platform_lock
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = Path(__file__).with_name("platforms.lock.json")

#: The platforms a user installs on, as uv names them, by the name the README uses, with the
#: oldest macOS each is resolved for (onnxruntime's Apple silicon wheels need macOS 14).
PLATFORMS = {
    "linux-x86_64": ("x86_64-manylinux_2_28", None),
    "linux-aarch64": ("aarch64-manylinux_2_28", None),
    "macos-arm64": ("aarch64-apple-darwin", "14.0"),
    "macos-x86_64": ("x86_64-apple-darwin", "13.0"),
    "windows-x86_64": ("x86_64-pc-windows-msvc", None),
}
#: What the core install leaves to the extras: chat SDKs, database drivers, web frameworks,
#: OpenTelemetry's SDK and exporter.
NOT_IN_CORE = {
    "openai",
    "anthropic",
    "psycopg",
    "psycopg-binary",
    "psycopg-pool",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp",
    "opentelemetry-sdk",
    "opentelemetry-exporter-otlp-proto-http",
}
#: Every CPython release recall supports (pyproject's requires-python, up to the newest).
PYTHONS = ("3.11", "3.12", "3.13", "3.14")


def requirements(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, list[str]]:
    """pyproject's requirements by install: "core" (no extra) and each extra but dev and all."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    extras = {name: reqs for name, reqs in project["optional-dependencies"].items() if name not in ("dev", "all")}
    return {"core": list(project["dependencies"]), **extras}


def installs(reqs: dict[str, list[str]]) -> dict[str, list[str]]:
    """What each locked install asks for: the core alone, and the core with every extra."""
    return {"core": reqs["core"], "all": [r for group in reqs.values() for r in group]}


def resolve(uv: str, wanted: list[str], platform: str, python: str) -> dict[str, str] | str:
    """{distribution: version} uv resolves for the platform and Python, or why it cannot."""
    target, macos = PLATFORMS[platform]
    env = {**os.environ, "MACOSX_DEPLOYMENT_TARGET": macos} if macos else None
    with tempfile.TemporaryDirectory() as work:
        listed = Path(work) / "requirements.in"
        listed.write_text("\n".join(wanted) + "\n", encoding="utf-8")
        done = subprocess.run(
            [uv, "pip", "compile", str(listed), "--python-platform", target, "--python-version", python,
             "--only-binary", ":all:", "--no-header", "--no-annotate", "--quiet"],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
    if done.returncode != 0:  # uv's reason, in a line (its first line names the requirement)
        return " ".join(line.strip() for line in done.stderr.splitlines() if line.strip())
    pins = (re.match(r"^([A-Za-z0-9._-]+)==(\S+)", line) for line in done.stdout.splitlines())
    return {m.group(1).lower(): m.group(2) for m in pins if m}


def main() -> None:
    uv = str(Path(sys.executable).with_name("uv"))
    version = subprocess.run([uv, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    reqs = requirements()
    cases = [(name, python, install) for name in PLATFORMS for python in PYTHONS for install in installs(reqs)]
    with ThreadPoolExecutor(8) as pool:  # each resolution mostly waits on the index
        results = pool.map(lambda case: resolve(uv, installs(reqs)[case[2]], case[0], case[1]), cases)
    resolved: dict[str, dict[str, dict[str, dict[str, str] | str]]] = {}
    for (name, python, install), result in zip(cases, results, strict=True):
        resolved.setdefault(name, {}).setdefault(python, {})[install] = result
        ok = "ok" if isinstance(result, dict) else f"FAILED: {result}"
        print(f"{name:15} {python:5} {install:5} {ok}", file=sys.stderr)
    LOCK.write_text(
        json.dumps({"resolver": version, "requirements": reqs, "resolved": resolved}, indent=1, sort_keys=True) + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
