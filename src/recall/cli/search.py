"""Search a world, and keep its search index up to date."""

from __future__ import annotations

import json
from contextlib import nullcontext
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from recall.app.search import SearchResult
from recall.cli.progress import ProgressReport
from recall.cli.shared import JsonFlag, check_location, db_location, err, fail, open_recall, out, print_json, tenant
from recall.errors import InvalidInputError, RecallError
from recall.settings import Settings

if TYPE_CHECKING:
    from recall.api import Recall

#: Items without a vector a search embeds in its world first, at most (a few seconds of a core:
#: a world written a moment ago is searched by meaning); past that it answers at once.
SEARCH_EMBEDS_AT_MOST = 128
#: Seconds a search's indexing runs before it shows its progress.
PROGRESS_AFTER = 1.0


def index(
    once: Annotated[bool, typer.Option(help="Index everything pending, then exit.")] = False,
) -> None:
    """Keep the search index up to date (copy and embed new messages) until stopped.

    `recall serve` runs this for its store by itself; run it by hand beside other processes that
    write the store, or with --once after a bulk import (it tells its progress on stderr)."""
    from recall.search.worker import run_worker

    try:
        location = db_location()
        check_location(location, create=False)
        # Only --once tells its progress: the long-running form has no end to count toward.
        with ProgressReport(err) if once else nullcontext() as progress:
            done = run_worker(location, Settings.from_env(), once=once, progress=progress)
    except RecallError as exc:
        fail(exc)
    except KeyboardInterrupt:
        return
    if once:
        err.print(f"indexed: {done:,} steps of work (messages copied + vectors stored)")


def bring_up_to_date(mem: Recall, tenant_id: str, world_id: str) -> int:
    """Copy new messages into the index and, when the world has at most SEARCH_EMBEDS_AT_MOST
    items without a vector, embed them (no other world's), progress on stderr when it takes a
    while; how many of the world's items are still without one."""
    from recall.search.pending import Space, copy_messages, embed_all, unembedded  # numpy: when searching

    index = mem.service.searcher.index
    if index is None:
        return 0
    space = Space(tenant_id, world_id)
    with ProgressReport(err, after=PROGRESS_AFTER) as progress:
        copy_messages(index, progress)
        waiting = unembedded(index, space)
        if 0 < waiting <= SEARCH_EMBEDS_AT_MOST:
            embed_all(index, mem.service.settings.embed_batch, space, progress)
            waiting = unembedded(index, space)
    return waiting


def why_found(result: SearchResult) -> str:
    """A hit's places in the keyword and vector lists and its similarity, in a few characters:
    `kw 1 · vec 3 · 0.712` ('-' where a method did not find it)."""
    keyword = "-" if result.keyword_rank is None else str(result.keyword_rank)
    vector = "-" if result.vector_rank is None else str(result.vector_rank)
    similarity = "" if result.similarity is None else f" · {result.similarity:.3f}"
    return f"kw {keyword} · vec {vector}{similarity}"


def metadata_filter(pairs: list[str] | None) -> dict[str, Any] | None:
    """`--metadata key=value` options as a search's metadata filter: each value read as JSON when
    it is JSON (`priority=2`, `vip=true`, `priority={"$gte": 2}`), else as text (`channel=sms`)."""
    if not pairs:
        return None
    wanted: dict[str, Any] = {}
    for pair in pairs:
        key, equals, text = pair.partition("=")
        if not equals or not key:
            raise InvalidInputError("metadata", f"must be KEY=VALUE, got {pair!r}")
        if key in wanted:
            raise InvalidInputError(
                f"metadata.{key}", "is given twice: for any of several values write KEY='{\"$in\": [...]}'"
            )
        try:
            wanted[key] = json.loads(text)
        except ValueError:
            wanted[key] = text
    return wanted


class SearchMethod(StrEnum):
    hybrid = "hybrid"
    bm25 = "bm25"
    vector = "vector"


def search(
    world: str,
    query: str,
    k: Annotated[int, typer.Option("--k", help="How many results.")] = 10,
    kind: Annotated[list[str] | None, typer.Option(help="message, memory or fact (repeat; default all).")] = None,
    method: Annotated[
        SearchMethod, typer.Option(help="hybrid fuses BM25 keywords and embeddings.")
    ] = SearchMethod.hybrid,
    chat: Annotated[str | None, typer.Option(help="Only this chat.")] = None,
    sender: Annotated[str | None, typer.Option(help="Only messages from this sender.")] = None,
    min_score: Annotated[
        float | None,
        typer.Option(min=0.0, max=1.0, help="Leave out hits scoring under this (a score is 0..1 relevance)."),
    ] = None,
    metadata: Annotated[
        list[str] | None,
        typer.Option(
            metavar="KEY=VALUE",
            help="Only messages and memories whose metadata has KEY=VALUE (repeat: all must hold; VALUE is"
            " read as JSON when it is, e.g. priority=2 or priority='{\"$gte\": 2}', else as text).",
        ),
    ] = None,
    json_: JsonFlag = False,
) -> None:
    """Search a world's messages, memories and facts.

    New messages are indexed first, and the world's items without a vector embedded when they
    are few; with many (after an import) the search answers at once, those ranked by their
    words, and says so: `recall index --once` embeds them. Each hit's score is its relevance,
    from 0 to 1; --min-score leaves out the hits under it."""
    with open_recall() as mem:
        wanted = metadata_filter(metadata)
        found = mem.world(world, tenant=tenant())
        waiting = bring_up_to_date(mem, found.tenant, found.id)
        results = found.search(
            query,
            k=k,
            kinds=tuple(kind or ("message", "memory", "fact")),
            method=method.value,
            chat=chat,
            sender=sender,
            min_score=min_score,
            metadata=wanted,
        )
        if waiting:
            err.print(
                f"note: {waiting:,} items of world {found.id} have no vectors yet: they were ranked by their words"
                " (the best few by meaning too); `recall index --once` embeds them",
                markup=False,
                highlight=False,
            )
        if json_:
            print_json([r.to_dict() for r in results])
            return
        title = f"{query!r} in {world} ({results[0].method if results else method.value})"
        table = Table("score", "kind", "id", "when", "chat", "text", title=Text(title))
        for r in results:
            table.add_row(
                f"{r.score:.3f}",
                r.kind,
                str(r.source_id),
                r.created_at.strftime("%Y-%m-%d %H:%M"),
                Text(r.chat_id or ""),
                # Why it ranks there, under its text: the table stays as narrow as before.
                Text.assemble(r.text, "\n", (why_found(r), "dim")),
            )
        out.print(table)
