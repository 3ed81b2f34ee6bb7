"""The web inspector in a real browser (Debian's Chromium, headless, driven by Playwright) against
a real recall server on loopback: worlds, the live timeline, posting from the page, an agent's
context and its Memory Depth, facts editing, search, auth and escaping."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from recall import Settings
from recall.demo import build_demo_world
from recall.server.config import ApiKey, ServerConfig
from tests.server.conftest import LiveServer, start_server, stop_server
from tests.ui.browser import CHROMIUM, launch

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Chromium is not installed (make test installs it when run as root)"
)

SETTINGS = Settings(embeddings="none", index_interval=0)
#: Playwright waits this long for what a page shows (the first context build loads a tokenizer).
TIMEOUT = 15_000
expect.set_options(timeout=TIMEOUT)


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = launch(playwright)
    yield browser
    browser.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    """A server on the demo world: maria, agents triage, billing and tech, facts about maria."""
    server = start_server(tmp_path / "ui.db", ServerConfig(rate_limit=0), SETTINGS)
    build_demo_world(server.mem)
    yield server
    stop_server(server)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], errors  # no script error on any page


def test_open_a_world_and_post_from_the_page(live: LiveServer, page: Page) -> None:
    page.goto(f"{live.url}/")
    page.get_by_role("link", name="Acme support (demo)").click()
    expect(page).to_have_url(f"{live.url}/ui/worlds/support")
    timeline = page.locator("#timeline .msg")
    expect(timeline).to_have_count(7)
    # Each message shows its sender type, mentions, who it was delivered to and who would answer.
    third = page.locator('#timeline .msg[data-id="3"]')
    expect(third).to_contain_text("human")
    expect(third).to_contain_text("mentions: @billing")
    expect(third.locator(".responds")).to_have_text("billing ✓")
    expect(third).to_contain_text("tech")
    expect(page.locator("#agents")).to_contain_text("billing")

    page.locator("#post-form select[name=sender]").select_option("maria")
    page.locator("#post-form textarea").fill("@tech any news on the photo upload crash?")
    page.get_by_role("button", name="Post").click()
    expect(timeline).to_have_count(8)
    newest = timeline.last
    expect(newest).to_contain_text("@tech any news on the photo upload crash?")
    expect(newest.locator(".responds")).to_have_text("tech ✓")
    assert live.mem.world("support").messages()[-1].content == "@tech any news on the photo upload crash?"


def test_the_timeline_is_live(live: LiveServer, page: Page) -> None:
    page.goto(f"{live.url}/ui/worlds/support")
    expect(page.locator("#timeline .msg")).to_have_count(7)
    live.mem.world("support").post("tech", "@billing the crash is fixed in 4.3", chat="ticket-9")
    # No reload: the page picks the message up by itself.
    expect(page.locator("#timeline .msg")).to_have_count(8)
    expect(page.locator("#timeline .msg").last).to_contain_text("chat ticket-9")


def test_an_agents_context_and_memory_depth(live: LiveServer, page: Page) -> None:
    world = live.mem.world("support")
    for i in range(30):
        world.post("maria", f"@billing question {i}: can you check invoice {100 + i}?")
        world.post("billing", f"Checked invoice {100 + i}.")
    page.goto(f"{live.url}/ui/worlds/support/agents/billing")
    history = page.locator('#candidates .msg.included[data-section="history"]')
    expect(history).to_have_count(25)  # the default depth
    expect(page.locator("#model-input .msg").first).to_contain_text("You are Bill")
    # The model input, labelled section by section in the builder's order.
    expect(page.locator('#model-input .msg[data-section="memory"]')).to_contain_text("<memory>")
    expect(page.locator('#model-input .msg[data-section="history"]')).to_have_count(25)
    expect(page.locator('#model-input .msg[data-section="incoming"]')).to_have_count(0)
    expect(page.locator("#facts")).to_contain_text("Uses the Android app, version 4.2")
    expect(page.locator("#facts")).to_contain_text("in the block")
    expect(page.locator("#sections")).to_contain_text("history")

    page.locator("#depth").select_option("10")
    expect(history).to_have_count(10)
    page.locator("#depth").select_option("50")
    expect(history).to_have_count(50)
    page.locator("#depth").select_option("100")
    expect(history).to_have_count(65)  # all it was addressed in (5 of the demo, 30 questions) and its replies
    # Messages the agent heard but was not addressed in are greyed, with the reason.
    expect(page.locator('#candidates .msg.excluded[data-reason="not-addressed"]')).to_have_count(2)

    # A small budget rebuilds the view with fewer messages and says why the rest went: better
    # ranked ones took the room; the newest are there as the recent window.
    page.locator("#budget").fill("900")
    page.get_by_role("button", name="Rebuild").click()
    expect(page.locator('#candidates .msg[data-reason="outranked"]').first).to_be_visible()
    expect(page.locator('#candidates .msg.included[data-reason="in-recent-window"]').first).to_contain_text(
        "in-recent-window"
    )
    total = int(page.locator("#total-tokens").inner_text())
    assert 0 < total <= 900
    # The budget bar: one segment per non-empty section, as wide as its share of the budget.
    segments = page.locator("#budget-card .bar span")
    widths = [float(w.rstrip("%")) for w in segments.evaluate_all("spans => spans.map(s => s.style.width)")]
    assert widths and abs(sum(widths) - 100 * total / 900) < 0.5
    # The view's settings can come from the address.
    page.goto(f"{live.url}/ui/worlds/support/agents/billing?depth=10&budget=5000")
    expect(history).to_have_count(10)
    expect(page.locator("#budget-card")).to_contain_text("of 5000 tokens")
    # The inbox lists unread and read deliveries.
    expect(page.locator("#inbox")).to_contain_text("unread (")


def test_the_recalled_past_passage_by_passage(live: LiveServer, page: Page) -> None:
    world = live.mem.world("support")
    old = world.post("maria", "My parcel number is 4711 and it never arrived.", chat="ticket-2")
    for i in range(3):
        world.post("maria", f"Unrelated chatter {i} about <b>the weather</b>.", chat="ticket-2")
    world.post("maria", "@billing what was my parcel number again?", chat="ticket-9")
    page.goto(f"{live.url}/ui/worlds/support/agents/billing?chat=ticket-9")
    rows = page.locator("#recalled-table tr[data-id]")
    passage = page.locator(f'#recalled-table tr[data-id="{old.id}"]')
    expect(passage).to_contain_text("maria: My parcel number is 4711 and it never arrived.")
    expect(passage).to_contain_text("ticket-2")
    cells = passage.locator("td")
    assert int(cells.nth(0).inner_text()) >= 1  # its rank
    assert float(cells.nth(4).inner_text()) > 0  # its score (BM25 here: this server has no embeddings)
    assert int(cells.nth(8).inner_text()) > 0  # its tokens
    expect(page.locator("#recalled h2")).to_contain_text("tokens")
    expect(page.locator('#model-input .msg[data-section="recalled"]')).to_contain_text("4711")
    assert rows.count() >= 1
    # Stored text is shown as text, never as markup.
    expect(page.locator("#recalled-table b")).to_have_count(0)
    # With a budget that leaves no room for it, each candidate says why it is out.
    page.goto(f"{live.url}/ui/worlds/support/agents/billing?chat=ticket-9&budget=120")
    expect(page.locator("#recalled-table tr.excluded").first).to_be_visible()
    expect(page.locator(f'#recalled-table tr[data-id="{old.id}"]')).to_have_attribute("data-reason", "over-budget")


def test_edit_and_delete_a_fact(live: LiveServer, page: Page) -> None:
    page.goto(f"{live.url}/ui/scopes/user%3Amaria")
    rows = page.locator("#facts-table tr[data-id]")
    expect(rows).to_have_count(3)
    row = rows.filter(has_text="Uses the Android app")
    row.get_by_role("button", name="Edit").click()
    editing = page.locator("#facts-table tr.editing")
    editing.locator("input[name=content]").fill("Uses the Android app, version 4.3")
    editing.locator("select[name=category]").select_option("context")
    editing.locator("input[name=confidence]").fill("0.95")
    editing.get_by_role("button", name="Save").click()
    expect(rows.filter(has_text="version 4.3")).to_contain_text("0.95")
    stored = {f.content: f.confidence for f in live.mem.scope("user:maria").list()}
    assert stored["Uses the Android app, version 4.3"] == 0.95

    page.locator("#fact-filter").fill("jargon")
    expect(page.locator("#facts-table tr[data-id]:visible")).to_have_count(1)
    page.locator("#fact-filter").fill("")
    page.once("dialog", lambda dialog: dialog.accept())
    rows.filter(has_text="jargon").get_by_role("button", name="Delete").click()
    expect(rows).to_have_count(2)
    assert len(live.mem.scope("user:maria").list()) == 2


def test_search_highlights_the_hits(live: LiveServer, page: Page) -> None:
    page.goto(f"{live.url}/ui/worlds/support")
    page.get_by_role("link", name="Search this world").click()
    page.locator("input[name=q]").fill("invoice")
    page.get_by_role("button", name="Search").click()
    hits = page.locator("#results .hit")
    expect(hits.first).to_be_visible()
    expect(hits.first.locator("mark")).to_have_text("invoice")
    # Why it was found: the method that ran and the hit's place in the keyword list.
    expect(hits.first.locator(".why")).to_contain_text("keywords #1")


def test_stored_text_is_escaped(live: LiveServer, page: Page) -> None:
    hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script></memory>'
    live.mem.world("support").post("maria", f"@billing {hostile}")
    live.mem.scope("user:maria").add(hostile, category="knowledge", confidence=0.5)
    for path in ("/ui/worlds/support", "/ui/worlds/support/agents/billing", "/ui/scopes/user%3Amaria"):
        page.goto(f"{live.url}{path}")
        expect(page.get_by_text(hostile).first).to_be_visible()
        assert page.locator("main img, main script").count() == 0
        assert page.evaluate("window.pwned") is None


def test_with_auth_the_key_is_asked_once_per_browser_session(tmp_path: Path, browser: Browser) -> None:
    live = start_server(tmp_path / "auth.db", ServerConfig(keys=(ApiKey("s3cret", "acme"),), rate_limit=0), SETTINGS)
    try:
        with httpx.Client(base_url=live.url, headers={"authorization": "Bearer s3cret"}) as client:
            client.post("/v1/worlds", json={"id": "team", "name": "The team"}).raise_for_status()
        context = browser.new_context()
        context.set_default_timeout(TIMEOUT)
        page = context.new_page()
        page.goto(f"{live.url}/ui/")
        expect(page.locator("#login")).to_be_visible()
        page.locator("#login input[name=key]").fill("wrong")
        page.get_by_role("button", name="Use key").click()
        expect(page.locator("#login")).to_contain_text("That key was refused.")
        page.locator("#login input[name=key]").fill("s3cret")
        page.get_by_role("button", name="Use key").click()
        page.get_by_role("link", name="The team").click()
        expect(page.get_by_role("heading", name="The team")).to_be_visible()  # no second prompt this session
        context.close()
        fresh = browser.new_page()  # a new browser session asks again
        fresh.goto(f"{live.url}/ui/worlds/team")
        expect(fresh.locator("#login")).to_be_visible(timeout=TIMEOUT)
        fresh.close()
    finally:
        stop_server(live)


def test_assets_are_served_by_recall_itself(live: LiveServer) -> None:
    with httpx.Client(base_url=live.url) as client:
        shell = client.get("/ui/worlds/support")
        assert shell.status_code == 200 and "default-src 'self'" in shell.headers["content-security-policy"]
        assert 'src="/ui/assets/app.js"' in shell.text and "http" not in shell.text.split("<body>")[0]
        assert client.get("/ui/assets/app.js").headers["content-type"].startswith("text/javascript")
        # Only the listed assets: no other file of the package can be asked for (a path that
        # climbs out of assets/ is just another page: the shell).
        assert client.get("/ui/assets/index.html").status_code == 404
        for name in ("..%2Fui.py", "..%2F..%2Fsettings.py"):
            response = client.get(f"/ui/assets/{name}")
            assert response.headers["content-type"].startswith("text/html") and "import" not in response.text
        assert client.get("/", follow_redirects=False).headers["location"] == "/ui/"


def test_model_calls_timeline_replay_and_compare(live: LiveServer, page: Page) -> None:
    """Issue 25: the agent's recorded calls, one opened (replayed from the store: the same bytes,
    then a fact edited), and two compared from the timeline."""
    world = live.mem.world("support")
    billing = world.agent("billing")
    first = billing.context(record=True)
    shallow = billing.context(history_limit=1, record=True)
    assert first.call_id and shallow.call_id
    billing.call_outcome(first.call_id)
    billing.call_outcome(shallow.call_id, error="model server at http://127.0.0.1:9 refused the connection")
    page.goto(f"{live.url}/ui/worlds/support/agents/billing")
    page.locator("#calls-link").click()
    rows = page.locator("#calls-table tr[data-id]")
    expect(rows).to_have_count(2)
    expect(rows.first).to_have_attribute("data-id", shallow.call_id)  # newest first
    # An outage stands out in the timeline (and never reached the world's conversation).
    expect(rows.first.locator(".outcome")).to_have_text(
        "model failed: model server at http://127.0.0.1:9 refused the connection"
    )
    expect(rows.nth(1).locator(".outcome")).to_have_text("answered")

    # Open the first: rebuilt from the store, the same bytes.
    page.locator(f'#calls-table tr[data-id="{first.call_id}"] a').click()
    expect(page.locator("#verdict")).to_have_attribute("data-identical", "true")
    expect(page.locator("#verdict")).to_contain_text("the same bytes")
    expect(page.locator("#call-items")).to_contain_text("fact")
    expect(page.locator("#replayed .msg").first).to_be_visible()
    expect(page.locator("#replayed h2")).to_contain_text("as sent")

    # A fact edited since: not the same bytes, and the diff names the fact and why.
    fact = live.mem.scope("user:maria").list()[0]
    live.mem.scope("user:maria").update(fact.id, content="Prefers e-mail to <b>phone</b> calls")
    page.reload()
    expect(page.locator("#verdict")).to_have_attribute("data-identical", "false")
    edited = page.locator(f'#diff-table tr[data-change="edited"][data-id="{fact.id}"]')
    expect(edited).to_contain_text("edited since the call")
    expect(page.locator("#replayed h2")).to_contain_text("not what was sent")

    # Compare the two from the timeline: the shallower one left history out.
    page.goto(f"{live.url}/ui/worlds/support/agents/billing/calls")
    page.get_by_label(f"pick {first.call_id}").check()
    expect(page.locator("#compare")).to_be_disabled()
    page.get_by_label(f"pick {shallow.call_id}").check()
    page.locator("#compare").click()
    expect(page.locator("#diff")).to_contain_text("setting history_limit: 25 → 1")
    expect(page.locator('#diff-table tr[data-change="removed"]').first).to_be_visible()
