"""Close matches for a misspelt id: the "did you mean ...?" of every not-found answer.

The app layer (`app/worlds.py`) names the close ids when it refuses an unknown world or agent, so
the Python API, REST, MCP and the CLI all say the same; the adapters (`integrations/_common.py`)
add the ids there are when none is close. Ids are compared without regard to case, as recall
looks them up.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

#: Ids a did-you-mean names at most, and ids a hint lists when none is close.
MATCHES = 3
LISTED = 10


def close_matches(name: str, known: Iterable[str]) -> list[str]:
    """The ids of `known` closest to `name` (compared without regard to case), best first; none
    that is `name` itself in another case (that one would have been found)."""
    by_lower = {k.lower(): k for k in known if isinstance(k, str)}
    if not isinstance(name, str) or not name:
        return []
    by_lower.pop(name.lower(), None)
    return [by_lower[m] for m in difflib.get_close_matches(name.lower(), list(by_lower), n=MATCHES)]


def did_you_mean(suggestions: Sequence[str]) -> str:
    """`did you mean 'a' or 'b'?`, or '' for none."""
    if not suggestions:
        return ""
    return "did you mean " + " or ".join(repr(s) for s in suggestions) + "?"


def hint(name: str, known: Sequence[str], what: str) -> str:
    """`did you mean ...?`, else the ids there are (or that there are none): `what` names them
    in the plural ("worlds", "agents")."""
    close = did_you_mean(close_matches(name, known))
    if close:
        return close
    if not known:
        return f"there are no {what} yet"
    listed = sorted(known, key=str.lower)
    more = f", ... ({len(listed)} in all)" if len(listed) > LISTED else ""
    return f"the {what} are " + ", ".join(repr(k) for k in listed[:LISTED]) + more
