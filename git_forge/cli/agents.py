"""``git forge agents [--json]`` — the agents git-forge knows by name.

Each built-in profile (``claude``, ``codex``) with the command it runs, whether
its binary is on PATH and which version it is; then the generic profile, any
other command line given to ``--agent``.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "agents", help="list the agent profiles: command, binary on PATH, version",
        description="List the built-in agent profiles (claude, codex) — the command each "
                    "runs, whether its binary is on PATH and its version — and the generic "
                    "profile (any other --agent command line).")
    parser.add_argument("--json", action="store_true",
                        help="print [{name, binary, path, version, command, …}, …]")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from concurrent.futures import ThreadPoolExecutor

    from git_forge.agents.profiles import GENERIC, PROFILES, describe
    from git_forge.cli.output import emit_json

    profiles = [*PROFILES.values(), GENERIC]
    with ThreadPoolExecutor(max_workers=len(profiles)) as pool:  # versions asked at once
        described = list(pool.map(describe, profiles))
    if args.json:
        emit_json(described)
        return 0
    for entry in described:
        if entry["binary"] is None:
            print(f"{entry['name']:<8} {entry['command']}")
            continue
        where = (f"{entry['path']} ({entry['version'] or 'version unknown'})"
                 if entry["path"] else f"{entry['binary']}: not on PATH")
        print(f"{entry['name']:<8} {where}")
        print(f"{'':<8} runs: {entry['command']}; reads {entry['reports']}")
    return 0
