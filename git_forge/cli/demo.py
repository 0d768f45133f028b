"""``git forge demo [DIR]`` — the newcomer's first run.

Builds a throwaway repository with a small backlog, runs the loop with a
scripted agent (no LLM needed), shows where the run stopped, walks the recovery
(interactive on a terminal, scripted otherwise), resumes the loop and shows the
result. Nothing outside DIR is touched.
"""

from __future__ import annotations

import argparse
import shlex
import tempfile
from pathlib import Path

from git_forge.cli.output import paint


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
    from git_forge.cli.loop import TerminalProgress
    from git_forge.demo.scenario import agent_command
    from git_forge.loop.runner import LoopOptions, run_loop

    _step(number, title)
    print("   $ git forge loop run --agent 'python -m git_forge.demo.agent'")
    progress = TerminalProgress(follow=False, ndjson=False)
    try:
        result = run_loop(workspace, LoopOptions(agent=agent_command(), timeout_minutes=2),
                          progress)
    finally:
        progress.close()
    print(f"   loop ended: {result.status} (exit {result.exit_code})"
          + (f" — {result.message}" if result.message else ""))
    return result.exit_code


def _status(workspace) -> None:
    from git_forge.runner import runner_for
    from git_forge.status import loop_status, render_status

    for line in render_status(loop_status(workspace, runner_for(workspace))):
        print(f"   {line}")


def run(args: argparse.Namespace) -> int:
    from git_forge.backlog.topology import render_text, topology_report
    from git_forge.cli import ask
    from git_forge.cli.recover import TerminalAsker, render_report
    from git_forge.demo.scenario import SCRIPTED_ANSWER, create
    from git_forge.recovery.answers import Choice
    from git_forge.recovery.procedure import RecoverOptions, recover
    from git_forge.runner import runner_for

    directory = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="git-forge-demo-"))
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
    report = recover(workspace, runner_for(workspace), options,
                     TerminalAsker() if interactive else None)
    for line in render_report(report):
        print(f"   {line}" if line else "")
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
