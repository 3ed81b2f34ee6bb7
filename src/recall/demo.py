"""A small multi-agent world that shows what each agent's model would see.

A customer talks to a support team of three agents. Every agent hears every message, yet
each one's context holds only what it was addressed in, plus what it said itself.
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
    return world
