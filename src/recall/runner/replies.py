"""What an agent's model reply becomes before it is posted (spec §7).

1. World tags are read and removed: `<world>STOP</world>`, `<world>DONE</world>` and
   `<world>PASS</world>` make the reply address nobody; `<world>TO: a, b</world>` addresses it
   to a and b.
2. The agent's own `@id` at the start of a line is removed (models often sign or echo it).
3. A reply to another agent that addresses nobody starts with `@<that agent> `, so the
   conversation can go on; a reply to a human is left as it is (public).

A line's first mention addresses its agent (spec §2), so "to a and b" is written as one line per
recipient: `@a` on the first line, `@b reply…` on the next.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from recall.core.models import Message, SenderType
from recall.core.routing import MENTION

#: `<world>…</world>`, any case, with the tag's text captured.
_WORLD_TAG = re.compile(r"<world>\s*(.*?)\s*</world>", re.IGNORECASE | re.DOTALL)
#: Tags that end the exchange: the reply (if any text is left) addresses nobody.
QUIET_TAGS = ("STOP", "DONE", "PASS")
#: Mentions at the start of a line, with the spaces and punctuation that follow them.
_LEADING_MENTIONS = re.compile(r"^(\s*)((?:@\w+(?:[-_]\w+)*[\s,:;]*)+)", re.ASCII)


@dataclass(frozen=True)
class Reply:
    """A processed reply: `text` to post ('' posts nothing), and what the tags asked for."""

    text: str
    #: The quiet tag the model used (STOP, DONE or PASS), if any.
    quiet: str | None = None
    #: Agents a `TO:` tag addressed, lowercased, in order.
    to: tuple[str, ...] = ()

    @property
    def post(self) -> bool:
        return bool(self.text.strip())


def process_reply(agent_id: str, reply: str, answering: Message | None = None) -> Reply:
    """Apply spec §7's rules to a model's `reply` to `answering` (the message it answers)."""
    quiet: str | None = None
    to: list[str] = []
    for tag in _WORLD_TAG.findall(reply):
        word = tag.strip().upper()
        if word in QUIET_TAGS:
            quiet = word
        elif word.startswith("TO:"):
            for name in tag.split(":", 1)[1].split(","):
                name = name.strip().lstrip("@").lower()
                if name and name != agent_id.lower() and name not in to:
                    to.append(name)
    text = _WORLD_TAG.sub("", reply)
    text = "\n".join(_drop_leading(line, {agent_id.lower()}) for line in text.split("\n")).strip()
    if quiet is not None or to:
        # The tag decides who is addressed: mentions the model put at line starts go.
        text = "\n".join(_drop_leading(line, None) for line in text.split("\n")).strip()
    if not text:
        return Reply("", quiet, tuple(to))
    if to:
        text = "\n".join([*(f"@{name}" for name in to[:-1]), f"@{to[-1]} {text}"])
    elif quiet is None and answering is not None and _needs_mention(agent_id, text, answering):
        text = f"@{answering.sender} {text}"
    return Reply(text, quiet, tuple(to))


def _drop_leading(line: str, names: set[str] | None) -> str:
    """`line` without the mentions it starts with: those of `names`, or all when None. Mentions
    of other names stop the removal (`@me @you hi` keeps `@you hi` when only `me` goes)."""
    match = _LEADING_MENTIONS.match(line)
    if match is None:
        return line
    rest = line[match.end() :]
    kept: list[str] = []
    tokens = re.findall(r"@\w+(?:[-_]\w+)*[\s,:;]*", match.group(2), re.ASCII)
    for index, token in enumerate(tokens):
        name = MENTION.match(token)
        assert name is not None
        if names is not None and name.group(1).lower() not in names:
            kept = tokens[index:]
            break
    return match.group(1) + "".join(kept) + rest


def _needs_mention(agent_id: str, text: str, answering: Message) -> bool:
    """A reply to another agent that addresses nobody gets that agent's mention."""
    if answering.sender_type is not SenderType.AGENT or answering.sender.lower() == agent_id.lower():
        return False
    return not any(MENTION.match(line.lstrip()) for line in text.split("\n"))
