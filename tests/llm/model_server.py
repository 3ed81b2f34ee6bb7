"""The `model_server` fixture: recall's scripted model server (recall.llm.scripted_server), one per
test. Test modules import it (`from tests.llm.model_server import model_server_fixture`) and
take a `model_server` argument."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from recall.llm.scripted_server import ModelServer, ScriptedReply, start_model_server

__all__ = ["ModelServer", "ScriptedReply", "model_server_fixture"]


@pytest.fixture(name="model_server")
def model_server_fixture() -> Iterator[ModelServer]:
    """A scripted OpenAI + Anthropic server on 127.0.0.1, shut down after the test."""
    server = start_model_server()
    try:
        yield server
    finally:
        server.close()
