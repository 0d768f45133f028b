"""backlog.json on disk: format, unknown fields, refusals that write nothing, locking."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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
    (lambda s: s.transition("001", "blocked", blockedReason=3),
     "illegal status transition blocked → blocked"),
    (lambda s: s.add({"title": "x", "dependsOn": ["404"]}), "depends on unknown item 404"),
    (lambda s: s.edit("001", {"dependsOn": ["002"]}), "dependency cycle 001 → 002 → 001"),
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
        store.transition("002", "blocked", blockedReason=3)
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
    done = store.transition("001", "done", completedAt="2026-03-01T12:00:00Z")
    assert done["status"] == "done" and done["completedAt"] == "2026-03-01T12:00:00Z"
    store.transition("002", "in_progress")
    blocked = store.transition("002", "blocked", blockedReason="No signal after 3 attempts "
                               "(deferred by runner)", deferred=True)
    assert blocked["deferred"] is True and blocked["needsHuman"] is False
    assert [i["status"] for i in store.items()] == ["done", "blocked"]


def test_add_gives_the_next_id(store: BacklogStore) -> None:
    added = store.add({"title": "third", "type": "chore", "priority": 4,
                       "acceptanceCriteria": ["one"], "dependsOn": ["001", "002"]})
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
    assert [w.wait(timeout=60) for w in workers] == [0, 0, 0, 0]
    items = BacklogStore(path).items()
    assert sorted(i["id"] for i in items) == [f"{n:03d}" for n in range(1, 41)]
    assert len({i["title"] for i in items}) == 40
