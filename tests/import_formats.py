"""Small files in the formats of other memory systems, made by the tests that import them
(tests/test_import_memory_systems.py), each written to the schema its system documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def mem0_export() -> dict[str, Any]:
    """What mem0's `Memory.get_all(filters=...)` returns (mem0/memory/main.py: `MemoryItem` with
    the payload keys `user_id`, `agent_id`, `run_id`, `actor_id`, `role`, `expiration_date`
    promoted, the rest under `metadata`), plus the platform's `categories` and a graph's
    `relations` ({source, relationship, target})."""
    return {
        "results": [
            {
                "id": "0b4c1f6e-6f2a-4d0b-9a51-3f1d5e2a7c01",
                "memory": "Drinks only green tea",
                "hash": "5b6f0f1c6a2e4e6c9d1f3a2b7c8d9e0f",
                "metadata": {"source": "chat"},
                "categories": ["food", "preferences"],
                "created_at": "2024-07-20T10:15:00.123456-07:00",
                "updated_at": "2024-07-21T08:00:00-07:00",
                "user_id": "maria",
            },
            {
                "id": "7d0e2c55-1a3b-4c5d-8e9f-0a1b2c3d4e5f",
                "memory": "Maria's parcel 4711 went to the Lyon depot",
                "hash": "a1b2c3",
                "metadata": None,
                "created_at": "2024-08-02T09:00:00Z",
                "updated_at": None,
                "user_id": "maria",
                "agent_id": "support-bot",
                "run_id": "ticket-7",
                "role": "user",
            },
            {
                "id": "9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a",
                "memory": "The summer sale ended",
                "created_at": "2024-06-01T00:00:00Z",
                "user_id": "maria",
                "expiration_date": "2024-07-01",
            },
        ],
        "relations": [{"source": "maria", "relationship": "drinks", "target": "green_tea"}],
    }


def zep_export() -> dict[str, Any]:
    """Zep's API answers put together (zep_cloud SDK types): users (`User`, with the facts
    `user.get_facts` returns: `Fact`), sessions (`Session`) with their messages (`Message`,
    v2: the kind in `role_type`, a name in `role`)."""
    return {
        "users": [
            {
                "user_id": "maria",
                "email": "maria@example.com",
                "first_name": "Maria",
                "created_at": "2024-05-01T12:00:00Z",
                "facts": [
                    {
                        "uuid": "f1a2b3c4-0000-4000-8000-000000000001",
                        "fact": "Maria prefers e-mail over phone calls",
                        "created_at": "2024-05-02T09:30:00Z",
                        "valid_at": "2024-05-02T09:00:00Z",
                        "invalid_at": None,
                        "expired_at": None,
                        "rating": 0.8,
                    },
                    {
                        "uuid": "f1a2b3c4-0000-4000-8000-000000000002",
                        "fact": "Maria lives in Porto",
                        "created_at": "2024-05-02T09:31:00Z",
                        "invalid_at": "2024-06-01T00:00:00Z",
                    },
                ],
            }
        ],
        "sessions": [
            {
                "session_id": "s-100",
                "user_id": "maria",
                "created_at": "2024-05-02T09:00:00Z",
                "metadata": {"channel": "web"},
                "messages": [
                    {
                        "uuid": "m-0001",
                        "created_at": "2024-05-02T09:00:00Z",
                        "role": "Maria",
                        "role_type": "user",
                        "content": "Hi, please e-mail me the invoice",
                        "metadata": {"page": "billing"},
                        "token_count": 9,
                    },
                    {
                        "uuid": "m-0002",
                        "created_at": "2024-05-02T09:00:05Z",
                        "role": "assistant",
                        "role_type": "assistant",
                        "content": "Sent to maria@example.com.",
                    },
                ],
            },
            {
                "session_id": "s-101",
                "user_id": "maria",
                "messages": {
                    "messages": [
                        {
                            "uuid": "m-0003",
                            "created_at": "2024-06-10T15:00:00Z",
                            "role": "user",
                            "name": "Maria",
                            "content": "Did my refund arrive?",
                        },
                        {
                            "uuid": "m-0004",
                            "created_at": "2024-06-10T15:00:30Z",
                            "role": "system",
                            "content": "Refund 88 issued",
                        },
                    ],
                    "total_count": 2,
                },
            },
        ],
    }


def letta_agent_file() -> dict[str, Any]:
    """A Letta Agent File in its current schema (letta/schemas/agent_file.py: `AgentFileSchema`
    with `AgentSchema`, `MessageSchema`, `BlockSchema`, `ToolSchema`), as
    tests/test_agent_files/*_v2.af in the Letta repository: the reply is a `send_message` call,
    the assistant's text its inner thoughts."""
    return {
        "agents": [
            {
                "id": "agent-0",
                "name": "Sam",
                "system": "You are Sam, a helpful companion.",
                "agent_type": "memgpt_agent",
                "block_ids": ["block-0", "block-1"],
                "tool_ids": ["tool-0"],
                "tool_rules": [{"tool_name": "send_message", "type": "exit_loop"}],
                "llm_config": {"model": "gpt-4.1-mini", "context_window": 32000},
                "embedding_config": {"embedding_model": "text-embedding-3-small"},
                "in_context_message_ids": ["message-0", "message-1"],
                "messages": [
                    {
                        "type": "message",
                        "id": "message-0",
                        "role": "system",
                        "content": [{"type": "text", "text": "You are Sam.\n<memory_blocks>…</memory_blocks>"}],
                        "created_at": "2025-10-10T07:14:29.900000+00:00",
                    },
                    {
                        "type": "message",
                        "id": "message-1",
                        "role": "user",
                        "content": [
                            {
                                "type": "text",
                                "text": json.dumps({"type": "login", "last_login": "Never (first login)"}),
                            }
                        ],
                        "created_at": "2025-10-10T07:14:29.912415+00:00",
                    },
                    {
                        "type": "message",
                        "id": "message-2",
                        "role": "user",
                        "content": [{"type": "text", "text": "I'm Sarah. What is the 10th Fibonacci number?"}],
                        "created_at": "2025-10-10T07:14:31+00:00",
                    },
                    {
                        "type": "message",
                        "id": "message-3",
                        "role": "assistant",
                        "content": [{"type": "text", "text": "She wants a number; let me note her name."}],
                        "tool_calls": [
                            {
                                "id": "call_mem",
                                "type": "function",
                                "function": {
                                    "name": "core_memory_append",
                                    "arguments": json.dumps({"label": "human", "content": "Name: Sarah"}),
                                },
                            }
                        ],
                        "created_at": "2025-10-10T07:14:32+00:00",
                    },
                    {
                        "type": "message",
                        "id": "message-4",
                        "role": "tool",
                        "name": "core_memory_append",
                        "content": [{"type": "text", "text": '{"status": "OK", "message": "None"}'}],
                        "tool_call_id": "call_mem",
                        "created_at": "2025-10-10T07:14:32.500000+00:00",
                    },
                    {
                        "type": "message",
                        "id": "message-5",
                        "role": "assistant",
                        "content": [{"type": "text", "text": "Now answer."}],
                        "tool_calls": [
                            {
                                "id": "call_reply",
                                "type": "function",
                                "function": {"name": "send_message", "arguments": json.dumps({"message": "It is 55."})},
                            }
                        ],
                        "created_at": "2025-10-10T07:14:33+00:00",
                    },
                    {
                        "type": "message",
                        "id": "message-6",
                        "role": "tool",
                        "name": "send_message",
                        "content": [
                            {"type": "text", "text": '{"status": "OK", "message": "Sent message successfully."}'}
                        ],
                        "tool_call_id": "call_reply",
                        "tool_returns": [
                            {"tool_call_id": "call_reply", "status": "success", "func_response": '{"status": "OK"}'}
                        ],
                        "created_at": "2025-10-10T07:14:33.049503+00:00",
                    },
                ],
            }
        ],
        "blocks": [
            {"id": "block-0", "label": "persona", "value": "I am Sam. I like numbers.", "limit": 5000},
            {
                "id": "block-1",
                "label": "human",
                "value": "",
                "limit": 5000,
                "description": "The human block: key details about the person you talk to.",
            },
        ],
        "tools": [{"id": "tool-0", "name": "send_message", "source_code": "def send_message(message): ..."}],
        "groups": [],
        "files": [],
        "sources": [],
        "mcp_servers": [],
        "metadata": {"revision_id": "abc"},
        "created_at": "2025-10-10T07:14:00+00:00",
    }


def letta_agent_file_v1() -> dict[str, Any]:
    """The Agent File's first schema (letta/serialize_schemas/pydantic_agent_schema.py:
    `AgentSchema` with `core_memory` blocks and messages without ids), as Letta 0.6 wrote it:
    what a person typed is wrapped in `{"type": "user_message", ...}`."""
    return {
        "agent_type": "memgpt_agent",
        "name": "memgpt_agent",
        "system": "You are Letta.",
        "version": "0.6.47",
        "created_at": "2025-04-01T03:47:27",
        "core_memory": [
            {"label": "persona", "value": "I am BigChungus.", "limit": 5000, "created_at": "2025-04-01T03:47:27"}
        ],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": json.dumps({"type": "user_message", "message": "hey there"})}],
                "tool_calls": [],
                "tool_returns": [],
                "created_at": "2025-04-01T03:48:00.000001",
            },
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "A greeting."}],
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "send_message", "arguments": '{\n  "message": "Hi!"\n}'},
                    }
                ],
                "tool_returns": [],
                "created_at": "2025-04-01T03:48:02",
            },
        ],
        "tools": [],
        "tool_rules": [],
        "tags": [],
    }


def letta_passages() -> list[dict[str, Any]]:
    """What Letta's API lists of an agent's archival memory (`client.agents.passages.list`:
    `Passage` in letta/schemas/passage.py)."""
    return [
        {
            "id": "passage-6f1d2c3b-0000-4000-8000-00000000a001",
            "text": "Sarah's thesis is on Fibonacci trends in markets",
            "created_at": "2025-10-11T08:00:00+00:00",
            "metadata": {"topic": "research"},
            "tags": ["sarah"],
            "archive_id": "archive-1",
            "is_deleted": False,
            "embedding": [0.1, 0.2],
            "embedding_config": {"embedding_model": "text-embedding-3-small"},
        },
        {"id": "passage-gone", "text": "old note", "created_at": "2025-10-09T08:00:00Z", "is_deleted": True},
    ]
