"""`recall facts …`, `recall memory …` and `recall search …`: the forms scripts rely on."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import recall.app.memories as memories_module
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)
from tests.test_cli import db, recall  # noqa: F401 - the fixture is used by name

__all__ = ["db"]


def test_facts_commands_round_trip(db: Path, tmp_path: Path) -> None:  # noqa: F811
    added = json.loads(recall(db, "facts", "add", "user:maria", "Likes tea", "--category", "preference",
                              "--confidence", "0.9"))  # fmt: skip
    assert added["scope"] == "user:maria" and added["category"] == "preference"
    updated = json.loads(recall(db, "facts", "update", "user:maria", str(added["id"]), "--confidence", "0.7"))
    assert updated["confidence"] == 0.7
    listed = json.loads(recall(db, "facts", "list", "user:maria", "--json"))
    assert [f["content"] for f in listed["facts"]] == ["Likes tea"]
    assert "Likes tea" in recall(db, "facts", "list", "user:maria")

    export = tmp_path / "facts.json"
    export.write_text(recall(db, "facts", "export", "user:maria"))
    assert json.loads(recall(db, "facts", "import", "user:bob", str(export))) == {
        "added": 1,
        "skipped": 0,
        "removed": 0,
    }
    recall(db, "facts", "delete", "user:maria", str(added["id"]))
    assert json.loads(recall(db, "facts", "list", "user:maria", "--json"))["facts"] == []
    recall(db, "facts", "clear", "user:bob")
    assert json.loads(recall(db, "facts", "list", "user:bob", "--json"))["facts"] == []


def test_facts_errors_exit_1_with_the_reason(db: Path, tmp_path: Path) -> None:  # noqa: F811
    assert "confidence" in recall(db, "facts", "add", "user:maria", "x", "--confidence", "3", ok=False)
    assert "scope" in recall(db, "facts", "list", "maria", ok=False)
    assert "unknown fact" in recall(db, "facts", "delete", "user:maria", "99", ok=False)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert "cannot read" in recall(db, "facts", "import", "user:maria", str(broken), ok=False)


def test_memory_commands(db: Path) -> None:  # noqa: F811
    shared = json.loads(recall(db, "memory", "add", "w", "Deliveries on Monday", "--importance", "7"))
    private = json.loads(recall(db, "memory", "add", "w", "Maria tips well", "--agent", "agent-a", "--type", "hunch"))
    assert shared["owner"] is None and private["owner"] == "agent-a"
    lines = recall(db, "memory", "list", "w", "--agent", "agent-a").splitlines()
    assert [json.loads(line)["content"] for line in lines] == ["Deliveries on Monday", "Maria tips well"]
    assert len(recall(db, "memory", "list", "w").splitlines()) == 1
    assert "importance" in recall(db, "memory", "add", "w", "x", "--importance", "0", ok=False)


def test_memory_update_delete_and_expiry_commands(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    now = [datetime.now(UTC).replace(microsecond=0)]
    monkeypatch.setattr(memories_module, "clock", lambda: now[0])
    shared = json.loads(recall(db, "memory", "add", "w", "Deliveries on Monday", "--ttl", "3600"))
    assert shared["expires_at"] == (now[0] + timedelta(hours=1)).isoformat()
    at = json.loads(recall(db, "memory", "add", "w", "Stock-take in June", "--expires-at", "2099-06-01T08:00:00Z"))
    assert at["expires_at"] == "2099-06-01T08:00:00+00:00"
    own = json.loads(recall(db, "memory", "add", "w", "Maria tips well", "--agent", "agent-a"))

    now[0] += timedelta(seconds=5)
    updated = json.loads(recall(db, "memory", "update", "w", str(shared["id"]), "--content", "Deliveries on Tuesday",
                                "--importance", "8", "--type", "routine"))  # fmt: skip
    assert (updated["id"], updated["created_at"], updated["expires_at"]) == (
        shared["id"],
        shared["created_at"],
        shared["expires_at"],
    )
    assert (updated["content"], updated["importance"], updated["type"]) == ("Deliveries on Tuesday", 8, "routine")
    assert updated["updated_at"] == now[0].isoformat()
    cleared = json.loads(recall(db, "memory", "update", "w", str(shared["id"]), "--no-expiry"))
    assert cleared["expires_at"] is None
    epoch = json.loads(recall(db, "memory", "update", "w", str(at["id"]), "--expires-at", "4102444800"))
    assert epoch["expires_at"] == "2100-01-01T00:00:00+00:00"
    mine = json.loads(recall(db, "memory", "update", "w", str(own["id"]), "--agent", "agent-a", "--ttl", "60"))
    assert mine["expires_at"] == (now[0] + timedelta(seconds=60)).isoformat()

    # The reasons, one line each, exit status 1; nothing changed.
    assert "unknown memory" in recall(db, "memory", "update", "w", str(own["id"]), "--agent", "agent-b",
                                      "--content", "x", ok=False)  # fmt: skip
    assert "unknown memory" in recall(db, "memory", "update", "w", str(own["id"]), "--content", "x", ok=False)
    assert "updates only its own" in recall(db, "memory", "update", "w", str(shared["id"]), "--agent", "agent-a",
                                            "--content", "x", ok=False)  # fmt: skip
    assert "importance" in recall(db, "memory", "update", "w", str(shared["id"]), "--importance", "11", ok=False)
    assert "clear_expiry" in recall(db, "memory", "update", "w", str(shared["id"]), "--ttl", "5", "--no-expiry",
                                    ok=False)  # fmt: skip
    assert "expires_at" in recall(db, "memory", "update", "w", str(shared["id"]), "--expires-at", "soon", ok=False)
    assert "future" in recall(db, "memory", "add", "w", "x", "--expires-at", "2001-01-01", ok=False)
    assert "changes" in recall(db, "memory", "update", "w", str(shared["id"]), ok=False)

    # Expired: never listed, and gone.
    now[0] += timedelta(seconds=60)
    listed = [json.loads(line)["id"] for line in recall(db, "memory", "list", "w", "--agent", "agent-a").splitlines()]
    assert listed == [shared["id"], at["id"]]
    recall(db, "memory", "delete", "w", str(at["id"]))
    assert "deletes only its own" in recall(
        db, "memory", "delete", "w", str(shared["id"]), "--agent", "agent-a", ok=False
    )
    assert "unknown memory" in recall(db, "memory", "delete", "w", str(at["id"]), ok=False)
    assert [json.loads(line)["id"] for line in recall(db, "memory", "list", "w").splitlines()] == [shared["id"]]


def test_search_command_finds_messages_memories_and_facts(db: Path) -> None:  # noqa: F811
    recall(db, "post", "w", "--sender", "maria", "--chat", "c1", "my parcel never arrived in Lyon")
    recall(db, "post", "w", "--sender", "maria", "--chat", "c2", "the weather is lovely today")
    recall(db, "memory", "add", "w", "Parcels to Lyon go through the Paris depot", "--importance", "6")
    recall(db, "facts", "add", "world:w", "Lyon parcels take three days")
    results = json.loads(recall(db, "search", "w", "parcel Lyon", "--k", "5", "--json"))
    assert {r["kind"] for r in results} == {"message", "memory", "fact"}
    assert "weather" not in json.dumps(results[:3])
    top = results[0]
    assert top["method"] in ("hybrid", "bm25") and top["keyword_rank"] is not None
    keyword = json.loads(recall(db, "search", "w", "parcel", "--method", "bm25", "--json"))
    assert [r["keyword_rank"] for r in keyword] == list(range(1, len(keyword) + 1))
    assert {r["vector_rank"] for r in keyword} == {None}
    only = json.loads(recall(db, "search", "w", "parcel", "--kind", "message", "--chat", "c1", "--json"))
    assert [r["chat_id"] for r in only] == ["c1"]
    table = recall(db, "search", "w", "parcel Lyon")
    assert "parcel" in table and "kw 1 ·" in table  # why each hit ranks where it does
    assert "k" in recall(db, "search", "w", "parcel", "--k", "0", ok=False)


def test_facts_extract_without_a_model_says_so(db: Path) -> None:  # noqa: F811
    recall(db, "post", "w", "--sender", "maria", "I live in Lyon")
    result = json.loads(recall(db, "facts", "extract", "w", "agent-a"))
    assert result["queued"] is False and "no chat model" in result["reason"] and result["extractions"] == 0


def test_facts_extract_with_the_configured_model(
    db: Path,  # noqa: F811
    model_server: ModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RECALL_LLM_MODEL", "test-model")
    monkeypatch.setenv("RECALL_LLM_BASE_URL", model_server.openai_url)
    recall(db, "post", "w", "--sender", "maria", "I live in Lyon and I am vegetarian")
    model_server.script('{"new_facts": [{"content": "Is vegetarian", "category": "preference", "confidence": 0.9}]}')
    result = json.loads(recall(db, "facts", "extract", "w", "agent-a"))
    assert result["queued"] is True and result["extractions"] == 1
    listed = json.loads(recall(db, "facts", "list", "user:maria", "--json"))
    assert [f["content"] for f in listed["facts"]] == ["Is vegetarian"]


def _extract_failure(db: Path, monkeypatch: pytest.MonkeyPatch, base_url: str) -> str:  # noqa: F811
    """`facts extract` against a model at `base_url` that fails: exit 1, the reason on one
    line, and no fact stored."""
    monkeypatch.setenv("RECALL_LLM_MODEL", "test-model")
    monkeypatch.setenv("RECALL_LLM_BASE_URL", base_url)
    recall(db, "post", "w", "--sender", "maria", "I live in Lyon and I am vegetarian")
    out = recall(db, "facts", "extract", "w", "agent-a", ok=False)
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: extraction for user:maria failed: "), out
    assert json.loads(recall(db, "facts", "list", "user:maria", "--json"))["facts"] == []
    return lines[0]


def test_facts_extract_fails_when_the_model_answers_500(
    db: Path,  # noqa: F811
    model_server: ModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model_server.script((500, "the model crashed"), (500, "the model crashed"))
    line = _extract_failure(db, monkeypatch, model_server.openai_url)
    assert "HTTP 500" in line and "the model crashed" in line


def test_facts_extract_fails_when_the_answer_is_not_json(
    db: Path,  # noqa: F811
    model_server: ModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model_server.script("Sure! Maria lives in Lyon.")
    line = _extract_failure(db, monkeypatch, model_server.openai_url)
    assert "no usable JSON object" in line and "Sure! Maria lives in Lyon." in line


def test_facts_extract_fails_when_the_model_is_unreachable(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = _extract_failure(db, monkeypatch, f"http://127.0.0.1:{port}/v1")
    assert "could not connect" in line and f"127.0.0.1:{port}" in line
