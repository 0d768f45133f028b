"""Arguments many commands share, defined once.

``PATH`` and ``--backlog DIR`` mean what they mean in the rauf runner contract:
the project path (default ``.``) and the backlog directory relative to the
project root, so git-forge can stand in for ``{bin}`` in a feature-forge config.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def add_path(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", default=".", metavar="PATH",
                        help="project path (default: .)")


def add_backlog(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backlog", metavar="DIR",
                        help="backlog directory, relative to the project root "
                             "(default: config 'backlog', else .forge)")


def add_location(parser: argparse.ArgumentParser) -> None:
    """``[PATH] [--backlog DIR]``."""
    add_path(parser)
    add_backlog(parser)
