"""``git forge demo [DIR]`` — the newcomer's first run.

Builds a throwaway repository with a small backlog, runs the loop with a
scripted agent (no LLM needed), shows where the run stopped, walks the recovery
(interactive on a terminal, scripted otherwise), resumes the loop and shows the
result. Nothing outside DIR is touched. The walk is ``git_forge.demo.walk``'s
(Ctrl-C included); this module parses, picks the dialogue and draws the screen.
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from git_forge.cli import ask
from git_forge.cli.args import Args
from git_forge.cli.loop import TerminalProgress
from git_forge.cli.output import paint
from git_forge.cli.recover import TerminalAsker, render_report
from git_forge.cli.render_topology import render_text
from git_forge.cli.status import render_status, run_end_words
from git_forge.demo.walk import run_demo

if TYPE_CHECKING:
    import argparse

    from git_forge.backlog.item import Item
    from git_forge.backlog.topology import TopologyJSON
    from git_forge.demo.walk import DemoAsker
    from git_forge.loop.summary import LoopResult
    from git_forge.reconcile.attribution import Plan
    from git_forge.reconcile.execution import Decision
    from git_forge.recovery.report import Report
    from git_forge.status_report import StatusJSON


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Create a throwaway repository with a small backlog, run the loop with a "
        "scripted agent, recover the run (interactive on a terminal), resume it.")
    parser.add_argument("dir", nargs="?", metavar="DIR",
                        help="where to create the repository (default: a new temporary dir)")
    parser.add_argument("--non-interactive", action="store_true",
                        help="answer the recovery's question with a scripted answer")
    parser.set_defaults(func=run)


class TerminalScreen:
    """The walk drawn on standard output: numbered bold steps, indented detail."""

    def opening(self, directory: Path) -> None:
        print(paint("git-forge demo", "bold") + f": a throwaway repository at {directory}")

    def step(self, number: int, title: str) -> None:
        print()
        print(paint(f"{number}. {title}", "bold"))

    def say(self, line: str) -> None:
        print(f"   {line}")

    def backlog(self, items: list[Item]) -> None:
        for item in items:
            depends = f" (after {', '.join(item.depends_on)})" if item.depends_on else ""
            self.say(f"{item.id}  P{item.priority}  {item.title}{depends}")

    def progress(self) -> TerminalProgress:
        return TerminalProgress(follow=False, ndjson=False)

    def loop_ended(self, result: LoopResult) -> None:
        self.say(f"loop ended: {run_end_words(result.status, result.exit_code)} "
                 f"(exit {result.exit_code})"
                 + (f" — {result.message}" if result.message else ""))

    def status(self, document: StatusJSON) -> None:
        for line in render_status(document):
            self.say(line)

    def topology(self, payload: TopologyJSON) -> None:
        for line in render_text(payload):
            self.say(line)

    def report(self, report: Report) -> None:
        for line in render_report(report):
            print(f"   {line}" if line else "")

    def finished(self, directory: Path) -> None:
        print()
        print("Look around:")
        root = shlex.quote(str(directory))
        for command in (f"cd {root}", "git log --oneline", "git forge status",
                        "git for-each-ref refs/forge/abandoned/   # the blocked item's "
                        "abandoned work, kept",
                        "git forge recover         # item 006 still waits for a decision"):
            print(f"  {command}")

    def stopped(self, directory: Path) -> None:
        root = shlex.quote(str(directory))
        print()
        print(paint("demo stopped", "bold")  # by Ctrl-C, or Ctrl-D at a prompt
              + f": the repository stays as it is at {root}")
        print(f"  cd {root} && git forge status    # where it stands; git forge recover goes on")


def _demo_asker() -> DemoAsker:
    """The recovery's terminal dialogue, which asks nothing more once Ctrl-C was typed
    (recover itself goes on to the tree question; the demo stops instead)."""
    class DemoAsker(TerminalAsker):
        interrupted = False

        def _stopped(self, stop: KeyboardInterrupt) -> None:
            # Ctrl-C at a prompt is read as a key (``ask``), not a signal: the same stop
            super()._stopped(stop)
            self.interrupted = self.interrupted or not isinstance(stop, ask.InputClosed)

        def tree(self, plan: Plan) -> dict[str, Decision]:
            if self.interrupted or self.input_closed:
                print("\n   the tree is left as it is")
                return {}
            return super().tree(plan)

    return DemoAsker()


def run(args: Args) -> int:
    directory = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="git-forge-demo-"))
    interactive = not args.non_interactive and ask.interactive()
    return run_demo(directory, TerminalScreen(), _demo_asker() if interactive else None)
