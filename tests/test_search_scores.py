"""A search hit's score is its relevance, 0..1, for every method and store, and `min_score`
leaves out the weak ones (issue 24, point 5): the Python API, the CLI and the LangGraph store
here; REST and MCP in tests/server/test_search_scores_http.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.store.base import SearchItem

from recall import Recall, Settings, World
from recall.cli import app
from recall.errors import InvalidInputError
from recall.integrations.langgraph import RecallStore
from tests.test_cli import recall, runner

#: A shop's chat: one clear answer to each question below, the rest unrelated to it.
TEXTS = (
    "The shop opens at nine every morning and closes at six.",
    "My parcel never arrived, can you check the courier?",
    "I was charged twice on my October invoice.",
    "Thanks, have a nice day!",
    "Do you sell green tea?",
)
CLEAR = "when does the shop open?"
UNRELATED = "quantum chromodynamics lecture"


def shop(mem: Recall) -> World:
    world = mem.world("shop", create=True)
    world.add_human("maria")
    world.add_agent("desk")
    for text in TEXTS:
        world.post("maria", text)
    mem.refresh_index()
    return world


@pytest.mark.parametrize("method", ["hybrid", "bm25", "vector"])
def test_every_method_scores_between_0_and_1_best_first(store_location: str, method: str) -> None:
    with Recall(store_location, Settings(index_interval=0)) as mem:
        world = shop(mem)
        hits = world.search(CLEAR, method=method, k=10)
        assert hits[0].text.endswith(TEXTS[0]) and hits[0].method == method
        scores = [h.score for h in hits]
        assert all(0.0 <= s <= 1.0 for s in scores), scores
        assert scores == sorted(scores, reverse=True)


def test_a_clear_answer_scores_high_and_nothing_scores_high_for_an_unrelated_query(store_location: str) -> None:
    with Recall(store_location, Settings(index_interval=0)) as mem:
        world = shop(mem)
        clear = world.search(CLEAR)
        assert clear[0].text.endswith(TEXTS[0]) and clear[0].score > 0.9, clear[0]
        # The turn beside an answer is lifted by it (an answer often spans two turns), below it;
        # the others score low.
        assert clear[1].text.endswith(TEXTS[1]) and clear[1].score < 0.7, [h.score for h in clear]
        assert all(h.score < 0.5 for h in clear[2:]), [h.score for h in clear]
        # Ten weak hits come back without min_score; none scores as an answer would.
        unrelated = world.search(UNRELATED)
        assert len(unrelated) == len(TEXTS) and max(h.score for h in unrelated) < 0.1


def test_a_keyword_hit_holding_every_word_of_the_query_scores_about_1(store_location: str) -> None:
    with Recall(store_location, Settings(index_interval=0, embeddings="none")) as mem:
        world = shop(mem)
        # A keyword-only store runs a hybrid search as bm25.
        hits = world.search("green tea")
        assert hits[0].method == "bm25" and hits[0].text.endswith(TEXTS[4])
        assert hits[0].score > 0.8
        assert all(h.score < hits[0].score for h in hits[1:])
        # One of the query's two words, a common one of this chat: a fraction of that.
        half = world.search("green shop", min_score=0.0)
        assert max(h.score for h in half) < hits[0].score


def test_min_score_leaves_out_the_weak_hits(store_location: str) -> None:
    with Recall(store_location, Settings(index_interval=0)) as mem:
        world = shop(mem)
        assert [h.text for h in world.search(CLEAR, min_score=0.7)] == [world.search(CLEAR)[0].text]
        assert world.search(UNRELATED, min_score=0.5) == []
        assert len(world.search(UNRELATED, min_score=0.0)) == len(TEXTS)
        desk = world.agent("desk")
        assert [h.text for h in desk.search(CLEAR, min_score=0.7)] == [world.search(CLEAR)[0].text]
        # Facts are short, which the ranking weighs against them: a match scores a little lower.
        fact = mem.scope("user:maria").add("Drinks only green tea")
        mem.scope("user:maria").add("Lives in Lisbon")
        assert [h.source_id for h in mem.search("user:maria", "green tea", min_score=0.3)] == [fact.id]


@pytest.mark.parametrize("bad", [-0.1, 1.5, True, "0.5", float("nan")])
def test_a_min_score_outside_0_to_1_is_refused(mem: Recall, bad: object) -> None:
    world = mem.world("shop", create=True)
    with pytest.raises(InvalidInputError, match="min_score: must be a number from 0 to 1"):
        world.search("tea", min_score=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="min_score"):
        RecallStore(mem, world=world, min_score=bad)  # type: ignore[arg-type]


def test_cli_search_shows_scores_and_takes_min_score(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    with Recall(db, Settings(index_interval=0)) as mem:
        shop(mem)
    every = json.loads(recall(db, "search", "shop", CLEAR, "--json"))
    assert len(every) == len(TEXTS) and all(0 <= h["score"] <= 1 for h in every)
    strong = json.loads(recall(db, "search", "shop", CLEAR, "--min-score", "0.7", "--json"))
    assert [h["text"] for h in strong] == [every[0]["text"]]
    table = recall(db, "search", "shop", CLEAR, "--min-score", "0.7")
    assert f"{every[0]['score']:.3f}" in table
    refused = runner.invoke(app, ["--db", str(db), "search", "shop", CLEAR, "--min-score", "2"])
    assert refused.exit_code == 2 and "Invalid value for '--min-score'" in refused.output


def test_langgraph_store_scores_are_relevance_and_min_score_applies(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    store.put(("notes",), "hours", {"text": "The shop opens at nine every morning."})
    store.put(("notes",), "tea", {"text": "Maria drinks green tea."})
    items: list[SearchItem] = store.search(("notes",), query=CLEAR)
    assert items[0].key == "hours" and items[0].score is not None and 0.5 < items[0].score <= 1
    strict = RecallStore(mem, world="lg", min_score=0.5)
    assert [i.key for i in strict.search(("notes",), query=CLEAR)] == ["hours"]
    assert strict.search(("notes",), query=UNRELATED) == []
