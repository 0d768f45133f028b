"""``git forge agents [--json]`` — the agents git-forge knows by name.

Each built-in profile (``claude``, ``codex``) with the command it runs, whether
its binary is on PATH and which version it is; then the generic profile, any
other command line given to ``--agent``.

A version outside the range git-forge was verified with is a warning on the
profile's line, not an error: the exit status stays 0, since the program may
well work (its stream may differ, and the loop may then misread it) and the
listing is what was asked for.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from git_forge.agents.profiles import GENERIC, PROFILES, describe
from git_forge.cli.args import Args
from git_forge.cli.output import emit_json, paint

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "List the built-in agent profiles (claude, codex) — the command each "
        "runs, whether its binary is on PATH and its version, with a warning "
        "when that version is outside the range git-forge was verified with "
        "(exit 0 all the same) — and the generic profile (any other --agent "
        "command line).")
    parser.add_argument("--json", action="store_true",
                        help="print [{name, binary, path, version, versionText, verified, "
                             "versionStatus, command, …}, …]")
    parser.set_defaults(func=run)


def run(args: Args) -> int:
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
        if not entry["path"]:
            where = f"{entry['binary']}: not on PATH"
        elif entry["versionStatus"] in ("older", "newer"):
            warning = (f"{entry['versionStatus']} than the {_verified(entry)} git-forge "
                       "verified: its stream may differ")
            where = f"{entry['path']} ({entry['version']}; {paint(warning, 'yellow')})"
        else:
            where = f"{entry['path']} ({entry['version'] or 'version unknown'})"
        print(f"{entry['name']:<8} {where}")
        print(f"{'':<8} runs: {entry['command']}; reads {entry['reports']}")
    return 0


def _verified(entry: dict[str, Any]) -> str:
    """The range a profile was verified with: ``2.1.197–2.1.332``, or one version."""
    lowest, highest = entry["verified"]["lowest"], entry["verified"]["highest"]
    return lowest if lowest == highest else f"{lowest}–{highest}"
