"""Observations and actions in the first person (spec §5, seed 003).

What an agent perceives and what it did are kept apart from the conversation and rendered
as natural sentences: the current observation in the present tense, earlier ones and actions
in the past tense with `At time Ts` in front.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from recall.core.escaping import escape
from recall.errors import InvalidInputError

Point = tuple[float, float]


@dataclass(frozen=True)
class Observation:
    time: float
    position: Point | None = None
    collected: int | None = None
    #: Things seen, by kind: {"coin": ((2, 1.6), (2.4, 0.4))}.
    items: Mapping[str, tuple[Point, ...]] = field(default_factory=dict)
    #: Other agents seen, with their positions when known.
    agents: tuple[tuple[str, Point | None], ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Action:
    time: float
    #: `move` (to `position`), `text` (to `target`, saying `utterance`), `say`, or any verb.
    kind: str
    position: Point | None = None
    target: str | None = None
    utterance: str | None = None
    description: str = ""


def _num(x: float) -> str:
    return f"{x:g}"


def _point(p: Point) -> str:
    return f"({_num(p[0])}, {_num(p[1])})"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _quote(text: str) -> str:
    return '"' + text.replace('"', '\\"') + '"'


def at_time(t: float) -> str:
    return f"At time {_num(t)}s"


def render_observation(obs: Observation, *, current: bool) -> str:
    """`I am at position (2, 1), have collected 1 coin; I see 2 coins at: …; I see no other agents`."""
    am, have, see = ("am", "have", "see") if current else ("was", "had", "saw")
    clauses: list[str] = []
    where: list[str] = []
    if obs.position is not None:
        where.append(f"I {am} at position {_point(obs.position)}")
    if obs.collected is not None:
        verb = f"{have} collected" if where else f"I {have} collected"
        where.append(f"{verb} {_plural(obs.collected, 'coin')}")
    if where:
        clauses.append(", ".join(where))
    for kind, points in sorted(obs.items.items()):
        if points:
            clauses.append(f"I {see} {_plural(len(points), kind)} at: " + ", ".join(_point(p) for p in points))
        else:
            clauses.append(f"I {see} no {kind}s")
    if obs.agents:
        seen = [name if pos is None else f"{name} at {_point(pos)}" for name, pos in obs.agents]
        clauses.append(f"I {see} " + ", ".join(seen))
    else:
        clauses.append(f"I {see} no other agents")
    text = "; ".join(clauses)
    if obs.note:
        text += f". {obs.note}"
    return text if current else f"{at_time(obs.time)} {text}"


def render_action(action: Action) -> str:
    """`At time 5s I moved to position (2, 1.6)` / `At time 5s I texted Alice: "…"`."""
    if action.kind == "move" and action.position is not None:
        body = f"I moved to position {_point(action.position)}"
    elif action.kind == "text" and action.target:
        body = f"I texted {action.target}: {_quote(action.utterance or '')}"
    elif action.kind == "say":
        body = f"I said: {_quote(action.utterance or '')}"
    else:
        body = action.description or f"I did {action.kind}"
    return f"{at_time(action.time)} {body}"


def render_heard(time: float, speaker: str, text: str) -> str:
    """`At time 5s Bob said: "Hello!"`."""
    return f"{at_time(time)} {speaker} said: {_quote(text)}"


def render_block(past: Sequence[Observation], actions: Sequence[Action], current: Observation | None = None) -> str:
    """The observations context message; empty when there is nothing to say.

    Escaped as a whole: our own words here hold no `<`, `>` or `&`, so this escapes exactly
    the stored text (notes, names, kinds, utterances, descriptions) and nothing else."""
    parts: list[str] = []
    if current is not None:
        parts.append("Current observation: " + render_observation(current, current=True))
    if past:
        parts.append("Earlier observations:\n" + "\n".join(f"- {render_observation(o, current=False)}" for o in past))
    if actions:
        parts.append("My recent actions:\n" + "\n".join(f"- {render_action(a)}" for a in actions))
    return escape("\n\n".join(parts))


def observation_to_dict(o: Observation) -> dict[str, Any]:
    """The JSON form `observation_from_dict` reads back."""
    return {
        "time": o.time,
        "position": None if o.position is None else list(o.position),
        "collected": o.collected,
        "items": {kind: [list(p) for p in points] for kind, points in o.items.items()},
        "agents": [{"id": name, "position": None if pos is None else list(pos)} for name, pos in o.agents],
        "note": o.note,
    }


def _as_point(value: Any, field_name: str) -> Point:
    try:
        x, z = value
        return (float(x), float(z))
    except (TypeError, ValueError):
        raise InvalidInputError(field_name, f"must be a pair of numbers like [2, 1.5], got {value!r}") from None


def _whole(value: Any, field_name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
        raise InvalidInputError(field_name, f"must be a whole number, got {value!r}") from None


def observation_from_dict(data: Mapping[str, Any]) -> Observation:
    """Parse the JSON form: {time, position?, collected?, items?, agents?, note?}."""
    if "time" not in data:
        raise InvalidInputError("time", "is required (the simulation time in seconds)")
    try:
        time = float(data["time"])
    except (TypeError, ValueError):
        raise InvalidInputError("time", f"must be a number of seconds, got {data['time']!r}") from None
    items_raw = data.get("items") or {}
    if not isinstance(items_raw, Mapping):
        raise InvalidInputError("items", "must map a kind of thing to a list of positions")
    items = {str(k): tuple(_as_point(p, f"items.{k}") for p in v) for k, v in items_raw.items()}
    agents: list[tuple[str, Point | None]] = []
    for entry in data.get("agents") or []:
        if isinstance(entry, str):
            agents.append((entry, None))
        elif isinstance(entry, Mapping) and "id" in entry:
            pos = entry.get("position")
            agents.append((str(entry["id"]), None if pos is None else _as_point(pos, "agents.position")))
        else:
            raise InvalidInputError("agents", f"each agent must be a name or {{id, position}}, got {entry!r}")
    collected = data.get("collected")
    return Observation(
        time=time,
        position=None if data.get("position") is None else _as_point(data["position"], "position"),
        collected=None if collected is None else _whole(collected, "collected"),
        items=items,
        agents=tuple(agents),
        note=str(data.get("note") or ""),
    )


def action_from_dict(data: Mapping[str, Any]) -> Action:
    """Parse the JSON form: {time, kind, position?, target?, utterance?, description?}."""
    for required in ("time", "kind"):
        if required not in data:
            raise InvalidInputError(required, "is required")
    try:
        time = float(data["time"])
    except (TypeError, ValueError):
        raise InvalidInputError("time", f"must be a number of seconds, got {data['time']!r}") from None
    return Action(
        time=time,
        kind=str(data["kind"]),
        position=None if data.get("position") is None else _as_point(data["position"], "position"),
        target=data.get("target"),
        utterance=data.get("utterance"),
        description=str(data.get("description") or ""),
    )
