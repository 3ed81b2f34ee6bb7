"""Queued fact extractions kept in the store (`extraction_jobs`), so that one queued and not
yet run when a process closes is not lost: the next process that opens the store with a chat
model takes it over and runs it (app/extraction_journal.py).

A row names what to read again, not the messages read (the conversation is read anew when the
extraction runs: a message deleted meanwhile is not read), one per (tenant, scope, thread), the
newest request winning. `token` tells one request from the next, so a run that ends removes
its own request only, never a newer one queued while it ran. `owner` is the process that will
run it ('' once a closing process has handed it back). The same SQL on SQLite and PostgreSQL
(`?` placeholders, as `SQLWrites`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from recall.store.records import ExtractionJob
from recall.store.world_dump import SQLWorlds

JOB_COLUMNS = "tenant, scope, thread, world_id, agent_id, chat_id, token, owner, due_at, queued_at"


class SQLExtractionJobs(SQLWorlds):
    """Queued fact extractions on both stores."""

    def put_extraction_job(self, job: ExtractionJob) -> None:
        """Keep `job`, in place of an earlier request for the same (tenant, scope, thread)."""
        with self._write() as db:
            self._execute(
                db,
                f"INSERT INTO extraction_jobs ({JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (tenant, scope, thread) DO UPDATE SET world_id = excluded.world_id,"
                " agent_id = excluded.agent_id, chat_id = excluded.chat_id, token = excluded.token,"
                " owner = excluded.owner, due_at = excluded.due_at, queued_at = excluded.queued_at",
                tuple(job),
            )

    def finish_extraction_jobs(self, tokens: Collection[str]) -> int:
        """Remove the requests `tokens` name (run, or dropped); how many there were."""
        return self._of_tokens("DELETE FROM extraction_jobs", tokens)

    def release_extraction_jobs(self, tokens: Collection[str]) -> int:
        """Hand the requests `tokens` name back for the next process to open the store."""
        return self._of_tokens("UPDATE extraction_jobs SET owner = ''", tokens)

    def _of_tokens(self, statement: str, tokens: Collection[str]) -> int:
        """Run `statement` (a DELETE or UPDATE of extraction_jobs) on the requests `tokens` name;
        how many rows it met."""
        if not tokens:
            return 0
        token_is, params = self._one_of("token", sorted(tokens))
        with self._write() as db:
            return int(self._execute(db, f"{statement} WHERE {token_is}", params).rowcount)

    def claim_extraction_jobs(self, owner: str, stale_before: float, due_at: float) -> list[ExtractionJob]:
        """Take over the requests handed back, and those due before `stale_before` (their
        process ended without handing them back), now due at `due_at`; oldest first. One
        statement: two processes opening at once never both take one."""
        with self._write() as db:
            rows = self._execute(
                db,
                "UPDATE extraction_jobs SET owner = ?, due_at = ? WHERE owner = '' OR due_at < ?"
                f" RETURNING {JOB_COLUMNS}",
                (owner, due_at, stale_before),
            ).fetchall()
        jobs = [
            ExtractionJob(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5]), str(r[6]), str(r[7]),
                          float(r[8]), float(r[9]))
            for r in rows
        ]  # fmt: skip
        return sorted(jobs, key=lambda j: j.queued_at)

    def forget_extraction_jobs(self, tenant: str, scopes: Sequence[str] = (), thread_prefix: str | None = None) -> int:
        """Remove a tenant's requests for `scopes`, or for threads beginning with
        `thread_prefix` (compared without case): what was deleted is not extracted later."""
        conditions: list[str] = []
        params: list[object] = [tenant]
        if scopes:
            scope_is, scope_params = self._one_of("scope", list(scopes))
            conditions.append(scope_is)
            params.extend(scope_params)
        if thread_prefix is not None:
            conditions.append("substr(lower(thread), 1, CAST(? AS INTEGER)) = ?")
            params.extend([len(thread_prefix), thread_prefix.lower()])
        if not conditions or not self._read("SELECT 1 FROM extraction_jobs WHERE tenant = ? LIMIT 1", (tenant,)):
            return 0  # the usual case: a read, not a write transaction, per deletion
        with self._write() as db:
            return int(
                self._execute(
                    db, f"DELETE FROM extraction_jobs WHERE tenant = ? AND ({' OR '.join(conditions)})", params
                ).rowcount
            )
