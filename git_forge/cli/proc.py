"""``git forge proc list|show|output|wait|stop`` — the supervised processes of a backlog.

Everything here reads the durable manifests and spools under ``{stateDir}/proc/``,
so it works from another terminal while a loop runs and after it has stopped.
``stop`` signals nothing itself: it leaves a request the owning supervisor acts on.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from git_forge.cli.arguments import add_backlog
from git_forge.cli.output import emit_json, note, warn

DEFAULT_LIMIT = 32 * 1024
FOLLOW_POLL_SECONDS = 0.2
#: Codes that mean "bad input": exit 2, and with --json the result object still prints.
INPUT_ERRORS = ("invalid_arguments", "not_found", "cursor_ahead")


def resolve_proc_root(backlog: str | None) -> Path:
    """``{stateDir}/proc`` of the backlog the workspace resolver picks (the project
    containing the current directory, ``--backlog DIR`` or the configured one)."""
    from git_forge.layout import PROC_DIR
    from git_forge.workspace import locate

    return locate(".", backlog).state_dir / PROC_DIR


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a non-negative number of seconds: {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "proc", help="supervised processes: state, output, stop",
        description="Inspect and stop the processes the embedded supervisor runs.",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True

    lst = verbs.add_parser("list", help="every supervised process",
                           description="Handle, state, item, start, finish and output size.")
    add_backlog(lst)
    lst.add_argument("--json", action="store_true", help="print a JSON array")
    lst.set_defaults(func=run_list)

    show = verbs.add_parser("show", help="one process's manifest",
                            description="Print the manifest of HANDLE.")
    add_backlog(show)
    show.add_argument("handle", metavar="HANDLE")
    show.add_argument("--json", action="store_true", help="print the manifest as JSON")
    show.set_defaults(func=run_show)

    out = verbs.add_parser(
        "output", help="a process's output by cursor",
        description="Print output from byte CURSOR as safe text (escape sequences and "
                    "control characters removed) or as base64 of the raw bytes.",
    )
    add_backlog(out)
    out.add_argument("handle", metavar="HANDLE")
    out.add_argument("--cursor", type=int, default=0, metavar="N",
                     help="raw byte offset to start at (default 0)")
    out.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="B",
                     help=f"raw bytes to read at most (default {DEFAULT_LIMIT})")
    out.add_argument("--base64", action="store_true", help="the raw bytes, base64-encoded")
    out.add_argument("--follow", action="store_true",
                     help="keep printing until the process ended and all output is read")
    out.add_argument("--json", action="store_true", help="print the result object as JSON")
    out.set_defaults(func=run_output)

    wait = verbs.add_parser("wait", help="wait until processes end",
                            description="Wait until every HANDLE is in a terminal state.")
    add_backlog(wait)
    wait.add_argument("handles", nargs="+", metavar="HANDLE")
    wait.add_argument("--timeout", type=_non_negative_float, metavar="SECONDS",
                      help="give up after this long (exit 1)")
    wait.add_argument("--json", action="store_true", help="print the manifests as JSON")
    wait.set_defaults(func=run_wait)

    stop = verbs.add_parser(
        "stop", help="stop a process and its whole tree",
        description="Ask the supervisor that owns HANDLE to stop it: interrupt (SIGINT, "
                    "never escalates), terminate (SIGTERM, then SIGKILL after the grace "
                    "period) or kill (SIGKILL). A finished process is left alone.",
    )
    add_backlog(stop)
    stop.add_argument("handle", metavar="HANDLE")
    stop.add_argument("--mode", choices=("interrupt", "terminate", "kill"), default="terminate")
    stop.add_argument("--grace", type=_non_negative_float, metavar="SECONDS",
                      help="seconds between SIGTERM and SIGKILL (default: the supervisor's)")
    stop.add_argument("--json", action="store_true", help="print the manifest as JSON")
    stop.set_defaults(func=run_stop)


def _view(args: argparse.Namespace):
    from git_forge.supervisor.view import ProcView

    return ProcView(resolve_proc_root(args.backlog))


def _fail(args: argparse.Namespace, exc: Exception, document: dict[str, Any]) -> NoReturn:
    """With --json, a bad-input error still prints its result object; then re-raise."""
    code = getattr(exc, "code", None)
    if args.json and code in INPUT_ERRORS:
        emit_json({**document, "error": code})
    raise exc


def _summary(manifest, total_bytes: int, liveness: str | None) -> dict[str, Any]:
    return {
        "handle": manifest.handle,
        "state": manifest.state,
        "item_id": manifest.origin.item_id,
        "iteration": manifest.origin.iteration,
        "started_at": manifest.started_at,
        "finished_at": manifest.finished_at,
        "total_bytes": total_bytes,
        "exit_code": manifest.result.exit_code,
        "reason": manifest.result.reason,
        "liveness": liveness,
    }


def _live_total(view, manifest) -> int:
    """A running process's output grows past its manifest's cursors: ask the spool."""
    from git_forge.supervisor.lifecycle import ProcessError

    if manifest.terminal:
        return manifest.cursors.total_bytes
    try:
        return max(manifest.cursors.total_bytes, view.spool(manifest.handle).extent().total_bytes)
    except ProcessError:
        return manifest.cursors.total_bytes


def run_list(args: argparse.Namespace) -> int:
    view = _view(args)
    manifests, errors = view.manifests()
    owner_alive = view.owner_alive()
    rows = [_summary(manifest, _live_total(view, manifest), view.liveness(manifest, owner_alive))
            for manifest in manifests]
    if args.json:
        emit_json(rows)
    else:
        if owner_alive:
            from git_forge.loop.control import live_note

            message = live_note(view.paths.root.parent)
            if message is not None:
                note(message)
        for row in rows:
            state = row["state"]
            if row["liveness"] in ("orphaned", "gone"):
                state += f" ({row['liveness']})"
            print("  ".join([
                row["handle"], f"{state:<15}", f"{row['item_id'] or '-':<6}",
                row["started_at"] or "-", row["finished_at"] or "-", f"{row['total_bytes']}",
            ]))
    for error in errors:
        warn(error.message)
    return 2 if errors else 0


def _show_text(manifest) -> None:
    import shlex

    result = manifest.state
    if manifest.result.exit_code is not None:
        result += f" (exit {manifest.result.exit_code})"
    item = manifest.origin.item_id or "-"
    if manifest.origin.iteration is not None:
        item += f" (iteration {manifest.origin.iteration})"
    cursors = manifest.cursors
    for label, value in (
        ("handle", manifest.handle),
        ("state", result),
        ("run", manifest.owner.run_id),
        ("item", item),
        ("command", shlex.join(manifest.command.argv)),
        ("cwd", manifest.command.cwd),
        ("created", manifest.created_at),
        ("started", manifest.started_at or "-"),
        ("finished", manifest.finished_at or "-"),
        ("deadline", manifest.deadline or "-"),
        ("output", f"{cursors.total_bytes} bytes (retained from {cursors.retained_from})"),
    ):
        print(f"{label + ':':<10}{value}")


def run_show(args: argparse.Namespace) -> int:
    from git_forge.supervisor.lifecycle import ProcessError

    try:
        manifest = _view(args).manifest(args.handle)
    except ProcessError as exc:
        _fail(args, exc, {"handle": args.handle})
    if args.json:
        emit_json(manifest.to_dict())
    else:
        _show_text(manifest)
    return 0


def _output_document(handle: str, manifest, rendered, error: str | None = None) -> dict[str, Any]:
    return {
        "handle": handle,
        "state": manifest.state if manifest else None,
        "output": rendered.output if rendered else "",
        "start_cursor": rendered.start_cursor if rendered else None,
        "next_cursor": rendered.next_cursor if rendered else None,
        "total_bytes": rendered.total_bytes if rendered else None,
        "gap": rendered.gap if rendered else False,
        "normalized": rendered.normalized if rendered else False,
        "binary": rendered.binary if rendered else False,
        "exit_code": manifest.result.exit_code if manifest else None,
        "reason": manifest.result.reason if manifest else None,
        "error": error,
    }


def _render(args: argparse.Namespace, view, cursor: int):
    from git_forge.supervisor.lifecycle import ProcessError

    encoding = "base64" if args.base64 else "text"
    try:
        return view.render(args.handle, cursor, args.limit, encoding)
    except ProcessError as exc:
        document = _output_document(args.handle, None, None)
        if exc.code == "cursor_ahead":
            manifest = view.manifest(args.handle)
            document = _output_document(args.handle, manifest, None)
            document.update(start_cursor=cursor, next_cursor=exc.next_cursor,
                            total_bytes=exc.next_cursor)
        elif exc.code == "invalid_arguments":
            document.update(start_cursor=cursor, next_cursor=cursor)
        _fail(args, exc, document)


def _print_chunk(args: argparse.Namespace, manifest, rendered) -> None:
    if args.json:
        emit_json(_output_document(args.handle, manifest, rendered))
        return
    if rendered.gap:
        warn(f"output before byte {rendered.start_cursor} is no longer retained")
    if args.base64:
        if rendered.output:
            print(rendered.output)
    else:
        sys.stdout.write(rendered.output)
    sys.stdout.flush()


def run_output(args: argparse.Namespace) -> int:
    from git_forge.supervisor.lifecycle import ProcessError

    view = _view(args)
    cursor = args.cursor
    if args.limit <= 0:
        _fail(args, ProcessError("invalid_arguments", "--limit must be positive"),
              _output_document(args.handle, None, None))
    while True:
        manifest, rendered = _render(args, view, cursor)
        if not args.follow or rendered.output or rendered.gap:
            _print_chunk(args, manifest, rendered)
        if not args.follow:
            return 0
        cursor = rendered.next_cursor
        if manifest.terminal and cursor >= rendered.total_bytes:
            return 0
        if rendered.next_cursor == rendered.start_cursor:
            if not manifest.terminal and not view.owner_alive():
                if not view.manifest(args.handle).terminal:
                    raise ProcessError(
                        "owner_gone", "no live supervisor owns it; the next restore reconciles it"
                    )
            time.sleep(FOLLOW_POLL_SECONDS)


def _outcome_line(manifest) -> str:
    line = f"{manifest.handle} {manifest.state}"
    if manifest.result.exit_code is not None:
        line += f" (exit {manifest.result.exit_code})"
    return line


def run_wait(args: argparse.Namespace) -> int:
    from git_forge.supervisor.lifecycle import ProcessError

    try:
        manifests = _view(args).wait(args.handles, timeout=args.timeout)
    except ProcessError as exc:
        _fail(args, exc, {"handle": exc.handle or args.handles[0]})
    if args.json:
        emit_json([manifest.to_dict() for manifest in manifests])
    else:
        for manifest in manifests:
            print(_outcome_line(manifest))
    return 0


def run_stop(args: argparse.Namespace) -> int:
    from git_forge.supervisor.lifecycle import ProcessError

    view = _view(args)
    try:
        ended = view.end_orphan(args.handle, args.grace)
        if ended is not None:
            if args.json:
                emit_json({**view.manifest(args.handle).to_dict(), "orphanProcessesEnded": ended})
            else:
                print(f"{args.handle} orphaned: ended {ended} process(es) of its tree")
            return 0
        manifest = view.stop(args.handle, args.mode, args.grace)
    except ProcessError as exc:
        _fail(args, exc, {"handle": args.handle})
    if args.json:
        emit_json(manifest.to_dict())
    else:
        print(_outcome_line(manifest))
    return 0
