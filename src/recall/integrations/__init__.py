"""Adapters that let agent frameworks keep their memory in recall (docs/integrations.md).

Each lives in its own module and imports its framework there, so neither `import recall` nor
`import recall.integrations` loads any framework; install the one you use as an extra:

- `recall.integrations.langgraph.RecallStore`: a LangGraph `BaseStore`
  (`pip install "recall-memory[langgraph]"`);
- `recall.integrations.langchain.RecallChatMessageHistory`: a LangChain
  `BaseChatMessageHistory` (`pip install "recall-memory[langchain]"`);
- `recall.integrations.openai_agents.RecallSession`: an OpenAI Agents SDK `Session`
  (`pip install "recall-memory[openai-agents]"`).

and, for each, a hook that gives the framework's model recall's context for the current input
(facts, long-term memories, the recalled past): `langchain_context.RecallContext` (a runnable),
`langgraph_context.RecallContextNode` (a node), `openai_agents_context.RecallInstructions` (dynamic
instructions) and memory tools (`search_memory`, `remember`): `openai_agents_context.recall_tools`
for the Agents SDK, `langchain_tools.recall_tools` for LangChain and LangGraph.
"""

from __future__ import annotations

__all__: list[str] = []
