"""Daemon threads that are reused from one supervised process to the next.

Every agent start needs up to five threads (two drains, the stdin feeder, the
watcher, and for a child started without the watchdog the leader's waiter).
Starting a thread waits until the new thread has run (``Thread.start`` blocks
on its start handshake): about half a millisecond each here, on the path
between two agents. A worker left idle by the last process takes the next
task without that wait; one idle for ``IDLE_SECONDS`` ends, so a long run
holds no more threads than it last used at once.

A task behaves as its own thread would: an exception goes to
``threading.excepthook``, and the worker's name is the task's while it runs.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from queue import Empty, SimpleQueue
from typing import Any

#: How long an idle worker waits for its next task before it ends.
IDLE_SECONDS = 30.0
IDLE_NAME = "forge-worker"

_lock = threading.Lock()
_idle: list[_Worker] = []


class Task:
    """One call running on a worker: ``join`` waits for it, as ``Thread.join`` would."""

    def __init__(self, target: Callable[..., object], args: tuple[Any, ...], name: str) -> None:
        self._target = target
        self._args = args
        self.name = name
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None

    def join(self, timeout: float | None = None) -> None:
        self._finished.wait(timeout)

    def is_alive(self) -> bool:
        return not self._finished.is_set()

    @property
    def running_here(self) -> bool:
        """The caller is this task (a task must not join itself)."""
        return self._thread is threading.current_thread()

    def _run(self) -> None:
        thread = self._thread = threading.current_thread()
        thread.name = self.name
        try:
            self._target(*self._args)
        except BaseException:
            kind, value, trace = sys.exc_info()
            assert kind is not None
            threading.excepthook(threading.ExceptHookArgs((kind, value, trace, thread)))
        finally:
            thread.name = IDLE_NAME
            self._target = self._args = None  # type: ignore[assignment]  # drop references
            self._finished.set()


class _Worker:
    def __init__(self) -> None:
        self.inbox: SimpleQueue[Task] = SimpleQueue()
        self.thread = threading.Thread(target=self._serve, daemon=True, name=IDLE_NAME)

    def _serve(self) -> None:
        while True:
            try:
                task = self.inbox.get(timeout=IDLE_SECONDS)
            except Empty:
                with _lock:
                    if self in _idle:  # nobody took this worker meanwhile: it ends
                        _idle.remove(self)
                        return
                continue  # taken just now: its task is on the way
            task._run()
            del task
            with _lock:
                _idle.append(self)


def start(target: Callable[..., object], *args: Any, name: str = IDLE_NAME) -> Task:
    """Run ``target(*args)`` on an idle worker, or on a new one when none is idle."""
    task = Task(target, args, name)
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _Worker()
        worker.inbox.put(task)
        worker.thread.start()
    else:
        worker.inbox.put(task)
    return task


def _forget_workers() -> None:
    """In a forked child the workers' threads do not exist."""
    global _lock
    _lock = threading.Lock()
    _idle.clear()


os.register_at_fork(after_in_child=_forget_workers)
