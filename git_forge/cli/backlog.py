"""``git forge backlog list|show|add|edit|answer|unblock|done|drop|topology`` — the rauf
runner contract's backlog verbs (same positional ``PATH``, ``--backlog DIR`` and ``--json``
outputs), acting on the embedded backlog file, and git-forge's own ``done`` and ``drop``;
``topology`` reads the runner's list."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from git_forge.backlog.cache import derived, derived_text, read_valid
from git_forge.backlog.errors import BacklogError
from git_forge.backlog.item import Item, kind
from git_forge.backlog.model import drop_items, id_position
from git_forge.backlog.store import BacklogStore
from git_forge.backlog.topology import build_graph, parse_items, topology_report, waiting_on
from git_forge.cli.args import Args
from git_forge.cli.arguments import add_backlog, add_path
from git_forge.cli.output import emit_json, json_text, note, one_line, paint, print_json_text
from git_forge.cli.render_topology import render_text
from git_forge.config import feature_forge_layer
from git_forge.errors import UsageError, os_error_text
from git_forge.loop.control import in_progress_refusal, live_note, refuse_if_live
from git_forge.safetext import clean
from git_forge.workspace import locate

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from git_forge.backlog.store import Snapshot
    from git_forge.workspace import Workspace

#: ``backlog list --json``'s output in the state dir's cache (``backlog/cache.py``).
LIST_CACHE = "backlog-list.json"
#: ``backlog list``'s rows in the state dir's cache (``_listing_rows``).
ROWS_CACHE = "backlog-list-rows.json"
#: Every item, a line each, for ``backlog show`` (``_item_lines``). ``backlog topology``
#: keeps each of its outputs as ``backlog-topology[-cluster](.json|.txt|-verbose.txt)``.
ITEMS_CACHE = "backlog-items.txt"
_STATUS_FILTERS = ("pending", "in_progress", "done", "blocked", "needs-human", "deferred")


def _json_flag(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def _item_fields(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--type", help="bug, bugfix, refactor, feature, chore or test")
    parser.add_argument("--priority", type=int, metavar="N", help="1 (highest) to 4")
    parser.add_argument("--description", help="what the item is about")
    parser.add_argument("--ac", action="append", metavar="TEXT", dest="ac",
                        help="an acceptance criterion (repeatable)")
    parser.add_argument("--depends-on", metavar="ID,ID", dest="depends_on",
                        help="comma-separated ids of items this one depends on")
    parser.add_argument("--notes", help="free-form notes")


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = "Read and change the backlog (backlog.json): items, answers, unblocking."
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True

    lst = verbs.add_parser("list", help="list items",
                           description="List items; --json prints a bare JSON array.")
    add_path(lst)
    add_backlog(lst)
    lst.add_argument("--status", metavar="S",
                     help="only items with status S (pending, in_progress, done, blocked, "
                          "needs-human, deferred)")
    _json_flag(lst, "a bare array of item objects")
    lst.set_defaults(func=run_list)

    show = verbs.add_parser("show", help="show one item", description="Show one item.")
    add_path(show)
    show.add_argument("id", metavar="ID", help="item id")
    add_backlog(show)
    _json_flag(show, "the item")
    show.set_defaults(func=run_show)

    add = verbs.add_parser("add", help="add an item",
                           description="Add a pending item with the next id; prints the id.")
    add_path(add)
    add_backlog(add)
    add.add_argument("--title", required=True, help="the item's title")
    _item_fields(add)
    _json_flag(add, "the new item")
    add.set_defaults(func=run_add)

    edit = verbs.add_parser("edit", help="change an item",
                            description="Change an item's fields; --ac and --depends-on "
                                        "replace the lists; --status follows the transition "
                                        "rules.")
    add_path(edit)
    edit.add_argument("id", metavar="ID", help="item id")
    add_backlog(edit)
    edit.add_argument("--title", help="the item's title")
    _item_fields(edit)
    edit.add_argument("--status", help="new status (pending, in_progress, done, blocked)")
    _json_flag(edit, "the changed item")
    edit.set_defaults(func=run_edit)

    answer = verbs.add_parser(
        "answer", help="answer a blocked item (blocked → pending, answer kept for the prompt)",
        description="Set humanAnswer on a blocked item and make it pending again, keeping "
                    "the reason it answers (answeredReason, answeredKind); the next "
                    "iteration's prompt carries both. Does not relaunch.")
    add_path(answer)
    answer.add_argument("id", metavar="ID", help="item id")
    answer.add_argument("text", metavar="TEXT", help="the answer")
    add_backlog(answer)
    _json_flag(answer, '{"answered": ID, "status": "pending"}')
    answer.set_defaults(func=run_answer)

    unblock = verbs.add_parser(
        "unblock", help="make blocked items pending (all of them without ID)",
        description="blocked → pending for ID, or for every blocked item without one. "
                    "A PATH made only of digits is read as an ID: write ./123 for a path.")
    add_path(unblock)
    unblock.add_argument("id", nargs="?", metavar="ID", help="item id (default: every item)")
    add_backlog(unblock)
    _json_flag(unblock, '{"unblockedCount": N, "unblockedIds": [...]}')
    unblock.set_defaults(func=run_unblock)

    done = verbs.add_parser(
        "done", help="mark items done by hand",
        description="Mark each ITEM done, whatever it waits on, as the loop marks an item "
                    "it finished (completedAt now, its block and any answer cleared); the "
                    "items that depend on it may then be selected. All of them or none: an "
                    "item done already, or the one a running loop works on, is refused. "
                    "The change is left uncommitted, as every backlog edit is.")
    done.add_argument("ids", nargs="+", metavar="ITEM", help="item id (3 for 003)")
    add_backlog(done)
    _json_flag(done, '{"doneCount": N, "doneIds": [...]}')
    done.set_defaults(func=run_done, path=".")

    drop = verbs.add_parser(
        "drop", help="take items out of the backlog",
        description="Remove each ITEM from backlog.json, whatever its status (what was "
                    "committed of it stays in git's history). Asks first on a terminal; "
                    "--yes drops without asking, and without a terminal it is refused "
                    "without --yes. An item that depends on a dropped one is refused unless "
                    "it is dropped too, or --keep-dependents keeps it without that "
                    "dependency. Refused while a loop runs. The change is left "
                    "uncommitted, as every backlog edit is.")
    drop.add_argument("ids", nargs="+", metavar="ITEM", help="item id (3 for 003)")
    add_backlog(drop)
    drop.add_argument("--keep-dependents", action="store_true",
                      help="the items that depend on a dropped one stay, without that "
                           "dependency (and may be selected)")
    drop.add_argument("-y", "--yes", action="store_true", help="drop without asking")
    _json_flag(drop, '{"droppedCount": N, "droppedIds": [...], "detachedIds": [...]}')
    drop.set_defaults(func=run_drop, path=".")

    topology = verbs.add_parser(
        "topology", help="dependency roots, depth, selectable, starvation, blocked clusters",
        description="Analyse the runner's item list (feature-forge backlog-topology "
                    "semantics). Without an input flag it asks the configured runner; it "
                    "never reads backlog.json directly.")
    add_path(topology)
    add_backlog(topology)
    topology.add_argument("--cluster", action="store_true",
                          help="group blocked items whose reasons are alike")
    topology.add_argument("-v", "--verbose", action="store_true",
                          help="after feature-forge's lines, explain them: what a starved "
                               "backlog waits on, why a warning fired, shared tokens")
    topology.add_argument("--config", metavar="PATH",
                          help="a feature-forge forge.config.json whose loopRunner block "
                               "names the runner to ask, instead of the project's; no file "
                               "at PATH means the defaults, as in feature-forge (a file that "
                               "is not valid is refused)")
    source = topology.add_mutually_exclusive_group()
    source.add_argument("--items-json", metavar="FILE",
                        help="read the item list from FILE (an array, or {\"items\": [...]})")
    source.add_argument("--items-stdin", action="store_true",
                        help="read the item list from standard input")
    _json_flag(topology, "the topology payload")
    topology.set_defaults(func=run_topology)


# --- helpers --------------------------------------------------------------------------------


def _workspace(args: Args) -> Workspace:
    return locate(args.path, args.backlog)


def _store(args: Args) -> BacklogStore:
    return BacklogStore.in_dir(_workspace(args).backlog_dir)


def _busy(args: Args) -> str | None:
    """The refusal for the item a live loop works on (``None`` when no loop runs)."""
    return in_progress_refusal(_workspace(args).state_dir)


def _live_note(args: Args) -> None:
    """Read-only commands keep working beside a live loop, and say it is live."""
    message = live_note(_workspace(args).state_dir)
    if message is not None:
        note(message)


def _split_ids(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _field_changes(args: Args) -> dict[str, object]:
    """The fields ``add`` and ``edit`` were given. A title is one line (it is the
    subject of the item's commit and one row of every listing)."""
    changes: dict[str, object] = {}
    for attr, key in (("title", "title"), ("type", "type"), ("priority", "priority"),
                      ("description", "description"), ("notes", "notes")):
        value = getattr(args, attr, None)
        if value is not None:
            changes[key] = value
    title = changes.get("title")
    if isinstance(title, str) and ("\n" in title or "\r" in title):
        raise UsageError("--title must be one line (the description can hold more)")
    if args.ac is not None:
        changes["acceptance_criteria"] = list(args.ac)
    if args.depends_on is not None:  # as the ids they name: ``backlog.model``'s
        changes["depends_on"] = _split_ids(args.depends_on)
    return changes


#: The colour of each kind of item in a listing (the others are not painted).
_KIND_STYLES = {"done": "green", "blocked": "red", "needs-human": "yellow",
                "deferred": "yellow", "in_progress": "cyan"}


def _listing_rows(snapshot: Snapshot) -> str:
    """Each line of a listing as the status and kind of its item (for ``--status``
    and the kind's colour) and its text before and after the kind's column, as JSON:
    kept between commands while backlog.json is the same (``backlog/cache.py``), as
    status keeps its facts, and painted as it is printed. Each title is made safe
    text alone, as when every line was printed by itself, so that a sequence a title
    leaves open (an OSC runs to its BEL) takes no line after it in the one write."""
    return json.dumps([[item.status, kind(item), f"{item.id}  ",
                        f"  P{item.priority}  {item.type or '':<8}  "
                        f"{clean(one_line(item.title))}"] for item in snapshot.items])


def _listed(wanted: str | None, status: str | None, kind: str) -> bool:
    """Whether an item of ``status`` and ``kind`` is listed under ``--status wanted``."""
    return wanted is None or wanted == (kind if wanted in ("needs-human", "deferred")
                                        else status)


def _listing(rows: list[list[str]], wanted: str | None) -> str:
    """The lines of the rows listed under ``--status wanted``; colour is decided
    once, for each kind's column."""
    columns = {label: paint(f"{label:<11}", style) for label, style in _KIND_STYLES.items()}
    return "\n".join(f"{head}{columns.get(kind) or f'{kind:<11}'}{tail}"
                     for status, kind, head, tail in rows if _listed(wanted, status, kind))


# --- handlers -------------------------------------------------------------------------------


def run_list(args: Args) -> int:
    if args.status is not None and args.status not in _STATUS_FILTERS:
        raise UsageError(f"unknown status {args.status!r} "
                         f"(expected one of {', '.join(_STATUS_FILTERS)})")
    workspace = _workspace(args)
    if args.json and args.status is None:  # the whole listing: kept while the file is the same
        print_json_text(derived_text(workspace.backlog_file, workspace.state_dir, LIST_CACHE,
                                     lambda snapshot: json_text(
                                         [item.to_json() for item in snapshot.items])))
    elif args.json:
        emit_json(read_valid(workspace.backlog_file, workspace.state_dir, lambda snapshot: [
            item.to_json() for item in snapshot.items
            if _listed(args.status, item.status, kind(item))]))
    else:
        listing = _listing(json.loads(derived_text(
            workspace.backlog_file, workspace.state_dir, ROWS_CACHE, _listing_rows)),
            args.status)
        _live_note(args)
        if listing:  # nothing at all for no item; the listing in one write
            print(listing)
    return 0


def _item_lines(snapshot: Snapshot) -> str:
    """Every item's JSON object on a line of its own after its id and a tab — kept
    between commands while backlog.json is the same (``backlog/cache.py``), so that
    ``backlog show`` parses the one line of the item it shows, not the whole file."""
    return "\n".join(f"{fields['id']}\t{json.dumps(fields)}"
                     for fields in snapshot.document["items"])


def _item_in(lines: str, item_id: str) -> Item:
    """The item ``item_id`` names among ``_item_lines``' lines (``model.id_position``:
    ``find_item``'s rule), its own line alone parsed."""
    rows = lines.split("\n") if lines else []
    row = rows[id_position([row[:row.index("\t")] for row in rows], item_id)]
    return Item.from_json(json.loads(row[row.index("\t") + 1:]))


def run_show(args: Args) -> int:
    workspace = _workspace(args)
    item = derived(workspace.backlog_file, workspace.state_dir, ITEMS_CACHE, _item_lines,
                   lambda lines: _item_in(lines, args.id))
    if args.json:
        emit_json(item.to_json())
        return 0
    _live_note(args)
    print(f"{item.id}  {one_line(item.title)}")
    rows = [("type", item.type), ("priority", item.priority),
            ("status", kind(item) if kind(item) == item.status
             else f"blocked ({kind(item)})"),
            ("depends on", ", ".join(item.depends_on) or None),
            ("reason", item.blocked_reason), ("answer", item.human_answer),
            ("completed", item.completed_at)]
    for label, value in rows:
        if value not in (None, ""):
            print(f"{label + ':':<12}{value}")
    if item.description:
        print(f"\n{item.description}")
    if item.acceptance_criteria:
        print("\nAcceptance criteria:")
        for criterion in item.acceptance_criteria:
            print(f"  - {criterion}")
    if item.notes:
        print(f"\nNotes: {item.notes}")
    return 0


def run_add(args: Args) -> int:
    item = _store(args).add(_field_changes(args))
    if args.json:
        emit_json(item.to_json())
    else:
        print(item.id)
    return 0


def run_edit(args: Args) -> int:
    changes = _field_changes(args)
    if args.status is not None:
        changes["status"] = args.status
    if not changes:
        raise UsageError("nothing to change (give at least one field flag)")
    item = _store(args).edit(args.id, changes, busy=_busy(args))
    if args.json:
        emit_json(item.to_json())
    return 0


def run_answer(args: Args) -> int:
    result = _store(args).answer(args.id, args.text, busy=_busy(args))
    if args.json:
        emit_json(result)
    else:
        print(f"answered {result['answered']} (now {result['status']})")
    return 0


def run_unblock(args: Args) -> int:
    if args.id is None and re.match(r"^[0-9]+$", args.path):
        args.id, args.path = args.path, "."
    result = _store(args).unblock(args.id, busy=_busy(args))
    if args.json:
        emit_json(result)
    elif result["unblockedIds"]:
        print(f"unblocked {', '.join(result['unblockedIds'])}")
    else:
        print("nothing to unblock")
    return 0


def run_done(args: Args) -> int:
    ids = _store(args).done(args.ids, busy=_busy(args))
    if args.json:
        emit_json({"doneCount": len(ids), "doneIds": ids})
    else:
        print(f"done: {', '.join(ids)}")
    return 0


def run_drop(args: Args) -> int:
    """Checked before it asks (a refusal never follows a yes), asked on a terminal,
    then dropped under the lock, where every check is made again."""
    workspace = _workspace(args)
    refuse_if_live(workspace.state_dir, workspace.root)  # it may be selecting them
    store = BacklogStore.in_dir(workspace.backlog_dir)
    items = store.items()
    titles = {item.id: item.title for item in items}
    named, detached = drop_items(list(items), args.ids, keep_dependents=args.keep_dependents)
    if not args.yes:
        from git_forge.cli import ask  # parser-tree boundary: drop asks, list and show do not

        if args.json or not ask.interactive():
            raise UsageError("dropping takes items out of the backlog: give --yes to drop "
                             "without a terminal to ask on")
        for item_id in named:
            print(f"  {item_id}  {one_line(titles[item_id])}")
        if detached:
            print(f"  ({', '.join(detached)} will no longer depend on "
                  f"{'it' if len(named) == 1 else 'them'})")
        try:
            dropping = ask.confirm(f"Drop {'this item' if len(named) == 1 else 'these items'}?")
        except KeyboardInterrupt:  # Ctrl-C or Ctrl-D: still 130, but never a silent one
            print("\nnothing dropped", file=sys.stderr)
            raise
        if not dropping:
            print("nothing dropped", file=sys.stderr)
            return 1
    dropped, detached = store.drop(args.ids, keep_dependents=args.keep_dependents)
    if args.json:
        emit_json({"droppedCount": len(dropped), "droppedIds": dropped,
                   "detachedIds": detached})
        return 0
    print(f"dropped: {', '.join(dropped)}")
    if detached:
        print(f"no longer depending on {'it' if len(dropped) == 1 else 'them'}: "
              f"{', '.join(detached)}")
    return 0


def _topology_output(items: list[Item], args: Args) -> str:
    """What ``backlog topology`` prints of ``items``: the payload as JSON (``--json``),
    or its lines, explained with ``--verbose``."""
    report = topology_report(items, cluster=args.cluster)
    if args.json:
        return json_text(report)
    waiting = waiting_on(build_graph(items)) if args.verbose else None
    return "\n".join(render_text(report, verbose=args.verbose, waiting=waiting))


def _topology_text(args: Args) -> str:
    """``_topology_output`` of the item list from --items-json, --items-stdin, or the
    configured runner (the one ``--config`` names, when given), which keeps it between
    commands, one text per output (``Runner.derived``). A ``--config`` file that is
    there is read whatever the source, and refused if it is not valid."""
    config = None if args.config is None else Path(args.config)
    if config is not None and config.is_file():
        feature_forge_layer(config)
    if args.items_json is not None:
        try:
            raw = Path(args.items_json).read_bytes().decode("utf-8")
        except OSError as exc:
            raise BacklogError(f"cannot read {args.items_json}: {os_error_text(exc)}") from exc
        except UnicodeDecodeError as exc:
            raise BacklogError(f"{args.items_json} is not UTF-8 text: {exc}") from exc
        return _topology_output(parse_items(raw), args)
    if args.items_stdin:
        try:
            raw = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BacklogError(f"standard input is not UTF-8 text: {exc}") from exc
        return _topology_output(parse_items(raw), args)

    from git_forge.runner import runner_for  # parser-tree boundary: backlog list needs none

    workspace = locate(args.path, args.backlog, feature_forge=config)
    name = "".join(("backlog-topology", "-cluster" if args.cluster else "",
                    ".json" if args.json else "-verbose.txt" if args.verbose else ".txt"))
    return runner_for(workspace).derived(workspace.state_dir, name,
                                         lambda items: _topology_output(items, args))


def run_topology(args: Args) -> int:
    text = _topology_text(args)
    if args.json:
        print_json_text(text)
    else:
        if args.items_json is None and not args.items_stdin:
            _live_note(args)
        print(text)
    return 0
