"""The item model: validation messages, derived kinds, transitions, selection, ids."""

from __future__ import annotations

import copy
import itertools
import random

import pytest
from builders import backlog_document
from builders import item as json_item

from git_forge.backlog import model
from git_forge.backlog.errors import BacklogError
from git_forge.backlog.item import Item, kind

NOW = "2026-02-01T10:00:00Z"


def item(item_id: str, status: str = "pending", **fields) -> Item:
    """``builders.item`` as the model reads it: an Item."""
    return Item(json_item(item_id, status, **fields))


def doc(*items: Item | dict, **top) -> dict:
    """The JSON document of ``items`` (anything else is put in as it is)."""
    return backlog_document([entry.to_json() if isinstance(entry, Item) else entry
                             for entry in items], **top)


# --- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(("bad", "message"), [
    (item("12"), 'items[0]: invalid item id "12" (expected a string of 3 to 64 digits)'),
    (item("abc"), 'items[0]: invalid item id "abc"'),
    ({**item("001"), "id": 1}, "items[0]: invalid item id 1"),
    (item("001\n"), "items[0]: invalid item id"),  # "$" would match before the newline
    (item("001", dependsOn=["002\n"]), "item 001: dependsOn: invalid item id"),
    (item("001", status="open"),
     'item 001: invalid status "open" (expected one of pending, in_progress, done, blocked)'),
    (item("001", priority=0), "item 001: invalid priority 0 (expected an integer from 1 to 4)"),
    (item("001", priority=5), "item 001: invalid priority 5"),
    (item("001", priority="1"), 'item 001: invalid priority "1"'),
    (item("001", priority=True), "item 001: invalid priority true"),
    (item("001", type="epic"), 'item 001: invalid type "epic" (expected one of bug, bugfix, '
                               "refactor, feature, chore, test)"),
    (item("001", title=" "), 'item 001: invalid title " " (expected a non-empty string)'),
    (item("001", dependsOn=["001"]), "item 001: depends on itself"),
    (item("001", dependsOn=["7"]), 'item 001: dependsOn: invalid item id "7"'),
    (item("001", completedAt="yesterday"), 'item 001: invalid completedAt "yesterday"'),
    (item("001", needsHuman="yes"), 'item 001: invalid needsHuman "yes" (expected true or '
                                    "false)"),
    (item("001", acceptanceCriteria="x"), "item 001: invalid acceptanceCriteria"),
    ({"id": "001", "type": "bug", "priority": 1, "status": "pending"},
     'item 001: missing required field "title"'),
])
def test_invalid_items_are_named_precisely(bad: Item | dict, message: str) -> None:
    problem = model.backlog_problem(doc(bad))
    assert problem is not None and problem.startswith(message), problem


def test_unknown_dependency_and_duplicate_ids() -> None:
    assert model.backlog_problem(doc(item("001", dependsOn=["099"]))) == (
        "item 001: depends on unknown item 099")
    assert model.backlog_problem(doc(item("001"), item("001"))) == "duplicate item id 001"


def test_document_level_problems() -> None:
    assert model.backlog_problem([]) == "the document is not a JSON object"
    assert model.backlog_problem({"items": {}}) == '"items" is not a list'
    assert model.backlog_problem(doc(schemaVersion="2")).startswith("unsupported schemaVersion")
    assert model.backlog_problem(doc("x")) == "items[0] is not an object"


def test_valid_backlog_with_unknown_fields_and_iso_times() -> None:
    good = doc(item("001", status="done", completedAt="2026-01-01T00:00:00Z", custom={"a": 1}),
               item("002", dependsOn=["001"], completedAt="2026-01-01T00:00:00+02:00"),
               item("1000", status="blocked", needsHuman=True, blockedReason="why?"),
               extra="kept")
    assert model.backlog_problem(good) is None


# --- derived kinds ----------------------------------------------------------------------------


def test_derived_kinds_are_disjoint_subsets_of_blocked() -> None:
    items = [
        item("001", "blocked", needsHuman=True),
        item("002", "blocked", deferred=True),
        item("003", "blocked", needsHuman=True, deferred=True),  # needs-human wins
        item("004", "blocked"),
        item("005", "pending", needsHuman=True),  # not blocked: neither kind
        item("006", "done"), item("007", "in_progress"),
    ]
    assert [kind(i) for i in items] == [
        "needs-human", "deferred", "needs-human", "blocked", "pending", "done", "in_progress"]
    assert model.summarize(items) == {"pending": 1, "inProgress": 1, "blocked": 4,
                                      "needsHuman": 2, "deferred": 1, "done": 1, "total": 7}


# --- transitions ------------------------------------------------------------------------------

