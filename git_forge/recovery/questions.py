"""Step 3: consolidated questions, framed by blast radius.

Blocked items that share a cause (the topology's clusters, possibly merged by
the operator — never split) become one question naming every member and the
full set of items the decision gates; a singleton is a per-item question. Items
whose answer is already recorded but not yet applied are not asked again
(re-entry): they go straight to apply.

Every number in a question comes from the topology output: ``gatedIds`` /
``gatedCount`` of the cluster and ``itemCount`` of the backlog.

One id form everywhere: a question's id is its cluster's id, ``c`` + the lowest
member id (``c003``, ``c006`` for a singleton), exactly as ``backlog topology
--cluster`` names it — in ``--plan --json``, the prompts, ``--answer``,
``--defer``, ``--merge`` and answers files. An item id names that item (or, to
``--merge``, its question), and a number names the id with that value (``3`` is
``003``, ``c3`` is ``c003``: YAML reads an unquoted ``003:`` as 3).
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

from git_forge.backlog.item import Item
from git_forge.backlog.model import match_id
from git_forge.backlog.topology import ClusterJSON
from git_forge.errors import UsageError
from git_forge.reconcile.conflicts import ConflictJSON, ConflictRecord

QuestionKind = Literal["cluster", "item"]

#: The choices of an ordinary question, and of an item's merge conflict.
CHOICES = ("answer", "defer", "cancel")
CONFLICT_CHOICES = ("retry", "resolve", "defer", "cancel")


class QuestionConflictJSON(ConflictJSON):
    """A merge conflict's question: its record, and the commands that resolve it by hand."""

    resolve: list[str]


class QuestionJSON(TypedDict):
    """One question as ``recover --plan --json`` lists it."""

    id: str
    kind: QuestionKind
    itemIds: list[str]
    reasons: list[str]
    gatedIds: list[str]
    gatedCount: int
    itemCount: int
    text: str
    spent: dict[str, str]
    choices: list[str]
    conflict: NotRequired[QuestionConflictJSON]


@dataclass(frozen=True)
class Question:
    """One decision to ask for: a cluster of two or more items, or one item."""

    id: str
    kind: QuestionKind
    item_ids: tuple[str, ...]
    reasons: tuple[str, ...]
    gated_ids: tuple[str, ...]
    item_count: int
    needs_human: tuple[bool, ...]
    text: str
    #: The topology's clusters this question merges, as (clusterId, member ids); one
    #: part unless the operator merged clusters. A part's id keeps naming its members.
    parts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: What each member's agent attempts cost so far, in words (those that reported any).
    spent: tuple[tuple[str, str], ...] = ()
    #: The item's merge conflict (a question of its own): then the choices are
    #: retry on the new tip or resolve by hand (``resolve``: the commands).
    conflict: ConflictRecord | None = None
    resolve: tuple[str, ...] = ()

    @property
    def gated_count(self) -> int:
        return len(self.gated_ids)

    @property
    def choices(self) -> tuple[str, ...]:
        return CONFLICT_CHOICES if self.conflict is not None else CHOICES

    def to_json(self) -> QuestionJSON:
        document: QuestionJSON = {
            "id": self.id,
            "kind": self.kind,
            "itemIds": list(self.item_ids),
            "reasons": list(self.reasons),
            "gatedIds": list(self.gated_ids),
            "gatedCount": self.gated_count,
            "itemCount": self.item_count,
            "text": self.text,
            "spent": dict(self.spent),
            "choices": list(self.choices),
        }
        if self.conflict is not None:
            document["conflict"] = {**self.conflict.to_json(), "resolve": list(self.resolve)}
        return document


def _id_list(ids: Iterable[str]) -> str:
    ids = list(ids)
    if len(ids) <= 1:
        return "".join(ids)
    return ", ".join(ids[:-1]) + " and " + ids[-1]


def blast_radius(gated_ids: tuple[str, ...], item_count: int, *, subject: str) -> str:
    """'This one decision gates 3 of 16 backlog items (items 005, 007, 009).'"""
    if not gated_ids:
        return f"{subject} gates no other backlog item."
    noun = "item" if len(gated_ids) == 1 else "items"
    return (f"{subject} gates {len(gated_ids)} of {item_count} backlog items "
            f"({noun} {', '.join(gated_ids)}).")


