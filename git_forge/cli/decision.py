"""``git forge decision record|list|apply`` — flag- and output-compatible with
feature-forge's ``forge-session.py decision-record|decision-list|decision-apply``."""

from __future__ import annotations

from pathlib import Path

from git_forge import decisions
from git_forge.cli.args import Args
from git_forge.cli.arguments import add_backlog, add_path
from git_forge.cli.output import emit_json, one_line
from git_forge.config import decision_state_dir, feature_forge_state_dir, load_config
from git_forge.layout import FEATURE_FORGE_CONFIG, find_root
from git_forge.workspace import locate

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping
    from typing import Any

    from git_forge.decisions import DecisionJSON, DecisionRecord


def _common(parser: argparse.ArgumentParser) -> None:
    """The flags of the verbs feature-forge has too (``revoke`` is git-forge's own)."""
    parser.add_argument("--backlog-dir", metavar="DIR",
                        help="the backlog directory (must exist; default: the project's, "
                             "as every command finds it: config 'backlog', else .forge)")
    parser.add_argument("--state-dir", metavar="NAME",
                        help="state dir name; an empty NAME is the backlog dir itself "
                             "(default: loopRunner.stateDir, else .forge)")
    parser.add_argument("--config", metavar="PATH",
                        help="a feature-forge forge.config.json whose loopRunner.stateDir "
                             "applies (default: ./forge.config.json, when there is one)")
    parser.add_argument("--json", action="store_true", help="print the document as JSON")


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = "Read and append to the durable decision record of the recovery procedure."
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True

    rec = verbs.add_parser("record", help="append a decision (one entry per --item)",
                           description="Append one entry per --item, before anything is applied.")
    _common(rec)
    rec.add_argument("--item", required=True, action="append", dest="items", metavar="ID",
                     help="backlog item id (repeatable: one entry per id, in order)")
    rec.add_argument("--question", required=True, help="the needs-human question text")
    answer = rec.add_mutually_exclusive_group(required=True)
    answer.add_argument("--answer", help="the operator's answer")
    answer.add_argument("--deferred", action="store_true",
                        help="record a deferral or cancel-early (answer: null)")
    rec.add_argument("--cluster", metavar="CID", help="clusterId shared by a consolidated answer")
    rec.add_argument("--actor", metavar="LABEL", help="recordedBy label (default git-forge@<host>)")
    rec.set_defaults(func=run_record)

    lst = verbs.add_parser("list", help="print the record, or the unapplied decisions",
                           description="Print the record, one decision a line in the order "
                                       "recorded: the item (a consolidated answer: its "
                                       "cluster id and items) and the answer's first line, "
                                       "or (deferred); --json prints the document. "
                                       "--unapplied gives the latest unapplied entry per "
                                       "item.")
    _common(lst)
    lst.add_argument("--unapplied", action="store_true",
                     help="only the latest entry per item whose appliedAt is null")
    lst.set_defaults(func=run_list)

    app = verbs.add_parser("apply", help="stamp an item's latest decision as applied",
                           description="Stamp appliedAt/appliedBy on the item's latest entry.")
    _common(app)
    app.add_argument("--item", required=True, metavar="ID", help="the backlog item id")
    app.add_argument("--actor", metavar="LABEL", help="appliedBy label (default git-forge@<host>)")
    app.set_defaults(func=run_apply)

    rev = verbs.add_parser(
        "revoke", help="take back an answer: the item waits for a decision again",
        description="Supersede ITEM's latest answer with a deferral of its question (the "
                    "record is append-only: the answer stays below it) and put the item back "
                    "to blocked as it was before the answer, its humanAnswer cleared; "
                    "git forge recover then asks it again. Refused (exit 2, nothing changed) "
                    "when the item has no answer, or its agent has run with it already.")
    add_path(rev)
    rev.add_argument("item", metavar="ITEM", help="the item whose answer to take back")
    add_backlog(rev)
    rev.add_argument("--actor", metavar="LABEL", help="recordedBy label (default git-forge@<host>)")
    rev.add_argument("--json", action="store_true",
                     help="print what was revoked, the item's state and the new entry as JSON")
    rev.set_defaults(func=run_revoke)


