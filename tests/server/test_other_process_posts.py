"""A post another process stores in the server's SQLite file (the CLI, here) wakes the server's
waiting inbox checks within about a second, not at their timeout."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from recall.api import Recall
from recall.server.app import create_app
from recall.server.config import ServerConfig
from recall.settings import Settings
from tests.server.conftest import create_world_w, start_uvicorn

#: The waiting check's timeout: it must answer long before it.
POLL_TIMEOUT = 60


def test_a_post_by_another_process_wakes_a_waiting_check(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    mem = Recall(db, Settings(embeddings="none"))
    app = create_app(mem.service, ServerConfig(rate_limit=0))
    url, server, thread = start_uvicorn(app)
    try:
        with httpx.Client(base_url=url, timeout=POLL_TIMEOUT + 30) as client:
            create_world_w(client)
            answers: list[tuple[float, dict[str, Any]]] = []

            def wait_for_mention() -> None:
                got = client.get("/v1/worlds/w/agents/agent-a/inbox", params={"wait": "true", "timeout": POLL_TIMEOUT})
                answers.append((time.monotonic(), got.json()))

            poller = threading.Thread(target=wait_for_mention)
            poller.start()
            deadline = time.monotonic() + 30
            while app.state.recall.notifier.waiting() == 0:  # asleep, past its read of the store
                assert time.monotonic() < deadline, "the check never began to wait"
                time.sleep(0.01)
            command = [sys.executable, "-m", "recall.cli", "--db", str(db), "post", "w", "@agent-a the parcel is 4417"]
            env = {**os.environ, "RECALL_EMBEDDINGS": "none"}
            posted = subprocess.run(
                [*command, "--sender", "maria"], capture_output=True, text=True, env=env, timeout=60
            )
            assert posted.returncode == 0, posted.stderr
            stored_at = time.monotonic()
            poller.join(timeout=POLL_TIMEOUT + 30)
            assert not poller.is_alive()
        answered_at, answer = answers[0]
        assert [m["content"] for m in answer["new_mentions"]] == ["@agent-a the parcel is 4417"]
        # Noticed by looking a few times a second: well within the second the issue asks for
        # (slack for a loaded machine), where before it answered at its timeout.
        assert answered_at - stored_at < 5
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        mem.close()