def _question_text(kind: QuestionKind, item_ids: tuple[str, ...], reasons: tuple[str, ...],
                   needs_human: tuple[bool, ...], gated_ids: tuple[str, ...],
                   item_count: int) -> str:
    if kind == "cluster":
        lines = [f"Items {_id_list(item_ids)} are blocked on the same decision:"]
        lines += [f"  {item}: {reason or '(no reason given)'}"
                  for item, reason in zip(item_ids, reasons, strict=True)]
        lines.append(blast_radius(gated_ids, item_count, subject="This one decision")
                     + " Answer it once.")
        return "\n".join(lines)
    state = "needs a decision" if needs_human[0] else "is blocked"
    head = f"Item {item_ids[0]} {state}: {reasons[0] or '(no reason given)'}"
    return head + "\n" + blast_radius(gated_ids, item_count, subject="It")


def question_id(item_ids: Sequence[str]) -> str:
    """``c`` + the lowest member id (``item_ids`` in id order), as the topology names it."""
    return "c" + item_ids[0]


def cannot_merge(item_id: str) -> str:
    """Why a merge conflict's question stays a question of its own."""
    return (f"item {item_id} is blocked on a merge conflict, a question of its own: it "
            "cannot be merged with another")


def merge_targets(entries: Iterable[str], groups: Sequence[Sequence[str]],
                  alone: Iterable[str] = ()) -> list[int]:
    """The positions in ``groups`` (each question's item ids, in id order) that a merge
    names: question ids or item ids, two or more different questions, none holding
    an item of ``alone`` (those on a merge conflict). A wrong entry is a
    ``UsageError`` that says which and why, so the operator can be asked again."""
    names: dict[str, int] = {}
    for index, group in enumerate(groups):
        names[question_id(group)] = index
        names.update(dict.fromkeys(group, index))
    listed = ", ".join(question_id(group) for group in groups)
    alone = set(alone)
    picked: list[int] = []
    for entry in entries:
        found = match_id(entry, names)
        if found is None:
            raise UsageError(f"there is no question {entry} (the questions are {listed}; "
                             "an item id names its question)")
        caught = [item_id for item_id in groups[names[found]] if item_id in alone]
        if caught:
            raise UsageError(cannot_merge(caught[0]))
        if names[found] not in picked:
            picked.append(names[found])
    if len(picked) < 2:
        raise UsageError("name two or more different questions to merge")
    return picked


def _parts(cluster: ClusterJSON) -> list[tuple[str, tuple[str, ...]]]:
    return list(cluster.get("parts") or [(cluster["clusterId"], tuple(cluster["memberIds"]))])


def merge_clusters(clusters: list[ClusterJSON], merges: list[list[str]],
                   order_key: Any) -> list[ClusterJSON]:
    """Merge clusters the operator judged to share a cause (``--merge c1,c4``).

    The topology's clusters are a floor: they can be merged, never split. A merge
    names clusters by their ids or by a member's id (``match_id`` rules). A merged
    cluster's gated set is the union of its parts' gated sets minus all members,
    exactly what the topology computes for a cluster; ``parts`` lists the clusters
    it was made of. A merge that names one cluster twice (``c001,001``) merges
    nothing and is refused, as the prompt refuses it.
    """
    by_id = {cluster["clusterId"]: cluster for cluster in clusters}
    names = {cid: cid for cid in by_id}
    for cid, cluster in by_id.items():
        names.update(dict.fromkeys(cluster["memberIds"], cid))
    parent = {cid: cid for cid in by_id}

    def find(cid: str) -> str:
        while parent[cid] != cid:
            parent[cid] = parent[parent[cid]]
            cid = parent[cid]
        return cid

    for group in merges:
        resolved = []
        for name in group:
            found = match_id(name, names)
            if found is None:
                raise UsageError(f"no cluster {name} to merge (clusters: "
                                 f"{', '.join(by_id) or 'none'})")
            resolved.append(names[found])
        if len(set(resolved)) < 2:  # as the prompt refuses "c001 c001"
            raise UsageError(f"--merge {','.join(group)} names one question only: name two "
                             "or more different questions to merge")
        for cid in resolved[1:]:
            parent[find(cid)] = find(resolved[0])

    groups: dict[str, list[ClusterJSON]] = {}
    for cid, cluster in by_id.items():
        groups.setdefault(find(cid), []).append(cluster)
    merged: list[ClusterJSON] = []
    for parts in groups.values():
        pairs = sorted(((m, r) for part in parts
                        for m, r in zip(part["memberIds"], part["memberReasons"], strict=True)),
                       key=lambda pair: order_key(pair[0]))
        members = [m for m, _ in pairs]
        gated = {g for part in parts for g in part["gatedIds"]} - set(members)
        merged.append({
            "clusterId": "c" + members[0],
            "memberIds": members,
            "memberReasons": [r for _, r in pairs],
            "gatedIds": sorted(gated, key=order_key),
            "gatedCount": len(gated),
            "parts": sorted((p for part in parts for p in _parts(part)),
                            key=lambda p: order_key(p[1][0])),
        })
    return sorted(merged, key=lambda cluster: order_key(cluster["memberIds"][0]))


