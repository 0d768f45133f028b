"""The events journal (events.ndjson) and the supervisor's lifecycle events in it."""

from __future__ import annotations

import json
import stat
import threading
from pathlib import Path

import pytest
import waiting

from git_forge.errors import StoreError
from git_forge.loop.journal import Journal
from git_forge.loop.process_events import ProcessEventPublisher, event_fields
from git_forge.supervisor.handles import mint_handle
from git_forge.supervisor.manifest import Command, EventIds, Manifest, Origin, Owner, Result


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "state" / "events.ndjson", tmp_path)


def lines(journal: Journal) -> list[dict]:
    return [json.loads(line) for line in journal.path.read_text().splitlines()]


def test_events_are_numbered_densely_with_the_common_fields(journal: Journal, tmp_path: Path):
    first = journal.append("loop_started")
    second = journal.append("item_selected", itemId="001", title="T", priority=1)
    assert first is not None and second is not None
    stored = lines(journal)
    assert [event["seq"] for event in stored] == [0, 1]
    assert list(stored[0])[:6] == ["seq", "schemaVersion", "eventId", "type", "timestamp",
                                   "projectPath"]
    assert stored[1]["schemaVersion"] == "1" and stored[1]["projectPath"] == str(tmp_path)
    assert stored[1]["itemId"] == "001" and stored[1]["type"] == "item_selected"
    assert stored[1]["timestamp"].endswith("Z")
    assert stored[0]["eventId"] != stored[1]["eventId"]
    assert journal.read() == stored
    assert stat.S_IMODE(journal.path.stat().st_mode) == 0o600


def test_an_event_id_already_journaled_is_a_no_op(journal: Journal) -> None:
    assert journal.append("process_lost", event_id="id-1", handle="h") is not None
    before = journal.path.read_bytes()
    assert journal.append("process_lost", event_id="id-1", handle="h") is None
    assert journal.append("anything", event_id="id-1") is None
    assert journal.path.read_bytes() == before
    journal.append("process_lost", event_id="id-2", handle="h")
    assert [event["eventId"] for event in journal.read()] == ["id-1", "id-2"]


def test_a_torn_final_line_is_ignored_then_repaired(journal: Journal) -> None:
    journal.append("a")
    journal.append("b")
    with open(journal.path, "ab") as handle:
        handle.write(b'{"seq": 2, "type": "HALF-WRIT')  # a crash mid-append
    assert [event["type"] for event in journal.read()] == ["a", "b"]
    journal.append("c")
    text = journal.path.read_text()
    assert text.endswith("\n") and "HALF-WRIT" not in text
    assert [(event["seq"], event["type"]) for event in lines(journal)] == [
        (0, "a"), (1, "b"), (2, "c")
    ]


def test_unparseable_lines_are_skipped_by_readers(journal: Journal) -> None:
    journal.append("a")
    with open(journal.path, "ab") as handle:
        handle.write(b"not json\n[1, 2]\n")
    journal.append("b")
    assert [event["type"] for event in journal.read()] == ["a", "b"]
    assert journal.read()[-1]["seq"] == 3  # seq counts complete lines


