"""recall over the network: the REST API with long-poll inboxes, and MCP tools.

Needs the `server` extra: without it, importing any part of the server raises one line that says
so (`recall.extras`), not a traceback about FastAPI.
"""

from recall.extras import require

require("server")
