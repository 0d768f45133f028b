"""Output: the rolling buffer, the durable spool and their shared cursor rules."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import waiting

from git_forge.supervisor.buffer import RollingBuffer
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.spool import (
    INDEX_FILE,
    Extent,
    SpoolReader,
    retained_start,
    segment_name,
)
from git_forge.supervisor.spool_writer import SpoolWriter

KIB = 1024
_CYCLE = bytes(range(251)) * 64  # a prime period: chunk edges never line up with it


def pattern(start: int, size: int) -> bytes:
    """The bytes at offsets [start, start+size) of an endless, position-dependent stream."""
    out = bytearray()
    while len(out) < size:
        offset = (start + len(out)) % 251
        out += _CYCLE[offset:offset + min(size - len(out), len(_CYCLE) - offset)]
    return bytes(out)


def write_stream(target, total: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    position = 0
    while position < total:
        size = min(total - position, rng.randint(1, 9000))
        target(pattern(position, size))
        position += size


def spool(tmp_path: Path, **kwargs) -> SpoolWriter:
    options = {"ceiling": 64 * KIB, "segment_bytes": 16 * KIB, "flush_interval": 3600.0}
    return SpoolWriter(tmp_path / "x.spool", **(options | kwargs))


# -- the cursor rules, for every reader ----------------------------------------------
def buffer_reader(tmp_path: Path):
    buffer = RollingBuffer(100 * KIB)
    write_stream(buffer.append, 300 * KIB)
    return buffer, buffer.read


def live_spool_reader(tmp_path: Path):
    writer = spool(tmp_path)
    write_stream(writer.append, 300 * KIB)
    writer.flush()
    return writer, writer.read


def closed_spool_reader(tmp_path: Path):
    writer = spool(tmp_path)
    write_stream(writer.append, 300 * KIB)
    writer.close()
    return writer, SpoolReader(tmp_path / "x.spool").read


READERS = {"buffer": buffer_reader, "live spool": live_spool_reader,
           "closed spool": closed_spool_reader}


@pytest.mark.parametrize("kind", sorted(READERS))
def test_cursor_rules(tmp_path: Path, kind: str) -> None:
    window, read = READERS[kind](tmp_path)
    total = 300 * KIB
    retained = window.retained_from
    assert 0 < retained < total
    # at 0 (long dropped): a gap, starting at the first kept byte
    data, next_cursor, gap = read(0, 1000)
    assert gap and data == pattern(retained, 1000) and next_cursor == retained + 1000
    # exactly at retained_from: no gap
    data, next_cursor, gap = read(retained, 1000)
    assert not gap and data == pattern(retained, 1000)
    # before it by one byte: a gap
    assert read(retained - 1, 10).gap
    # in the middle
    data, next_cursor, gap = read(total - 5000, 1000)
    assert (data, next_cursor, gap) == (pattern(total - 5000, 1000), total - 4000, False)
    # the end is short
    data, next_cursor, _ = read(total - 10, 1000)
    assert data == pattern(total - 10, 10) and next_cursor == total
    # at total: empty
    assert read(total, 1000) == (b"", total, False)
    # past total: cursor_ahead, next = total
    with pytest.raises(ProcessError) as raised:
        read(total + 1, 10)
    assert raised.value.code == "cursor_ahead" and raised.value.next_cursor == total
    # negative cursor or limit: invalid_arguments
    for cursor, limit in ((-1, 10), (0, -1)):
        with pytest.raises(ProcessError) as raised:
            read(cursor, limit)
        assert raised.value.code == "invalid_arguments"


def test_an_empty_window_reads_empty(tmp_path: Path) -> None:
    writer = spool(tmp_path)
    assert writer.read(0, 10) == (b"", 0, False)
    assert SpoolReader(tmp_path / "x.spool").read(0, 10) == (b"", 0, False)
    assert SpoolReader(tmp_path / "missing.spool").read(0, 10) == (b"", 0, False)
    with pytest.raises(ProcessError, match="cursor_ahead"):
        SpoolReader(tmp_path / "missing.spool").read(1, 10)
    assert not (tmp_path / "missing.spool").exists()


# -- retention and segments ----------------------------------------------------------
def segments(directory: Path) -> dict[int, int]:
    """Segment sizes by start; one the spiller deletes while they are listed is gone."""
    sizes = {}
    for path in directory.glob("*.seg"):
        with contextlib.suppress(FileNotFoundError):
            sizes[int(path.name.split(".")[0])] = path.stat().st_size
    return sizes


def test_output_larger_than_the_ceiling(tmp_path: Path) -> None:
    writer = spool(tmp_path)
    total = 1024 * KIB + 123
    flushes = 0

    def append(data: bytes) -> None:
        nonlocal flushes
        writer.append(data)
        if random.random() < 0.05:
            writer.flush()
            flushes += 1
            assert sum(segments(tmp_path / "x.spool").values()) < 64 * KIB + 16 * KIB

    write_stream(append, total, seed=7)
    extent = writer.close()
    assert flushes > 3
    assert extent.total_bytes == total
    assert extent.retained_from == retained_start(total, 64 * KIB, 16 * KIB)
    assert extent.retained_from % (16 * KIB) == 0
    kept = total - extent.retained_from
    assert 64 * KIB <= kept < 64 * KIB + 16 * KIB  # the ceiling plus at most one segment
    on_disk = segments(tmp_path / "x.spool")
    assert all(size <= 16 * KIB for size in on_disk.values())
    assert min(on_disk) == extent.retained_from
    assert sum(on_disk.values()) == kept
    reader = SpoolReader(tmp_path / "x.spool")
    data, next_cursor, gap = reader.read(0, 10 * 1024 * KIB)
    assert gap and next_cursor == total and data == pattern(extent.retained_from, kept)
    index = json.loads((tmp_path / "x.spool" / INDEX_FILE).read_text())
    assert index["total_bytes"] == total and index["retained_from"] == extent.retained_from


def test_the_disk_never_holds_two_windows_during_a_flush(tmp_path: Path) -> None:
    peaks: list[int] = []

    class Measured(SpoolWriter):
        def _append_to_segment(self, segment, start, data):  # type: ignore[override]
            super()._append_to_segment(segment, start, data)
            peaks.append(sum(segments(self.directory).values()))

    writer = Measured(tmp_path / "m.spool", ceiling=64 * KIB, segment_bytes=16 * KIB,
                      flush_interval=3600.0)
    for round_ in range(5):
        write_stream(writer.append, 100 * KIB, seed=round_)
        writer.flush()
    assert len(peaks) > 20
    assert max(peaks) <= 64 * KIB + 2 * 16 * KIB


def test_appends_never_rewrite_a_segment(tmp_path: Path) -> None:
    writer = spool(tmp_path, ceiling=1024 * KIB)
    writer.append(pattern(0, 5 * KIB))
    writer.flush()
    first = tmp_path / "x.spool" / segment_name(0)
    inode, size = first.stat().st_ino, first.stat().st_size
    writer.append(pattern(5 * KIB, 3 * KIB))
    writer.flush()
    assert first.stat().st_ino == inode  # appended in place, not replaced
    assert first.stat().st_size == size + 3 * KIB
    writer.append(pattern(8 * KIB, 20 * KIB))
    writer.close()
    assert segments(tmp_path / "x.spool") == {0: 16 * KIB, 16 * KIB: 12 * KIB}
    assert first.read_bytes() == pattern(0, 16 * KIB)


def test_bytes_dropped_before_a_flush_are_never_written(tmp_path: Path) -> None:
    writer = spool(tmp_path)
    write_stream(writer.append, 10 * 64 * KIB)  # ten ceilings, one final flush
    writer.close()
    on_disk = segments(tmp_path / "x.spool")
    assert sum(on_disk.values()) < 64 * KIB + 16 * KIB
    assert min(on_disk) == retained_start(10 * 64 * KIB, 64 * KIB, 16 * KIB)


def test_a_small_memory_window_flushes_before_it_would_lose_bytes(tmp_path: Path) -> None:
    writer = spool(tmp_path, window_bytes=8 * KIB)
    total = 500 * KIB
    write_stream(writer.append, total, seed=3)
    retained = writer.retained_from
    for cursor in (total - 70 * KIB, total - 60 * KIB, total - 9 * KIB, total - 100):
        data, next_cursor, gap = writer.read(cursor, 2 * KIB)
        start = max(cursor, retained)
        assert gap == (cursor < retained)
        assert data == pattern(start, len(data)) and next_cursor == start + len(data) > start
    extent = writer.close()
    data, _, _ = SpoolReader(tmp_path / "x.spool").read(extent.retained_from, 200 * KIB)
    assert data == pattern(extent.retained_from, total - extent.retained_from)


@pytest.mark.parametrize("window", [12 * KIB, 82 * KIB])
def test_appends_from_a_pipe_race_flushes_safely(tmp_path: Path, window: int) -> None:
    import select

    writer = spool(tmp_path, window_bytes=window)
    total = 600 * KIB
    read_end, write_end = os.pipe()
    feeder = threading.Thread(target=lambda: (write_stream(
        lambda data: os.write(write_end, data), total, seed=9), os.close(write_end)))
    done = threading.Event()

    def flusher() -> None:
        while not done.is_set():
            writer.flush()

    flushing = threading.Thread(target=flusher)
    feeder.start()
    flushing.start()
    poller = select.poll()
    poller.register(read_end, select.POLLIN | select.POLLHUP)
    try:
        while poller.poll(1000) and (data := os.read(read_end, 5 * KIB)):
            writer.append(data)
    finally:
        done.set()
        waiting.join(flushing)
        waiting.join(feeder)
        os.close(read_end)
    extent = writer.close()
    assert extent.total_bytes == total
    data, _, _ = SpoolReader(tmp_path / "x.spool").read(extent.retained_from, total)
    assert data == pattern(extent.retained_from, total - extent.retained_from)


def test_concurrent_appenders_lose_no_byte(tmp_path: Path) -> None:
    writer = spool(tmp_path, ceiling=4096 * KIB)
    counts = {b"a": 0, b"b": 0}

    def feed(letter: bytes) -> None:
        rng = random.Random(letter[0])
        for _ in range(400):
            size = rng.randint(1, 5000)
            writer.append(letter * size)
            counts[letter] += size

    threads = [threading.Thread(target=feed, args=(letter,)) for letter in counts]
    for thread in threads:
        thread.start()
    for _ in range(20):
        writer.flush()
    for thread in threads:
        waiting.join(thread)
    extent = writer.close()
    data, _, _ = SpoolReader(tmp_path / "x.spool").read(0, extent.total_bytes)
    assert extent.total_bytes == len(data) == sum(counts.values())
    assert data.count(b"a") == counts[b"a"] and data.count(b"b") == counts[b"b"]


def test_a_flood_through_a_small_window_spills_without_a_durable_commit(
    tmp_path: Path,
) -> None:
    # The window fills again and again: its bytes go to the segment files and the
    # segments retention drops go away, with no fsync and no durable index until
    # the flush timer (here: never) or close.
    synced: list[int] = []

    class Counted(SpoolWriter):
        def _commit(self):  # type: ignore[override]
            synced.append(self._written)
            return super()._commit()

    writer = Counted(tmp_path / "f.spool", ceiling=64 * KIB, segment_bytes=16 * KIB,
                     window_bytes=8 * KIB, flush_interval=3600.0)
    total = 2048 * KIB
    peak = 0

    def append(data: bytes) -> None:
        nonlocal peak
        writer.append(data)
        peak = max(peak, sum(segments(tmp_path / "f.spool").values()))

    write_stream(append, total, seed=11)
    assert synced == [] and writer.committed.total_bytes == 0  # nothing made durable yet
    assert peak <= 64 * KIB + 2 * 16 * KIB + 8 * KIB  # bounded by retention, not output
    # Another process reads what the spills wrote (from the page cache).
    extent = SpoolReader(tmp_path / "f.spool").extent()
    assert total - 8 * KIB <= extent.total_bytes <= total
    data, _, gap = SpoolReader(tmp_path / "f.spool").read(0, total)
    assert gap and data == pattern(extent.total_bytes - len(data), len(data))
    final = writer.close()
    assert synced and final == Extent(total, retained_start(total, 64 * KIB, 16 * KIB))
    data, _, _ = SpoolReader(tmp_path / "f.spool").read(final.retained_from, total)
    assert data == pattern(final.retained_from, total - final.retained_from)


def test_an_older_index_naming_deleted_segments_reads_from_the_first_one_left(
    tmp_path: Path,
) -> None:
    # A power cut can bring back a durable index older than the non-durable one a
    # spill wrote before it deleted segments: the bytes it names first were dropped.
    writer = spool(tmp_path)
    writer.append(pattern(0, 200 * KIB))
    extent = writer.close()
    directory = tmp_path / "x.spool"
    index = json.loads((directory / INDEX_FILE).read_text())
    index["retained_from"] = extent.retained_from - 2 * 16 * KIB  # names two gone segments
    (directory / INDEX_FILE).write_text(json.dumps(index))
    reader = SpoolReader(directory)
    assert reader.extent() == extent
    data, next_cursor, gap = reader.read(0, 1 << 20)
    assert gap and next_cursor == 200 * KIB
    assert data == pattern(extent.retained_from, 200 * KIB - extent.retained_from)


def test_appends_after_close_are_refused(tmp_path: Path) -> None:
    writer = spool(tmp_path)
    writer.append(b"kept")
    writer.close()
    assert writer.append(b"late") is False
    assert writer.total_bytes == 4
    assert writer.read(0, 100) == (b"kept", 4, False)


# -- another process, and crashes ----------------------------------------------------
WRITER_SCRIPT = """
import sys, random
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from test_supervisor_output import pattern
from git_forge.supervisor.spool_writer import SpoolWriter
writer = SpoolWriter(Path(sys.argv[1]), ceiling=256 * 1024, segment_bytes=32 * 1024,
                     flush_interval=3600.0)
