"""ManifestStore: validation, path safety, the save-time update check, corrupt files."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from helpers import snapshot

from git_forge.supervisor.handles import mint_handle
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import (
    Command,
    Cursors,
    EventIds,
    Manifest,
    ManifestStore,
    Origin,
    Owner,
    Result,
    new_event_id,
)

CREATED = "2030-01-01T00:00:00.000Z"
STARTED = "2030-01-01T00:00:01.000Z"
FINISHED = "2030-01-01T00:00:05.000Z"


def origin(item_id: str, iteration: int) -> Origin:
    return Origin.of({"item_id": item_id, "iteration": iteration})


ORIGIN = origin("007", 3)


def starting(handle: str | None = None) -> Manifest:
    return Manifest(
        handle=handle or mint_handle(), owner=Owner("run-1"), origin=ORIGIN,
        command=Command(("agent", "--flag"), "/work"), state="starting", created_at=CREATED,
        events=EventIds.mint(),
    )


def running(base: Manifest, total: int = 0, retained: int = 0) -> Manifest:
    return base.evolve(state="running", started_at=STARTED, cursors=Cursors(total, retained))


def exited(base: Manifest, code: int = 0, total: int = 10) -> Manifest:
    return base.evolve(state="exited", started_at=STARTED, finished_at=FINISHED,
                       result=Result(code, "exited"), cursors=Cursors(total, 0))


@pytest.fixture
def store(tmp_path: Path) -> ManifestStore:
    return ManifestStore(tmp_path / "proc")


def code_of(excinfo: pytest.ExceptionInfo) -> str:
    return excinfo.value.code


def test_round_trip_and_on_disk_form(store: ManifestStore) -> None:
    manifest = starting()
    store.save(manifest)
    path = store.root / f"{manifest.handle}.manifest.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    raw = path.read_bytes()
    assert b"\n" not in raw.rstrip(b"\n") and b": " not in raw  # compact
    document = json.loads(raw)
    assert list(document) == [
        "version", "handle", "owner", "origin", "command", "state", "created_at", "cursors",
        "result", "events", "completion_published",
    ]
    assert document["owner"] == {"run_id": "run-1"}
    assert document["origin"] == {"item_id": "007", "iteration": 3}
    assert document["cursors"] == {"total_bytes": 0, "retained_from": 0}
    assert set(document["events"]) == {"started", "completed", "lost", "command_id"}
    assert document["completion_published"] == 0
    assert store.load(manifest.handle) == manifest
    later = running(manifest)
    store.save(later)
    assert json.loads(path.read_bytes())["started_at"] == STARTED
    assert store.scan() == [manifest.handle]


@pytest.mark.parametrize("state", ["starting", "running", "exited", "lost_on_restore"])
def test_the_first_save_may_be_in_any_valid_state(store: ManifestStore, state: str) -> None:
    manifest = {
        "starting": starting(), "running": running(starting()), "exited": exited(starting()),
        "lost_on_restore": starting().evolve(
            state="lost_on_restore", finished_at=FINISHED, result=Result(None, "lost-on-restore")
        ),
    }[state]
    store.save(manifest)
    assert store.load(manifest.handle).state == state


INVALID = {
    "finished_at while running": lambda m: running(m).evolve(finished_at=FINISHED),
    "terminal without finished_at": lambda m: exited(m).evolve(finished_at=None),
    "finished before created": lambda m: exited(m).evolve(finished_at="2029-12-31T23:59:59Z"),
    "exit code when not exited": lambda m: running(m).evolve(result=Result(0, None)),
    "exited without exit code": lambda m: exited(m).evolve(result=Result(None, "exited")),
    "wrong reason": lambda m: exited(m).evolve(result=Result(0, "timed_out")),
    "reason while running": lambda m: running(m).evolve(result=Result(None, "exited")),
    "negative cursor": lambda m: running(m).evolve(cursors=Cursors(-1, 0)),
    "retained beyond total": lambda m: running(m).evolve(cursors=Cursors(5, 6)),
    "unknown state": lambda m: m.evolve(state="done"),
    "empty argv": lambda m: m.evolve(command=Command((), "/")),
    "empty run id": lambda m: m.evolve(owner=Owner("")),
    "bad timestamp": lambda m: m.evolve(created_at="yesterday"),
    "running without started_at": lambda m: m.evolve(state="running"),
    "event id not a UUID": lambda m: m.evolve(events=m.events._replace(lost="x")),
    "negative marker": lambda m: m.evolve(completion_published=-1),
    "bad handle": lambda m: m.evolve(handle="../../etc/passwd"),
}


@pytest.mark.parametrize("rule", sorted(INVALID))
def test_validation_refuses_and_writes_nothing(store: ManifestStore, rule: str) -> None:
    base = starting()
    with pytest.raises(ProcessError) as raised:
        store.save(INVALID[rule](base))
    assert code_of(raised) == "invalid_arguments"
    assert not store.root.exists() or snapshot(store.root) == {}


def _changes(m: Manifest) -> dict:
    """Each rule of the update check: (first save, second save, refused code or None)."""
    r = running(m, 100, 0)
    e = exited(m, 0, 100)
    other_event = new_event_id()
    return {
        "owner changes": (r, r.evolve(owner=Owner("run-2")), "manifest_conflict"),
        "origin changes": (r, r.evolve(origin=origin("008", 3)), "manifest_conflict"),
        "iteration changes": (r, r.evolve(origin=origin("007", 4)), "manifest_conflict"),
        "command changes": (r, r.evolve(command=Command(("other",), "/work")),
                            "manifest_conflict"),
        "running -> starting": (r, m, "invalid_transition"),
        "exited -> running": (e, r.evolve(cursors=Cursors(100, 0)), "invalid_transition"),
        "exited -> killed": (e, e.evolve(state="killed", result=Result(None, "killed")),
                             "invalid_transition"),
        "starting -> exited": (m, e, "invalid_transition"),
        "exit code changes": (e, e.evolve(result=Result(1, "exited")), "manifest_conflict"),
        "finished_at changes": (e, e.evolve(finished_at="2030-01-01T00:00:06.000Z"),
                                "manifest_conflict"),
        "terminal cursors change": (e, e.evolve(cursors=Cursors(200, 0)), "manifest_conflict"),
        "total moves back": (r, running(m, 99, 0), "manifest_conflict"),
        "retained moves back": (running(m, 100, 50), running(m, 100, 40), "manifest_conflict"),
        "marker moves back": (e.evolve(completion_published=1), e, "manifest_conflict"),
        "event id replaced": (r, r.evolve(events=r.events._replace(completed=other_event)),
                              "manifest_conflict"),
        "event id removed": (r, r.evolve(events=r.events._replace(lost=None)),
                             "manifest_conflict"),
        # allowed updates
        "cursors move forward": (r, running(m, 200, 100), None),
        "running -> exited": (r, e, None),
        "starting -> running": (m, r, None),
        "starting -> failed": (m, m.evolve(state="failed", finished_at=FINISHED,
                                           result=Result(None, "failed")), None),
        "marker moves forward": (e, e.evolve(completion_published=1), None),
        "event id allocated": (
            m.evolve(events=m.events._replace(lost=None)), m, None,
        ),
        "same terminal manifest again": (e, e, None),
    }


RULES = sorted(_changes(starting()))


@pytest.mark.parametrize("rule", RULES)
def test_every_update_check_rule(store: ManifestStore, rule: str) -> None:
    first, second, refused = _changes(starting())[rule]
    store.save(first)
    path = store.root / f"{first.handle}.manifest.json"
    before = path.read_bytes()
    if refused is None:
        store.save(second)
        assert store.load(first.handle) == second
        return
    with pytest.raises(ProcessError) as raised:
        store.save(second)
    assert code_of(raised) == refused
    assert path.read_bytes() == before  # the stored manifest is untouched


@pytest.mark.parametrize("content", [b"{not json", b"", b"null", b"[]", b'{"version": 1}'])
def test_a_corrupt_manifest_is_refused_and_never_overwritten(
    store: ManifestStore, content: bytes
) -> None:
    manifest = starting()
    store.root.mkdir(parents=True)
    path = store.root / f"{manifest.handle}.manifest.json"
    path.write_bytes(content)
    with pytest.raises(ProcessError) as raised:
        store.load(manifest.handle)
    assert code_of(raised) == "manifest_corrupt"
    with pytest.raises(ProcessError) as raised:
        store.save(manifest)
    assert code_of(raised) == "manifest_corrupt"
    assert str(path) in raised.value.message
    assert path.read_bytes() == content


@pytest.mark.parametrize("handle", ["../../etc/passwd", "..", "/etc/passwd", "", "a" * 22 + "/x"])
def test_malicious_handles_never_reach_the_filesystem(tmp_path: Path, handle: str) -> None:
    root = tmp_path / "state" / "proc"
    store = ManifestStore(root)
    before = snapshot(tmp_path)
    for operation in (store.load, store.delete, store.exists,
                      store.paths.spool, store.paths.stop_request):
        with pytest.raises(ProcessError) as raised:
            operation(handle)
        assert code_of(raised) == "not_found"
    with pytest.raises(ProcessError):
        store.save(starting().evolve(handle=handle))
    assert snapshot(tmp_path) == before
    assert not (tmp_path / "state").exists()


def test_unknown_handle_is_not_found_and_creates_nothing(tmp_path: Path) -> None:
    store = ManifestStore(tmp_path / "proc")
    with pytest.raises(ProcessError) as raised:
        store.load(mint_handle())
    assert code_of(raised) == "not_found"
    assert not (tmp_path / "proc").exists()
    assert store.scan() == []


def test_scan_lists_only_manifests_and_delete_removes_one(store: ManifestStore) -> None:
    first, second = starting(), starting()
    store.save(first)
    store.save(second)
    (store.root / "junk.manifest.json").write_text("{}")
    (store.root / "notes.txt").write_text("x")
    assert store.scan() == sorted([first.handle, second.handle])
    store.delete(first.handle)
    assert store.scan() == [second.handle]
    with pytest.raises(ProcessError, match="not_found"):
        store.delete(first.handle)
