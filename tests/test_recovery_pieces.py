"""Pure pieces of recover: questions, scripted answers, the gate and the ladder."""

from __future__ import annotations

import json
from pathlib import Path

import builders
import pytest

from git_forge.backlog.item import Item
from git_forge.errors import UsageError
from git_forge.loop.state import RunState
from git_forge.recovery import answers
from git_forge.recovery.answers import CANCEL, DEFER, Choice
from git_forge.recovery.outcome import Gate, exit_code, next_command, select_outcome
from git_forge.recovery.questions import build_questions, merge_clusters


def key(item_id: str) -> tuple:
    return (0, int(item_id)) if item_id.isdigit() else (1, item_id)


CLUSTERS = [
    {"clusterId": "c3", "memberIds": ["3", "4"], "memberReasons": ["db? sqlite", "db? pg"],
     "sharedTokens": ["db"], "gatedIds": ["5", "7"], "gatedCount": 2},
    {"clusterId": "c6", "memberIds": ["6"], "memberReasons": ["no creds"], "sharedTokens": [],
     "gatedIds": [], "gatedCount": 0},
    {"clusterId": "c8", "memberIds": ["8"], "memberReasons": ["api key?"], "sharedTokens": [],
     "gatedIds": ["9"], "gatedCount": 1},
]
ITEMS = [Item({"id": i, "status": "blocked", "needsHuman": i != "6"})
         for i in ("3", "4", "6", "8")]


def test_questions_name_members_and_blast_radius() -> None:
    questions = build_questions(ITEMS, CLUSTERS, item_count=16)
    assert [(q.id, q.kind, q.item_ids) for q in questions] == [
        ("c3", "cluster", ("3", "4")), ("c6", "item", ("6",)), ("c8", "item", ("8",))]
    cluster = questions[0]
    assert "Items 3 and 4 are blocked on the same decision" in cluster.text
    assert "This one decision gates 2 of 16 backlog items (items 5, 7). Answer it once." in (
        cluster.text)
    assert questions[1].text == "Item 6 is blocked: no creds\nIt gates no other backlog item."
    assert questions[2].text.startswith("Item 8 needs a decision: api key?")
    assert "gates 1 of 16 backlog items (item 9)" in questions[2].text
    assert questions[0].to_json()["gatedCount"] == 2


def test_merging_clusters_unions_members_and_gated_sets() -> None:
    merged = merge_clusters(CLUSTERS, [["c8", "c3"]], key)
    assert [c["clusterId"] for c in merged] == ["c3", "c6"]
    assert merged[0]["memberIds"] == ["3", "4", "8"]
    assert merged[0]["memberReasons"] == ["db? sqlite", "db? pg", "api key?"]
    assert merged[0]["gatedIds"] == ["5", "7", "9"]
    with pytest.raises(UsageError, match="no cluster c99"):
        merge_clusters(CLUSTERS, [["c3", "c99"]], key)


def test_flags_and_files(tmp_path: Path) -> None:
    assert answers.parse_flags(["3=use SQLite", " 8 = x=y "], ["6"]) == {
        "3": Choice("answer", "use SQLite"), "8": Choice("answer", "x=y"), "6": DEFER}
    for bad in (["3"], ["=x"], ["3= "]):
        with pytest.raises(UsageError):
            answers.parse_flags(bad, [])
    yaml_file = tmp_path / "a.yaml"
    yaml_file.write_text("c3: Use SQLite\n003: defer\n")
    assert answers.load_file(yaml_file) == {"c3": Choice("answer", "Use SQLite"),
                                            "003": DEFER}
    yaml_file.write_text("003: defer\n8: cancel\n")
    assert answers.load_file(yaml_file) == {"003": DEFER, "8": CANCEL}
    yaml_file.write_text("c3: Use SQLite\n8: cancel\n")  # cancel would drop the answer
    with pytest.raises(UsageError, match="8: cancel defers every later question"):
        answers.load_file(yaml_file)
    json_file = tmp_path / "a.json"
    json_file.write_text(json.dumps({"6": "retry later"}))
    assert answers.load_file(json_file) == {"6": Choice("answer", "retry later")}
    for content in ("- a\n- b\n", "c3: [1]\n", ":\n  - : ["):
        json_file.write_text(content)
        with pytest.raises(UsageError):
            answers.load_file(json_file)
    with pytest.raises(UsageError):
        answers.load_file(tmp_path / "missing.yaml")