total, position, rng = int(sys.argv[2]), 0, random.Random(5)
while position < total:
    size = min(total - position, rng.randint(1, 20000))
    writer.append(pattern(position, size))
    position += size
    if rng.random() < 0.1:
        extent = writer.flush()
        print(extent.total_bytes, flush=True)
print("done", writer.close().total_bytes, flush=True)
if len(sys.argv) > 4:
    import time; time.sleep(60)
"""


def test_a_reader_in_another_process_follows_a_live_writer(tmp_path: Path) -> None:
    directory = tmp_path / "live.spool"
    total = 3 * 1024 * KIB
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT, str(directory), str(total),
         str(Path(__file__).parent)],
        stdout=subprocess.PIPE, text=True,
    )
    reads = gaps = 0
    cursor = 0
    deadline = waiting.Deadline(60)
    try:
        while True:
            assert not deadline.passed, f"the reader is stuck at {cursor} of {total}"
            finished = writer.poll() is not None
            if not directory.exists():
                assert not finished, "the writer ended without creating its spool"
                continue
            data, next_cursor, gap = SpoolReader(directory).read(cursor, 64 * KIB)
            start = next_cursor - len(data)
            assert data == pattern(start, len(data))
            gaps += gap
            reads += bool(data)
            cursor = next_cursor
            if finished and cursor == total:
                break
    finally:
        waiting.communicate(writer)
    assert writer.returncode == 0
    assert reads > 3


ROTATING_WRITER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from test_supervisor_output import pattern
from git_forge.supervisor.spool_writer import SpoolWriter
step = 1024
writer = SpoolWriter(Path(sys.argv[1]), ceiling=2 * step, segment_bytes=step,
                     flush_interval=3600.0)
position = 0
for _ in range(int(sys.argv[2])):  # every flush drops the segment two flushes back
    writer.append(pattern(position, step + step // 2))
    position += step + step // 2
    writer.flush()
print(writer.close().total_bytes, flush=True)
"""


