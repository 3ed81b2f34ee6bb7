"""POST …/context over real HTTP for an agent with more new messages than its budget holds (issue 12)."""

from __future__ import annotations

import httpx

from tests.server.conftest import post


def test_sixty_unanswered_mentions_answer_200_within_the_budget(client: httpx.Client) -> None:
    ids = [post(client, "maria", f"@agent-b request {i}: please check order {1000 + i}.")["id"] for i in range(1, 61)]
    response = client.post("/v1/worlds/w/agents/agent-b/context", json={"max_tokens": 300})
    assert response.status_code == 200, response.text
    body = response.json()
    report = body["report"]
    assert report["total_tokens"] <= report["budget"] == 300
    assert body["messages"][-1] == {
        "role": "user",
        "content": "@agent-b request 60: please check order 1060.",
        "name": "maria",
    }
    kept = [i["id"] for i in report["items"] if i["kind"] == "message" and i["included"]]
    assert kept == ids[len(ids) - len(kept) :] and report["incoming_count"] == len(kept) > 1
    assert report["excluded"] == {"over-budget": 60 - len(kept)}


def test_the_system_prompt_and_the_trigger_alone_too_big_is_still_a_422(client: httpx.Client) -> None:
    post(client, "maria", "@agent-b " + "please read this long request " * 20)
    response = client.post("/v1/worlds/w/agents/agent-b/context", json={"max_tokens": 40})
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "max_tokens"