def conflict_text(item_id: str, conflict: ConflictRecord, resolve: Sequence[str],
                  gated_ids: tuple[str, ...], item_count: int) -> str:
    """A merge conflict's question: what collided, where the work is, the two choices."""
    lines = [f"Item {item_id}'s work could not be integrated: {conflict.describe()}. It is "
             f"kept on branch {conflict.branch}, in its worktree {conflict.worktree}.",
             blast_radius(gated_ids, item_count, subject="It"),
             "  retry    retry it on the new tip: its attempt is kept under "
             f"refs/forge/retried/{item_id}/…, its worktree and branch are removed, and the "
             "next run starts it afresh from the tip, told of the conflict",
             "  resolve  resolve it by hand in its worktree, then land it:"]
    lines += [f"             {command}" for command in resolve]
    if conflict.resolving:
        lines.append("You chose to resolve it by hand in an earlier pass: those commands "
                     "are still the next step, unless you retry it now.")
    return "\n".join(lines)


def build_questions(items: list[Item], clusters: list[ClusterJSON],
                    *, item_count: int, spent: Mapping[str, str] | None = None,
                    conflicts: Mapping[str, tuple[ConflictRecord, Sequence[str]]] | None = None
                    ) -> list[Question]:
    """One question per cluster (a singleton cluster is a per-item question).

    ``clusters`` is the topology's clustering of the items to ask about —
    re-entry items are left out of it by the caller, so they are not asked.
    ``spent`` says what an item's agent attempts cost so far; the question says it too.
    ``conflicts``: items blocked on a merge conflict (each a singleton cluster),
    with the commands that resolve it by hand.
    """
    spent = spent or {}
    conflicts = conflicts or {}
    by_id = {item.id: item for item in items}
    questions: list[Question] = []
    for cluster in clusters:
        item_ids = tuple(cluster["memberIds"])
        reasons = tuple(cluster["memberReasons"])
        needs_human = tuple((item := by_id.get(m)) is not None and item.needs_human
                            for m in item_ids)
        gated = tuple(cluster["gatedIds"])
        kind: QuestionKind = "cluster" if len(item_ids) > 1 else "item"
        costs = tuple((m, spent[m]) for m in item_ids if m in spent)
        conflict, resolve = conflicts.get(item_ids[0], (None, ())) if kind == "item" else \
            (None, ())
        text = (conflict_text(item_ids[0], conflict, resolve, gated, item_count)
                if conflict is not None else
                _question_text(kind, item_ids, reasons, needs_human, gated, item_count))
        if costs:
            text += "\n" + "\n".join(
                f"Spent so far{' on ' + m if kind == 'cluster' else ''}: {words}"
                for m, words in costs)
        questions.append(Question(
            id=cluster["clusterId"], kind=kind, item_ids=item_ids, reasons=reasons,
            gated_ids=gated, item_count=item_count, needs_human=needs_human,
            text=text, parts=tuple(_parts(cluster)), spent=costs,
            conflict=conflict, resolve=tuple(resolve),
        ))
    return questions
