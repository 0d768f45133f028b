"""``git forge version [--json]``."""

from __future__ import annotations

from git_forge import __version__
from git_forge.cli.args import Args
from git_forge.cli.output import emit_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = "Print git-forge's version."
    parser.add_argument("--json", action="store_true", help='print {"version": "X.Y.Z"}')
    parser.set_defaults(func=run)


def run(args: Args) -> int:
    if args.json:
        emit_json({"version": __version__})
    else:
        print(f"git-forge version {__version__}")
    return 0