def test_concurrent_appends_stay_dense_and_whole(journal: Journal) -> None:
    def writer(prefix: str) -> None:
        for number in range(25):
            journal.append("tick", event_id=f"{prefix}-{number}")
            journal.append("tick", event_id=f"{prefix}-{number}")  # a retry: no-op

    threads = [threading.Thread(target=writer, args=(name,)) for name in "abcd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        waiting.join(thread)
    events = lines(journal)
    assert [event["seq"] for event in events] == list(range(100))
    assert len({event["eventId"] for event in events}) == 100


def test_rotate_moves_the_journal_into_the_archive(journal: Journal, tmp_path: Path) -> None:
    assert journal.rotate(tmp_path / "archive") is None
    journal.append("old")
    archived = journal.rotate(tmp_path / "archive")
    assert archived is not None and archived.parent == tmp_path / "archive"
    assert archived.name.startswith("events-") and archived.suffix == ".ndjson"
    assert json.loads(archived.read_text())["type"] == "old"
    assert not journal.path.exists()
    assert journal.append("new")["seq"] == 0


def test_reserved_fields_are_refused(journal: Journal) -> None:
    with pytest.raises(StoreError):
        journal.append("x", seq=5)
    assert not journal.path.exists()


ORIGIN = Origin.of({"item_id": "042", "iteration": 2})


def manifest(state: str = "running", **changes) -> Manifest:
    base = Manifest(
        handle=mint_handle(), owner=Owner("run"), origin=ORIGIN,
        command=Command(("claude", "-p", "do it"), "/repo"), state="running",
        created_at="2030-01-01T00:00:00.000Z", started_at="2030-01-01T00:00:00.500Z",
        deadline="2030-01-01T00:30:00.500Z", events=EventIds.mint(),
    )
    return base.evolve(**changes) if state == "running" else base.evolve(state=state, **changes)


def test_lifecycle_events_map_to_journal_types() -> None:
    started = manifest()
    assert event_fields("started", started) == ("llm_spawned", {
        "itemId": "042", "handle": started.handle, "command": "claude -p 'do it'",
        "timeoutMinutes": 30.0,
    })
    done = manifest("timed_out", finished_at="2030-01-01T00:30:01.750Z",
                    result=Result(None, "timed-out"))
    assert event_fields("completed", done) == ("llm_exited", {
        "itemId": "042", "handle": done.handle, "exitCode": None, "state": "timed_out",
        "timedOut": True, "durationMs": 1801250,
    })
    lost = manifest("lost_on_restore")
    assert event_fields("lost", lost) == ("process_lost", {"itemId": "042",
                                                           "handle": lost.handle})
    with pytest.raises(ValueError):
        event_fields("other", lost)


def test_the_publisher_uses_the_persisted_event_id_once(journal: Journal) -> None:
    publisher = ProcessEventPublisher(journal)
    lost = manifest("lost_on_restore")
    publisher.publish("lost", lost.events.lost, lost)
    publisher.publish("lost", lost.events.lost, lost)  # restore ran twice
    events = journal.read()
    assert len(events) == 1
    assert events[0]["type"] == "process_lost" and events[0]["eventId"] == lost.events.lost


@pytest.mark.parametrize("event_id", ["plain-1", 'quote"and\\backslash', "ünï€😀", "tab\there",
                                      "a/b"])
def test_duplicate_ids_are_found_however_the_id_is_spelled(journal: Journal,
                                                           event_id: str) -> None:
    assert journal.append("a", event_id=event_id) is not None
    assert journal.append("a", event_id=event_id) is None
    # Written by an ASCII-only JSON writer (non-ASCII as \u escapes): still the same id.
    foreign = journal.path.with_name("foreign.ndjson")
    foreign.write_text(json.dumps({"seq": 0, "eventId": event_id, "type": "x"}) + "\n")
    assert Journal(foreign, "p").append("a", event_id=event_id) is None


def test_an_id_inside_other_text_is_not_a_duplicate(journal: Journal) -> None:
    # The id's bytes appear in other fields and inside longer ids: only eventId counts.
    journal.append("a", event_id="id-10", itemId="id-1", note='"id-1"')
    journal.append("b", event_id="x", reason='{"eventId":"id-1"}')
    assert journal.append("c", event_id="id-1") is not None
    assert journal.append("c", event_id="id-1") is None
    assert [event["eventId"] for event in journal.read()] == ["id-10", "x", "id-1"]


def test_seq_counts_complete_lines_whatever_a_foreign_writer_left(journal: Journal) -> None:
    journal.append("a")
    with open(journal.path, "ab") as handle:
        handle.write(b'{"note": "carriage\rreturn"}\n\n')  # raw \r: two lines for a reader
    event = journal.append("b", event_id="after")
    assert event is not None
    assert event["seq"] == len(journal.path.read_bytes().splitlines()) - 1 == 4


# --- the owning loop: one read, appends without the lock, fsync at sync points ----------------


def test_an_owner_appends_densely_dedups_and_syncs_only_when_asked(journal: Journal,
                                                                   monkeypatch) -> None:
    import os

    journal.append("before")  # written the ordinary way: the owner continues its numbering
    journal.append("published", "event-1")
    journal.own()
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    assert journal.append("published", "event-1") is None  # already in the file
    for n in range(5):
        journal.append("step", n=n)
    assert synced == []
    assert [event["seq"] for event in lines(journal)] == list(range(7))
    journal.sync()
    assert len(synced) == 1
    journal.sync()  # nothing pending: no fsync
    assert len(synced) == 1
    journal.append("last")
    journal.close()
    assert len(synced) == 2
    journal.append("after close")  # the locked path again, numbering still dense
    assert [event["seq"] for event in lines(journal)] == list(range(9))


def test_a_sync_on_another_thread_never_holds_up_an_append(journal: Journal,
                                                            monkeypatch) -> None:
    """The merge thread syncs the journal before its git work while the loop's thread
    appends: a slow disk flush there must never make an append wait, and a line
    appended during the flush is left for the next sync."""
    import os

    journal.own()
    journal.append("before the sync")
    flushing, flushed = threading.Event(), threading.Event()
    synced: list[int] = []
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        synced.append(fd)
        flushing.set()
        assert flushed.wait(30)  # the disk takes its time
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    syncer = threading.Thread(target=journal.sync)
    syncer.start()
    assert flushing.wait(30)
    appender = threading.Thread(target=journal.append, args=("during the sync",))
    appender.start()
    appender.join(5)
    appended = not appender.is_alive()
    flushed.set()
    waiting.join(syncer)
    waiting.join(appender)
    assert appended, "the append waited for the other thread's fsync"
    assert [event["type"] for event in lines(journal)] == ["before the sync", "during the sync"]
    before = len(synced)
    journal.sync()  # the line appended meanwhile is still to be made durable
    assert len(synced) == before + 1
    journal.close()


def test_a_foreign_append_sends_the_owner_back_through_the_lock(journal: Journal,
                                                                tmp_path: Path) -> None:
    journal.own()
    journal.append("mine")
    Journal(journal.path, tmp_path).append("foreign", "event-f")
    journal.append("mine again")
    assert journal.append("foreign again", "event-f") is None  # the foreign id is known now
    assert [(event["seq"], event["type"]) for event in lines(journal)] == [
        (0, "mine"), (1, "foreign"), (2, "mine again")]
    journal.close()


def test_an_owner_repairs_a_torn_line_before_appending(journal: Journal) -> None:
    journal.append("whole")
    with journal.path.open("ab") as handle:
        handle.write(b'{"seq":1,"type":"torn')
    journal.own()
    journal.append("next")
    journal.close()
    assert [(event["seq"], event["type"]) for event in lines(journal)] == [
        (0, "whole"), (1, "next")]


def test_threads_appending_through_an_owner_stay_dense_and_whole(journal: Journal) -> None:
    journal.own()

    def writer(name: str) -> None:
        for n in range(100):
            journal.append("step", writer=name, n=n)

    threads = [threading.Thread(target=writer, args=(f"w{k}",)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        waiting.join(thread, timeout=60)
    journal.close()
    stored = lines(journal)
    assert [event["seq"] for event in stored] == list(range(400))
    assert len({event["eventId"] for event in stored}) == 400


def test_a_killed_owner_loses_no_line_it_wrote(tmp_path: Path) -> None:
    """SIGKILL before any sync: the kernel holds the lines, the file has them all."""
    import signal
    import subprocess
    import sys

    path = tmp_path / "events.ndjson"
    script = (
        "import sys, time\n"
        "from git_forge.loop.journal import Journal\n"
        f"journal = Journal({str(path)!r}, '.')\n"
        "journal.own()\n"
        "for n in range(50):\n"
        "    journal.append('step', n=n)\n"
        "print('written', flush=True)\n"
        "time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert waiting.readline(child, timeout=30) == "written\n"
    finally:
        child.send_signal(signal.SIGKILL)
        waiting.wait_process(child, timeout=30)
    stored = [json.loads(line) for line in path.read_text().splitlines()]
    assert [event["n"] for event in stored] == list(range(50))
