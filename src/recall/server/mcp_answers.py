"""Large MCP answers, sent so that an MCP client can read them.

A tool's answer goes out as structured content and, for clients that read only text, the same
JSON again as text: two copies in one message. The official MCP client reads at most 1 MiB of
one server-sent event, so a context at the default budget (0.6 MB as JSON) never arrived. An
answer too large for two copies goes once, as structured content, with a line of text saying
so; one too large even for that is refused with what to ask for instead.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from recall.server.json_body import json_bytes

#: The most one answer may take: the official client's 1 MiB event limit (its
#: DEFAULT_MAX_SSE_EVENT_SIZE), less room for the JSON-RPC envelope around it.
MAX_ANSWER_BYTES = 1024 * 1024 - 16 * 1024
#: What a copy of the answer as text costs beside the structured one: the JSON again, escaped
#: inside a JSON string (every quote and backslash doubled).
TEXT_COPY_FACTOR = 1.25


#: The return annotation of a tool answering through `answer`: its output schema is an object.
Answer = Annotated[CallToolResult, dict[str, Any]]


def answer(data: dict[str, Any], *, shrink: str) -> CallToolResult:
    """`data` as a tool's result: as structured content and as JSON text when both fit one
    message; else once, as structured content; a ToolError when not even that fits (`shrink`
    says how to ask for less, e.g. "a smaller max_tokens")."""
    encoded = json_bytes(data)
    size = len(encoded)
    if size * (1 + TEXT_COPY_FACTOR) <= MAX_ANSWER_BYTES:
        text = encoded.decode()
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)
    if size > MAX_ANSWER_BYTES:
        raise ToolError(
            f"the answer is {size:,} bytes as JSON, over the {MAX_ANSWER_BYTES:,} an MCP client reads in one"
            f" message: ask for {shrink}"
        )
    note = f"The answer ({size:,} bytes of JSON) is in the structured content, sent once to fit one MCP message."
    return CallToolResult(content=[TextContent(type="text", text=note)], structured_content=data)
