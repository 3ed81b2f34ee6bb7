"""The gate over a real SQLite store: what each kind of caller may reach (unknown: 404, not
allowed: 403), tenant by tenant."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recall.app.gate import Gate, Principal, require_may_delete_memory
from recall.app.service import RecallService
from recall.errors import (
    AmbiguousWorldError,
    InvalidInputError,
    PermissionDeniedError,
    UnknownParticipantError,
    UnknownWorldError,
)
from recall.settings import Settings
from recall.store import SQLiteStore

ACME = Principal(tenant="acme", open=False)
GLOBEX = Principal(tenant="globex", open=False)
BOT_KEY = Principal(tenant="acme", agent="bot", open=False)
ADMIN = Principal(tenant="ops", open=False, admin=True)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[RecallService]:
    """Tenant acme has world `w` (agents bot and helper); globex has its own `w` and `only`."""
    recall = RecallService(SQLiteStore(str(tmp_path / "gate.db")), Settings(index_interval=0, embeddings="none"))
    acme = recall.worlds.create_world("w", tenant="acme")
    recall.worlds.add_agent(acme.key, "bot")
    recall.worlds.add_agent(acme.key, "helper")
    globex = recall.worlds.create_world("w", tenant="globex")
    recall.worlds.add_agent(globex.key, "bot")
    recall.worlds.create_world("only", tenant="globex")
    try:
        yield recall
    finally:
        recall.close()


@pytest.fixture
def gate(service: RecallService) -> Gate:
    return Gate(service)


def test_a_tenant_reaches_its_own_world_of_an_id_another_tenant_has_too(gate: Gate) -> None:
    assert gate.world(ACME, "w").tenant == "acme"
    assert gate.world(GLOBEX, "W").tenant == "globex"
    assert gate.world(ACME, "w").key != gate.world(GLOBEX, "w").key


def test_another_tenants_world_is_unknown_not_forbidden(gate: Gate) -> None:
    with pytest.raises(UnknownWorldError):
        gate.world(ACME, "only")
    with pytest.raises(UnknownWorldError):
        gate.agent(ACME, "only", "bot")
    with pytest.raises(UnknownWorldError):
        gate.scope(ACME, "world:only")


def test_a_tenant_lists_only_its_worlds(gate: Gate) -> None:
    assert sorted(w.id for w in gate.worlds(GLOBEX)) == ["only", "w"]
    assert [w.id for w in gate.worlds(ACME)] == ["w"]
    assert gate.worlds(Principal(tenant="nobody", open=False)) == []


def test_an_agent_key_acts_only_as_its_agent(gate: Gate) -> None:
    world, agent = gate.agent(BOT_KEY, "w", "BOT")
    assert (world.tenant, agent) == ("acme", "bot")
    with pytest.raises(PermissionDeniedError):
        gate.agent(BOT_KEY, "w", "helper")
    with pytest.raises(PermissionDeniedError):
        BOT_KEY.require_admin("create worlds")
    with pytest.raises(UnknownParticipantError):
        gate.agent(ACME, "w", "nobody")


def test_only_admin_keys_and_open_callers_are_operators() -> None:
    ADMIN.require_operator("read /metrics")
    Principal().require_operator("read /metrics")
    for caller in (ACME, BOT_KEY):
        with pytest.raises(PermissionDeniedError):
            caller.require_operator("read /metrics")


def test_the_open_principal_reaches_the_only_world_of_an_id_in_any_tenant(gate: Gate) -> None:
    anyone = Principal.local()
    assert anyone.world_tenant is None
    assert gate.world(anyone, "only").tenant == "globex"
    with pytest.raises(AmbiguousWorldError):
        gate.world(anyone, "w")
    assert len(gate.worlds(anyone)) == 3


def test_a_pinned_local_principal_names_its_tenants_worlds(gate: Gate) -> None:
    pinned = Principal.local("acme")
    assert pinned.pinned and pinned.world_tenant == "acme"
    assert gate.world(pinned, "w").tenant == "acme"
    with pytest.raises(UnknownWorldError):
        gate.world(pinned, "only")
    assert Principal.local("") == Principal(tenant="", pinned=True)


def test_scopes_resolve_in_the_tenant_of_their_world(gate: Gate) -> None:
    assert gate.scope(ACME, "world:W") == ("world:w", "acme")
    assert gate.scope(ACME, "agent:w/BOT") == ("agent:w/bot", "acme")
    assert gate.scope(ACME, "user:Maria") == ("user:maria", "acme")
    assert gate.scope(Principal.local(), "world:only") == ("world:only", "globex")
    assert gate.scope(Principal.local(), "user:maria") == ("user:maria", "")
    with pytest.raises(UnknownParticipantError):
        gate.scope(ACME, "agent:w/nobody")
    with pytest.raises(InvalidInputError):
        gate.scope(ACME, "world:")
    with pytest.raises(InvalidInputError):
        gate.scope(ACME, "team:w")


def test_another_agents_facts_are_private(gate: Gate) -> None:
    assert gate.scope(BOT_KEY, "agent:w/bot") == ("agent:w/bot", "acme")
    assert gate.scope(BOT_KEY, "world:w") == ("world:w", "acme")
    with pytest.raises(PermissionDeniedError):
        gate.scope(BOT_KEY, "agent:w/helper")
    acting = gate.agent(ACME, "w", "helper")
    assert gate.scope(ACME, "agent:w/helper", acting) == ("agent:w/helper", "acme")
    with pytest.raises(PermissionDeniedError):
        gate.scope(ACME, "agent:w/bot", acting)


def test_an_agent_deletes_only_its_own_memories(service: RecallService, gate: Gate) -> None:
    world = gate.world(ACME, "w")
    memories = service.memories
    shared = memories.add_memory(world.key, "The office opens at nine")
    own = memories.add_memory(world.key, "I promised maria a callback", agent="bot")
    require_may_delete_memory(world, shared, "")
    require_may_delete_memory(world, own, "bot")
    with pytest.raises(PermissionDeniedError):
        require_may_delete_memory(world, shared, "bot")
    with pytest.raises(PermissionDeniedError):
        memories.delete_memory(world.key, shared.id, agent="bot")
    memories.delete_memory(world.key, own.id, agent="bot")
    memories.delete_memory(world.key, shared.id)
    assert memories.list_memories(world.key, "bot") == []