def test_an_answers_file_is_read_as_the_text_written(tmp_path: Path) -> None:
    """YAML 1.1 reads 010 as the octal 8, 0x10 as 16, 1:20 as 80 and yes as true: an
    answers file's keys and values are the words written, so 010 names item 010."""
    yaml_file = tmp_path / "a.yaml"
    yaml_file.write_text("010: Use SQLite\n0x10: yes\n1:20: 42\n")
    assert answers.load_file(yaml_file) == {
        "010": Choice("answer", "Use SQLite"), "0x10": Choice("answer", "yes"),
        "1:20": Choice("answer", "42")}
    for empty in ("~", "null", "NULL", ""):  # YAML's empty value answers nothing
        yaml_file.write_text(f"c011: {empty}\n")
        with pytest.raises(UsageError, match="the answer for c011 must be text"):
            answers.load_file(yaml_file)
    yaml_file.write_text("!!int 10: Use SQLite\n")  # a tag says otherwise: no id as written
    with pytest.raises(UsageError, match="the key 10 is not an item or question id"):
        answers.load_file(yaml_file)


def test_normalise_maps_yaml_integers_and_refuses_unknown_ids() -> None:
    items = [Item({"id": i, "status": "blocked"}) for i in ("003", "004", "006")]
    clusters = [{"clusterId": "c003", "memberIds": ["003", "004"], "memberReasons": ["", ""],
                 "gatedIds": []},
                {"clusterId": "c006", "memberIds": ["006"], "memberReasons": [""],
                 "gatedIds": []}]
    questions = build_questions(items, clusters, item_count=3)
    assert answers.normalise({"3": DEFER, "c003": CANCEL, "c6": DEFER, "006": CANCEL},
                             questions) == {"003": DEFER, "c003": CANCEL, "c006": DEFER,
                                            "006": CANCEL}
    with pytest.raises(UsageError) as refused:
        answers.normalise({"099": DEFER}, questions)
    assert refused.value.message == (
        "no open question for 099 (questions: c003, c006; items: 003, 004, 006)")
    # A topology cluster merged into a bigger question still names its members.
    merged = build_questions(items, merge_clusters(clusters, [["c003", "c006"]], key),
                             item_count=3)
    assert [q.id for q in merged] == ["c003"]
    assert answers.normalise({"c006": Choice("answer", "x")}, merged) == {
        "006": Choice("answer", "x")}
    assert answers.normalise({"c003": DEFER}, merged) == {"c003": DEFER}


def test_match_id_and_merge_targets() -> None:
    from git_forge.backlog.model import AmbiguousId, match_id
    from git_forge.recovery.questions import merge_targets

    assert match_id("c3", ["c003", "003"]) == "c003"
    assert match_id("3", ["c003", "003"]) == "003"
    assert match_id("C006", ["c006"]) == "c006"
    with pytest.raises(AmbiguousId, match="3 could be any of 003, 03: write the id in full"):
        match_id("3", ["03", "003"])  # two items have that number
    with pytest.raises(UsageError):  # refused input, which a prompt asks again
        merge_targets(["3", "6"], [["03"], ["003"], ["006"]])
    assert match_id("c9", ["c003"]) is None and match_id("x", ["c003"]) is None
    groups = [["003", "004"], ["006"], ["008"]]
    assert merge_targets(["c003", "006"], groups) == [0, 1]
    assert merge_targets(["4", "c8", "003"], groups) == [0, 2]
    with pytest.raises(UsageError, match=r"there is no question c9 \(the questions are "
                                         r"c003, c006, c008"):
        merge_targets(["c003", "c9"], groups)
    with pytest.raises(UsageError, match="two or more different questions"):
        merge_targets(["c003", "004"], groups)


