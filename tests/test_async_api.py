"""The `a`-prefixed coroutine forms of the Python API (issue 24, point 14): the same answers as
the blocking methods, run off the event loop, on both stores."""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any

import anyio
import pytest

from recall import Recall, Settings
from recall.api import Agent, Scope, World
from recall.app.search import Searcher


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_conversation_through_the_coroutines(store_location: str) -> None:
    async with Recall(store_location, Settings(index_interval=0)) as mem:
        world = await mem.aworld("shop", create=True)
        await world.aadd_human("maria")
        desk = await world.aadd_agent("desk", system_prompt="You help.")
        posted = await world.apost("maria", "@desk my parcel never arrived", chat="t1")
        assert [m.id for m in await desk.ainbox()] == [posted.id]
        ctx = await desk.acontext(chat="t1")
        assert ctx.messages[-1].content.endswith("my parcel never arrived")
        assert await desk.aack([posted]) == 1 and await desk.ainbox() == []
        note = await world.aadd_memory("Parcels go out at noon", importance=7)
        assert [m.id for m in await world.amemories()] == [note.id]
        hits = await world.asearch("parcel", kinds=("memory",))
        assert [h.source_id for h in hits] == [note.id]
        scope = mem.scope("user:maria")
        fact = await scope.aadd("Lives in Lisbon")
        assert [f.id for f in await scope.alist()] == [fact.id]
        assert [h.source_id for h in await mem.asearch("user:maria", "Lisbon")] == [fact.id]
        # Many at once: the loop hands each to a worker thread, every one is stored.
        async with anyio.create_task_group() as group:
            for i in range(20):
                group.start_soon(functools.partial(world.apost, "maria", f"message {i}", chat="t2"))
        assert len(await world.amessages(chat="t2")) == 20


@pytest.mark.anyio
async def test_a_coroutine_leaves_the_event_loop_free(mem: Recall, monkeypatch: pytest.MonkeyPatch) -> None:
    """The blocking call waits for something only the event loop can do: it returns only because
    it runs in another thread (on the loop's own thread it would wait out its timeout)."""
    world = mem.world("shop", create=True)
    started, released = anyio.Event(), threading.Event()
    threads: list[int] = []
    real_search = Searcher.search

    def slow_search(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        anyio.from_thread.run_sync(started.set)
        assert released.wait(timeout=10), "the event loop was blocked"
        return real_search(*args, **kwargs)

    monkeypatch.setattr(Searcher, "search", slow_search)
    async with anyio.create_task_group() as group:
        group.start_soon(world.asearch, "anything")
        await started.wait()  # the loop runs while the search is under way
        released.set()
    assert threads and threads[0] != threading.get_ident()


@pytest.mark.anyio
async def test_errors_come_back_as_the_blocking_method_raises_them(mem: Recall) -> None:
    from recall.errors import InvalidInputError, UnknownWorldError

    with pytest.raises(UnknownWorldError):
        await mem.aworld("nowhere")
    world = mem.world("shop", create=True)
    with pytest.raises(InvalidInputError, match="k"):
        await world.asearch("tea", k=0)


@pytest.mark.parametrize("cls", [Recall, World, Agent, Scope])
def test_every_coroutine_form_mirrors_its_method(cls: type) -> None:
    forms = {
        name: value for name, value in vars(cls).items() if name.startswith("a") and inspect.iscoroutinefunction(value)
    }
    assert forms, cls
    for name, form in forms.items():
        method = getattr(cls, name[1:])
        assert inspect.signature(form) == inspect.signature(method), name
        assert form.__qualname__ == f"{cls.__name__}.{name}"
