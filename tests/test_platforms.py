"""`pip install recall-memory` resolves, from wheels alone, on every platform and Python the README
names: checked against `tests/platforms.lock.json`, which `tests/platform_lock.py` writes with uv
(markers evaluated for each target) whenever pyproject.toml's dependencies change. Nothing is
downloaded here: the lock is what resolved when it was written, and this checks it is the lock of
today's pyproject.toml and that it holds every requirement each platform asks for.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.platform_lock import LOCK, NOT_IN_CORE, PLATFORMS, PYTHONS, installs, requirements

ROOT = Path(__file__).resolve().parents[1]

#: Where a platform and Python cannot install recall, and why (the README says so too).
KNOWN_GAPS = {("macos-x86_64", "3.14"): "onnxruntime publishes no Python 3.14 wheel for Intel Macs"}

#: Each platform as environment markers see it.
MARKERS = {
    "linux-x86_64": {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"},
    "linux-aarch64": {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64"},
    "macos-arm64": {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"},
    "macos-x86_64": {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "x86_64"},
    "windows-x86_64": {"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64"},
}


LOCKED = json.loads(LOCK.read_text(encoding="utf-8"))


def test_the_lock_is_of_todays_pyproject() -> None:
    assert LOCKED["requirements"] == requirements(), (
        "pyproject.toml's dependencies changed since tests/platforms.lock.json was written: "
        "run `.venv/bin/python -m tests.platform_lock` (it needs the package index) and commit the lock"
    )
    assert set(LOCKED["resolved"]) == set(PLATFORMS) == set(MARKERS)
    python = re.fullmatch(r">=(\d+\.\d+)", str(_project()["requires-python"]))
    assert python and PYTHONS[0] == python.group(1), "the lock starts at requires-python's oldest Python"


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_each_install_resolves_with_every_requirement_it_asks_for(platform: str, python: str) -> None:
    environment = {
        **MARKERS[platform],
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "os_name": "nt" if platform.startswith("windows") else "posix",
    }
    for install, wanted in installs(LOCKED["requirements"]).items():
        resolved = LOCKED["resolved"][platform][python][install]
        if (platform, python) in KNOWN_GAPS:
            assert isinstance(resolved, str) and "onnxruntime" in resolved, resolved
            continue
        assert isinstance(resolved, dict), f"{install} install on {platform}, Python {python}: {resolved}"
        for requirement in map(Requirement, wanted):
            name = canonicalize_name(requirement.name)
            if requirement.marker is not None and not requirement.marker.evaluate(environment):
                assert name not in resolved, f"{name} is for other platforms, yet {platform} installs it"
                continue
            assert name in resolved, f"{install} install on {platform}, Python {python} lacks {name}"
            assert Version(resolved[name]) in requirement.specifier, (name, resolved[name], str(requirement.specifier))
        if install == "core":
            assert not NOT_IN_CORE & set(resolved), NOT_IN_CORE & set(resolved)


def test_pysqlite3_binary_comes_only_where_it_has_wheels() -> None:
    """Everywhere else recall runs on the standard sqlite3 (the suite runs on it too: tests/__init__.py)."""
    for platform, pythons in LOCKED["resolved"].items():
        for python, installs_ in pythons.items():
            core = installs_["core"]
            if isinstance(core, dict):
                assert ("pysqlite3-binary" in core) == (platform == "linux-x86_64"), (platform, python)


def test_the_readme_names_the_supported_platforms_and_the_gap() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for words in ("Linux (x86-64, ARM64)", "macOS (Apple silicon, Intel)", "Windows (x86-64)", "Python 3.11"):
        assert words in readme, words
    assert "Intel Macs" in readme and "3.14" in readme


def _project() -> dict[str, object]:
    import tomllib

    project: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project
