"""``git forge config [PATH] [--backlog DIR] [--json]`` — every effective value and its source."""

from __future__ import annotations

import json

from git_forge.cli.args import Args
from git_forge.cli.arguments import add_location
from git_forge.cli.output import emit_json
from git_forge.workspace import locate

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Print every effective setting with its source: default, user (<file>), "
        ".forge.yaml, forge.config.json or flag.")
    add_location(parser)
    parser.add_argument("--json", action="store_true",
                        help='print {KEY: {"value": V, "source": S}, ...}')
    parser.set_defaults(func=run)


def run(args: Args) -> int:
    config = locate(args.path, args.backlog, need_work_tree=False).config
    settings = list(config.settings())
    if args.json:
        emit_json({s.key: {"value": s.value, "source": s.source} for s in settings})
        return 0
    rows = [(f"{s.key}={_show(s.value)}", s.source) for s in settings]
    width = max(len(left) for left, _ in rows)
    for left, source in rows:
        print(f"{left:<{width}}  {source}")
    return 0


def _show(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, allow_nan=False)
