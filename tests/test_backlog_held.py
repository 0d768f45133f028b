"""The loop's held backlog: the store's bytes and refusals, other writers never lost."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import waiting

from git_forge.backlog import model
from git_forge.backlog.errors import BacklogError
from git_forge.backlog.held import HeldBacklog
from git_forge.backlog.store import BacklogStore

ITEM = {"id": "001", "type": "feature", "priority": 2, "title": "Ünïcode — title \u2028 \x1b",
        "description": "", "acceptanceCriteria": ["a", "b"], "status": "pending",
        "completedAt": None, "dependsOn": [], "zExtra": {"nested": [1, 2.5, None, {}], "e": []},
        "aExtra": "kept"}


def write(directory: Path, items: list[dict], **top: object) -> BacklogStore:
    directory.mkdir(parents=True, exist_ok=True)
    document = {"schemaVersion": "1", "project": "demo", "topExtra": {"k": [True]}, **top,
                "description": "the project", "items": items}
    path = directory / "backlog.json"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return BacklogStore(path)


def items(count: int) -> list[dict]:
    return [{**ITEM, "id": f"{n:03d}", "dependsOn": [f"{n - 1:03d}"] if n > 1 else []}
            for n in range(1, count + 1)]


def test_a_held_change_writes_the_bytes_the_store_writes(tmp_path: Path) -> None:
    # the same changes through the store (a read, change and write per call) and held
    by_store = write(tmp_path / "a", items(5))
    held = HeldBacklog(write(tmp_path / "b", items(5)))
    held.load()
    for item_id, status in (("001", "in_progress"), ("002", "in_progress"), ("001", "pending"),
                            ("002", "pending"), ("005", "in_progress")):
        by_store.transition(item_id, status)
        held.transition(item_id, status)
        assert held.path.read_bytes() == by_store.path.read_bytes()
    raw = held.path.read_bytes()
    assert raw == (json.dumps(json.loads(raw), indent=2, ensure_ascii=False) + "\n").encode()
    assert held.get("005").status == "in_progress" and held.description() == "the project"
    assert [item.id for item in held.items()] == ["001", "002", "003", "004", "005"]


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_number_json_has_no_text_for_is_refused_never_written_back(
        tmp_path: Path, number: str) -> None:
    store = write(tmp_path, [{**ITEM, "zExtra": 0.5}])
    store.path.write_text(store.path.read_text().replace("0.5", number))
    before = store.path.read_bytes()
    with pytest.raises(BacklogError, match="not finite"):
        HeldBacklog(store).transition("001", "in_progress")
    with pytest.raises(BacklogError, match="not finite"):
        store.load()
    assert store.path.read_bytes() == before


def test_another_writers_change_is_read_before_a_held_change(tmp_path: Path) -> None:
    store = write(tmp_path, items(2))
    held = HeldBacklog(store)
    held.load()
    BacklogStore(store.path).add({"title": "added from another terminal"})
    held.transition("001", "in_progress")
    document = json.loads(store.path.read_bytes())
    assert [item["id"] for item in document["items"]] == ["001", "002", "003"]
    assert document["items"][0]["status"] == "in_progress"
    assert held.get("003").title == "added from another terminal"


def test_an_in_place_edit_is_seen(tmp_path: Path) -> None:
    store = write(tmp_path, items(2))
    held = HeldBacklog(store)
    held.load()
    time.sleep(0.05)  # past the file system's timestamp granularity
    raw = store.path.read_bytes()
    with open(store.path, "r+b") as file:  # same inode, same size, one field changed
        file.write(raw.replace(b'"kept"', b'"KEPT"', 1))
    assert held.get("001")["aExtra"] == "KEPT"


@pytest.mark.parametrize(("change", "message"), [
    (lambda h: h.transition("002", "done"), "illegal status transition pending → done"),
    (lambda h: h.transition("009", "in_progress"), "Item not found: 009"),
    (lambda h: h.transition("001", "blocked", blocked_reason=3), "invalid blockedReason 3"),
    (lambda h: h.transition("001", "in_progress", color="red"), "cannot set field(s): color"),
])
def test_a_refused_change_changes_neither_file_nor_memory(tmp_path: Path, change,
                                                          message: str) -> None:
    store = write(tmp_path, items(2))
    held = HeldBacklog(store)
    held.load()
    before = store.path.read_bytes()
    with pytest.raises(BacklogError) as refused:
        change(held)
    assert message in refused.value.message and refused.value.exit_code == 2
    assert store.path.read_bytes() == before
    assert [item.status for item in held.items()] == ["pending", "pending"]


@pytest.mark.parametrize("damage", [b"{ not json", b"null\n", b'{"items": 3}\n'])
def test_a_file_another_writer_broke_is_refused_never_overwritten(tmp_path: Path,
                                                                  damage: bytes) -> None:
    store = write(tmp_path, items(2))
    held = HeldBacklog(store)
    held.load()
    store.path.write_bytes(damage)
    with pytest.raises(BacklogError):
        held.transition("001", "in_progress")
    assert store.path.read_bytes() == damage


def test_a_deleted_file_is_refused(tmp_path: Path) -> None:
    store = write(tmp_path, items(1))
    held = HeldBacklog(store)
    held.load()
    store.path.unlink()
    with pytest.raises(BacklogError, match="no backlog at"):
        held.get("001")
    assert not store.path.exists()


def test_writers_in_other_processes_lose_nothing(tmp_path: Path) -> None:
    """Three processes add items through the store while this one makes held changes:
    every add and every change is in the file at the end."""
    store = write(tmp_path, items(30))
    held = HeldBacklog(store)
    held.load()
    script = tmp_path / "adder.py"
    script.write_text(
        "import sys\n"
        "from pathlib import Path\n"
        "from git_forge.backlog.store import BacklogStore\n"
        "store = BacklogStore(Path(sys.argv[1]))\n"
        "for n in range(15):\n"
        "    store.add({'title': f'{sys.argv[2]} {n}'})\n")
    adders = [subprocess.Popen([sys.executable, str(script), str(store.path), f"adder{k}"])
              for k in range(3)]
    try:
        for n in range(1, 31):
            held.transition(f"{n:03d}", "in_progress")
    finally:
        for adder in adders:
            assert waiting.wait_process(adder, timeout=60) == 0
    document = json.loads(store.path.read_bytes())
    titles = {item["title"] for item in document["items"]}
    assert {f"adder{k} {n}" for k in range(3) for n in range(15)} <= titles
    assert len(document["items"]) == 30 + 45
    assert all(item["status"] == "in_progress" for item in document["items"][:30])
    held.close()


def test_a_file_laid_out_otherwise_is_written_as_the_store_writes_it(tmp_path: Path) -> None:
    by_store, held_store = write(tmp_path / "a", items(4)), write(tmp_path / "b", items(4))
    for store in (by_store, held_store):  # one line, as another tool might write it
        store.path.write_text(json.dumps(json.loads(store.path.read_bytes())), encoding="utf-8")
    held = HeldBacklog(held_store)
    held.transition("003", "in_progress")
    by_store.transition("003", "in_progress")
    assert held_store.path.read_bytes() == by_store.path.read_bytes()


def test_an_items_own_layout_is_kept_where_the_loop_did_not_change_it(tmp_path: Path) -> None:
    store = write(tmp_path, items(3))
    raw = store.path.read_bytes()
    edited = raw.replace(b'"aExtra": "kept"', b'"aExtra" :"kept"', 1)  # a hand edit, item 001
    store.path.write_bytes(edited)
    held = HeldBacklog(store)
    held.transition("002", "in_progress")
    written = store.path.read_bytes()
    assert b'"aExtra" :"kept"' in written  # 001 as the human left it
    expected = json.loads(edited)
    expected["items"][1]["status"] = "in_progress"
    assert json.loads(written) == expected


def test_selection_follows_transitions_and_other_writers(tmp_path: Path) -> None:
    rows = [{**ITEM, "id": f"{n:03d}", "priority": 1 + n % 3,
             "dependsOn": ["002"] if n in (4, 7) else []} for n in range(1, 10)]
    store = write(tmp_path, rows)
    held = HeldBacklog(store)
    taken = []
    while (item := held.select_next()) is not None:
        assert item is model.select_next(held.items())
        taken.append(item.id)
        held.transition(item.id, "in_progress")
        held.transition(item.id, "done")
        if item.id == "003":  # another terminal raises 008's priority from 3 to 1
            BacklogStore(store.path).edit("008", {"priority": 1})
    # priority 1 first (008 raised), then 2 — 004 and 007 wait for 002 — then 3
    assert taken == ["003", "006", "008", "009", "001", "002", "004", "007", "005"]
