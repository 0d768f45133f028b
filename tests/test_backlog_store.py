"""backlog.json on disk: format, unknown fields, refusals that write nothing, locking."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import waiting

from git_forge.backlog.errors import BacklogError
from git_forge.backlog.store import BacklogStore, new_document

ITEM = {"id": "001", "type": "feature", "priority": 2, "title": "Ünïcode — title",
        "description": "", "acceptanceCriteria": [], "status": "blocked",
        "completedAt": None, "dependsOn": [], "blockedReason": "which db?", "needsHuman": True,
        "zExtra": {"nested": [1, 2]}, "aExtra": "kept"}


@pytest.fixture
def store(tmp_path: Path) -> BacklogStore:
    directory = tmp_path / ".forge"
    directory.mkdir()
    document = {"schemaVersion": "1", "project": "demo", "topExtra": True, "description": "",
                "items": [ITEM, {**ITEM, "id": "002", "status": "pending", "needsHuman": False,
                                 "dependsOn": ["001"]}]}
    (directory / "backlog.json").write_text(json.dumps(document, indent=2, ensure_ascii=False)
                                            + "\n", encoding="utf-8")
    return BacklogStore.in_dir(directory)


def test_rewrite_keeps_unknown_fields_key_order_and_format(store: BacklogStore) -> None:
    store.answer("001", "postgres")
    raw = store.path.read_bytes()
    document = json.loads(raw)
    assert raw == (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()
    assert list(document) == ["schemaVersion", "project", "topExtra", "description", "items"]
    first = document["items"][0]
    assert list(first)[:13] == [
        "id", "type", "priority", "title", "description", "acceptanceCriteria", "status",
        "completedAt", "dependsOn", "needsHuman", "zExtra", "aExtra", "humanAnswer"]
    assert first["zExtra"] == {"nested": [1, 2]} and first["aExtra"] == "kept"
    assert "Ünïcode — title" in raw.decode("utf-8")


def test_answer_and_unblock_results(store: BacklogStore) -> None:
    assert store.answer("001", "use postgres") == {"answered": "001", "status": "pending"}
    item = store.get("001")
    assert item["humanAnswer"] == "use postgres" and item["needsHuman"] is False
    assert "blockedReason" not in item and item["deferred"] is False
    assert store.unblock() == {"unblockedCount": 0, "unblockedIds": []}


@pytest.mark.parametrize(("call", "message"), [
    (lambda s: s.answer("009", "x"), "Item not found: 009"),
    (lambda s: s.answer("002", "x"), "Item 002 is not blocked (status: pending)"),
    (lambda s: s.unblock("002"), "Item 002 is not blocked (status: pending)"),
    (lambda s: s.unblock("404"), "Item not found: 404"),
    (lambda s: s.answer("001", "   "), "the answer text may not be empty"),
    (lambda s: s.answer("001", "ghp_abcdefghijklmnopqrstuvwxyz0123"), "looks like a credential"),
    (lambda s: s.transition("002", "done"), "illegal status transition pending → done"),
    (lambda s: s.transition("001", "blocked", blocked_reason=3),
     "illegal status transition blocked → blocked"),
    (lambda s: s.add({"title": "x", "depends_on": ["404"]}), "depends on unknown item 404"),
    (lambda s: s.edit("001", {"depends_on": ["002"]}), "dependency cycle 001 → 002 → 001"),
    (lambda s: s.edit("001", {"priority": 7}), "invalid priority 7"),
])
def test_refusals_write_nothing(store: BacklogStore, call, message: str) -> None:
    before = store.path.read_bytes()
    with pytest.raises(BacklogError) as refused:
        call(store)
    assert message in refused.value.message
    assert refused.value.exit_code == 2
    assert store.path.read_bytes() == before
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["backlog.json"]  # no lock


def test_a_change_that_leaves_the_backlog_invalid_is_not_written(store: BacklogStore) -> None:
    before = store.path.read_bytes()
    with pytest.raises(BacklogError, match="invalid blockedReason 3"):
        store.transition("002", "blocked", blocked_reason=3)
    assert store.path.read_bytes() == before


def test_unchanged_backlog_is_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "backlog.json"
    hand_written = '{"schemaVersion":"1","project":"p","description":"","items":[]}'
    path.write_text(hand_written)
    assert BacklogStore(path).unblock() == {"unblockedCount": 0, "unblockedIds": []}
    assert path.read_text() == hand_written


@pytest.mark.parametrize(("content", "message"), [
    (b"{not json", "is corrupt (not valid JSON"),
    (b"null", "is corrupt (it holds JSON null)"),
    (b'{"items": [{"id": "1"}]}', "is invalid (items[0]: missing required field"),
    (b'{"items": [{"id": "001", "type": "bug", "priority": 1, "title": "t", '
     b'"status": "pending", "dependsOn": ["002"]}]}',
     "is invalid (item 001: depends on unknown item 002)"),
])
def test_corrupt_or_invalid_files_are_refused_and_never_rewritten(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "backlog.json"
    path.write_bytes(content)
    store = BacklogStore(path)
    for call in (store.items, store.unblock, lambda: store.add({"title": "x"}),
                 lambda: store.answer("001", "x")):
        with pytest.raises(BacklogError) as refused:
            call()
        assert message in refused.value.message and str(path) in refused.value.message
        assert path.read_bytes() == content


def test_missing_backlog(tmp_path: Path) -> None:
    store = BacklogStore.in_dir(tmp_path / "nowhere")
    for call in (store.items, store.unblock):
        with pytest.raises(BacklogError, match=f"no backlog at {store.path}"):
            call()
    assert not (tmp_path / "nowhere").exists()


def test_transition_sequence_for_the_loop(store: BacklogStore) -> None:
    store.unblock("001")
    store.transition("001", "in_progress")
    done = store.transition("001", "done", completed_at="2026-03-01T12:00:00Z")
    assert done["status"] == "done" and done["completedAt"] == "2026-03-01T12:00:00Z"
    store.transition("002", "in_progress")
    blocked = store.transition("002", "blocked", blocked_reason="No signal after 3 attempts "
                               "(deferred by runner)", deferred=True)
    assert blocked["deferred"] is True and blocked["needsHuman"] is False
    assert [i["status"] for i in store.items()] == ["done", "blocked"]


def test_add_gives_the_next_id(store: BacklogStore) -> None:
    added = store.add({"title": "third", "type": "chore", "priority": 4,
                       "acceptance_criteria": ["one"], "depends_on": ["001", "002"]})
    assert added["id"] == "003" and store.get("003") == added


def test_new_document_shape() -> None:
    assert new_document("repo") == {"schemaVersion": "1", "project": "repo",
                                    "description": "", "items": []}


def test_concurrent_adders_lose_nothing(tmp_path: Path) -> None:
    """Four processes adding ten items each: forty distinct ids, none lost."""
    path = tmp_path / "backlog.json"
    path.write_text(json.dumps(new_document("p")))
    script = (
        "import sys; from pathlib import Path; from git_forge.backlog.store import BacklogStore\n"
        "s = BacklogStore(Path(sys.argv[1]))\n"
        "for n in range(10): s.add({'title': f'{sys.argv[2]}-{n}'})\n"
    )
    workers = [subprocess.Popen([sys.executable, "-c", script, str(path), str(w)])
               for w in range(4)]
    assert [waiting.wait_process(w) for w in workers] == [0, 0, 0, 0]
    items = BacklogStore(path).items()
    assert sorted(i["id"] for i in items) == [f"{n:03d}" for n in range(1, 41)]
    assert len({i["title"] for i in items}) == 40


@pytest.fixture
def three_blocked(tmp_path: Path) -> BacklogStore:
    directory = tmp_path / ".forge"
    directory.mkdir()
    document = new_document("p")
    document["items"] = [{**ITEM, "id": item_id} for item_id in ("001", "002", "003")]
    (directory / "backlog.json").write_text(json.dumps(document, indent=2) + "\n")
    return BacklogStore.in_dir(directory)


def test_answer_all_makes_every_change_in_one_write(three_blocked: BacklogStore) -> None:
    inode = three_blocked.path.stat().st_ino
    done, refusal = three_blocked.answer_all([("001", "use postgres"), ("002", None),
                                              ("003", "use sqlite")])
    assert (done, refusal) == (["001", "002", "003"], None)
    items = {item["id"]: item for item in three_blocked.items()}
    assert items["001"]["humanAnswer"] == "use postgres" and items["001"]["status"] == "pending"
    assert "humanAnswer" not in items["002"] and items["002"]["status"] == "pending"
    assert items["003"]["humanAnswer"] == "use sqlite"
    assert three_blocked.path.stat().st_ino != inode  # replaced, atomically, once
    # The result is what the single calls would have written, byte for byte.
    directory = three_blocked.path.parent.parent / "single"
    directory.mkdir()
    single = BacklogStore.in_dir(directory)
    document = new_document("p")
    document["items"] = [{**ITEM, "id": item_id} for item_id in ("001", "002", "003")]
    single.path.write_text(json.dumps(document, indent=2) + "\n")
    single.answer("001", "use postgres")
    single.unblock("002")
    single.answer("003", "use sqlite")
    assert single.path.read_bytes() == three_blocked.path.read_bytes()


def test_a_snapshot_is_read_once_and_handed_back_while_the_bytes_stay_the_same(
    three_blocked: BacklogStore,
) -> None:
    seen = three_blocked.snapshot()
    assert three_blocked.snapshot(seen) is seen  # the same bytes: not parsed again
    wrote: list = []
    done, _ = three_blocked.answer_all([("001", "use postgres")], known=seen,
                                       wrote=wrote.append)
    assert done == ["001"] and len(wrote) == 1
    after = wrote[0]
    assert after.raw == three_blocked.path.read_bytes()
    assert after.document == json.loads(after.raw)  # what was written, as a reader parses it
    assert three_blocked.snapshot(after) is after
    # Another writer changes the file: the stale snapshot is not used, nothing is lost.
    BacklogStore(three_blocked.path).answer("002", "use sqlite")
    done, _ = three_blocked.answer_all([("003", "use redis")], known=after,
                                       wrote=wrote.append)
    items = {item["id"]: item for item in three_blocked.items()}
    assert [items[i]["humanAnswer"] for i in ("001", "002", "003")] == [
        "use postgres", "use sqlite", "use redis"]
    assert three_blocked.snapshot(after) is not after
    assert wrote[-1].document == json.loads(three_blocked.path.read_bytes())


@pytest.mark.parametrize(("changes", "message"), [
    ([("001", "ok"), ("002", "   "), ("003", "ok")], "the answer text may not be empty"),
    ([("001", "ok"), ("002", "ghp_abcdefghijklmnopqrstuvwxyz0123"), ("003", "ok")],
     "looks like a credential"),
    ([("001", "ok"), ("001", "again"), ("003", "ok")], "Item 001 is not blocked"),
    ([("001", None), ("404", None), ("003", None)], "Item not found: 404"),
])
def test_answer_all_keeps_the_changes_before_a_refusal_and_stops(
    three_blocked: BacklogStore, changes: list, message: str
) -> None:
    done, refusal = three_blocked.answer_all(changes)
    assert done == ["001"]
    assert refusal is not None and message in refusal.message and refusal.exit_code == 2
    status = {item["id"]: item["status"] for item in three_blocked.items()}
    assert status == {"001": "pending", "002": "blocked", "003": "blocked"}


def test_answer_all_refused_at_once_writes_nothing(three_blocked: BacklogStore) -> None:
    before = three_blocked.path.read_bytes()
    done, refusal = three_blocked.answer_all([("009", "x"), ("001", "y")])
    assert done == [] and refusal is not None and "Item not found: 009" in refusal.message
    assert three_blocked.path.read_bytes() == before
    assert sorted(p.name for p in three_blocked.path.parent.iterdir()) == ["backlog.json"]


def test_bytes_found_valid_are_not_checked_again_but_any_change_is(store: BacklogStore,
                                                                   monkeypatch) -> None:
    """The loop reads its backlog several times an iteration: the same bytes skip the
    checks; bytes changed by anyone — a hand edit of one byte — are checked again."""
    from git_forge.backlog import model

    checks: list[int] = []
    real = model.backlog_problem
    monkeypatch.setattr(model, "backlog_problem",
                        lambda document: (checks.append(1), real(document))[1])
    store.items()
    store.items()
    store.load()
    assert len(checks) <= 1  # once, or not at all when the fixture's read already did
    raw = store.path.read_bytes()
    edited = raw.replace(b'"priority": 2', b'"priority": 9', 1)
    assert edited != raw
    store.path.write_bytes(edited)
    with pytest.raises(BacklogError, match="invalid priority 9"):
        store.items()
    store.path.write_bytes(raw)
    store.items()
    assert store.items()[0]["priority"] == 2


def test_a_change_checks_the_fields_of_the_items_it_changed_and_every_rule_across_items(
) -> None:
    from git_forge.backlog import model

    valid = new_document("p")
    valid["items"] = [{**ITEM, "id": item_id} for item_id in ("001", "002")]
    assert model.backlog_problem(valid) is None
    # A changed item is checked field by field; the one shared with ``valid`` is not.
    changed = {**valid, "items": [valid["items"][0], {**ITEM, "id": "002", "title": ""}]}
    assert "item 002: invalid title" in (model.backlog_problem(changed, valid=valid) or "")
    # A copy of an item is not the validated object: it is checked.
    copied = {**valid, "items": [dict(valid["items"][0], status="bogus"), valid["items"][1]]}
    assert "invalid status" in (model.backlog_problem(copied, valid=valid) or "")
    # Rules across items still see the shared ones.
    dangling = {**valid, "items": [*valid["items"], {**ITEM, "id": "003", "dependsOn": ["009"]}]}
    assert "depends on unknown item 009" in (model.backlog_problem(dangling, valid=valid) or "")
    twice = {**valid, "items": [*valid["items"], valid["items"][0]]}
    assert model.backlog_problem(twice, valid=valid) == "duplicate item id 001"


def test_a_change_is_checked_once_and_its_written_bytes_are_trusted(store: BacklogStore,
                                                                     monkeypatch) -> None:
    from git_forge.backlog import model

    store.items()  # the fixture's bytes, found valid
    checks: list[int] = []
    real = model.backlog_problem
    monkeypatch.setattr(model, "backlog_problem",
                        lambda document, **known: (checks.append(1), real(document, **known))[1])
    store.transition("002", "in_progress")
    assert len(checks) == 1  # the changed document, before it is written
    assert store.get("002")["status"] == "in_progress"
    store.items()
    assert len(checks) == 1  # the bytes just written were that document
