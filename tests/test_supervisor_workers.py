"""Reused daemon threads (``supervisor.workers``)."""

from __future__ import annotations

import threading

import pytest

from git_forge.supervisor import workers

DEADLINE = 10.0


def test_a_task_runs_and_join_waits_for_it() -> None:
    release = threading.Event()
    seen: list[object] = []

    def task(value: object) -> None:
        release.wait(DEADLINE)
        seen.append(value)

    running = workers.start(task, "x", name="drain-abc")
    assert running.is_alive()
    release.set()
    running.join(DEADLINE)
    assert not running.is_alive()
    assert seen == ["x"]


def test_an_idle_worker_takes_the_next_task() -> None:
    first = workers.start(lambda: None)
    first.join(DEADLINE)
    idents: list[int | None] = []
    for _ in range(3):
        task = workers.start(lambda: idents.append(threading.get_ident()))
        task.join(DEADLINE)
    assert len(set(idents)) == 1  # one worker served them all, one after another


def test_concurrent_tasks_get_threads_of_their_own() -> None:
    barrier = threading.Barrier(3, timeout=DEADLINE)
    idents: list[int] = []

    def task() -> None:
        idents.append(threading.get_ident())
        barrier.wait()

    tasks = [workers.start(task) for _ in range(3)]
    for task in tasks:
        task.join(DEADLINE)
    assert len(set(idents)) == 3


def test_a_task_has_its_name_and_knows_it_is_running_here() -> None:
    seen: dict[str, object] = {}
    holder: list[workers.Task] = []
    started = threading.Event()

    def task() -> None:
        started.wait(DEADLINE)
        seen["name"] = threading.current_thread().name
        seen["here"] = holder[0].running_here

    holder.append(workers.start(task, name="watch-abc123"))
    started.set()
    holder[0].join(DEADLINE)
    assert seen == {"name": "watch-abc123", "here": True}
    assert not holder[0].running_here
    assert threading.current_thread().name != "watch-abc123"


def test_an_exception_goes_to_the_thread_excepthook(monkeypatch: pytest.MonkeyPatch) -> None:
    caught: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", caught.append)

    def task() -> None:
        raise RuntimeError("boom")

    workers.start(task, name="drain-x").join(DEADLINE)
    assert len(caught) == 1
    assert caught[0].exc_type is RuntimeError and str(caught[0].exc_value) == "boom"
    # The worker survives its task's exception and serves the next one.
    done: list[bool] = []
    workers.start(lambda: done.append(True)).join(DEADLINE)
    assert done == [True]
