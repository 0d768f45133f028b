"""Step 3: consolidated questions, framed by blast radius.

Blocked items that share a cause (the topology's clusters, possibly merged by
the operator — never split) become one question naming every member and the
full set of items the decision gates; a singleton is a per-item question. Items
whose answer is already recorded but not yet applied are not asked again
(re-entry): they go straight to apply.

Every number in a question comes from the topology output: ``gatedIds`` /
``gatedCount`` of the cluster and ``itemCount`` of the backlog.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from git_forge.errors import UsageError

QuestionKind = Literal["cluster", "item"]


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

    @property
    def gated_count(self) -> int:
        return len(self.gated_ids)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "itemIds": list(self.item_ids),
            "reasons": list(self.reasons),
            "gatedIds": list(self.gated_ids),
            "gatedCount": self.gated_count,
            "itemCount": self.item_count,
            "text": self.text,
        }


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


def merge_clusters(clusters: list[dict[str, Any]], merges: list[list[str]],
                   order_key: Any) -> list[dict[str, Any]]:
    """Merge clusters the operator judged to share a cause (``--merge c1,c4``).

    The topology's clusters are a floor: they can be merged, never split. A
    merged cluster's gated set is the union of its parts' gated sets minus all
    members, exactly what the topology computes for a cluster.
    """
    by_id = {cluster["clusterId"]: cluster for cluster in clusters}
    parent = {cid: cid for cid in by_id}

    def find(cid: str) -> str:
        while parent[cid] != cid:
            parent[cid] = parent[parent[cid]]
            cid = parent[cid]
        return cid

    for group in merges:
        unknown = [cid for cid in group if cid not in by_id]
        if unknown:
            raise UsageError(f"no cluster {unknown[0]} to merge (clusters: "
                             f"{', '.join(by_id) or 'none'})")
        for cid in group[1:]:
            parent[find(cid)] = find(group[0])

    groups: dict[str, list[dict[str, Any]]] = {}
    for cid, cluster in by_id.items():
        groups.setdefault(find(cid), []).append(cluster)
    merged: list[dict[str, Any]] = []
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
        })
    return sorted(merged, key=lambda cluster: order_key(cluster["memberIds"][0]))


def build_questions(items: list[dict[str, Any]], clusters: list[dict[str, Any]],
                    *, item_count: int) -> list[Question]:
    """One question per cluster (a singleton cluster is a per-item question).

    ``clusters`` is the topology's clustering of the items to ask about —
    re-entry items are left out of it by the caller, so they are not asked.
    """
    by_id = {str(item.get("id")): item for item in items}
    questions: list[Question] = []
    for cluster in clusters:
        item_ids = tuple(cluster["memberIds"])
        reasons = tuple(cluster["memberReasons"])
        needs_human = tuple(bool(by_id.get(m, {}).get("needsHuman")) for m in item_ids)
        gated = tuple(cluster["gatedIds"])
        kind: QuestionKind = "cluster" if len(item_ids) > 1 else "item"
        question_id = cluster["clusterId"] if kind == "cluster" else item_ids[0]
        questions.append(Question(
            id=question_id, kind=kind, item_ids=item_ids, reasons=reasons, gated_ids=gated,
            item_count=item_count, needs_human=needs_human,
            text=_question_text(kind, item_ids, reasons, needs_human, gated, item_count),
        ))
    return questions