def _open(args: Args) -> DecisionRecord:
    """The record of ``--backlog-dir`` (default: the project's backlog dir, as
    ``workspace.locate`` finds it for every command) in the state dir the flags, the
    config named by ``--config``, ./forge.config.json or the effective configuration
    give.
    A ``--config`` naming no file means the defaults, as in feature-forge, whose own
    tests call these verbs so: the state dir is then the effective configuration's."""
    config_path = Path(args.config if args.config is not None else FEATURE_FORGE_CONFIG)
    if args.backlog_dir is None:  # the project's, as every other command finds it
        workspace = locate(".")
        backlog_dir, effective = workspace.backlog_dir, workspace.config
    else:
        backlog_dir, effective = Path(args.backlog_dir), None
        if args.state_dir is None and feature_forge_state_dir(config_path) is None:
            effective = load_config(find_root(Path.cwd()))
    state_dir = decision_state_dir(args.state_dir, config_path, effective)
    return decisions.open_record(backlog_dir, state_dir)


def run_record(args: Args) -> int:
    document = decisions.record(
        _open(args), args.items, args.question, answer=args.answer, deferred=args.deferred,
        cluster_id=args.cluster, actor=args.actor,
    )
    if args.json:
        emit_json(document)
    else:
        count = len(document["decisions"])
        print(f"decision recorded — {count} entr{'y' if count == 1 else 'ies'} "
              f"on record for {document['feature']}")
    return 0


def run_list(args: Args) -> int:
    rec = _open(args)
    view: Mapping[str, Any] = (decisions.unapplied_view(rec) if args.unapplied
                               else decisions.list_view(rec))
    if args.json:
        emit_json(view)
    elif args.unapplied:
        print(f"{view['count']} unapplied decision(s)")
        for entry in view["unapplied"]:
            kind = "deferred" if entry.get("deferred") else "answered"
            print(f"  {entry['itemId']}: {kind} — {entry.get('question', '')}")
    else:
        for line in decision_lines(view.get("decisions", [])):
            print(line)
    return 0


def decision_lines(entries: list[DecisionJSON]) -> list[str]:
    """The record as ``git log --oneline`` shows history: one decision a line, in the
    order recorded — ``005: Use SQLite``, or for a consolidated answer (the entries
    recorded together under one clusterId) ``c002 (002, 003): Use Postgres``; an
    answer's first line (`` …`` when it has more), or ``(deferred)``. Line breaks in
    what a record holds are shown escaped (``one_line``), and everything printed
    passes the terminal boundary."""
    groups: list[list[DecisionJSON]] = []
    for entry in entries:
        last = groups[-1][0] if groups else None
        if last is not None and entry.get("clusterId") and all(
                entry.get(key) == last.get(key)
                for key in ("clusterId", "decidedAt", "answer", "recordedBy")):
            groups[-1].append(entry)
        else:
            groups.append([entry])
    lines = []
    for group in groups:
        items = ", ".join(str(entry.get("itemId")) for entry in group)
        named = f"{group[0]['clusterId']} ({items})" if group[0].get("clusterId") else items
        answer = group[0].get("answer")
        if isinstance(answer, str):
            first, *more = answer.strip().splitlines() or [""]
            said = first + (" …" if more else "")
        else:
            said = "(deferred)"
        lines.append(one_line(f"{named}: {said}"))
    return lines


def run_apply(args: Args) -> int:
    document = decisions.apply(_open(args), args.item, actor=args.actor)
    if args.json:
        emit_json(document)
    else:
        entry = decisions.latest_entries(document["decisions"])[args.item]
        print(f"applied decision for item {entry['itemId']} ({entry['appliedBy']})")
    return 0


def run_revoke(args: Args) -> int:
    # parser-tree boundary: decision list reads the record alone; revoke takes an answer
    # back through the runner and git (pygit2)
    from git_forge.loop.control import refuse_if_live
    from git_forge.recovery.revoke import revoke
    from git_forge.runner import runner_for

    workspace = locate(args.path, args.backlog)
    refuse_if_live(workspace.state_dir, workspace.root)  # the loop may be running the item
    revoked = revoke(workspace, runner_for(workspace), args.item, actor=args.actor)
    if args.json:
        emit_json(revoked.to_json())
        return 0
    item = revoked.item
    kind = ("needs a human" if item.needs_human else "deferred" if item.deferred
            else "blocked")
    print(f"revoked the answer to item {revoked.item_id}: {revoked.answer!r}")
    print(f"  item {revoked.item_id} waits for a decision again ({kind}): "
          f"{item.blocked_reason or '(no reason given)'}")
    print("  the record keeps the answer, superseded by a deferral; git forge recover asks "
          "the question again")
    if revoked.shared_with:
        others = ", ".join(revoked.shared_with)
        print(f"  item{'s' if len(revoked.shared_with) > 1 else ''} {others} keep"
              f"{'' if len(revoked.shared_with) > 1 else 's'} the same answer, given with it: "
              f"git forge decision revoke {revoked.shared_with[0]} takes it back there")
    return 0