def test_resolve_cluster_item_and_cancel_rules() -> None:
    questions = build_questions(ITEMS, CLUSTERS, item_count=16)
    got = [(c.question.id, c.item_ids, c.choice.kind, c.cluster_id)
           for c in answers.resolve(questions, {"c3": Choice("answer", "SQLite")})]
    assert got == [("c3", ("3", "4"), "answer", "c3"), ("c6", ("6",), "defer", None),
                   ("c8", ("8",), "defer", None)]
    # An item answered on its own: no clusterId, the other member is deferred.
    got = [(c.item_ids, c.choice.kind, c.cluster_id)
           for c in answers.resolve(questions, {"4": Choice("answer", "PG")})]
    assert got[:2] == [(("3",), "defer", None), (("4",), "answer", None)]
    # An item's own choice wins over its question's, which covers the rest in one piece.
    got = [(c.item_ids, c.choice.text, c.cluster_id) for c in answers.resolve(
        questions, {"c3": Choice("answer", "SQLite"), "4": Choice("answer", "PG")})]
    assert got[:2] == [(("3",), "SQLite", None), (("4",), "PG", None)]
    # Cancel-early: that question and every later one are deferred (cancel).
    got = [(c.item_ids, c.choice.kind)
           for c in answers.resolve(questions, {"6": CANCEL, "8": Choice("answer", "x")})]
    assert got == [(("3", "4"), "defer"), (("6",), "cancel"), (("8",), "cancel")]


def gate(**kw) -> Gate:
    base = {"unapplied_affected": (), "porcelain_clean": True, "all_moved": True,
            "affected": ("3",)}
    return Gate(**{**base, **kw})


def item(status: str, **kw) -> Item:
    return Item(builders.item("1", status, **kw))


def test_resolved_needs_every_check_and_a_nonempty_affected_set() -> None:
    assert select_outcome(gate(), [item("pending")], {"selectable": 1}, None).name == "resolved"
    for failing in (gate(unapplied_affected=("3",)), gate(porcelain_clean=False),
                    gate(items_left=("7",)), gate(all_moved=False), gate(affected=())):
        assert select_outcome(failing, [item("done")], {}, None).name == "complete"


@pytest.mark.parametrize(("items", "name"), [
    ([item("blocked", needsHuman=True), item("blocked")], "needs-human"),
    ([item("blocked"), item("blocked", deferred=True)], "blocked"),
    ([item("blocked", deferred=True), item("pending")], "deferred"),
    ([item("pending"), item("done")], "partial"),
    ([item("done")], "complete"),
])
def test_ladder(items: list[Item], name: str) -> None:
    assert select_outcome(gate(affected=()), items, {"selectable": 1}, None).name == name


def test_partial_causes() -> None:
    none = gate(affected=())
    at_limit = RunState(iteration=5, max_iterations=5)
    assert select_outcome(none, [item("pending")], {"selectable": 2}, at_limit).cause == (
        "iteration limit")
    starved = select_outcome(
        none, [item("pending")],
        {"selectable": 0, "starvation": {"starved": True,
                                         "blockingRoots": [{"id": "2", "gatedCount": 3}]}},
        at_limit)
    assert starved.cause == "dependency starvation"
    assert starved.details["blockingRoots"] == [{"id": "2", "gatedCount": 3}]
    assert select_outcome(none, [item("pending")], {"selectable": 2},
                          RunState(iteration=2, max_iterations=5)).cause != "iteration limit"


def test_exit_codes_and_next_commands() -> None:
    outcome = select_outcome(gate(), [item("pending")], {"selectable": 1}, None)
    assert (exit_code(outcome, True), next_command(outcome, True)) == (0, "git forge loop run")
    needs = select_outcome(gate(affected=()), [item("blocked", needsHuman=True)], {}, None)
    assert (exit_code(needs, False), next_command(needs, False)) == (3, "git forge recover")
    partial = select_outcome(gate(affected=()), [item("pending")], {"selectable": 1}, None)
    assert (exit_code(partial, False), next_command(partial, False)) == (6, "git forge reconcile")
