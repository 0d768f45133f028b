"""``git forge demo [DIR]`` — the newcomer's first run.

Builds a throwaway repository with a small backlog, runs the loop with a
scripted agent (no LLM needed), shows where the run stopped, walks the recovery
(interactive on a terminal, scripted otherwise), resumes the loop and shows the
result. Nothing outside DIR is touched.

Ctrl-C does one thing wherever it is typed: the demo stops there, exit 130, and
says where the repository is. What was under way is left the way the real
commands leave it — a loop run stops its agent and puts the item back to pending;
at a recovery prompt the answers already given are recorded and the open
questions deferred (recover's cancel-early), and nothing more is asked.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from git_forge.cli.output import paint
from git_forge.exit_codes import EXIT_INTERRUPTED


class Interrupted(Exception):
    """Ctrl-C was typed: the demo stops at the end of the step it interrupted."""


@contextlib.contextmanager
def _on_interrupt(handler: Callable[[], None]) -> Iterator[None]:
    """Run ``handler`` on SIGINT (the main thread only can set one) for the block."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda *_: handler())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="watch the whole loop-and-recover lifecycle in a throwaway repository",
        description="Create a throwaway repository with a small backlog, run the loop with a "
                    "scripted agent, recover the run (interactive on a terminal), resume it.",
    )
    parser.add_argument("dir", nargs="?", metavar="DIR",
                        help="where to create the repository (default: a new temporary dir)")
    parser.add_argument("--non-interactive", action="store_true",
                        help="answer the recovery's question with a scripted answer")
    parser.set_defaults(func=run)


def _step(number: int, text: str) -> None:
    print()
    print(paint(f"{number}. {text}", "bold"))


def _run_loop(workspace, title: str, number: int) -> int:
    """A loop run; Ctrl-C stops it as ``loop run`` stops (the agent ends, the item
    goes back to pending), then the demo."""
    from git_forge.cli.loop import TerminalProgress
    from git_forge.demo.scenario import agent_command
    from git_forge.loop.engine import LoopOptions, run_loop

    _step(number, title)
    print("   $ git forge loop run --agent 'python -m git_forge.demo.agent'")
    progress = TerminalProgress(follow=False, ndjson=False)
    stop, typed = threading.Event(), threading.Event()

    def interrupted() -> None:
        typed.set()
        stop.set()

    try:
        with _on_interrupt(interrupted):
            result = run_loop(workspace, LoopOptions(agent=agent_command(), timeout_minutes=2),
                              progress, stop)
    finally:
        progress.close()
    print(f"   loop ended: {result.status} (exit {result.exit_code})"
          + (f" — {result.message}" if result.message else ""))
    if typed.is_set():
        raise Interrupted
    return result.exit_code


def _demo_asker():
    """The recovery's terminal dialogue, which asks nothing more once Ctrl-C was typed
    (recover itself goes on to the tree question; the demo stops instead)."""
    from git_forge.cli.recover import TerminalAsker

    class DemoAsker(TerminalAsker):
        interrupted = False

        def tree(self, plan) -> dict:
            if self.interrupted:
                print("\n   the tree is left as it is")
                return {}
            return super().tree(plan)

    return DemoAsker()


def _recover(workspace, runner, options, asker):
    """``recover`` with Ctrl-C at its prompts noted: each is still recover's
    cancel-early (recorded, never lost), and the demo stops after it."""
    from git_forge.recovery.procedure import recover

    if asker is None:
        return recover(workspace, runner, options, None)

    def interrupted() -> None:
        asker.interrupted = True
        raise KeyboardInterrupt  # what the prompts answer with cancel-early

    with _on_interrupt(interrupted):
        return recover(workspace, runner, options, asker)


def _stopped(directory: Path) -> int:
    root = shlex.quote(str(directory))
    print()
    print(paint("demo stopped (Ctrl-C)", "bold") + f": the repository stays as it is at {root}")
    print(f"  cd {root} && git forge status    # where it stands; git forge recover goes on")
    return EXIT_INTERRUPTED


def _status(workspace) -> None:
    from git_forge.runner import runner_for
    from git_forge.status_report import loop_status, render_status

    for line in render_status(loop_status(workspace, runner_for(workspace))):
        print(f"   {line}")


def run(args: argparse.Namespace) -> int:
    directory = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="git-forge-demo-"))
    try:
        return _walk(args, directory)
    except (Interrupted, KeyboardInterrupt):
        return _stopped(directory)


def _walk(args: argparse.Namespace, directory: Path) -> int:
    from git_forge.backlog.topology import render_text, topology_report
    from git_forge.cli import ask
    from git_forge.cli.recover import render_report
    from git_forge.demo.scenario import SCRIPTED_ANSWER, create
    from git_forge.recovery.answers import Choice
    from git_forge.recovery.procedure import RecoverOptions
    from git_forge.runner import runner_for

    print(paint("git-forge demo", "bold") + f": a throwaway repository at {directory}")

    workspace = create(directory)
    _step(1, "A project with a backlog (git forge init; git forge backlog add …)")
    store_items = runner_for(workspace).list_items()
    for item in store_items:
        depends = f" (after {', '.join(item['dependsOn'])})" if item.get("dependsOn") else ""
        print(f"   {item['id']}  P{item['priority']}  {item['title']}{depends}")

    _run_loop(workspace, "The loop runs a scripted agent on every ready item", 2)

    _step(3, "Where the run stopped (git forge status; git forge backlog topology --cluster)")
    _status(workspace)
    for line in render_text(topology_report(runner_for(workspace).list_items(), cluster=True)):
        print(f"   {line}")

    interactive = not args.non_interactive and ask.interactive()
    _step(4, "Recovery (git forge recover): "
          + ("answer the question below" if interactive else
             f"scripted: --answer c003={shlex.quote(SCRIPTED_ANSWER)}"))
    if interactive:
        print("   Two items ask the same question in different words: you answer it once.")
    options = RecoverOptions(choices={} if interactive else
                             {"c003": Choice("answer", SCRIPTED_ANSWER)})
    asker = _demo_asker() if interactive else None
    report = _recover(workspace, runner_for(workspace), options, asker)
    for line in render_report(report):
        print(f"   {line}" if line else "")
    if asker is not None and asker.interrupted:
        raise Interrupted
    if report.failure is not None:
        return report.exit_code

    _run_loop(workspace, "The loop resumes; the answer is threaded into the agent's prompt", 5)

    _step(6, "Where things stand")
    _status(workspace)
    print()
    print("Look around:")
    root = shlex.quote(str(directory))
    for command in (f"cd {root}", "git log --oneline", "git forge status",
                    "git stash list            # the blocked item's abandoned work",
                    "git forge recover         # item 006 still waits for a decision"):
        print(f"  {command}")
    return 0
