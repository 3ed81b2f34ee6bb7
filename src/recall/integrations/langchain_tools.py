"""recall's memory tools for LangChain and LangGraph models: `recall_tools`.

```python
tools = recall_tools(mem, world="support", agent="helper")
model_with_tools = model.bind_tools(tools)           # LangChain
ToolNode(tools)                                      # LangGraph (langgraph.prebuilt)
```

`search_memory(query)` is recall's search over what the agent may see (messages of every chat it
heard, long-term memories, facts); `remember(memory)` keeps a long-term memory of the agent,
which its recall contexts (`RecallContext`, `RecallContextNode`) show when it matters. The same
tools as the Agents SDK's (`openai_agents_context.recall_tools`).
"""

# ruff: noqa: E402 (the extra is checked before the framework loads, so its imports follow the check)
from __future__ import annotations

from recall.extras import require

require("langchain")  # before the framework loads: one line naming the extra

from langchain_core.tools import BaseTool, StructuredTool

from recall.api import Recall, World
from recall.integrations._common import ensure_agent, resolve_world
from recall.integrations._context import REMEMBER, SEARCH_MEMORY, remember, search_memory


def recall_tools(mem: Recall, *, world: str | World, agent: str, create: bool = False) -> list[BaseTool]:
    """`search_memory` and `remember` for `agent` of `world` (refused when missing, naming the
    closest ids; `create=True` creates them)."""
    who = ensure_agent(resolve_world(mem, world, create), agent, create)

    def search(query: str) -> str:
        return search_memory(who, query)

    def keep(memory: str) -> str:
        return remember(who, memory)

    return [
        StructuredTool.from_function(search, name="search_memory", description=SEARCH_MEMORY),
        StructuredTool.from_function(keep, name="remember", description=REMEMBER),
    ]
