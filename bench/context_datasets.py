"""The datasets bench/context_recall_eval.py runs on, LoCoMo and BEAM: how a file is read, who
asks whom, what is asked, the halves and the default budgets."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import beam_data
from locomo_eval import CATEGORY_NAMES, CATEGORY_ORDER, normalise_evidence

from recall import Settings
from recall.importers import Conversation, read_locomo, slug

#: LoCoMo's budgets; BEAM's add 16,000 (its summarization questions cite up to 70 messages).
BUDGETS = (2000, 4000, 8000)
BEAM_BUDGETS = (2000, 4000, 8000, 16000)
#: Who asks LoCoMo's questions: a reserved human sender name.
ASKER = "user"
#: LoCoMo: conversations 0-4 tune, 5-9 are held out (by their place in the file).
HALVES = {"0-4": range(0, 5), "5-9": range(5, 10)}


@dataclass(frozen=True)
class Dataset:
    """What differs between the datasets: how a file is read, who asks whom, what is asked."""

    name: str
    title: str
    budgets: tuple[int, ...]
    #: The message metadata key holding the id the questions' evidence names.
    turn_key: str
    asker: str
    #: Category -> its name in the JSON, in the order of the tables' columns.
    categories: Mapping[int | str, str]
    #: Category -> the tables' column header.
    headers: Mapping[int | str, str]
    halves: tuple[str, ...]
    #: (path, samples) -> the conversations, in the samples' order.
    read: Callable[[Path, Sequence[Mapping[str, Any]]], list[Conversation]]
    sample_id: Callable[[Mapping[str, Any]], str]
    agent: Callable[[Mapping[str, Any]], str]
    #: (sample, known turn ids) -> (question, category, evidence turn ids) for each question.
    questions: Callable[[Mapping[str, Any], set[str]], Iterator[tuple[str, int | str, list[str]]]]
    #: (index in the file, sample id) -> the half it belongs to, if any.
    half: Callable[[int, str], str | None]
    #: samples -> the store's settings.
    settings: Callable[[Sequence[Mapping[str, Any]]], Settings]


def _locomo_questions(sample: Mapping[str, Any], known_ids: set[str]) -> Iterator[tuple[str, int | str, list[str]]]:
    for qa in sample.get("qa", []):
        yield str(qa["question"]), int(qa["category"]), normalise_evidence(qa.get("evidence") or [], known_ids)


def _beam_questions(sample: Mapping[str, Any], known_ids: set[str]) -> Iterator[tuple[str, int | str, list[str]]]:
    yield from beam_data.questions(sample, known_ids)


LOCOMO = Dataset(
    name="locomo",
    title="LoCoMo",
    budgets=BUDGETS,
    turn_key="dia_id",
    asker=ASKER,
    categories={c: CATEGORY_NAMES[c] for c in CATEGORY_ORDER},
    headers={c: CATEGORY_NAMES[c] for c in CATEGORY_ORDER},
    halves=tuple(HALVES),
    read=lambda path, _: read_locomo(path),
    sample_id=lambda sample: str(sample.get("sample_id")),
    agent=lambda sample: slug(str(sample["conversation"]["speaker_a"])),
    questions=_locomo_questions,
    half=lambda index, _: next((name for name, half in HALVES.items() if index in half), None),
    settings=lambda _: Settings(index_interval=0),
)
BEAM = Dataset(
    name="beam",
    title="BEAM",
    budgets=BEAM_BUDGETS,
    turn_key=beam_data.TURN_KEY,
    asker=beam_data.HUMAN,
    categories={a: a for a in beam_data.ABILITIES},
    headers={a: short for a, short in beam_data.ABILITIES.items()},
    halves=tuple(beam_data.HALVES),
    read=lambda _, samples: beam_data.read_beam(samples),
    sample_id=beam_data.conversation_id,
    agent=lambda _: beam_data.AGENT,
    questions=_beam_questions,
    half=lambda _, sample_id: beam_data.half(sample_id),
    # One assistant turn is 348,853 characters, over the default cap of a message.
    settings=lambda samples: Settings(
        index_interval=0, max_message_chars=max(Settings().max_message_chars, beam_data.longest_turn(samples))
    ),
)
DATASETS = {d.name: d for d in (LOCOMO, BEAM)}


def detect_dataset(samples: Sequence[Any]) -> Dataset:
    """BEAM for conversations with `turns` and `questions`, LoCoMo for samples with a
    `conversation` object."""
    if beam_data.is_beam(samples):
        return BEAM
    if samples and all(isinstance(s, dict) and isinstance(s.get("conversation"), dict) for s in samples):
        return LOCOMO
    raise ValueError("neither a LoCoMo file (samples with `conversation` and `qa`) nor BEAM's (`turns`, `questions`)")
