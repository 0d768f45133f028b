"""Signals turned into an event (``git_forge.interrupts``): a handler that takes no
lock, so a signal never waits on a lock its own thread holds. Each scenario runs
in a child interpreter of its own, so that a deadlock is a child killed at its
deadline rather than a hung test run."""

from __future__ import annotations

import signal
import sys
import textwrap
import threading

import waiting

from git_forge.interrupts import stop_on_signals


def run_child(body: str) -> str:
    """``body`` run in a fresh interpreter with ``stop_on_signals`` imported; its
    stdout. A child still running after 20 s is killed and the test fails."""
    source = "import os, signal, sys, threading\n" \
             "from git_forge.interrupts import stop_on_signals\n" + textwrap.dedent(body)
    result = waiting.run([sys.executable, "-c", source], capture_output=True, text=True,
                         timeout=20)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_signal_while_the_event_s_lock_is_held_is_seen_without_a_deadlock() -> None:
    """The main thread holds the event's condition (as inside ``Event.wait`` or
    ``Event.set``) when SIGINT arrives: a handler calling ``set`` there waited for
    itself forever."""
    out = run_child("""
        stop = threading.Event()
        with stop_on_signals(stop, signal.SIGINT, signal.SIGTERM) as caught:
            with stop._cond:
                signal.raise_signal(signal.SIGINT)
                signal.raise_signal(signal.SIGTERM)
                held = stop.is_set()
            print(held, stop.wait(10), caught.signum == signal.SIGTERM)
    """)
    assert out.split() == ["False", "True", "True"]


def test_a_burst_of_signals_ends_a_wait_and_the_block_leaves_nothing_behind() -> None:
    """Hundreds of SIGINTs from another thread while the main thread waits on the
    event; afterwards the handlers, the wakeup descriptor, the threads and the open
    descriptors are as before the block."""
    out = run_child("""
        def fds():
            return sorted(os.listdir("/proc/self/fd"))

        before = fds(), signal.getsignal(signal.SIGINT), threading.active_count()
        stop = threading.Event()

        def burst():
            for _ in range(500):
                os.kill(os.getpid(), signal.SIGINT)

        with stop_on_signals(stop, signal.SIGINT) as caught:
            sender = threading.Thread(target=burst)
            sender.start()
            seen = stop.wait(10)
            sender.join(10)
        print(seen, caught.signum == signal.SIGINT)
        print(signal.set_wakeup_fd(-1) == -1,
              (fds(), signal.getsignal(signal.SIGINT), threading.active_count()) == before)
    """)
    assert out.split() == ["True", "True", "True", "True"]


def test_another_handler_s_signal_through_the_pipe_does_not_set_the_event() -> None:
    out = run_child("""
        heard = []
        signal.signal(signal.SIGUSR1, lambda *_: heard.append(1))
        stop = threading.Event()
        with stop_on_signals(stop, signal.SIGINT):
            signal.raise_signal(signal.SIGUSR1)
            print(heard == [1], stop.wait(0.3))
    """)
    assert out.split() == ["True", "False"]


def test_outside_the_main_thread_nothing_is_installed() -> None:
    """Only the main thread may set a handler: elsewhere the block catches nothing
    (and does not fail)."""
    found: list[object] = []

    def body() -> None:
        with stop_on_signals(threading.Event(), signal.SIGINT) as caught:
            found.append(signal.getsignal(signal.SIGINT))
        found.append(caught.signum)

    before = signal.getsignal(signal.SIGINT)
    thread = threading.Thread(target=body)
    thread.start()
    waiting.join(thread, 10)
    assert found == [before, None]