def test_readers_of_a_writer_rotating_segments_never_see_the_total_go_back(
    tmp_path: Path,
) -> None:
    # A reader that reads the index, loses the processor (here: to the other readers'
    # threads), and only then looks at the segment the index ends in, may find it
    # deleted by two newer flushes: the extent must then come from a newer index, not
    # end at the stale one — behind the cursor the reader already holds.
    directory = tmp_path / "rotating.spool"
    rounds = 60
    total = rounds * 1536
    writer = subprocess.Popen(
        [sys.executable, "-c", ROTATING_WRITER, str(directory), str(rounds),
         str(Path(__file__).parent)],
        stdout=subprocess.PIPE, text=True,
    )
    deadline = waiting.Deadline(60)
    failures: list[str] = []
    ends: list[int] = []

    def follow() -> None:
        cursor = seen = 0
        while not deadline.passed:
            finished = writer.poll() is not None
            reader = SpoolReader(directory)
            try:
                extent = reader.extent()
                data, next_cursor, _ = reader.read(cursor, 1 << 20)
            except ProcessError as exc:
                failures.append(str(exc))
                continue
            if extent.total_bytes < seen:
                failures.append(f"the total went from {seen} back to {extent.total_bytes}")
            seen = max(seen, extent.total_bytes)
            if data != pattern(next_cursor - len(data), len(data)):
                failures.append(f"wrong bytes at {next_cursor - len(data)}")
            cursor = next_cursor
            if finished and cursor == total:
                break
        ends.append(cursor)

    try:
        waiting.wait_for(lambda: (directory / INDEX_FILE).exists(), 30, interval=0.001,
                         what="the spool's index")
        threads = [threading.Thread(target=follow) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            waiting.join(thread, 90)
    finally:
        out, _ = waiting.communicate(writer)
    assert writer.returncode == 0 and int(out) == total
    assert failures == [], f"{len(failures)} bad reads, the first: {failures[0]}"
    assert ends == [total] * 4


def test_a_crashed_writer_leaves_every_durable_byte(tmp_path: Path) -> None:
    directory = tmp_path / "crash.spool"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT, str(directory), str(40 * 1024 * KIB),
         str(Path(__file__).parent)],
        stdout=subprocess.PIPE, text=True,
    )
    durable = 0
    while durable <= 2 * 1024 * KIB:  # wait for a few flushes, then kill it mid-stream
        line = waiting.readline(writer)
        assert line, "the writer ended before it flushed enough"
        durable = int(line.split()[-1])
    writer.send_signal(signal.SIGKILL)
    waiting.communicate(writer)
    reader = SpoolReader(directory)
    extent = reader.extent()
    assert extent.total_bytes >= durable
    data, next_cursor, _ = reader.read(extent.retained_from, 10 * 1024 * KIB)
    assert next_cursor == extent.total_bytes
    assert data == pattern(extent.retained_from, len(data))


