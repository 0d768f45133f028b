"""``git forge version [--json]``."""

from __future__ import annotations

import argparse

from git_forge import __version__
from git_forge.cli.output import emit_json


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = "Print git-forge's version."
    parser.add_argument("--json", action="store_true", help='print {"version": "X.Y.Z"}')
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.json:
        emit_json({"version": __version__})
    else:
        print(f"git-forge version {__version__}")
    return 0
