"""The TypeScript client (clients/typescript, `recall-memory` on npm) against a real `recall serve`
on loopback: its package as `npm pack` builds it, its Node tests (node --test), a long poll woken
by a post from Python, the Vercel AI SDK example answering with recall's scripted model server,
the README's tour, and its generated types checked against the server's OpenAPI schema.

`make test` installs Node.js when missing (as root, from Debian) and the package's devDependencies
(`npm ci`, when package-lock.json changes); without them these tests are skipped, saying why.
Everything is built into a temporary folder: nothing is written into the repository.
"""

from __future__ import annotations

import difflib
import fcntl
import json
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from recall.api import Recall
from recall.llm.scripted_server import start_model_server
from recall.settings import Settings
from tests.processes import server_process
from tests.server.conftest import free_port

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
MODULES = PACKAGE / "node_modules"
#: Written by the Makefile once `npm ci` has installed package-lock.json's packages.
INSTALLED = MODULES / ".recall-installed"
NODE = shutil.which("node")
NPM = shutil.which("npm")

pytestmark = pytest.mark.skipif(
    NODE is None or NPM is None or not INSTALLED.exists(),
    reason="Node.js or the TypeScript client's packages are missing "
    "(make test installs Node.js when run as root, and runs npm ci in clients/typescript)",
)

#: The tenant's key (admin: it also reads /metrics), and a key that acts only as agent-b.
KEY = "sk-ts-acme"
AGENT_KEY = "sk-ts-agent-b"
CONFIG = f"""
[[keys]]
key = "{KEY}"
tenant = "acme"
admin = true

[[keys]]
key = "{AGENT_KEY}"
tenant = "acme"
agent = "agent-b"
"""
#: What a Node process may take (a long poll answers in well under this).
NODE_TIMEOUT = 120


