"""Measure what a search scores a paraphrase that shares no word with what it finds, per kind,
against what it scores everything unrelated: the numbers `search/calibration.py` is set from
and checked on (docs/long-term-memory.md, "Scores and min_score").

Usage:
    .venv/bin/python bench/score_calibration.py [--json OUT]

The set: PAIRS, statements a user or an agent would store, each with a question about it that
shares no content word with it ("I only drink green tea" / "what beverage do I like?"), and
DISTRACTORS, unrelated statements. Every statement is stored three times over, in three stores:
as long-term memories of a world, as facts of a user, and as messages of one chat. Each
question is then searched (hybrid, the default, k=50: every item is a hit) in each store; its
pair's statement is a match, every other hit a non-match. For each hit the script records the
ranking's relevance (the score before calibration), the cosine similarity to the question, and
the calibrated score (`calibration.calibrated`), and prints, per kind and for the pairs the
calibration was set on (the odd-numbered ones, FIT) and the others (held out), the range of
matches and of non-matches, where the matches rank (by relevance, and by calibrated score), and
how many of each clear 0.3.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_report import write_json

from recall import Recall, Settings
from recall.search.calibration import calibrated

#: (statement, a question about it sharing no content word with it).
PAIRS: tuple[tuple[str, str], ...] = (
    ("I only drink green tea", "what beverage do I like?"),
    ("My daughter Lucy starts school in September", "when does my child begin classes?"),
    ("I am allergic to peanuts", "which foods make me ill?"),
    ("I moved to Lisbon last spring", "which city do I live in now?"),
    ("My car is a blue Toyota Corolla", "what vehicle do I own?"),
    ("I work as a nurse on night shifts", "what is my job?"),
    ("Invoices are re-issued within two days", "how long until a corrected bill is sent again?"),
    ("The shop opens at nine every morning", "what time can customers come in?"),
    ("My favourite band is Radiohead", "which musicians do I love?"),
    ("I prefer replies in Spanish", "what language should you answer me in?"),
    ("Maria is a VIP customer", "who are our most important clients?"),
    ("I run five kilometres every Sunday", "what exercise do I do at the weekend?"),
    ("My laptop is a 2019 MacBook Pro", "what computer do I use?"),
    ("Refunds go back to the original card", "how is money returned after a cancelled purchase?"),
    ("I have two cats named Miso and Tofu", "do I keep any pets?"),
    ("Our team meets every Tuesday at ten", "when is the weekly staff gathering?"),
    ("I am vegetarian", "do I eat meat?"),
    ("The parcel was sent with DHL", "which courier delivered the package?"),
    ("My birthday is on the third of March", "when was I born?"),
    ("I am afraid of flying", "does air travel scare me?"),
)
#: Statements no question asks about.
DISTRACTORS: tuple[str, ...] = (
    "The printer on the second floor jams often",
    "Quarterly reports are due in April",
    "The backup server reboots at midnight",
    "Parking is free after six in the evening",
    "The conference room projector needs an HDMI adapter",
    "Our office plants are watered on Fridays",
    "The elevator inspection is scheduled next month",
    "Tax documents are stored in the blue folder",
    "The coffee machine was descaled yesterday",
    "New employees get a welcome pack",
)
#: The pairs the calibration was set on (the others are held out).
FIT = range(0, len(PAIRS), 2)
THRESHOLD = 0.3


def _stores(mem: Recall) -> dict[str, Any]:
    """Every statement as a memory of world `m`, a fact of user `u`, and a message of world `c`;
    for each kind, the search to run and each statement's source id."""
    statements = [s for s, _ in PAIRS] + list(DISTRACTORS)
    memories = mem.world("m", create=True)
    ids_memory = [memories.add_memory(s).id for s in statements]
    scope = mem.scope("user:u")
    ids_fact = [scope.add(s).id for s in statements]
    chat = mem.world("c", create=True)
    chat.add_human("u")
    ids_message = [chat.post("u", s).id for s in statements]
    mem.refresh_index()
    return {
        "memory": ("m", ids_memory),
        "fact": ("user:u", ids_fact),
        "message": ("c", ids_message),
    }


def measure() -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, Recall(Path(tmp) / "calib.db", Settings(index_interval=0)) as mem:
        index = mem.service.index
        assert index is not None
        for kind, (space, ids) in _stores(mem).items():
            for n, (_, question) in enumerate(PAIRS):
                hits = index.search(question, tenant="", space=space, kinds=(kind,), k=50)
                scores = [calibrated(h.kind, h.score, h.similarity, h.method) for h in hits]
                for place, hit in enumerate(hits, 1):
                    rows.append(
                        {
                            "kind": kind,
                            "pair": n,
                            "fit": n in FIT,
                            "match": hit.source_id == ids[n],
                            "place": place,
                            "relevance": hit.score,
                            "similarity": hit.similarity,
                            "calibrated": scores[place - 1],
                            "calibrated_place": 1 + sum(1 for x in scores if x > scores[place - 1]),
                        }
                    )
    return {"rows": rows, "summary": summarize(rows)}


def _range(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"{min(values):.3f}-{max(values):.3f} (median {statistics.median(values):.3f})"


def summarize(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for kind in ("memory", "fact", "message"):
        for part, fit in (("fit", True), ("held out", False)):
            mine = [r for r in rows if r["kind"] == kind and r["fit"] == fit]
            match = [r for r in mine if r["match"]]
            other = [r for r in mine if not r["match"]]
            out.append(
                {
                    "kind": kind,
                    "part": part,
                    "matches": len(match),
                    "first": sum(1 for r in match if r["place"] == 1),
                    "first_calibrated": sum(1 for r in match if r["calibrated_place"] == 1),
                    "match_relevance": _range([r["relevance"] for r in match]),
                    "other_relevance": _range([r["relevance"] for r in other]),
                    "match_similarity": _range([r["similarity"] or 0.0 for r in match]),
                    "other_similarity": _range([r["similarity"] or 0.0 for r in other]),
                    "match_calibrated": _range([r["calibrated"] for r in match]),
                    "other_calibrated": _range([r["calibrated"] for r in other]),
                    "match_clear": sum(1 for r in match if r["calibrated"] >= THRESHOLD),
                    "other_clear": sum(1 for r in other if r["calibrated"] >= THRESHOLD),
                    "others": len(other),
                }
            )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("bench/results/score_calibration.json"))
    args = parser.parse_args(argv)
    result = measure()
    for s in result["summary"]:
        print(
            f"{s['kind']:7} {s['part']:8} first {s['first']}/{s['matches']}, calibrated {s['first_calibrated']}"
            f" | relevance: match {s['match_relevance']}, other {s['other_relevance']}"
            f" | similarity: match {s['match_similarity']}, other {s['other_similarity']}"
            f" | calibrated: match {s['match_calibrated']}, other {s['other_calibrated']}"
            f" | >= {THRESHOLD}: {s['match_clear']}/{s['matches']} matches, {s['other_clear']}/{s['others']} others"
        )
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
