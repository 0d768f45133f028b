"""``git forge proc list|show|output|wait|stop`` — the supervised processes of a backlog.

Everything here reads the durable manifests and spools under ``{stateDir}/proc/``,
so it works from another terminal while a loop runs and after it has stopped.
``stop`` signals nothing itself: it leaves a request the owning supervisor acts on.

Every verb takes a HANDLE as a whole handle, a unique prefix of one (4 characters
or more) or an item id (``3`` for ``003`` too), which names that item's latest
agent process — a verification gate's only when the item has no other
(``ProcView.resolve``). Human output speaks in words; ``--json`` keeps the codes.
"""

import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypedDict

from git_forge.cli.args import Args
from git_forge.cli.arguments import add_backlog
from git_forge.cli.output import emit_json, note, warn
from git_forge.cli.plain import plain
from git_forge.layout import PROC_DIR
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import Label, Manifest, ManifestStore, SandboxJSON
from git_forge.supervisor.view import ProcView
from git_forge.words import counted
from git_forge.workspace import locate

if TYPE_CHECKING:
    import argparse

    from git_forge.supervisor.follow import OutputReader
    from git_forge.supervisor.render import RenderedOutput

#: The window of one ``--json`` document when ``--limit`` is not given.
DEFAULT_LIMIT = 32 * 1024
#: Without ``--limit`` the output is printed in reads of this many raw bytes, so
#: memory stays bounded whatever the spool holds. A multiple of 3: base64 lines of
#: whole reads join into one valid encoding of the raw bytes.
STREAM_CHUNK = 3 * 64 * 1024
HANDLE_HELP = ("a handle, a unique prefix of one (4+ characters) or an item id (its latest "
               "agent process)")
#: Codes that mean "bad input": exit 2, and with --json the result object still prints.
INPUT_ERRORS = ("invalid_arguments", "not_found", "cursor_ahead")


def resolve_proc_root(backlog: str | None) -> Path:
    """``{stateDir}/proc`` of the backlog the workspace resolver picks (the project
    containing the current directory, ``--backlog DIR`` or the configured one)."""
    return locate(".", backlog).state_dir / PROC_DIR


def seconds(text: str) -> float:
    """A duration in seconds, as ``--timeout`` and ``--grace`` take it: a number, not
    negative and not infinite. argparse words a refusal after this function's name:
    ``argument --grace: invalid seconds value: '-1'``."""
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise ValueError(text)
    return value


