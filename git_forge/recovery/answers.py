"""Scripted answers: ``--answer ID=TEXT``, ``--defer ID``, ``--answers FILE``.

An id is a cluster id (``c3``: answers every member at once) or an item id (that
item only — items stay independently re-decidable; the cluster's unanswered
members are deferred). A value is the answer text, ``defer``, or ``cancel``
(cancel the run early: this and every later question is deferred). In a
non-interactive run an unanswered question is deferred.

YAML turns an unquoted ``003:`` key into the integer 3; such a key matches the
item whose id has that numeric value, so a hand-written answers file works.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from git_forge.errors import UsageError
from git_forge.parsing import load_json, load_yaml
from git_forge.recovery.questions import Question

ChoiceKind = Literal["answer", "defer", "cancel"]


@dataclass(frozen=True)
class Choice:
    kind: ChoiceKind
    text: str | None = None


DEFER = Choice("defer")
CANCEL = Choice("cancel")


@dataclass(frozen=True)
class Collected:
    """The outcome of one question (or of one item of a cluster question)."""

    question: Question
    item_ids: tuple[str, ...]
    choice: Choice

    @property
    def cluster_id(self) -> str | None:
        """Written only for an answer given to two or more items at once."""
        if self.choice.kind == "answer" and len(self.item_ids) > 1:
            return "c" + self.item_ids[0]
        return None


def _choice_from_value(key: str, value: object, source: str) -> Choice:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{source}: the answer for {key} must be text, 'defer' or 'cancel'")
    lowered = value.strip().lower()
    if lowered == "defer":
        return DEFER
    if lowered == "cancel":
        return CANCEL
    return Choice("answer", value.strip())


def parse_flags(answers: Iterable[str], defers: Iterable[str]) -> dict[str, Choice]:
    """``--answer ID=TEXT`` and ``--defer ID`` flags as choices (later flags win)."""
    choices: dict[str, Choice] = {}
    for flag in answers:
        key, sep, text = flag.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--answer takes ID=TEXT, got {flag!r}")
        if not text.strip():
            raise UsageError(f"--answer {key.strip()}= needs an answer text")
        choices[key.strip()] = Choice("answer", text.strip())
    for key in defers:
        if not key.strip():
            raise UsageError("--defer takes an item or cluster id")
        choices[key.strip()] = DEFER
    return choices


def load_file(path: Path) -> dict[str, Choice]:
    """An answers file: a JSON or YAML mapping of id → text | defer | cancel."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read answers file {path}: {exc}") from exc
    try:
        document = load_json(raw, path)
    except json.JSONDecodeError:
        try:
            document = load_yaml(raw, path)
        except yaml.YAMLError as exc:
            raise UsageError(f"answers file {path} is neither JSON nor YAML: {exc}") from exc
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise UsageError(f"answers file {path} must be a mapping of id to answer")
    return {str(key): _choice_from_value(str(key), value, f"answers file {path}")
            for key, value in document.items()}


def _canonical(key: str, known: set[str]) -> str | None:
    if key in known:
        return key
    if key.isdigit():
        matches = [k for k in known if k.isdigit() and int(k) == int(key)]
        if len(matches) == 1:
            return matches[0]
    return None


def normalise(choices: dict[str, Choice], known: set[str]) -> dict[str, Choice]:
    """Map every choice to a known question or item id; an unknown id is refused."""
    result: dict[str, Choice] = {}
    for key, choice in choices.items():
        canonical = _canonical(key, known)
        if canonical is None:
            open_ids = ", ".join(sorted(known)) or "none"
            raise UsageError(f"no open question for {key} (open: {open_ids})")
        result[canonical] = choice
    return result


def question_ids(questions: Iterable[Question]) -> set[str]:
    """Every id a choice may name: question ids and the items they ask about."""
    ids: set[str] = set()
    for question in questions:
        ids.add(question.id)
        ids.update(question.item_ids)
    return ids


def resolve(questions: list[Question], choices: dict[str, Choice]) -> Iterator[Collected]:
    """Apply scripted choices to the questions, in order; unanswered → deferred.

    ``choices`` must already be normalised to known ids.
    """
    cancelled = False
    for question in questions:
        if cancelled:
            yield Collected(question, question.item_ids, CANCEL)
            continue
        whole = choices.get(question.id)
        if whole is not None:
            cancelled = whole.kind == "cancel"
            yield Collected(question, question.item_ids, whole)
            continue
        left: list[str] = []
        for item_id in question.item_ids:
            choice = choices.get(item_id) if question.kind == "cluster" else None
            if choice is None or cancelled:
                left.append(item_id)
            else:
                cancelled = cancelled or choice.kind == "cancel"
                yield Collected(question, (item_id,), choice)
        if left:
            yield Collected(question, tuple(left), CANCEL if cancelled else DEFER)
