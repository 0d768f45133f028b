"""The demo's walk: the whole lifecycle, step by step, in a throwaway repository.

It builds the repository (``scenario.create``), runs the loop with the scripted
agent, shows where the run stopped, recovers it (with the operator's answers on a
terminal, a scripted answer otherwise), resumes the loop and shows the result.
What each step runs is decided here; how it looks is the ``Screen``'s (the CLI's).

Ctrl-C does one thing wherever it is typed: the walk stops at the end of the step
it interrupted, exit 130. What was under way is left the way the real commands
leave it — a loop run stops its agent and puts the item back to pending; at a
recovery prompt the answers already given are recorded and the open questions
deferred (recover's cancel-early), and nothing more is asked.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from git_forge.backlog.item import Item
from git_forge.backlog.topology import TopologyJSON, topology_report
from git_forge.demo.scenario import SCRIPTED_ANSWER, create
from git_forge.exit_codes import EXIT_INTERRUPTED
from git_forge.interrupts import stop_on_signals
from git_forge.loop.engine import run_loop
from git_forge.loop.options import LoopFlags, loop_options
from git_forge.loop.progress import Progress
from git_forge.loop.summary import LoopResult
from git_forge.recovery.answers import Choice
from git_forge.recovery.procedure import RecoverOptions, recover
from git_forge.recovery.report import Report
from git_forge.recovery.steps import Asker
from git_forge.runner import runner_for
from git_forge.runner.base import Runner
from git_forge.status_report import StatusJSON, loop_status
from git_forge.workspace import Workspace

#: The loop command each loop step shows: the demo's .forge.yaml names the scripted agent.
LOOP_COMMAND = "git forge loop run"


class Interrupted(Exception):
    """Ctrl-C was typed: the demo stops at the end of the step it interrupted."""


class ClosingProgress(Progress, Protocol):
    """A loop run's progress that is closed when the run ends, however it ends."""

    def close(self) -> None: ...


class DemoAsker(Asker, Protocol):
    """recover's dialogue, told when Ctrl-C was typed at one of its prompts so that
    it asks nothing more (recover itself goes on to the tree question); and it says
    when the input was closed at one (Ctrl-D), which stops the demo the same way."""

    interrupted: bool
    input_closed: bool


class Screen(Protocol):
    """What the walk shows, in the order it happens."""

    def opening(self, directory: Path) -> None: ...
    def step(self, number: int, title: str) -> None: ...
    def say(self, line: str) -> None: ...
    def backlog(self, items: list[Item]) -> None: ...
    def progress(self) -> ClosingProgress: ...
    def loop_ended(self, result: LoopResult) -> None: ...
    def status(self, document: StatusJSON) -> None: ...
    def topology(self, payload: TopologyJSON) -> None: ...
    def report(self, report: Report) -> None: ...
    def finished(self, directory: Path) -> None: ...
    def stopped(self, directory: Path) -> None: ...


@contextlib.contextmanager
def on_interrupt(handler: Callable[[], None]) -> Iterator[None]:
    """Run ``handler`` on SIGINT (the main thread only can set one) for the block.
    It runs between any two bytecodes, inside whatever holds a lock there: it may
    set a flag or raise, never take a lock (``interrupts`` turns a signal into an
    event)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda *_: handler())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_demo(directory: Path, screen: Screen, asker: DemoAsker | None) -> int:
    """The walk's exit code: recover's when the recovery failed, 130 after Ctrl-C,
    else 0. ``asker`` None answers the recovery's question with the scripted answer."""
    try:
        return _walk(directory, screen, asker)
    except (Interrupted, KeyboardInterrupt):
        screen.stopped(directory)
        return EXIT_INTERRUPTED


def _walk(directory: Path, screen: Screen, asker: DemoAsker | None) -> int:
    screen.opening(directory)
    workspace = create(directory)
    screen.step(1, "A project with a backlog (git forge init; git forge backlog add …)")
    screen.backlog(runner_for(workspace).list_items())

    _run_loop(workspace, screen, 2, "The loop runs a scripted agent on every ready item")

    screen.step(3, "Where the run stopped (git forge status; git forge backlog topology --cluster)")
    _status(workspace, screen)
    screen.topology(topology_report(runner_for(workspace).list_items(), cluster=True))

    interactive = asker is not None
    screen.step(4, "Recovery (git forge recover): "
                + ("answer the question below" if interactive else
                   f"scripted: --answer c003={shlex.quote(SCRIPTED_ANSWER)}"))
    if interactive:
        screen.say("Two items ask the same question in different words: you answer it once.")
    options = RecoverOptions(choices={} if interactive else
                             {"c003": Choice("answer", SCRIPTED_ANSWER)})
    report = _recover(workspace, runner_for(workspace), options, asker)
    screen.report(report)
    if asker is not None and (asker.interrupted or asker.input_closed):
        raise Interrupted
    if report.failure is not None:
        return report.exit_code

    _run_loop(workspace, screen, 5,
              "The loop resumes; the answer is threaded into the agent's prompt")

    screen.step(6, "Where things stand")
    _status(workspace, screen)
    screen.finished(directory)
    return 0


def _run_loop(workspace: Workspace, screen: Screen, number: int, title: str) -> int:
    """A loop run; Ctrl-C stops it as ``loop run`` stops (the agent ends, the item
    goes back to pending), then the demo."""
    screen.step(number, title)
    screen.say(f"$ {LOOP_COMMAND}")
    progress = screen.progress()
    stop = threading.Event()
    try:
        with stop_on_signals(stop, signal.SIGINT) as caught:
            result = run_loop(workspace, loop_options(workspace, LoopFlags()), progress, stop)
    finally:
        progress.close()
    screen.loop_ended(result)
    if caught.signum is not None:
        raise Interrupted
    return result.exit_code


def _recover(workspace: Workspace, runner: Runner, options: RecoverOptions,
             asker: DemoAsker | None) -> Report:
    """``recover`` with Ctrl-C at its prompts noted: each is still recover's
    cancel-early (recorded, never lost), and the demo stops after it."""
    if asker is None:
        return recover(workspace, runner, options, None)

    def interrupted() -> None:
        asker.interrupted = True
        raise KeyboardInterrupt  # what the prompts answer with cancel-early

    with on_interrupt(interrupted):
        return recover(workspace, runner, options, asker)


def _status(workspace: Workspace, screen: Screen) -> None:
    screen.status(loop_status(workspace, runner_for(workspace)))
