"""The Python API and the CLI on worlds of tenants (spec §8): every World and Agent method
works on a world a tenant created (as the server creates it), on SQLite and PostgreSQL; with
several tenants' worlds of one id, `tenant=` (`--tenant`) picks one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall import Recall, Settings
from recall.cli import app
from recall.errors import AmbiguousWorldError


@pytest.fixture
def mem(store_location: str) -> Iterator[Recall]:
    """A store holding world `solo` of tenant acme (what `POST /v1/worlds` with acme's key makes)."""
    with Recall(store_location, Settings(index_interval=0)) as recall:
        recall.service.worlds.create_world("solo", tenant="acme")
        yield recall


def test_every_world_and_agent_method_works_on_a_tenants_world(mem: Recall) -> None:
    world = mem.world("solo")
    world.add_human("maria")
    bot = world.add_agent("bot")
    world.post("maria", "@bot the blue door is open")
    world.add_memory("The door code is 42")

    assert [r.text for r in world.search("door", kinds=["message"])] == ["maria: @bot the blue door is open"]
    assert [r.text for r in bot.search("code", kinds=["memory"])] == ["The door code is 42"]
    assert world.facts.list() == [] and bot.facts.list() == []
    world.facts.add("The door is blue")
    assert [f.content for f in mem.scope("world:solo").list()] == ["The door is blue"]
    assert [f.content for f in mem.scope("world:solo", tenant="acme").list()] == ["The door is blue"]
    # No chat model is configured: extraction says so (it used to raise UnknownWorldError).
    assert bot.extract() == {
        "queued": False,
        "scope": "user:maria",
        "reason": "no chat model configured (settings.llm_model)",
    }
    assert [m.content for m in bot.inbox()] == ["@bot the blue door is open"]
    assert "The door is blue" in bot.context().openai()[0]["content"]
    assert (world.id, world.tenant, bot.world_id) == ("solo", "acme", "solo")


def test_worlds_of_one_id_in_several_tenants_are_told_apart(mem: Recall) -> None:
    assert mem.world("solo").tenant == "acme"  # the only `solo` (a lookup the service caches)
    mem.create_world("solo", tenant="globex", name="Globex solo")
    with pytest.raises(AmbiguousWorldError, match="exists in 2 tenants"):
        mem.world("solo")
    with pytest.raises(AmbiguousWorldError):
        mem.scope("world:solo")
    globex = mem.world("solo", tenant="globex")
    assert (globex.id, globex.name, repr(globex)) == ("solo", "Globex solo", "World('solo', tenant='globex')")
    globex.add_human("maria")
    message = globex.post("maria", "hello globex")
    assert message.world_id == "solo"
    assert mem.world("solo", tenant="acme").messages() == []
    assert [w.name for w in mem.worlds("globex")] == ["Globex solo"]


def test_the_cli_names_a_tenant_when_an_id_is_ambiguous(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    runner = CliRunner()

    def recall(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, ["--db", db, *args])
        return result.exit_code, result.output

    assert recall("--tenant", "acme", "world", "create", "alpha")[0] == 0
    assert recall("--tenant", "globex", "world", "create", "alpha")[0] == 0
    for tenant in ("acme", "globex"):
        assert recall("--tenant", tenant, "human", "add", "alpha", "maria")[0] == 0
        assert recall("--tenant", tenant, "post", "alpha", "--sender", "maria", f"hi {tenant}")[0] == 0
    code, output = recall("messages", "alpha")
    assert code == 1 and "exists in 2 tenants" in output
    code, output = recall("--tenant", "globex", "messages", "alpha")
    assert code == 0 and "hi globex" in output and "hi acme" not in output