LEGAL = {("pending", "in_progress"), ("pending", "blocked"), ("in_progress", "done"),
         ("in_progress", "blocked"), ("in_progress", "pending"), ("blocked", "pending"),
         ("done", "pending")}


@pytest.mark.parametrize(("old", "new"), list(itertools.product(model.STATUSES, repeat=2)))
def test_transition_table(old: str, new: str) -> None:
    subject = item("001", old)
    before = copy.deepcopy(subject)
    if (old, new) in LEGAL:
        subject = model.apply_transition(subject, new, now=NOW)
        assert subject["status"] == new
    else:
        with pytest.raises(BacklogError, match=f"illegal status transition {old} → {new}"):
            model.apply_transition(subject, new, now=NOW)
        assert subject == before


def test_transition_to_unknown_status_is_refused() -> None:
    with pytest.raises(BacklogError, match='invalid status "cancelled"'):
        model.apply_transition(item("001"), "cancelled", now=NOW)


def test_transition_bookkeeping() -> None:
    subject = item("001", "pending", humanAnswer="use postgres")
    subject = model.apply_transition(subject, "in_progress", now=NOW)
    subject = model.apply_transition(subject, "blocked", now=NOW, blocked_reason="which db?",
                                     needs_human=True)
    assert (subject["blockedReason"], subject["needsHuman"], subject["deferred"]) == (
        "which db?", True, False)
    subject = model.apply_transition(subject, "pending", now=NOW)
    assert "blockedReason" not in subject and subject["needsHuman"] is False
    assert subject["humanAnswer"] == "use postgres"  # kept for the next prompt
    subject = model.apply_transition(subject, "in_progress", now=NOW)
    subject = model.apply_transition(subject, "done", now=NOW)
    assert subject["completedAt"] == NOW and "humanAnswer" not in subject
    subject = model.apply_transition(subject, "pending", now=NOW)
    assert subject["completedAt"] is None


def test_needs_human_and_deferred_are_exclusive_and_fields_are_checked() -> None:
    subject = item("001", "in_progress")
    with pytest.raises(BacklogError, match="exclusive"):
        model.apply_transition(subject, "blocked", now=NOW, needs_human=True, deferred=True)
    with pytest.raises(BacklogError, match="cannot set field"):
        model.apply_transition(subject, "blocked", now=NOW, priority=1)
    assert subject == item("001", "in_progress")


# --- answer / unblock -------------------------------------------------------------------------


def test_answer_sets_the_answer_and_clears_the_block() -> None:
    items = [item("001", "blocked", needsHuman=True, blockedReason="which db?", deferred=False,
                  extra="kept")]
    result = model.answer_item(items, "001", "postgres")
    assert result is items[0]
    assert items[0] == {**item("001", "pending", extra="kept"), "needsHuman": False,
                        "deferred": False, "humanAnswer": "postgres",
                        "answeredReason": "which db?", "answeredKind": "question"}


@pytest.mark.parametrize(("block", "kind"), [
    ({"needsHuman": True}, "question"),
    ({"deferred": True}, "failure"),
    ({}, "blocker"),
])
def test_an_answer_keeps_what_it_answers_until_the_item_is_done(block: dict, kind: str) -> None:
    items = [item("001", "blocked", blockedReason="the reason", **block)]
    model.answer_item(items, "001", "the answer")
    assert (items[0].answered_reason, items[0].answered_kind) == ("the reason", kind)
    assert items[0].blocked_reason is None
    taken = model.apply_transition(items[0], "in_progress", now=NOW)
    assert taken.answered_reason == "the reason"  # the next prompt reads it
    done = model.apply_transition(taken, "done", now=NOW)
    assert not {"humanAnswer", "answeredReason", "answeredKind"} & set(done)


def test_an_answer_to_a_block_without_reason_drops_an_earlier_answer_s_reason() -> None:
    items = [item("001", "blocked", needsHuman=True, humanAnswer="old",
                  answeredReason="an old question", answeredKind="question")]
    model.answer_item(items, "001", "new")
    assert items[0].human_answer == "new"
    assert not {"answeredReason", "answeredKind"} & set(items[0])


def test_what_an_answer_answers_must_be_text() -> None:
    assert model.item_problem(item("001", answeredReason="why", answeredKind="question")) is None
    assert "invalid answeredReason 3" in (model.item_problem(item("001", answeredReason=3)) or "")
    assert "invalid answeredKind" in (model.item_problem(item("001", answeredKind=[])) or "")


@pytest.mark.parametrize("call", [model.answer_item, lambda items, i, _t: model.unblock_items(
    items, i)])
