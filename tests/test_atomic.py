"""atomic.py, locks.py and jsonfile.py: replace-or-nothing writes, sidecar locks with named
holders, and JSON updates under them."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import waiting
from helpers import record_fsyncs

from git_forge.atomic import atomic_write, write_all
from git_forge.errors import StoreError
from git_forge.jsonfile import read_json, update_json
from git_forge.lockprobe import lock_is_held
from git_forge.locks import FileLock, locked, sidecar_lock_path


def test_write_replaces_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    atomic_write(target, b"one", mode=0o600)
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_failed_replace_leaves_destination_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "dir"
    target.mkdir()
    (target / "inside").write_text("keep")
    with pytest.raises(StoreError):
        atomic_write(target, b"data")
    assert (target / "inside").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir"]


def test_a_temp_file_is_named_for_its_file_and_made_private(
        tmp_path: Path, monkeypatch) -> None:
    """The temp file is ``.<name>.<8 letters>.tmp`` (what the stale-temp sweep looks
    for), created 0600, exclusively and never through a link."""
    made: list[tuple[str, int, int]] = []
    real_open = os.open

    def watching_open(path, flags, mode=0o777, **kwargs):
        if os.path.basename(path).endswith(".tmp"):
            made.append((os.path.basename(path), flags, mode))
        return real_open(path, flags, mode, **kwargs)

    target = tmp_path / "f.json"
    monkeypatch.setattr(os, "open", watching_open)
    atomic_write(target, b"one")
    [(name, flags, mode)] = made
    assert name.startswith(".f.json.") and len(name) == len(".f.json.") + 8 + len(".tmp")
    assert flags & os.O_EXCL and flags & os.O_CREAT and flags & os.O_NOFOLLOW
    assert mode == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_write_all_sends_every_byte_through_short_writes() -> None:
    """A signal arriving mid-write makes ``os.write`` on a pipe return early with a
    part written; ``write_all`` sends the rest, in order."""
    first, second = os.urandom(6 << 20), os.urandom(2 << 20)
    read_end, write_end = os.pipe()
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_end, 1 << 16):
            received.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    previous = signal.signal(signal.SIGALRM, lambda *_: None)
    reader.start()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)
        short = os.write(write_end, first)  # the condition write_all must survive
        write_all(write_end, first[short:], second)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.close(write_end)
    reader.join(timeout=30)
    os.close(read_end)
    assert not reader.is_alive()
    assert short < len(first)
    assert received == first + second


def test_corrupt_file_is_refused_and_untouched(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    target.write_bytes(b"{broken")
    with pytest.raises(StoreError, match="corrupt"):
        update_json(target, lambda doc: {"x": 1})
    assert target.read_bytes() == b"{broken"


def test_mutate_failure_writes_nothing(tmp_path: Path) -> None:
    """Not the file, and not its lock file either: a refused change leaves the label
    the lock file held (a holder's label stays only after a change was made)."""
    target = tmp_path / "f.json"
    target.write_text('{"a": 1}\n')
    lock_file = sidecar_lock_path(target)
    lock_file.write_bytes(b"pid 1 on elsewhere (git-forge backlog) since then")

    def boom(doc: dict) -> dict:
        doc["a"] = 2
        raise ValueError("no")

    with pytest.raises(ValueError):
        update_json(target, boom)
    assert target.read_text() == '{"a": 1}\n'
    assert read_json(target) == {"a": 1}
    assert lock_file.read_bytes() == b"pid 1 on elsewhere (git-forge backlog) since then"
    update_json(target, lambda doc: {"a": 3})
    assert lock_file.read_bytes().startswith(f"pid {os.getpid()} on ".encode())


def test_lock_is_a_sidecar_and_a_waiter_names_the_holder(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys,time; from git_forge.locks import locked\n"
         "with locked(sys.argv[1]):\n print('held', flush=True); time.sleep(30)",
         str(target)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert waiting.readline(holder).strip() == "held"
        assert sidecar_lock_path(target).exists() and not target.exists()
        assert lock_is_held(sidecar_lock_path(target))
        started = time.monotonic()
        with pytest.raises(StoreError) as excinfo:
            with locked(target, timeout=0.3):
                pass
        assert time.monotonic() - started >= 0.3
        assert f"pid {holder.pid}" in str(excinfo.value)
    finally:
        holder.kill()
        waiting.wait_process(holder)
    # The holder died: the lock is free again without any cleanup.
    assert not lock_is_held(sidecar_lock_path(target))
    with locked(target, timeout=1):
        pass


PORTALOCKER_TAKES = """\
import sys, portalocker
handle = open(sys.argv[1], "a+b")
try:
    portalocker.lock(handle, portalocker.LOCK_EX | portalocker.LOCK_NB)
except portalocker.AlreadyLocked:
    print("refused", flush=True)
else:
    print("taken", flush=True)
    if sys.argv[2:] == ["hold"]:
        sys.stdin.read()
"""


def test_the_locks_are_portalockers_and_taken_without_importing_it(tmp_path: Path) -> None:
    # What another tool locks through portalocker (feature-forge, a runner), git-forge
    # cannot take, and the other way round: the one flock, both ways.
    path = tmp_path / "backlog.json.lock"
    holder = subprocess.Popen([sys.executable, "-c", PORTALOCKER_TAKES, str(path), "hold"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert waiting.readline(holder).strip() == "taken"
        assert lock_is_held(path)
        assert not FileLock(path).try_acquire()
    finally:
        holder.kill()
        waiting.wait_process(holder)
    lock = FileLock(path)
    assert lock.try_acquire()

    def portalocker_says() -> str:
        return waiting.run([sys.executable, "-c", PORTALOCKER_TAKES, str(path)],
                           capture_output=True, text=True, check=True).stdout

    assert portalocker_says() == "refused\n"
    lock.release()
    assert portalocker_says() == "taken\n"


def test_the_host_a_label_names_is_the_sockets_host_name() -> None:
    import socket

    from git_forge.locks import host_name

    assert host_name() == socket.gethostname()


def test_file_lock_is_exclusive_within_a_process(tmp_path: Path) -> None:
    first, second = FileLock(tmp_path / "l"), FileLock(tmp_path / "l")
    assert first.try_acquire()
    assert not second.try_acquire()
    first.release()
    assert second.try_acquire()
    second.release()


def test_a_lock_file_holds_exactly_its_holders_label(tmp_path: Path) -> None:
    """A shorter label replaces a longer one whole; ``restore_label`` puts back the
    previous bytes exactly, shorter or longer."""
    path = tmp_path / "l"
    path.write_bytes(b"a much longer label left by an earlier holder of this lock")
    lock = FileLock(path)
    assert lock.try_acquire(holder="short")
    assert path.read_bytes() == b"short"
    lock.release(restore_label=True)
    assert path.read_bytes() == b"a much longer label left by an earlier holder of this lock"
    assert lock.try_acquire()
    label = path.read_bytes().decode()
    assert label.startswith(f"pid {os.getpid()} on ") and " since " in label
    lock.release()
    path.write_bytes(b"")
    assert lock.try_acquire(holder="someone")
    lock.release(restore_label=True)
    assert path.read_bytes() == b""


def test_update_json_round_trip(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    update_json(target, lambda doc: {"items": [1]} if doc is None else doc)
    update_json(target, lambda doc: {**doc, "items": doc["items"] + [2]})
    assert json.loads(target.read_text()) == {"items": [1, 2]}
    assert target.read_text().endswith("\n")


def test_a_durable_write_fsyncs_the_file_and_the_directory(tmp_path: Path, monkeypatch) -> None:
    """Durable: fsync the data, rename, fsync the directory. Not durable: the same
    atomic rename without either fsync (the writer's crash still leaves old or new)."""
    synced = record_fsyncs(monkeypatch)
    target = tmp_path / "state.json"
    atomic_write(target, b"one\n")
    assert len(synced) == 2 and synced[1] == str(tmp_path)
    synced.clear()
    update_json(target.with_name("doc.json"), lambda _: {"a": 1}, durable=False)
    atomic_write(target, b"two\n", durable=False)
    assert synced == []
    assert target.read_bytes() == b"two\n"
    assert json.loads(target.with_name("doc.json").read_bytes()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json", "doc.json.lock", "state.json"]


def test_an_update_reuses_the_callers_parse_only_for_the_same_bytes(tmp_path: Path) -> None:
    # `known` spares a second parse of a large file when it still holds the bytes the
    # caller read; a file changed in between is parsed afresh under the lock.
    path = tmp_path / "doc.json"
    path.write_text('{"n": 1}\n')
    raw = path.read_bytes()
    parsed = json.loads(raw)
    seen: list[object] = []

    def bump(document: dict) -> dict:
        seen.append(document)
        return {"n": document["n"] + 1}

    update_json(path, bump, known=(raw, parsed))
    assert seen[-1] is parsed and read_json(path) == {"n": 2}
    update_json(path, bump, known=(raw, parsed))  # stale: the file holds {"n": 2} now
    assert seen[-1] is not parsed and seen[-1] == {"n": 2} and read_json(path) == {"n": 3}