def register(parser: "argparse.ArgumentParser") -> None:
    parser.description = "Inspect and stop the processes the embedded supervisor runs."
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True

    lst = verbs.add_parser("list", help="every supervised process",
                           description="Handle, state (with the exit code of an exited "
                                       "process), item, start, finish and output size.")
    add_backlog(lst)
    lst.add_argument("--json", action="store_true", help="print a JSON array")
    lst.set_defaults(func=run_list)

    show = verbs.add_parser("show", help="one process's manifest",
                            description="Print the manifest of HANDLE.")
    add_backlog(show)
    show.add_argument("handle", metavar="HANDLE", help=HANDLE_HELP)
    show.add_argument("--json", action="store_true", help="print the manifest as JSON")
    show.set_defaults(func=run_show)

    out = verbs.add_parser(
        "output", help="a process's output by cursor",
        description="Print output from byte CURSOR as safe text (escape sequences and "
                    "control characters removed) or as base64 of the raw bytes. Without "
                    "--limit, everything retained is printed; with it, a note on stderr "
                    "gives the cursor to continue from when more follows.",
    )
    add_backlog(out)
    out.add_argument("handle", metavar="HANDLE", help=HANDLE_HELP)
    out.add_argument("--cursor", type=int, default=0, metavar="N",
                     help="raw byte offset to start at (default 0)")
    out.add_argument("--limit", type=int, metavar="B",
                     help="raw bytes to read at most (default: everything retained; with "
                          f"--json, {DEFAULT_LIMIT} per document, whose next_cursor "
                          "continues)")
    out.add_argument("--base64", action="store_true",
                     help="the raw bytes, base64-encoded (one line per read)")
    out.add_argument("--follow", action="store_true",
                     help="keep printing until the process ended and all output is read")
    out.add_argument("--json", action="store_true", help="print the result object as JSON")
    out.set_defaults(func=run_output)

    wait = verbs.add_parser("wait", help="wait until processes end",
                            description="Wait until every HANDLE is in a terminal state.")
    add_backlog(wait)
    wait.add_argument("handles", nargs="+", metavar="HANDLE", help=HANDLE_HELP)
    wait.add_argument("--timeout", type=seconds, metavar="SECONDS",
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
    stop.add_argument("handle", metavar="HANDLE", help=HANDLE_HELP)
    stop.add_argument("--mode", choices=("interrupt", "terminate", "kill"), default="terminate")
    stop.add_argument("--grace", type=seconds, metavar="SECONDS",
                      help="seconds between SIGTERM and SIGKILL (default: the supervisor's)")
    stop.add_argument("--json", action="store_true", help="print the manifest as JSON")
    stop.set_defaults(func=run_stop)

    prune = verbs.add_parser(
        "prune", help="remove the processes of old runs",
        description="Remove the manifests and output of finished processes of every run but "
                    "the supervisor.keepRuns most recent ones (default 10). Never removed: a "
                    "process not finished or not yet reconciled, a lost one, one marked to "
                    "keep. The loop does the same at the start of every run. Quiet on "
                    "success.",
    )
    add_backlog(prune)
    prune.add_argument("-n", "--dry-run", action="store_true",
                       help="only list what would be removed")
    prune.add_argument("--json", action="store_true",
                       help="print what was (or would be) removed as JSON")
    prune.set_defaults(func=run_prune)


def _view(args: Args) -> ProcView:
    return ProcView(resolve_proc_root(args.backlog))


def _fail(args: Args, exc: Exception, document: Mapping[str, object]) -> NoReturn:
    """With --json, a bad-input error still prints its result object; then re-raise."""
    code = getattr(exc, "code", None)
    if args.json and code in INPUT_ERRORS:
        emit_json({**document, "error": code})
    raise exc


def _resolved(args: Args, view: ProcView, reference: str,
              document: Mapping[str, object]) -> str:
    """The handle ``reference`` names (see ``ProcView.resolve``), or the command's
    failure with ``document`` as its --json result."""
    try:  # the loop's label, and an item's id as every command takes it (``3`` is ``003``)
        return view.resolve(reference, label="item_id", noun="item", named=_item_named,
                            aside="gate")
    except ProcessError as exc:
        _fail(args, exc, document)


def _item_named(reference: str, item_ids: list[str]) -> str | None:
    """The item id among ``item_ids`` that ``reference`` names (``match_id``); two of
    the same number is the supervisor's ``invalid_arguments``, as any ambiguity."""
    # common-case boundary: the item rules for an item's id
    from git_forge.backlog.model import AmbiguousId, match_id

    try:
        return match_id(reference, item_ids)
    except AmbiguousId as exc:
        raise ProcessError("invalid_arguments", exc.message) from None


class ProcRowJSON(TypedDict):
    """One process as ``proc list --json`` (and ``proc prune --json``) lists it."""

    handle: str
    state: str
    item_id: Label
    iteration: Label
    gate: Label
    started_at: str | None
    finished_at: str | None
    total_bytes: int
    exit_code: int | None
    reason: str | None
    liveness: str | None


def _summary(manifest: Manifest, total_bytes: int, liveness: str | None) -> ProcRowJSON:
    return {
        "handle": manifest.handle,
        "state": manifest.state,
        "item_id": manifest.origin.get("item_id"),
        "iteration": manifest.origin.get("iteration"),
        "gate": manifest.origin.get("gate"),
        "started_at": manifest.started_at,
        "finished_at": manifest.finished_at,
        "total_bytes": total_bytes,
        "exit_code": manifest.result.exit_code,
        "reason": manifest.result.reason,
        "liveness": liveness,
    }


LIST_COLUMNS = ("HANDLE", "STATE", "ITEM", "STARTED", "FINISHED", "BYTES")


def _list_cells(row: ProcRowJSON) -> tuple[str, ...]:
    state = row["state"]
    if row["exit_code"] is not None:
        state += f" {row['exit_code']}"
    if row["liveness"] in ("orphaned", "gone"):
        state += f" ({row['liveness']})"
    return (row["handle"], state, str(row["item_id"] or "-"), row["started_at"] or "-",
            row["finished_at"] or "-", str(row["total_bytes"]))


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns two spaces apart; the last column (a number) right-aligned."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return ["  ".join([*(cell.ljust(width) for cell, width in zip(row[:-1], widths[:-1],
                                                                  strict=True)),
                       row[-1].rjust(widths[-1])]).rstrip() for row in rows]


