"""Recorded model calls (`model_calls`): rows the service writes in batches off the hot path,
read by id or newest first per agent, trimmed by age and count; the same SQL on SQLite and
PostgreSQL. The body is the service's (`core/calls.py`, compressed): the store never reads it,
except to hand it to a rewrite inside an erase's transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

from recall.store.keyed import SQLKeyed
from recall.store.records import CallRow, NewCall
from recall.store.rows import chat_id_of, chat_key, dt, ts

CALL_COLUMNS = "c.id, p.id, c.chat_id, c.trigger_id, c.created_at, c.source, c.digest, c.body, c.outcome, c.error"
_FROM = "model_calls c JOIN participants p ON p.key = c.agent_key"


#: In the `senders` column, the mark of a call that keeps a copy of the messages as sent (no
#: participant's id holds '#'): a deletion rewrites only those (`rewrite_copies`).
FULL_COPY = "#full"


def senders_text(senders: Iterable[str], full_copy: bool = False) -> str:
    """The `senders` column: each sender once, lowercased, between tabs; `FULL_COPY` too when
    the call keeps a copy of the messages as sent."""
    names = sorted({s.lower() for s in senders if s}) + ([FULL_COPY] if full_copy else [])
    return "\t" + "\t".join(names) + "\t" if names else ""


def _row(row: Sequence[Any]) -> CallRow:
    return CallRow(
        str(row[0]), str(row[1]), chat_id_of(str(row[2])), None if row[3] is None else int(row[3]), dt(row[4]),
        str(row[5]), str(row[6]), bytes(row[7]), row[8], row[9],
    )  # fmt: skip


class SQLCalls(SQLKeyed):
    """Recorded model calls, shared by both stores."""

    def add_calls(self, calls: Sequence[NewCall]) -> int:
        """Store these calls in one transaction; those of an agent deleted meanwhile are left
        out, and so are those made before their agent was (an agent or a world deleted and made
        again under the same name, while its calls waited to be written). How many were stored."""
        stored = 0
        with self._write() as db:
            for call in calls:
                key = self._execute(
                    db,
                    "SELECT key FROM participants WHERE world_id = ? AND id = ? AND kind = 'agent' AND created_at <= ?",
                    (call.world_id, call.agent_id, ts(call.created_at)),
                ).fetchone()
                if key is None:
                    continue
                self._execute(
                    db,
                    "INSERT INTO model_calls (id, world_id, agent_key, chat_id, trigger_id, created_at, source, digest,"
                    " senders, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (call.id, call.world_id, int(key[0]), chat_key(call.chat_id), call.trigger_id, ts(call.created_at),
                     call.source, call.digest, call.senders, self._blob(call.body)),
                )  # fmt: skip
                stored += 1
        return stored

    def _blob(self, data: bytes) -> Any:
        """`data` as the database's driver takes a binary value."""
        return data

    def get_call(self, world_id: str, agent_id: str, call_id: str) -> CallRow | None:
        rows = self._read(
            f"SELECT {CALL_COLUMNS} FROM {_FROM} WHERE c.id = ? AND c.world_id = ? AND lower(p.id) = lower(?)",
            (call_id, world_id, agent_id),
        )
        return _row(rows[0]) if rows else None

    def list_calls(
        self, world_id: str, agent_id: str, *, before: datetime | None = None, limit: int = 50
    ) -> list[CallRow]:
        """The agent's calls, newest first (before `before`, when given)."""
        key = self._agent_key(world_id, agent_id)
        if key is None:
            return []
        until = "" if before is None else " AND c.created_at < ?"
        params: tuple[Any, ...] = (key,) if before is None else (key, ts(before))
        return [
            _row(r)
            for r in self._read(
                f"SELECT {CALL_COLUMNS} FROM {_FROM} WHERE c.agent_key = ?{until}"
                " ORDER BY c.created_at DESC, c.id DESC LIMIT ?",
                (*params, limit),
            )
        ]

    def trim_calls(self, world_id: str, agent_id: str, *, keep: int, older_than: datetime | None) -> int:
        """Delete the agent's calls beyond its newest `keep` and those made before `older_than`;
        how many went."""
        key = self._agent_key(world_id, agent_id)
        if key is None:
            return 0
        with self._write() as db:
            gone = 0
            if older_than is not None:
                gone += int(
                    self._execute(
                        db, "DELETE FROM model_calls WHERE agent_key = ? AND created_at < ?", (key, ts(older_than))
                    ).rowcount
                )
            cut = self._execute(
                db,
                "SELECT created_at, id FROM model_calls WHERE agent_key = ? ORDER BY created_at DESC, id DESC"
                " LIMIT 1 OFFSET ?",
                (key, keep),
            ).fetchone()
            if cut is not None:  # the newest call past `keep`, and every older one
                gone += int(
                    self._execute(
                        db,
                        "DELETE FROM model_calls WHERE agent_key = ? AND (created_at < ? OR (created_at = ? AND id <= ?))",
                        (key, cut[0], cut[0], cut[1]),
                    ).rowcount
                )
        return gone

    def set_call_outcome(self, world_id: str, agent_id: str, call_id: str, outcome: str, error: str | None) -> bool:
        """Store what came of one of the agent's calls; False when it has no such call."""
        key = self._agent_key(world_id, agent_id)
        if key is None:
            return False
        with self._write() as db:
            changed = self._execute(
                db,
                "UPDATE model_calls SET outcome = ?, error = ? WHERE id = ? AND agent_key = ?",
                (outcome, error, call_id, key),
            ).rowcount
        return bool(changed)

    def rewrite_calls(
        self,
        db: Any,
        world_id: str,
        person: str,
        messages: Collection[int],
        rewrite: Callable[[bytes, int | None], bytes | None],
    ) -> int:
        """Inside the open transaction `db`: for an erase of `person` (lowercased), whose
        `messages` went, every call of the world that quotes them gets the body `rewrite`
        returns (None: unchanged; given the id of the message the call answered), no
        trigger among `messages` and no `person` among its senders; how many changed. Only
        those calls are read (the `senders` column)."""
        changed = 0
        mark = f"\t{person}\t"
        quoted = "%" + mark.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self._execute(
            db,
            "SELECT id, body, trigger_id FROM model_calls WHERE world_id = ? AND senders LIKE ? ESCAPE '\\'",
            (world_id, quoted),
        ).fetchall()
        for call_id, body, trigger in rows:
            trigger_gone = trigger is not None and int(trigger) in messages
            new = rewrite(bytes(body), None if trigger is None else int(trigger))
            self._execute(
                db,
                "UPDATE model_calls SET body = ?, senders = replace(senders, ?, ?), trigger_id = ? WHERE id = ?",
                (
                    self._blob(bytes(body) if new is None else new),
                    mark,
                    "\t",
                    None if trigger_gone else trigger,
                    call_id,
                ),
            )
            changed += int(new is not None or trigger_gone)
        return changed

    def rewrite_copies(
        self,
        db: Any,
        world_id: str | None,
        rewrite: Callable[[bytes, int | None], bytes | None],
        tenant: str | None = None,
    ) -> int:
        """Inside the open transaction `db`: every call of the world (None: of any world of
        `tenant`) that keeps a copy of the messages as sent gets the body `rewrite` returns
        (None: unchanged; given the id of the message the call answered), and a rewritten one
        loses its `FULL_COPY` mark; how many changed. Only those calls are read (the `senders`
        column)."""
        mark = f"\t{FULL_COPY}\t"
        params: tuple[str, ...] = ("%" + mark + "%",)
        where = "senders LIKE ?"
        if world_id is not None:
            where, params = f"world_id = ? AND {where}", (world_id, *params)
        elif tenant is not None:
            where, params = f"world_id IN (SELECT key FROM worlds WHERE tenant = ?) AND {where}", (tenant, *params)
        changed = 0
        for call_id, body, trigger in self._execute(
            db, f"SELECT id, body, trigger_id FROM model_calls WHERE {where}", params
        ).fetchall():
            new = rewrite(bytes(body), None if trigger is None else int(trigger))
            if new is not None:
                self._execute(
                    db,
                    "UPDATE model_calls SET body = ?, senders = replace(senders, ?, ?) WHERE id = ?",
                    (self._blob(new), mark, "\t", call_id),
                )
                changed += 1
        return changed
