"""recall over the network: the REST API with long-poll inboxes, and MCP tools."""