def test_a_torn_tail_never_corrupts_earlier_bytes(tmp_path: Path) -> None:
    writer = spool(tmp_path, ceiling=1024 * KIB)
    writer.append(pattern(0, 40 * KIB))
    writer.close()
    directory = tmp_path / "x.spool"
    last = directory / segment_name(32 * KIB)
    # bytes appended after the last commit, torn mid-way: the reader keeps them
    with open(last, "ab") as handle:
        handle.write(pattern(40 * KIB, 1000))
    reader = SpoolReader(directory)
    assert reader.extent().total_bytes == 40 * KIB + 1000
    assert reader.read(0, 100 * KIB).data == pattern(0, 40 * KIB + 1000)
    # a tail shorter than the index says: earlier bytes still read; the missing ones are
    # reported, never invented
    os.truncate(last, 2 * KIB)
    assert reader.read(0, 32 * KIB).data == pattern(0, 32 * KIB)
    with pytest.raises(ProcessError) as raised:
        reader.read(36 * KIB, 10)
    assert raised.value.code == "spool_corrupt"


def test_a_corrupt_index_is_spool_corrupt_and_left_alone(tmp_path: Path) -> None:
    writer = spool(tmp_path)
    writer.append(b"abc")
    writer.close()
    index = tmp_path / "x.spool" / INDEX_FILE
    index.write_bytes(b"{broken")
    with pytest.raises(ProcessError) as raised:
        SpoolReader(tmp_path / "x.spool").read(0, 10)
    assert raised.value.code == "spool_corrupt"
    assert index.read_bytes() == b"{broken"


