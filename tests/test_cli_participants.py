"""The CLI's participant commands (agent list/show/update, human list, --exist-ok) and
`messages --all-chats`."""

from __future__ import annotations

import json
from pathlib import Path

from recall import Recall
from recall.cli import app
from tests.test_cli import db, recall, runner  # noqa: F401  (the `db` fixture: world w, agent-a, agent-b, maria)


def test_agent_list_show_update(db: Path) -> None:  # noqa: F811
    listed = [json.loads(line) for line in recall(db, "agent", "list", "w", "--json").splitlines()]
    assert [(a["id"], a["system_prompt"]) for a in listed] == [("agent-a", "You are A."), ("agent-b", "You are B.")]
    table = recall(db, "agent", "list", "w")
    assert "agent-a" in table and "You are B." in table

    updated = json.loads(
        recall(db, "agent", "update", "w", "agent-a", "--system-prompt", "You are A2.", "--model", "m1")
    )
    assert updated["system_prompt"] == "You are A2." and updated["model"] == "m1"
    shown = json.loads(recall(db, "agent", "show", "w", "AGENT-A"))
    assert shown == updated
    assert json.loads(recall(db, "agent", "update", "w", "agent-a", "--history-limit", "7"))["model"] == "m1"

    assert "ghost" in recall(db, "agent", "show", "w", "ghost", ok=False)
    nothing = runner.invoke(app, ["--db", str(db), "agent", "update", "w", "agent-a"])
    assert nothing.exit_code == 2 and "at least one setting" in nothing.output


def test_exist_ok_and_human_list(db: Path) -> None:  # noqa: F811
    assert "already exists" in recall(db, "agent", "add", "w", "agent-a", ok=False)
    recall(db, "agent", "add", "w", "agent-a", "--system-prompt", "other", "--exist-ok")
    assert json.loads(recall(db, "agent", "show", "w", "agent-a"))["system_prompt"] == "You are A."
    recall(db, "human", "add", "w", "maria", "--exist-ok")
    recall(db, "human", "add", "w", "joe")
    assert [json.loads(line)["id"] for line in recall(db, "human", "list", "w", "--json").splitlines()] == [
        "joe",
        "maria",
    ]
    assert "maria" in recall(db, "human", "list", "w")


def test_messages_of_every_chat(db: Path) -> None:  # noqa: F811
    recall(db, "post", "w", "--sender", "maria", "--chat", "c1", "one")
    recall(db, "post", "w", "--sender", "maria", "--chat", "c2", "two")
    recall(db, "post", "w", "--sender", "maria", "three")
    one_chat = [json.loads(line)["content"] for line in recall(db, "messages", "w", "--chat", "c1").splitlines()]
    assert one_chat == ["one"]
    every = [json.loads(line) for line in recall(db, "messages", "w", "--all-chats").splitlines()]
    assert [(m["content"], m["chat_id"]) for m in every] == [("one", "c1"), ("two", "c2"), ("three", None)]


def test_the_recalled_past_from_the_cli(db: Path) -> None:  # noqa: F811
    recall(db, "post", "w", "--sender", "maria", "--chat", "old", "The spare key is under the blue flowerpot.")
    recall(db, "post", "w", "--sender", "maria", "--chat", "c", "@agent-a where is the spare key?")
    built = json.loads(recall(db, "context", "w", "agent-a", "--chat", "c", "--format", "json"))
    assert "maria: The spare key is under the blue flowerpot." in built["messages"][1]["content"]
    off = json.loads(
        recall(db, "context", "w", "agent-a", "--chat", "c", "--format", "json", "--recalled-max-tokens", "0")
    )
    assert off["report"]["sections"]["recalled"] == 0
    table = recall(db, "context", "w", "agent-a", "--chat", "c", "--format", "table")
    assert "recalled" in table

    updated = json.loads(
        recall(db, "agent", "update", "w", "agent-a", "--recalled-limit", "3", "--recalled-min-similarity", "0.8")
    )
    assert updated["recalled_limit"] == 3 and updated["recalled_min_similarity"] == 0.8
    scoped = json.loads(recall(db, "agent", "update", "w", "agent-a", "--recalled-scope", "chat"))
    assert scoped["recalled_scope"] == "chat"
    assert "recalled_cutoff" in recall(db, "agent", "update", "w", "agent-a", "--recalled-cutoff", "2", ok=False)


def test_world_create_exist_ok_runs_again(db: Path) -> None:  # noqa: F811
    refused = recall(db, "world", "create", "w", ok=False)
    assert "already exists" in refused and "--exist-ok" in refused
    assert "exists already" in recall(db, "world", "create", "w", "--exist-ok", "--name", "other")
    assert "created world x" in recall(db, "world", "create", "x", "--exist-ok")
    with Recall(db) as mem:
        assert mem.world("w").name == "w"  # left unchanged