def run_list(args: Args) -> int:
    view = _view(args)
    manifests, errors = view.manifests()
    owner_alive = view.owner_alive()
    rows = [_summary(manifest, view.total_bytes(manifest), view.liveness(manifest, owner_alive))
            for manifest in manifests]
    if args.json:
        emit_json(rows)
    else:
        if owner_alive:
            from git_forge.loop.control import live_note  # common-case boundary: a live run

            message = live_note(view.paths.root.parent)
            if message is not None:
                note(message)
        if rows:  # nothing at all when there is nothing, like `git stash list`
            print("\n".join(_table([LIST_COLUMNS, *(_list_cells(row) for row in rows)])))
    for error in errors:
        warn(plain(error.message))
    return 2 if errors else 0


def _show_text(manifest: Manifest) -> None:
    result = manifest.state
    if manifest.result.exit_code is not None:
        result += f" (exit {manifest.result.exit_code})"
    elif manifest.state == "failed":
        result += " (the agent could not be started)"
    item = str(manifest.origin.get("item_id") or "-")
    iteration = manifest.origin.get("iteration")
    if iteration is not None:
        item += f" (iteration {iteration})"
    cursors = manifest.cursors
    for label, value in (
        ("handle", manifest.handle),
        ("state", result),
        ("run", manifest.owner.run_id),
        ("item", item),
        ("command", shlex.join(manifest.command.argv)),
        ("cwd", manifest.command.cwd),
        ("sandbox", _sandbox_words(manifest.command.sandbox)),
        ("created", manifest.created_at),
        ("started", manifest.started_at or "-"),
        ("finished", manifest.finished_at or "-"),
        ("deadline", manifest.deadline or "-"),
        ("output", f"{cursors.total_bytes} bytes (retained from {cursors.retained_from})"),
    ):
        print(f"{label + ':':<10}{value}")


def _sandbox_words(sandbox: SandboxJSON | None) -> str:
    """``bwrap, writes TREE and 2 more paths (--json lists them), network shared``;
    ``none``."""
    if sandbox is None:
        return "none"
    writable = sandbox["writable"]
    more = len(writable) - 1
    where = (f"writes {writable[0]}" + (f" and {counted(more, 'more path')} (--json lists "
                                         f"{'it' if more == 1 else 'them'})" if more else "")
             if writable else "writes nothing")
    return f"{sandbox['kind']}, {where}, network {'shared' if sandbox['network'] else 'none'}"


def run_show(args: Args) -> int:
    view = _view(args)
    handle = _resolved(args, view, args.handle, {"handle": args.handle})
    try:
        manifest = view.manifest(handle)
    except ProcessError as exc:
        _fail(args, exc, {"handle": handle})
    if args.json:
        emit_json(manifest.to_dict())
    else:
        _show_text(manifest)
    return 0


class ProcOutputJSON(TypedDict):
    """What ``proc output --json`` prints: a window of the output, and the process."""

    handle: str
    state: str | None
    output: str
    start_cursor: int | None
    next_cursor: int | None
    total_bytes: int | None
    gap: bool
    normalized: bool
    binary: bool
    exit_code: int | None
    reason: str | None
    error: str | None


def _output_document(handle: str, manifest: Manifest | None, rendered: "RenderedOutput | None",
                     error: str | None = None) -> ProcOutputJSON:
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


def _read_failed(args: Args, reader: "OutputReader", exc: ProcessError) -> NoReturn:
    """A read of ``reader`` was refused: with --json, the result object of the refused
    cursor; any error not from a read passes through as it is."""
    if exc is not reader.failure:
        raise exc
    handle, cursor = reader.handle, reader.cursor
    document = _output_document(handle, None, None)
    if exc.code == "cursor_ahead":
        document = _output_document(handle, reader.view.manifest(handle), None)
        document["start_cursor"] = cursor
        document["next_cursor"] = document["total_bytes"] = exc.next_cursor
    elif exc.code == "invalid_arguments":
        document["start_cursor"] = document["next_cursor"] = cursor
    _fail(args, exc, document)


