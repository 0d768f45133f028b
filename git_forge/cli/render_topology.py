"""The human lines of the backlog topology: ``git forge backlog topology``'s text,
and the "waiting on" phrase that status and recover use too.

Rendering only: ``git_forge.backlog.topology`` computes the payloads these read.
"""

from __future__ import annotations

from git_forge.backlog.topology import WARN_FANOUT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from git_forge.backlog.topology import TopologyJSON, WaitingJSON

#: At most this many gated ids are named in a line; the count gives the rest.
_NAMED_GATED = 5


def waiting_text(entries: list[WaitingJSON]) -> str:
    """``002 (blocked) gating 003; the dependency cycle 004 ↔ 005 gating 006``."""
    parts = []
    for entry in entries:
        if entry["kind"] == "cycle":
            head = "the dependency cycle " + " ↔ ".join(entry["ids"])
        else:
            head = f"{entry['ids'][0]} ({entry['kind'].replace('-', ' ').replace('_', ' ')})"
        gated = entry["gatedIds"]
        if gated:
            named = ", ".join(gated[:_NAMED_GATED])
            if len(gated) > _NAMED_GATED:
                named += f", … ({len(gated)} in all)"
            head += f" gating {named}"
        parts.append(head)
    return "; ".join(parts)


def render_text(payload: TopologyJSON, *, verbose: bool = False,
                waiting: list[WaitingJSON] | None = None) -> list[str]:
    """The human lines of a topology payload (``--json`` prints the payload itself).

    Byte for byte the lines feature-forge's ``backlog-topology`` prints, so a script
    reading either tool's output reads both. ``verbose`` adds git-forge's detail on
    lines of their own, indented under the line they explain: what a starved backlog
    waits on (``waiting``, from ``waiting_on``) and each cluster's shared tokens.
    """
    lines = [
        f"Topology: {payload['itemCount']} items, {payload['rootCount']} roots, "
        f"max chain depth {payload['maxChainDepth']}, selectable {payload['selectable']}"
    ]
    for root in sorted(payload["roots"], key=lambda row: -row["gatedCount"]):
        lines.append(f"  root {root['id']} gates {root['gatedCount']} item(s)")
    count = payload["itemCount"]
    for warning in payload["warnings"]:
        lines.append(f"  warning: {warning}")
        if verbose:
            lines.append("    " + _warning_detail(payload, warning, count))
    starvation = payload.get("starvation")
    if starvation:
        blocking = ", ".join(row["id"] for row in starvation["blockingRoots"])
        lines.append(f"  starved: no selectable item; blocking roots: {blocking}")
        if verbose and waiting:
            lines.append(f"    waiting on {waiting_text(waiting)}")
    for cluster in payload.get("clusters", []):
        members = ", ".join(cluster["memberIds"])
        lines.append(f"  cluster {cluster['clusterId']}: members {members} "
                     f"(gates {cluster['gatedCount']} item(s))")
        if verbose:
            lines.append(f"    shared: {', '.join(cluster['sharedTokens']) or '(none)'}")
    return lines


def _warning_detail(payload: TopologyJSON, warning: str, count: int) -> str:
    """Why a warning fired: the measure and the threshold (half the backlog, rounded up)."""
    threshold = (count + 1) // 2

    if warning == WARN_FANOUT:
        widest = max(payload["roots"], key=lambda row: row["gatedCount"])
        return (f"root {widest['id']} gates {widest['gatedCount']} of {count} items "
                f"(the warning starts at {threshold})")
    return (f"the longest dependency chain has {payload['maxChainDepth']} of {count} items "
            f"(the warning starts at {threshold})")