@dataclass(frozen=True)
class Server:
    url: str
    db: Path

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30)

    def env(self) -> dict[str, str]:
        """The environment a Node process gets: where recall is and the keys (test/server.ts)."""
        return {**os.environ, "RECALL_URL": self.url, "RECALL_API_KEY": KEY, "RECALL_AGENT_KEY": AGENT_KEY}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`recall serve` with API keys on a free loopback port and a SQLite file of its own."""
    folder = tmp_path_factory.mktemp("serve")
    config = folder / "recall.toml"
    config.write_text(CONFIG)
    db = folder / "recall.db"
    port = free_port()
    env = {**os.environ, "RECALL_CONFIG": str(config), "RECALL_EMBEDDINGS": "none"}
    with server_process(db, port, env) as _:
        yield Server(f"http://127.0.0.1:{port}", db)


@dataclass(frozen=True)
class Built:
    """The package as npm packs it, installed in an app folder with the tests and examples
    compiled against it."""

    tarball: Path
    app: Path

    def js(self, source: str) -> str:
        """The compiled file of a source of the package (`test/tour.test.ts`)."""
        return str(self.app / "build" / Path(source).with_suffix(".js"))


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=NODE_TIMEOUT)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Built once per run: under xdist, the first worker to get here builds into the folder the
    workers share, and the others wait for it and take its build."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if "PYTEST_XDIST_WORKER" in os.environ else base
    root = shared / "typescript"
    with open(shared / "typescript.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        done = root / "built"
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)  # what a worker that failed left
            root.mkdir()
            _build(root)
            done.touch()
    (tarball,) = root.glob("*.tgz")
    return Built(tarball, root / "app")


def _build(root: Path) -> None:
    # `npm pack` in a copy of the package's sources (its prepack script compiles them with tsc).
    pack = root / "pack"
    pack.mkdir()
    for name in ("package.json", "package-lock.json", ".npmrc", "tsconfig.json", "README.md"):
        shutil.copy(PACKAGE / name, pack / name)
    shutil.copytree(PACKAGE / "src", pack / "src")
    (pack / "node_modules").symlink_to(MODULES)
    assert NPM is not None
    offline = {**os.environ, "npm_config_offline": "true", "npm_config_update_notifier": "false"}
    packed = run([NPM, "pack", "--silent", "--pack-destination", str(root)], pack, offline)
    tarball = root / packed.stdout.strip().splitlines()[-1]
    # Installed as a user's app installs it, beside the devDependencies the tests and example use.
    app = root / "app"
    modules = app / "node_modules"
    modules.mkdir(parents=True)
    for entry in MODULES.iterdir():
        if not entry.name.startswith("."):
            (modules / entry.name).symlink_to(entry)
    with tarfile.open(tarball) as archive:
        archive.extractall(root / "unpacked", filter="data")
    (root / "unpacked" / "package").rename(modules / "recall-memory")
    tsconfig = {
        "extends": str(PACKAGE / "tsconfig.test.json"),
        "compilerOptions": {
            "rootDir": str(PACKAGE),
            "outDir": str(app / "build"),
            "paths": {"recall-memory": [str(modules / "recall-memory" / "dist" / "index.d.ts")]},
        },
        "include": [str(PACKAGE / "test"), str(PACKAGE / "examples")],
    }
    (app / "tsconfig.json").write_text(json.dumps(tsconfig))
    assert NODE is not None
    run([NODE, str(MODULES / "typescript" / "bin" / "tsc"), "-p", str(app / "tsconfig.json")], app)


def test_npm_pack_builds_the_package_with_its_types(built: Built) -> None:
    with tarfile.open(built.tarball) as archive:
        files = {name.removeprefix("package/") for name in archive.getnames()}
    assert {"package.json", "README.md", "dist/index.js", "dist/index.d.ts", "dist/schema.d.ts"} <= files
    assert not {f for f in files if f.startswith(("src/", "test/", "examples/", "node_modules/"))}
    manifest = json.loads((built.app / "node_modules" / "recall-memory" / "package.json").read_text())
    assert manifest["name"] == "recall-memory"
    assert manifest["type"] == "module"
    assert manifest["exports"]["."]["types"] == "./dist/index.d.ts"
    assert "dependencies" not in manifest, "the client needs nothing at run time but fetch"


def test_the_node_tests_pass_against_recall_serve(built: Built, server: Server) -> None:
    """test/*.test.ts: typed errors, the long poll and its AbortSignal, listen(), contexts in both
    shapes, search, facts, memories, calls and replay, and the README's tour."""
    sources = sorted((PACKAGE / "test").glob("*.test.ts"))
    tests = [str(p.relative_to(PACKAGE)) for p in sources]
    # Every test ran, and passed: none skipped, none left out by a file that failed to load.
    count = sum(len(re.findall(r"^\s*test\(", p.read_text(), re.MULTILINE)) for p in sources)
    assert NODE is not None
    done = subprocess.run(
        [NODE, "--test", *(built.js(t) for t in tests)],
        cwd=built.app,
        env=server.env(),
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(rf"^# pass {count}$", done.stdout, re.MULTILINE), done.stdout


def test_a_long_poll_from_typescript_is_woken_by_a_post_from_python(built: Built, server: Server) -> None:
    with Recall(server.db, Settings(embeddings="none", index_interval=0)) as mem:
        world = mem.world("from-python", create=True, tenant="acme")
        world.add_agent("agent-b", system_prompt="You are B.")
        world.add_human("maria")
        hello = world.post("maria", "hello from Python")  # public: agent-b would answer it
        world.agent("agent-b").ack([hello])  # so the check has nothing to answer, and waits
        assert NODE is not None
        waiting = subprocess.Popen(
            [NODE, built.js("test/wait-for-python.ts"), "--world", "from-python", "--agent", "agent-b"],
            cwd=built.app,
            env=server.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert waiting.stdout is not None
            assert waiting.stdout.readline() == "waiting\n", waiting.communicate(timeout=NODE_TIMEOUT)
            posted = world.post("maria", "@agent-b the parcel is 4417")  # through the store, as Python does
            out, err = waiting.communicate(timeout=NODE_TIMEOUT)
        finally:
            if waiting.poll() is None:
                waiting.kill()
                waiting.wait()
    assert waiting.returncode == 0, err
    check = json.loads(out)
    assert [(m["id"], m["content"]) for m in check["new_mentions"]] == [(posted.id, "@agent-b the parcel is 4417")]
    assert [m["content"] for m in check["context"]] == ["hello from Python"]
    assert check["call_id"].startswith("c_")


def test_the_vercel_ai_sdk_example_answers_through_recall(built: Built, server: Server) -> None:
    model = start_model_server()
    model.script("Your invoice is re-issued today.")
    try:
        with server.client() as c:
            c.post("/v1/worlds", json={"id": "example"}).raise_for_status()
            c.post("/v1/worlds/example/agents", json={"id": "triage", "system_prompt": "You route tickets."})
            c.post("/v1/worlds/example/humans", json={"id": "maria"}).raise_for_status()
            asked = c.post(
                "/v1/worlds/example/messages",
                json={"sender": "maria", "content": "@triage my invoice is wrong", "chat_id": "t-1"},
            ).json()
            args = ["--world", "example", "--agent", "triage", "--model-url", model.openai_url, "--model", "m"]
            assert NODE is not None
            done = run([NODE, built.js("examples/support-agent.ts"), *args, "--once"], built.app, server.env())
            assert f"answered message {asked['id']}" in done.stdout
            reply = c.get("/v1/worlds/example/messages", params={"chat_id": "t-1"}).json()["messages"][-1]
            calls = c.get("/v1/worlds/example/agents/triage/calls").json()["calls"]
            unread = c.get("/v1/worlds/example/agents/triage/inbox").json()["new_mentions"]
    finally:
        model.close()
    assert (reply["sender"], reply["content"], reply["parent_id"]) == (
        "triage",
        "Your invoice is re-issued today.",
        asked["id"],
    )
    # The model got recall's context: the system prompt, then maria's message under her name.
    assert model.bodies()[0]["messages"] == [
        {"role": "system", "content": "You route tickets."},
        {"role": "user", "content": "maria: @triage my invoice is wrong"},
    ]
    assert [(c["trigger_id"], c["outcome"]) for c in calls] == [(asked["id"], "answered")]
    assert unread == [], "the example acknowledged the message it answered"


@pytest.mark.parametrize("page", ["clients/typescript/README.md", "docs/typescript.md"])
def test_the_tour_of_the_docs_is_the_one_the_tests_run(page: str) -> None:
    """The first TypeScript block of the package's README and of its docs page is the tour
    test/tour.test.ts runs, line for line (docs/typescript.md's snippets are TypeScript, which
    tests/test_doc_snippets.py does not run)."""
    text = (PACKAGE.parents[1] / page).read_text()
    block = re.search(r"^```ts\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert block is not None, f"{page} has no ```ts block"
    tour = (PACKAGE / "test" / "tour.test.ts").read_text()
    tested = tour.split("// README tour begins\n")[1].split("// README tour ends\n")[0]
    assert block.group(1) == tested, f"{page}'s tour differs from test/tour.test.ts:\n" + "".join(
        difflib.unified_diff(tested.splitlines(True), block.group(1).splitlines(True), "test", page)
    )


def test_the_generated_types_match_the_servers_openapi_schema(server: Server, tmp_path: Path) -> None:
    with server.client() as c:
        (tmp_path / "openapi.json").write_text(c.get("/openapi.json").text)
    fresh = tmp_path / "schema.ts"
    assert NODE is not None
    script = str(PACKAGE / "scripts" / "schema.mjs")
    run([NODE, script, "--from", str(tmp_path / "openapi.json"), "--out", str(fresh)], tmp_path)
    checked_in = (PACKAGE / "src" / "schema.ts").read_text()
    drift = "".join(
        difflib.unified_diff(
            checked_in.splitlines(True), fresh.read_text().splitlines(True), "src/schema.ts", "the server's", n=1
        )
    )
    assert not drift, (
        "clients/typescript/src/schema.ts is out of date with the server's OpenAPI schema: "
        "regenerate it with `cd clients/typescript && npm run schema` (and adapt the client)\n" + drift[:4000]
    )