def _print_chunk(args: Args, handle: str, manifest: Manifest,
                 rendered: "RenderedOutput") -> None:
    if args.json:
        emit_json(_output_document(handle, manifest, rendered))
        return
    if rendered.gap:
        warn(f"output before byte {rendered.start_cursor} is no longer retained")
    if args.base64:
        if rendered.output:
            print(rendered.output)
    else:
        sys.stdout.write(rendered.output)
    sys.stdout.flush()


def _more_follows(handle: str, limit: int, rendered: "RenderedOutput") -> None:
    """A bounded read that stopped short of the retained end says where to go on."""
    if rendered.next_cursor < rendered.total_bytes:
        note(f"more output follows: git forge proc output {handle} "
             f"--cursor {rendered.next_cursor} --limit {limit}")


def run_output(args: Args) -> int:
    view = _view(args)
    if args.limit is not None and args.limit <= 0:
        _fail(args, ProcessError("invalid_arguments", "--limit must be positive"),
              _output_document(args.handle, None, None))
    handle = _resolved(args, view, args.handle, _output_document(args.handle, None, None))
    if args.limit is not None:
        window = args.limit
    else:
        window = DEFAULT_LIMIT if args.json else STREAM_CHUNK
    # parser-tree boundary: proc list and show read no growing output
    from git_forge.supervisor.follow import OutputReader

    reader = OutputReader(view, handle, args.cursor, window=window,
                          encoding="base64" if args.base64 else "text")
    try:
        if args.follow:
            for read in reader.follow():
                _print_chunk(args, handle, read.manifest, read.rendered)
        elif args.json or args.limit is not None:
            read = reader.read()
            _print_chunk(args, handle, read.manifest, read.rendered)
            if not args.json:
                _more_follows(handle, window, read.rendered)
        else:  # everything retained when the command began, one bounded read at a time
            for read in reader.retained():
                _print_chunk(args, handle, read.manifest, read.rendered)
    except ProcessError as exc:
        _read_failed(args, reader, exc)
    return 0


def _outcome_line(manifest: Manifest) -> str:
    line = f"{manifest.handle} {manifest.state}"
    if manifest.result.exit_code is not None:
        line += f" (exit {manifest.result.exit_code})"
    return line


def run_wait(args: Args) -> int:
    view = _view(args)
    handles = [_resolved(args, view, reference, {"handle": reference})
               for reference in args.handles]
    try:
        manifests = view.wait(handles, timeout=args.timeout)
    except ProcessError as exc:
        _fail(args, exc, {"handle": exc.handle or handles[0]})
    if args.json:
        emit_json([manifest.to_dict() for manifest in manifests])
    else:
        for manifest in manifests:
            print(_outcome_line(manifest))
    return 0


def run_stop(args: Args) -> int:
    view = _view(args)
    handle = _resolved(args, view, args.handle, {"handle": args.handle})
    try:
        ended = view.end_orphan(handle, args.grace)
        if ended is not None:
            if args.json:
                emit_json({**view.manifest(handle).to_dict(), "orphanProcessesEnded": ended})
            else:
                print(f"{handle} orphaned: ended {counted(ended, 'process', 'processes')} of "
                      "its tree")
            return 0
        manifest = view.stop(handle, args.mode, args.grace)
    except ProcessError as exc:
        _fail(args, exc, {"handle": handle})
    if args.json:
        emit_json(manifest.to_dict())
    else:
        print(_outcome_line(manifest))
    return 0


def run_prune(args: Args) -> int:
    """Safe beside a live loop: ``retention.prune`` touches only settled processes,
    and the live run is the most recent."""
    from git_forge.supervisor.retention import prune  # parser-tree boundary: proc list

    workspace = locate(".", args.backlog)
    store = ManifestStore(workspace.state_dir / PROC_DIR)
    report = prune(store, store.paths, workspace.config["supervisor.keepRuns"],
                   dry_run=args.dry_run)
    if args.json:
        emit_json({"dry_run": args.dry_run,
                   "removed": [_summary(m, m.cursors.total_bytes, None) for m in report.removed],
                   "kept": [m.handle for m in report.kept],
                   "errors": [{"handle": handle, "error": error.code}
                              for handle, error in report.errors]})
    elif args.dry_run:
        for manifest in report.removed:  # like `git clean -n`
            print(f"Would remove {manifest.handle} "
                  f"(run {manifest.owner.run_id}, item {manifest.origin.get('item_id') or '-'})")
    for handle, error in report.errors:
        warn(plain(f"{handle}: {error.message}"))
    return 2 if report.errors else 0