def test_segment_size_limits_are_enforced(tmp_path: Path) -> None:
    with pytest.raises(ProcessError, match="invalid_settings"):
        SpoolWriter(tmp_path / "a.spool", segment_bytes=4 * 1024 * KIB + 1)
    with pytest.raises(ProcessError, match="invalid_settings"):
        SpoolWriter(tmp_path / "b.spool", ceiling=0)


def test_retention_is_arithmetic_alone() -> None:
    from git_forge.supervisor.spool import Extent
    from git_forge.supervisor.spool_writer import Retention

    rules = Retention(ceiling=64 * KIB, segment_bytes=16 * KIB)
    assert [rules.start(total) for total in (0, 64 * KIB, 64 * KIB + 1, 81 * KIB)] == [
        0, 0, 0, 16 * KIB]
    for total in range(0, 400 * KIB, 7 * KIB + 3):  # ceiling <= kept < ceiling + segment
        kept = total - rules.start(total)
        assert (kept == total) if total <= 64 * KIB else 64 * KIB <= kept < 80 * KIB
        assert rules.start(total) % (16 * KIB) == 0
    assert rules.pieces(10 * KIB, 40 * KIB) == [
        (0, 10 * KIB, 16 * KIB), (16 * KIB, 16 * KIB, 32 * KIB), (32 * KIB, 32 * KIB, 40 * KIB)]
    assert rules.committed(100 * KIB, 0) == Extent(100 * KIB, 32 * KIB)
    assert rules.committed(100 * KIB, 48 * KIB) == Extent(100 * KIB, 48 * KIB)
    # Before writing up to 200 KiB, the window committed at 100 KiB gives up what
    # 200 KiB no longer keeps, down to a segment boundary it has fully written.
    assert rules.shrink_to(Extent(100 * KIB, 32 * KIB), 200 * KIB, oldest=32 * KIB) == 96 * KIB
    assert rules.shrink_to(Extent(100 * KIB, 32 * KIB), 110 * KIB, oldest=32 * KIB) is None
    assert rules.shrink_to(Extent(100 * KIB, 32 * KIB), 200 * KIB, oldest=None) is None
