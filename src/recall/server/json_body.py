"""JSON bodies that carry any text recall holds.

recall refuses text UTF-8 cannot encode (a lone surrogate) wherever it enters, but a store
written by an older recall may hold some. Such a character is sent as its JSON escape
(`\\ud800`), which the `backslashreplace` error handler writes exactly, instead of failing the
whole answer: no read depends on stored text being valid.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse


def json_bytes(value: Any, *, compact: bool = True) -> bytes:
    """`value` as UTF-8 JSON (`compact`: no spaces after `,` and `:`), an unencodable character
    as its escape."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":") if compact else None)
    return text.encode("utf-8", "backslashreplace")


class JsonBody(JSONResponse):
    """Every JSON answer of the HTTP API (FastAPI's default response class here)."""

    def render(self, content: Any) -> bytes:
        return json_bytes(content)