def test_answer_and_unblock_refusals(call) -> None:
    items = [item("001", "done"), item("002", "blocked")]
    before = copy.deepcopy(items)
    with pytest.raises(BacklogError) as missing:
        call(items, "009", "x")
    assert missing.value.message == "Item not found: 009"
    with pytest.raises(BacklogError) as not_blocked:
        call(items, "001", "x")
    assert not_blocked.value.message == "Item 001 is not blocked (status: done)"
    assert items == before


def test_unblock_all_keeps_answers_and_clears_kinds() -> None:
    items = [item("001", "blocked", deferred=True, blockedReason="timeout"),
             item("002", "pending"),
             item("003", "blocked", needsHuman=True, humanAnswer="earlier")]
    assert model.unblock_items(items, None) == ["001", "003"]
    assert [i["status"] for i in items] == ["pending"] * 3
    assert items[0]["deferred"] is False and "blockedReason" not in items[0]
    assert items[2]["humanAnswer"] == "earlier" and items[2]["needsHuman"] is False
    assert model.unblock_items(items, None) == []


# --- selection and ids ------------------------------------------------------------------------


def test_select_next_order_and_dependencies() -> None:
    items = [item("010", priority=2), item("002", priority=2), item("003", priority=1,
             dependsOn=["004"]), item("004", "in_progress"), item("9999", priority=3)]
    assert model.select_next(items)["id"] == "002"  # 003 waits on 004; "002" < "010"
    items[3] = items[3].with_changes(status="done")
    assert model.select_next(items)["id"] == "003"
    assert [i["id"] for i in model.selectable_items(items)] == ["003", "002", "010", "9999"]
    assert model.select_next([item("001", "blocked")]) is None
    assert model.select_next([]) is None


def test_select_next_numeric_order_and_external_dependencies() -> None:
    items = [item("1000"), item("999"), item("005", dependsOn=["777"])]
    # "777" is not in this backlog: ignored for selection; 005 < 999 < 1000 numerically.
    assert [i["id"] for i in model.selectable_items(items)] == ["005", "999", "1000"]


def test_select_next_is_the_first_selectable_item_on_random_backlogs() -> None:
    """The one-pass selection agrees with the sorted rule on every shape of backlog:
    priorities missing or tied, ids of mixed widths, dependencies inside and outside."""
    rng = random.Random(17)
    for _ in range(2000):
        ids = list(dict.fromkeys(str(rng.choice([1, 2, 3, 10, 11, 100, 999, 1000]))
                                 .zfill(rng.choice([3, 4])) for _ in range(rng.randint(0, 12))))
        items = []
        for item_id in ids:
            fields: dict = {"id": item_id, "status": rng.choice(
                ["pending", "pending", "done", "blocked", "in_progress"])}
            if rng.random() < 0.7:
                fields["priority"] = rng.randint(1, 4)
            if rng.random() < 0.4:
                fields["dependsOn"] = rng.sample([*ids, "0777"], k=rng.randint(0, 2))
            items.append(Item.from_json(fields))
        ready = model.selectable_items(items)
        assert model.select_next(items) is (ready[0] if ready else None), items


def test_next_id() -> None:
    assert model.next_id([]) == "001"
    assert model.next_id([item("001"), item("007"), item("003")]) == "008"
    assert model.next_id([item("0042")]) == "0043"
    assert model.next_id([item("999")]) == "1000"


def test_new_item_and_edit_refuse_cycles_and_unknowns_atomically() -> None:
    items = [item("001"), item("002", dependsOn=["001"])]
    created = model.new_item(items, {"title": "third", "depends_on": ["002"], "priority": 1})
    assert created["id"] == "003" and list(created)[:4] == ["id", "type", "priority", "title"]
    before = copy.deepcopy(items)
    with pytest.raises(BacklogError, match=r"item 001: dependency cycle 001 → 003 → 002 → 001"):
        model.edit_item(items, "001", {"depends_on": ["003"]}, now=NOW)
    with pytest.raises(BacklogError, match="item 001: depends on unknown item 404"):
        model.edit_item(items, "001", {"depends_on": ["404"], "title": "renamed"}, now=NOW)
    with pytest.raises(BacklogError, match="item 001: depends on itself"):
        model.edit_item(items, "001", {"depends_on": ["001"]}, now=NOW)
    with pytest.raises(BacklogError, match="illegal status transition pending → done"):
        model.edit_item(items, "001", {"status": "done", "title": "renamed"}, now=NOW)
    with pytest.raises(BacklogError, match="depends on unknown item 404"):
        model.new_item(items, {"title": "x", "depends_on": ["404"]})
    assert items == before


def test_an_existing_cycle_does_not_block_unrelated_edits() -> None:
    items = [item("001", dependsOn=["002"]), item("002", dependsOn=["001"]), item("003")]
    model.edit_item(items, "003", {"title": "still editable"}, now=NOW)
    assert items[2]["title"] == "still editable"
