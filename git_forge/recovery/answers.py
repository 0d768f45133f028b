"""Scripted answers: ``--answer ID=TEXT``, ``--defer ID``, ``--answers FILE``.

An id is a question's (cluster's) id (``c003``: answers every member at once;
``c006`` for a singleton), an item id (that item only — items stay
independently re-decidable; the cluster's unanswered members are deferred), or
the id of a topology cluster the operator merged into a bigger question (its
members only). A value is the answer text, ``defer``, or ``cancel`` (cancel the
run early: this and every later question is deferred); an item blocked on a merge
conflict takes ``retry`` (on the new tip) or ``resolve`` (by hand) instead of
text (``conflict_choice``). In a non-interactive run an unanswered question is
deferred.

An answers file's keys and values are read as the text written: YAML 1.1 would
read an unquoted ``010:`` as the octal 8 (so item 008), and ``yes`` as true.
An id that names no open question is refused before anything is recorded
(``normalise``); a number still names the id with that value (``10`` is ``010``,
``backlog.model.match_id``). A key written twice (``001: a`` then ``001: b``) is
refused like two spellings of one id: neither parser may keep the last without a
word.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from git_forge.backlog.model import match_id
from git_forge.backlog.topology import id_key
from git_forge.errors import UsageError, os_error_text
from git_forge.parsing import load_json
from git_forge.recovery.questions import Question
from git_forge.yamlfile import YAMLError, load_yaml, yaml_problem

ChoiceKind = Literal["answer", "defer", "cancel", "retry", "resolve"]


@dataclass(frozen=True)
class Choice:
    kind: ChoiceKind
    text: str | None = None


DEFER = Choice("defer")
CANCEL = Choice("cancel")
#: A merge conflict's two answers: retry on the new tip, resolve by hand.
RETRY = Choice("retry")
RESOLVE = Choice("resolve")


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


#: What YAML writes for no value, read as the text written: never an answer.
_YAML_NULLS = ("~", "null", "Null", "NULL")


def _choice_from_value(key: str, value: object, source: str) -> Choice:
    if not isinstance(value, str) or not value.strip() or value.strip() in _YAML_NULLS:
        raise UsageError(f"{source}: the answer for {key} must be text, 'defer' or 'cancel'")
    lowered = value.strip().lower()
    if lowered == "defer":
        return DEFER
    if lowered == "cancel":
        return CANCEL
    return Choice("answer", value.strip())


def parse_flags(answers: Iterable[str], defers: Iterable[str]) -> dict[str, Choice]:
    """``--answer ID=TEXT`` and ``--defer ID`` flags as choices. One id, one
    decision: two different ones for the same id (an answer and a deferral, or two
    answers) are refused, never settled by their order — one of them would be
    dropped without a word. (The flags do replace an answers file's choice.)"""
    choices: dict[str, Choice] = {}

    def decide(key: str, choice: Choice) -> None:
        if choices.get(key, choice) != choice:
            raise UsageError(f"two decisions for {key}: {_flag(key, choices[key])} and "
                             f"{_flag(key, choice)}")
        choices[key] = choice

    for flag in answers:
        key, sep, text = flag.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--answer takes ID=TEXT, got {flag!r}")
        if not text.strip():
            raise UsageError(f"--answer {key.strip()}= needs an answer text")
        if text.strip().lower() in ("defer", "cancel"):  # the prompt's and the file's words
            raise UsageError(f"--answer {key.strip()}={text.strip()}: to defer a question, "
                             f"use --defer {key.strip()} (an answer is the decision in words)")
        decide(key.strip(), Choice("answer", text.strip()))
    for key in defers:
        if not key.strip():
            raise UsageError("--defer takes an item or cluster id")
        decide(key.strip(), DEFER)
    return choices


def with_flags(from_file: dict[str, Choice], flags: dict[str, Choice]) -> dict[str, Choice]:
    """The answers file's choices with the flags' in place of the file's for the same
    id, however either spells it (``010`` in the file, ``--answer 10=…``:
    ``match_id``): a flag is the operator's latest word, not a second decision."""
    kept = {key: choice for key, choice in from_file.items()
            if not any(match_id(key, [flag]) is not None for flag in flags)}
    return {**kept, **flags}


def _flag(key: str, choice: Choice) -> str:
    """The flag that gave ``choice``, as the operator typed it (near enough)."""
    return f"--defer {key}" if choice == DEFER else f"--answer {key}={choice.text!r}"


def load_file(path: Path) -> dict[str, Choice]:
    """An answers file: a JSON or YAML mapping of id → text | defer | cancel."""
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read answers file {path}: {os_error_text(exc)}") from exc
    except UnicodeDecodeError:
        raise UsageError(f"cannot read answers file {path}: not UTF-8 text") from None
    try:
        document = load_json(raw, path, unique_keys=True)
    except json.JSONDecodeError:
        try:
            document = load_yaml(raw, path, as_text=True, unique_keys=True)
        except YAMLError as exc:
            raise UsageError(f"answers file {path} is neither JSON nor YAML: "
                             f"{yaml_problem(exc)}") from exc
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise UsageError(f"answers file {path} must be a mapping of id to answer")
    for key in document:
        if not isinstance(key, str):  # a tagged key (!!int 10): not the text written
            raise UsageError(f"answers file {path}: the key {key!r} is not an item or "
                             "question id written as text")
    choices = {key: _choice_from_value(key, value, f"answers file {path}")
               for key, value in document.items()}
    cancelled = [key for key, choice in choices.items() if choice == CANCEL]
    if cancelled and any(choice.kind == "answer" for choice in choices.values()):
        # cancel defers every question after it: the file's answers to those would be
        # dropped without a word (a file has no order the operator sees)
        raise UsageError(f"answers file {path}: {cancelled[0]}: cancel defers every later "
                         "question, answers included; write defer for the questions to leave")
    return choices


def _names(questions: Iterable[Question]) -> dict[str, tuple[str, ...]]:
    """Every id a choice may name → the ids it stands for: a question id itself, an item
    id itself, a merged-away topology cluster id its members."""
    names: dict[str, tuple[str, ...]] = {}
    for question in questions:
        for part_id, members in question.parts:
            names[part_id] = members
        names.update((item_id, (item_id,)) for item_id in question.item_ids)
    for question in questions:
        names[question.id] = (question.id,)
    return names


def normalise(choices: dict[str, Choice], questions: Iterable[Question]) -> dict[str, Choice]:
    """Map every choice to the question or item ids it names; an unknown id is refused,
    and so are two different choices for one id written two ways (``6`` and ``006``)."""
    questions = list(questions)
    names = _names(questions)
    result: dict[str, Choice] = {}
    given: dict[str, tuple[str, Choice]] = {}
    for key, choice in choices.items():
        found = match_id(key, names)
        if found is not None and given.get(found, (key, choice))[1] != choice:
            raise UsageError(f"two decisions for {found} (given as {given[found][0]} and "
                             f"{key})")
        if found is not None:
            given[found] = (key, choice)
        if found is None:
            if not questions:
                raise UsageError(f"no open question for {key} (nothing is blocked)")
            items = sorted((i for q in questions for i in q.item_ids), key=id_key)
            raise UsageError(f"no open question for {key} (questions: "
                             f"{', '.join(q.id for q in questions)}; items: {', '.join(items)})")
        for target in names[found]:
            result[target] = choice
    return result


def conflict_choice(question: Question, choice: Choice, item_ids: Iterable[str]) -> Choice:
    """A choice as a merge conflict's question takes it: the words ``retry`` and
    ``resolve`` (an answer's text, any case) are its two answers; other text is
    refused, as are those two for any other question (which they do not fit)."""
    ids = ", ".join(item_ids)
    if question.conflict is None:
        if choice.kind in ("retry", "resolve"):
            raise UsageError(f"{choice.kind} answers a merge conflict, and item {ids} is not "
                             "blocked on one: give the decision in words")
        return choice
    if choice.kind != "answer":
        return choice
    word = (choice.text or "").strip().lower()
    if word in ("retry", "resolve"):
        return RETRY if word == "retry" else RESOLVE
    raise UsageError(f"item {ids} is blocked on a merge conflict: answer retry (on the new "
                     "tip), resolve (by hand), defer or cancel")


def resolve(questions: list[Question], choices: dict[str, Choice]) -> Iterator[Collected]:
    """Apply scripted choices to the questions, in order; unanswered → deferred.

    A choice for an item wins over its question's for that item (the more specific
    one: a topology cluster merged into a bigger question keeps its own answer);
    the question's choice covers the rest, in one piece. ``choices`` must already be
    normalised to known ids.
    """
    cancelled = False
    for question in questions:
        if cancelled:
            yield Collected(question, question.item_ids, CANCEL)
            continue
        whole = choices.get(question.id)
        own: list[tuple[int, Collected]] = []
        left: list[str] = []
        for item_id in question.item_ids:
            choice = choices.get(item_id)
            if choice is None or cancelled:
                left.append(item_id)
            else:
                cancelled = cancelled or choice.kind == "cancel"
                own.append((question.item_ids.index(item_id),
                            Collected(question, (item_id,), choice)))
        if left:
            rest = CANCEL if cancelled else whole or DEFER
            cancelled = cancelled or rest.kind == "cancel"
            own.append((question.item_ids.index(left[0]), Collected(question, tuple(left), rest)))
        for _, collected in sorted(own, key=lambda pair: pair[0]):
            yield collected
