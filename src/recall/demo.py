"""A small multi-agent world that shows what each agent's model would see.

A customer talks to a support team of three agents. Every agent hears every message, yet
each one's context holds only what it was addressed in, plus what it said itself. A few facts
about the customer and a team memory show the `<memory>` block and long-term memories.
"""

from __future__ import annotations

from recall.api import Recall, World

DEMO_WORLD = "support"

AGENTS: dict[str, dict[str, object]] = {
    "triage": {
        "identity": "You are Tess, the front desk of Acme's support team.",
        "goals": ["Greet customers", "Route each problem to the right colleague with an @mention"],
    },
    "billing": {
        "identity": "You are Bill, Acme's billing specialist.",
        "knowledge": "Refunds of duplicate charges take 3–5 business days.",
        "goals": ["Resolve invoice and payment problems"],
    },
    "tech": {
        "identity": "You are Tekla, Acme's technical support engineer.",
        "goals": ["Diagnose app and payment-system problems"],
        "constraints": ["Never share internal log contents with customers"],
    },
}

CONVERSATION: list[tuple[str, str]] = [
    ("maria", "Hi! I have two problems today."),
    ("triage", "Hello Maria, happy to help. What is going on?"),
    ("maria", "@billing my October invoice charged me twice."),
    ("billing", "@tech did the payment webhook fire twice for Maria's October invoice?"),
    ("tech", "@billing yes, it retried after a timeout, so the charge was captured twice."),
    ("billing", "Maria, the duplicate charge will be refunded within 3-5 business days."),
    ("maria", "@tech also, the app crashes when I upload a photo."),
]

#: (content, category, confidence) about the customer, scope user:maria.
FACTS: list[tuple[str, str, float]] = [
    ("Uses the Android app, version 4.2", "context", 0.9),
    ("Prefers short answers without jargon", "preference", 0.85),
    ("Was double-charged once before, in March", "knowledge", 0.8),
]
#: (content, importance): memories shared by the whole team.
MEMORIES: list[tuple[str, int]] = [
    ("Payment webhooks retry after 10 s timeouts; duplicates are refunded by billing", 8),
    ("Photo upload crashes on Android 4.2 are tracked as bug APP-311", 7),
]


def build_demo_world(mem: Recall, world_id: str = DEMO_WORLD) -> World:
    """Create the demo world with its team and conversation (only when it is empty)."""
    world = mem.world(world_id, create=True, name="Acme support (demo)")
    if world.participants():
        return world
    world.add_human("maria")
    for agent_id, settings in AGENTS.items():
        world.add_agent(agent_id, **settings)  # type: ignore[arg-type]
    for sender, content in CONVERSATION:
        world.post(sender, content)
    customer = mem.scope("user:maria")
    for content, category, confidence in FACTS:
        customer.add(content, category=category, confidence=confidence)
    for content, importance in MEMORIES:
        world.add_memory(content, importance=importance)
    return world
