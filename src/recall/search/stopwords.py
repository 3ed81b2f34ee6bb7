"""English function words that keyword search leaves out of a query.

A question like "What did Caroline do when she went to the park?" is mostly words that match
every other message ("what", "did", "she", "the"). BM25 gives them a low weight, but OR-ed
together they still pull in hundreds of weak matches that outrank a message sharing one rare
word with the question. Dropping them from the query (never from the index) took
BM25's LoCoMo recall@5 from 49.2 to 58.7 % (docs/benchmarks.md).

The list is deliberately short: pronouns, articles, auxiliaries, prepositions, conjunctions
and question words. Content words that other lists include ("never", "first", "find",
"system", "fire") stay searchable.
"""

from __future__ import annotations

_WORDS = """
    a about above after again against all am an and any are as at
    be been before being below between both but by
    can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself
    no nor not of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very
    was we were what when where which while who whom whose why will with would
    you your yours yourself yourselves
    s t d ll m re ve
"""
STOP_WORDS: frozenset[str] = frozenset(_WORDS.split())


def content_terms(terms: list[str]) -> list[str]:
    """`terms` without the stop words; all of them when every one is a stop word (a search
    for "to be or not to be" still looks for something)."""
    kept = [term for term in terms if term not in STOP_WORDS]
    return kept or terms
