"""Backlog topology and blocked-item clustering: pure functions over the runner's item list.

Output-compatible with feature-forge's ``backlog-topology`` verb for acyclic backlogs (same
keys, order and values), and defined on cycles where that verb is not: an item on a cycle
gates everything reachable from it through dependents (never itself), and a cycle breaks a
chain. Every result is independent of the input order.

It has to stay fast on large backlogs (10,000 items, 10,000-deep chains), so:

* every graph walk is iterative — a deep chain never meets the recursion limit;
* the gated sets of all roots (or all clusters) come from two passes over the graph, not
  a walk per root: each item's set of ancestor labels (shared along a chain), then each
  label's ids handed out in id order; one question about a few items is one walk over
  their dependents. Time and memory follow the size of what the output names, rather
  than the square of the backlog's size;
* the collector is paused while the graph is built and read: it found nothing to free,
  and walking the survivors at every allocation threshold cost a third of the time;
* clustering compares only reason token sets that can reach the Jaccard threshold: identical
  sets are merged first, and the rest are paired through an inverted index (bitset postings)
  probed with each set's rarest tokens only (prefix filtering), so a word every reason
  shares ("the") does not make the pairing quadratic; large candidate sets have their
  overlaps counted bit-parallel. The result is exactly the all-pairs definition.
"""

import functools
import gc
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, filterfalse, repeat
from typing import NotRequired, ParamSpec, TypedDict, TypeVar, cast

from git_forge.backlog.errors import BacklogError
from git_forge.backlog.item import BacklogItemJSON, Item, kind
from git_forge.parsing import DocumentTooComplex, load_json

K = TypeVar("K")
P = ParamSpec("P")
R = TypeVar("R")

WARN_FANOUT = "single-root-fanout"
WARN_DEPTH = "chain-depth"


class RootJSON(TypedDict):
    """A root of the dependency graph and what it gates."""

    id: str
    gatedCount: int
    gatedIds: list[str]


class BlockingRootJSON(TypedDict):
    id: str
    gatedCount: int


class StarvationJSON(TypedDict):
    """Nothing selectable while items are pending: the roots that hold them back."""

    starved: bool
    blockingRoots: list[BlockingRootJSON]


class ClusterJSON(TypedDict):
    """Blocked items whose reasons are alike (``backlog topology --cluster``)."""

    clusterId: str
    memberIds: list[str]
    memberReasons: list[str]
    #: Absent in the clusters recover makes itself (a merge conflict's, a merge's).
    sharedTokens: NotRequired[list[str]]
    gatedIds: list[str]
    gatedCount: int
    #: A cluster recover merged: the clusters it was made of, as (clusterId, member ids).
    parts: NotRequired[list[tuple[str, tuple[str, ...]]]]


class TopologyJSON(TypedDict):
    """The ``backlog topology --json`` payload (feature-forge's keys and order)."""

    itemCount: int
    rootCount: int
    roots: list[RootJSON]
    maxChainDepth: int
    selectable: int
    starvation: StarvationJSON | None
    warnings: list[str]
    clusters: NotRequired[list[ClusterJSON]]


class WaitingJSON(TypedDict):
    """What a starved backlog waits on: an item, or a dependency cycle (``waiting_on``)."""

    ids: list[str]
    kind: str
    gatedIds: list[str]
    gatedCount: int


_TOKEN_SPLIT = re.compile(r"[^a-z0-9]+")
_DIGITS = "0123456789"
#: Every ASCII byte but a-z and 0-9 to a space: ``_TOKEN_SPLIT``'s separators, for bytes.
_ASCII_SEPARATORS = bytes(
    byte if "0" <= chr(byte) <= "9" or "a" <= chr(byte) <= "z" else 32 for byte in range(256))


# --------------------------------------------------------------------------- ids and input


def _collector_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run with the cyclic garbage collector paused, and resumed after it.

    A 100,000-item backlog makes a few hundred thousand lists and sets while as many
    Items are alive, and every allocation threshold crossed has the collector walk the
    survivors: that was a third of the topology's time. Nothing here makes a reference
    cycle, so pausing frees nothing later than it would have been freed. A collector
    already paused (by a caller, or a nested call) is left as it was.
    """

    @functools.wraps(fn)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return paused



def id_key(item_id: object) -> tuple[int | str, ...]:
    """Sort key for backlog ids: all-digit ids numerically first, then the rest as strings.

    Digit strings compare by (length without leading zeros, digits), which is numeric order
    without ``int()`` (no digit-count limit); the raw string breaks ties ("3" vs "003") so
    the order is total and never depends on input order.
    """
    text = str(item_id)
    if text.isascii() and text.isdigit():
        digits = text.lstrip("0")
        return (0, len(digits), digits, text)
    return (1, text)


def _in_id_order(ids: list[str]) -> list[str]:
    """``sorted(ids, key=id_key)``, without a Python call per id in the usual backlog:
    when every id is digits, and they share one width or none has a leading zero,
    id order is (length, text) order, which the sort does at C speed."""
    digits = "".join(ids)
    if digits.isascii() and digits.isdigit() and "" not in ids:
        if len(set(map(len, ids))) == 1 or "\n0" not in "\n" + "\n".join(ids):
            return sorted(sorted(ids), key=len)
    return sorted(ids, key=id_key)


_NO_ID = object()
_NOTHING: frozenset[object] = frozenset()
_NOT_MISSING = (-1).__ne__


def _check_item(index: int, item: object) -> None:
    """Refuse an item the topology cannot read (exit 2), naming its place in the list:
    a parsed JSON value, or an Item made from one without this check. (It runs for
    every item of every graph: the common case takes the fewest steps.)"""
    fields = item.raw if type(item) is Item else item  # not isinstance: an ABC check
    if not isinstance(fields, dict):
        raise BacklogError(f"backlog item at index {index} is not an object")
    item_id = fields.get("id", _NO_ID)
    if type(item_id) is not str and (isinstance(item_id, bool) or not isinstance(item_id, int)):
        if item_id is _NO_ID:
            raise BacklogError(f"backlog item at index {index} has no id")
        raise BacklogError(f"backlog item at index {index}: id must be a string or an integer")
    depends_on = fields.get("dependsOn")
    if depends_on is not None and not isinstance(depends_on, list):
        raise BacklogError(f"backlog item {item_id}: dependsOn must be an array")
    reason = fields.get("blockedReason")
    if reason is not None and not isinstance(reason, str):
        raise BacklogError(f"backlog item {item_id}: blockedReason must be a string")


@_collector_paused
def parse_items(raw: str) -> list[Item]:
    """Parse the runner's list output: a bare array, or an object with an ``items`` array."""
    try:
        data = load_json(raw, "items JSON")
    except DocumentTooComplex as exc:
        raise BacklogError(f"invalid {exc.message}") from exc
    except ValueError as exc:
        raise BacklogError(f"invalid items JSON: {exc}") from exc
    items = data.get("items", []) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise BacklogError("items JSON must be an array or an object with an 'items' array")
    for index, item in enumerate(items):
        _check_item(index, item)
    # checked for what the graph reads; the rest is read tolerantly (``BacklogItemJSON``)
    return [Item.from_json(cast(BacklogItemJSON, item)) for item in items]


# --------------------------------------------------------------------------- the graph


class DependencyGraph:
    """The backlog's dependency graph, indexed by position in id order.

    Built once (``build_graph``) and queried many times: the recovery step frames several
    questions from one item list.
    """

    #: Item ids in id order; an item's position is its index here.
    ids: list[str]
    #: The item of each id (a later duplicate id wins).
    items: list[Item]
    #: Position of each id.
    position: dict[str, int]
    #: In-backlog dependencies of each item, as positions (``dependsOn`` order).
    deps: list[list[int]]
    #: Items depending on each item directly, as positions.
    dependents: list[list[int]]
    #: Strongly connected component of each item.
    component: list[int]
    #: Per component: whether it is a cycle (two or more members, or a self-dependency).
    cyclic: list[bool]
    #: Every item after all it depends on, the members of a cycle side by side.
    order: list[int]
    #: The status of each item, read once (every question about the graph starts there).
    status: list[str | None]

    def __init__(self, ids: list[str], items: list[Item], position: dict[str, int],
                 deps: list[list[int]], dependents: list[list[int]], component: list[int],
                 cyclic: list[bool], order: list[int], status: list[str | None]) -> None:
        self.ids, self.items, self.position = ids, items, position
        self.deps, self.dependents = deps, dependents
        self.component, self.cyclic, self.order = component, cyclic, order
        self.status = status

    def gated_nodes(self, nodes: Iterable[int]) -> list[int]:
        """What ``nodes`` gate together, minus the nodes themselves, in id order.

        For one node that is ``gated(node)``: every item transitively depending on it.
        One breadth-first walk over dependents whose steps are set operations (C loops)
        sized by the step, never by what was seen before it, so the cost follows the
        size of the answer, whatever the backlog's size. (Many questions over one graph
        are answered together by ``gated_by_label``.)
        """
        start = set(nodes)
        seen = set(start)
        frontier = start
        dependents = self.dependents
        while frontier:
            # ``difference`` walks the smaller side; ``reached -= seen`` would walk all
            # of ``seen`` at every step, which is quadratic in a deep walk
            frontier = set().union(*map(dependents.__getitem__, frontier)).difference(seen)
            seen |= frontier
        seen -= start
        return sorted(seen)

    def gated_by_label(self, label: list[int], count: int) -> list[list[str]]:
        """For each label ``0 .. count-1`` (``label`` gives each item's, or -1): the ids,
        in id order, of the items that transitively depend on an item carrying it,
        less the items carrying it — the ``gated`` sets of many roots, or of many
        clusters, at once.

        Two passes instead of a walk per label: each item's *ancestor labels* (its own
        and those of everything it depends on), then each label's list of the items
        holding it. Work and memory follow the size of the answer (plus the edges); no
        per-label walk re-reads what another one read.
        """
        return _hand_out(self, _ancestor_labels(self, label), label, count)

    def ids_of(self, nodes: Iterable[int]) -> list[str]:
        """The ids of ``nodes`` (positions), in the order given."""
        return list(map(self.ids.__getitem__, nodes))

    def gated_ids(self, item_ids: Iterable[object]) -> list[str]:
        """Union of the gated sets of ``item_ids`` minus those ids, in id order.

        Ids not in the backlog contribute nothing. This is the blast radius of one decision
        that unblocks all of ``item_ids`` — the same set a cluster reports as ``gatedIds``.
        """
        known = (self.position.get(str(item_id)) for item_id in item_ids)
        return self.ids_of(self.gated_nodes(node for node in known if node is not None))


def _ancestor_labels(graph: DependencyGraph, label: list[int]) -> list[tuple[int, ...]]:
    """Each item's own label and the labels of everything it depends on, directly or not.

    One pass, dependencies first. The members of a cycle depend on each other, so they
    share one set. An item that adds nothing to its only dependency's set (a chain, a
    fan-out) shares that set, so a chain holds one set however deep it is.
    """
    deps, component, cyclic = graph.deps, graph.component, graph.cyclic
    has_cycles = True in cyclic
    members: dict[int, list[int]] = {}
    if has_cycles:
        for node, group in enumerate(component):
            if cyclic[group]:
                members.setdefault(group, []).append(node)
    above: list[tuple[int, ...]] = [()] * len(deps)
    for node in graph.order:
        mine = label[node]
        if has_cycles and cyclic[component[node]]:
            group = component[node]
            if group not in members:
                continue  # its set was made with its cycle's first member
            shared: set[int] = set()
            for member in members[group]:
                if label[member] >= 0:
                    shared.add(label[member])
                for dep in deps[member]:
                    if component[dep] != group:
                        shared.update(above[dep])
            frozen = tuple(shared)
            for member in members.pop(group):
                above[member] = frozen
            continue
        node_deps = deps[node]
        if not node_deps:
            if mine >= 0:
                above[node] = (mine,)
            continue
        first = above[node_deps[0]]
        if len(node_deps) > 1:
            others = [above[dep] for dep in node_deps[1:] if above[dep] is not first]
            if others:
                merged = set(first)
                merged.update(*others)
                if len(merged) > len(first):
                    first = tuple(merged)
        if mine >= 0 and mine not in first:
            first = (*first, mine)
        above[node] = first
    return above


def _hand_out(graph: DependencyGraph, above: list[tuple[int, ...]], label: list[int],
              count: int) -> list[list[str]]:
    """Each label's items (``above`` holding it, their own label another), as ids in id order.

    One pass in id order hands each item's id to each of its labels' lists. (Grouping
    items by their set first and merging each label's groups by a sort was measured
    slower even where a few sets stand for many items: every id is then fetched once
    per label, far apart in memory, where this fetches it once.)
    """
    ids = graph.ids
    lists: list[list[str]] = [[] for _ in range(count)]
    appends: list[Callable[[str], object]] = [found.append for found in lists]
    ignore = _NOTHING.__contains__  # a C no-op standing in for an item's own label
    for node, labels in enumerate(above):
        if not labels:
            continue
        item_id = ids[node]
        mine = label[node]
        if mine < 0:
            for at in labels:
                appends[at](item_id)
        else:
            keep, appends[mine] = appends[mine], ignore
            for at in labels:
                appends[at](item_id)
            appends[mine] = keep
    return lists


@_collector_paused
def build_graph(items: Sequence[Item]) -> DependencyGraph:
    """Index ``items`` (the runner's list) into a ``DependencyGraph``."""
    by_id: dict[str, Item] = {}
    for index, item in enumerate(items):
        _check_item(index, item)
        by_id[item.id] = item
    ids = _in_id_order(list(by_id))
    count = len(ids)
    position = dict(zip(ids, range(count), strict=True))
    ordered = list(map(by_id.__getitem__, ids))
    known = position.get
    deps: list[list[int]] = []
    dependents: list[list[int]] = [[] for _ in ids]
    forward = True  # every dependency earlier in id order, as backlogs are mostly written
    for node, item in enumerate(ordered):
        # ``raw``, not ``depends_on`` (checked above): this runs for every item of every
        # graph, and a tuple per item is measurable at 100,000; C loops, not a
        # comprehension, map its dependencies to positions (-1: not in the backlog)
        depends_on = item.raw.get("dependsOn")
        if not depends_on:
            deps.append([])
            continue
        mine = list(filter(_NOT_MISSING, map(known, map(str, depends_on), repeat(-1))))
        deps.append(mine)
        if mine:
            for dep in mine:
                dependents[dep].append(node)
            if max(mine) >= node:
                forward = False
    if forward:  # then id order is an order, with no cycle: no walk needed to find one
        order = list(range(count))
        component = order[::-1]
        cyclic = [False] * count
    else:
        component, order, cyclic = _components(dependents)
        order.reverse()  # dependencies first
    status = [item.status for item in ordered]
    return DependencyGraph(ids, ordered, position, deps, dependents, component, cyclic, order,
                           status)


def _acyclic_order(succ: list[list[int]]) -> list[int] | None:
    """The nodes with every node before its successors (Kahn), or ``None`` when some
    are on a cycle (a self-dependency included). A backlog is almost always acyclic,
    and this is ten times cheaper than Tarjan's walk."""
    incoming = Counter(chain.from_iterable(succ))
    indegree = [incoming.get(node, 0) for node in range(len(succ))]
    order = [node for node, degree in enumerate(indegree) if not degree]
    for node in order:  # grows while it is read: each node joins once its last edge is gone
        for nxt in succ[node]:
            indegree[nxt] -= 1
            if not indegree[nxt]:
                order.append(nxt)
    return order if len(order) == len(succ) else None


def _tarjan(succ: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Iterative Tarjan: (component of each node, components with successors first)."""
    count = len(succ)
    index = [-1] * count
    low = [0] * count
    on_stack = [False] * count
    component = [-1] * count
    stack: list[int] = []
    groups: list[list[int]] = []
    counter = 0
    for start in range(count):
        if index[start] != -1:
            continue
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack[start] = True
        work = [(start, iter(succ[start]))]
        while work:
            node, edges = work[-1]
            descended = False
            for nxt in edges:
                if index[nxt] == -1:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack[nxt] = True
                    work.append((nxt, iter(succ[nxt])))
                    descended = True
                    break
                if on_stack[nxt] and index[nxt] < low[node]:
                    low[node] = index[nxt]
            if descended:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                if low[node] < low[parent]:
                    low[parent] = low[node]
            if low[node] == index[node]:
                group: list[int] = []
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    component[member] = len(groups)
                    group.append(member)
                    if member == node:
                        break
                groups.append(group)
    return component, groups


def _components(succ: list[list[int]]) -> tuple[list[int], list[int], list[bool]]:
    """(component of each node, the nodes with successors first and each component's
    members side by side, which components are dependency cycles).

    Kahn's order answers an acyclic graph, each node a component of its own; Tarjan's
    walk the rest. The one definition of a cycle: a component of two or more items, or
    an item that depends on itself. The graph, an add or edit (``cycle_through``) and
    the loop's summary (``dependency_cycles``) all ask it here.
    """
    count = len(succ)
    order = _acyclic_order(succ)
    if order is not None:
        order.reverse()
        component = [0] * count
        for index, node in enumerate(order):
            component[node] = index
        return component, order, [False] * count
    component, groups = _tarjan(succ)
    cyclic = [len(group) > 1 or group[0] in succ[group[0]] for group in groups]
    return component, [node for group in groups for node in group], cyclic


def _chain_depths(graph: DependencyGraph) -> list[int]:
    """Longest chain (in nodes) ending at each item; items on a cycle count 0 and break it."""
    depth = [0] * len(graph.ids)
    of = depth.__getitem__
    deps, component, cyclic = graph.deps, graph.component, graph.cyclic
    has_cycles = True in cyclic
    for node in graph.order:
        node_deps = deps[node]
        if not node_deps:
            depth[node] = 1
        elif not (has_cycles and cyclic[component[node]]):
            depth[node] = 1 + max(map(of, node_deps))
    return depth


# --------------------------------------------------------------------------- cycles


def _reached(edges: Mapping[str, Sequence[str]], start: str) -> list[str]:
    """``start`` and every item it depends on, directly or not (ids in ``edges`` only)."""
    if start not in edges:
        return []
    found = {start: None}
    stack = [start]
    while stack:
        for dep in edges[stack.pop()]:
            if dep not in found and dep in edges:
                found[dep] = None
                stack.append(dep)
    return list(found)


class _Cycles:
    """The dependency cycles of an item list, found once (``_components``) and asked
    per item. Lighter than ``build_graph`` (no id sort, no per-item check): positions
    follow the list, a later duplicate id winning. With ``only``, just the items it
    reaches are indexed — a cycle through it cannot leave them — so an add or edit
    pays for what the edited item depends on, not for the whole backlog."""

    def __init__(self, items: Iterable[Item], only: str | None = None) -> None:
        edges = {item.id: item.depends_on for item in items}
        self.ids = list(edges) if only is None else _reached(edges, only)
        self.position = {item_id: node for node, item_id in enumerate(self.ids)}
        self.deps = [[self.position[dep] for dep in edges[item_id] if dep in self.position]
                     for item_id in self.ids]
        self.component, _, self.cyclic = _components(self.deps)

    def on_cycle(self, item_id: str) -> bool:
        node = self.position.get(item_id)
        return node is not None and self.cyclic[self.component[node]]

    def through(self, item_id: str) -> list[str] | None:
        """A cycle through ``item_id`` (ids, it first), or ``None``.

        Depth first along ``dependsOn`` (the last dependency explored first), never
        leaving the item's component: a path that leaves it cannot come back. Each
        item is reached once and remembers where from, so a deep chain costs linear
        time, not a copied path per step."""
        if not self.on_cycle(item_id):
            return None
        start = self.position[item_id]
        home = self.component[start]
        came_from = {start: start}
        stack = [start]
        while stack:
            node = stack.pop()
            for dep in self.deps[node]:
                if dep == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [self.ids[at] for at in reversed(path)]
                if dep not in came_from and self.component[dep] == home:
                    came_from[dep] = node
                    stack.append(dep)
        return None  # not reached: every member of a cyclic component is on a cycle through it


def cycle_through(items: Sequence[Item], start: str) -> list[str] | None:
    """A dependency cycle that passes through ``start`` (as ids, start first), or None.

    Only the edited item's edges change in an add or edit, so a cycle that edit
    introduced must pass through it; cycles elsewhere (already in the file) are
    not the edit's doing and are left alone.
    """
    return _Cycles(items, only=start).through(start)


def dependency_cycles(items: Sequence[Item]) -> list[list[str]]:
    """The dependency cycles among ``items``, each once: in id order, every item on a
    cycle that no cycle named so far passes through names one through it."""
    cycles = _Cycles(items)
    found: list[list[str]] = []
    seen: set[str] = set()
    for item_id in sorted(cycles.ids, key=id_key):
        if item_id in seen:
            continue
        cycle = cycles.through(item_id)
        if cycle:
            found.append(cycle)
            seen.update(cycle)
    return found


# --------------------------------------------------------------------------- selection


def is_selectable(status: object, dependencies: Iterable[K], status_of: Mapping[K, object]) -> bool:
    """The one rule for what the loop may pick (runner.md): a pending item whose every
    dependency that is in the backlog is done. ``status_of`` is the backlog's status of
    each item; a dependency it does not know (outside the backlog) holds nothing back.
    The loop selects by this rule and the topology counts by it."""
    return status == "pending" and all(status_of.get(dep, "done") == "done"
                                       for dep in dependencies)


# --------------------------------------------------------------------------- topology


def _topology(graph: DependencyGraph) -> TopologyJSON:
    count = len(graph.ids)
    status = graph.status
    root_nodes = [node for node, node_deps in enumerate(graph.deps) if not node_deps]
    label = [-1] * count
    for index, node in enumerate(root_nodes):
        label[node] = index
    gated_sets = graph.gated_by_label(label, len(root_nodes))
    roots: list[RootJSON] = [
        {"id": graph.ids[node], "gatedCount": len(gated), "gatedIds": gated}
        for node, gated in zip(root_nodes, gated_sets, strict=True)
    ]
    depths = _chain_depths(graph)
    max_depth = max(depths, default=0)
    status_of = dict(enumerate(status))
    selectable = sum(  # only a pending item can be: ask the rule about those alone
        1 for node, state in enumerate(status)
        if state == "pending" and is_selectable(state, graph.deps[node], status_of)
    )
    pending = status.count("pending")
    threshold = (count + 1) // 2  # ceil(0.5 * itemCount), for fan-out and depth alike
    warnings: list[str] = []
    if count > 1 and any(graph.deps):
        if any(row["gatedCount"] >= threshold for row in roots):
            warnings.append(WARN_FANOUT)
        if max_depth >= threshold:
            warnings.append(WARN_DEPTH)
    starvation: StarvationJSON | None = None
    if selectable == 0 and pending > 0:
        starvation = {
            "starved": True,
            "blockingRoots": [
                {"id": row["id"], "gatedCount": row["gatedCount"]}
                for row in roots
                if row["gatedCount"] > 0 and status[graph.position[row["id"]]] != "done"
            ],
        }
    return {
        "itemCount": count,
        "rootCount": len(roots),
        "roots": roots,
        "maxChainDepth": max_depth,
        "selectable": selectable,
        "starvation": starvation,
        "warnings": warnings,
    }


@_collector_paused
def compute_topology(items: Sequence[Item]) -> TopologyJSON:
    """Roots and what each gates, depth, selectable count, starvation and warnings."""
    return _topology(build_graph(items))


# --------------------------------------------------------------------------- clustering


def reason_tokens(reason: str | None) -> frozenset[str]:
    """The comparison tokens of a ``blockedReason``: lowercase words, ids and numbers
    (``^(\\d+|[a-z]*\\d+)$``: 42, req12, t7) dropped.

    It runs once per blocked reason, so the common case stays in C: ASCII text has its
    separators turned to spaces by one byte translation (the ``re`` split is several
    times slower per character), words of letters alone are kept by a C filter and
    numbers dropped by another; only a token mixing letters and digits is looked at.
    """
    text = (reason or "").lower()
    if text.isascii():
        words = text.encode().translate(_ASCII_SEPARATORS).decode().split()
    else:
        words = _TOKEN_SPLIT.split(text)
    kept = frozenset(filter(str.isalpha, words))
    # a token of letters and digits is id-like when its letters all come first
    mixed = [word for word in filterfalse(str.isdigit, filterfalse(str.isalpha, words))
             if word and not word.rstrip(_DIGITS).isalpha()]
    return kept.union(mixed) if mixed else kept


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    """Jaccard(a, b) >= 1/2, in exact integer arithmetic (two empty sets score 0)."""
    shared = len(a & b)
    union = len(a) + len(b) - shared
    return union > 0 and 2 * shared >= union


class _Components:
    """Disjoint sets over 0..n-1 that also keep each component's members as a bitset."""

    def __init__(self, count: int) -> None:
        self.parent = list(range(count))
        self.members: dict[int, int] = {}  # root -> bitset; absent means just the root

    def find(self, node: int) -> int:
        parent = self.parent
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    def bits(self, root: int) -> int:
        return self.members.get(root, 1 << root)

    def join(self, a: int, b: int) -> int:
        """Merge the components of ``a`` and ``b``; return the surviving root."""
        a, b = self.find(a), self.find(b)
        if a == b:
            return a
        merged = self.members.pop(a, 1 << a) | self.members.pop(b, 1 << b)
        self.parent[b] = a
        self.members[a] = merged
        return a


#: Candidate sets up to this many are verified one by one; larger ones are counted in bulk.
_VERIFY_ONE_BY_ONE = 12


def _link_token_sets(sets: list[frozenset[str]]) -> list[int]:
    """Component label of each of ``sets`` (distinct, non-empty) under Jaccard >= 1/2 links.

    Sets are visited by size; each is compared only with earlier sets (so |B| <= |A|) that
    share a token with its *prefix*, the first |A| - ceil(|A|/2) + 1 of its tokens ranked
    rarest first. That is exact: J(A, B) >= 1/2 with |B| <= |A| needs
    |A∩B| >= ceil((|A|+|B|)/3) >= ceil(|A|/2), so A's prefix cannot miss B entirely. Common
    words rank last and rarely reach a prefix.

    Postings are bitsets over the visit order. A handful of candidates is verified set by
    set; a large candidate set gets its overlaps counted bit-parallel (one bit-sliced
    counter per candidate, one addition per token of A), so a crowd of reasons sharing
    common words costs a few big-int operations per reason rather than one check per pair.
    A component already joined drops out of the candidates whole.
    """
    frequency: dict[str, int] = {}
    for tokens in sets:
        for token in tokens:
            frequency[token] = frequency.get(token, 0) + 1
    by_rarity = sorted(frequency, key=lambda t: (frequency[t], t))
    rank = {token: n for n, token in enumerate(by_rarity)}
    ranks_of = [sorted(rank[t] for t in tokens) for tokens in sets]
    visit = sorted(range(len(sets)), key=lambda s: (len(ranks_of[s]), ranks_of[s]))
    ordered = [ranks_of[s] for s in visit]
    sizes = [len(ranks) for ranks in ordered]
    # starts[b] = first visit position whose set has at least b tokens
    starts = [bisect_left(sizes, size) for size in range(max(sizes, default=0) + 2)]
    postings: dict[int, int] = {}  # token rank -> bitset of the sets holding it (if 2+)
    for position, ranks in enumerate(ordered):
        for token_rank in ranks:
            if frequency[by_rarity[token_rank]] > 1:
                postings[token_rank] = postings.get(token_rank, 0) | (1 << position)
    links = _Components(len(visit))
    for position, ranks in enumerate(ordered):
        size = sizes[position]
        half = (size + 1) // 2
        candidates = 0
        for token_rank in ranks[: size - half + 1]:
            candidates |= postings.get(token_rank, 0)
        window = (1 << position) - (1 << starts[half])  # earlier sets of size >= |A|/2
        candidates &= window
        if not candidates:
            continue
        if candidates.bit_count() <= _VERIFY_ONE_BY_ONE:
            linked = 0
            rest = candidates
            while rest:
                low = rest & -rest
                rest ^= low
                other = low.bit_length() - 1
                if _similar(sets[visit[position]], sets[visit[other]]):
                    linked |= low
        else:
            linked = _linked_by_count(ranks, postings, candidates, size, starts, position)
        while linked:
            other = (linked & -linked).bit_length() - 1
            linked &= ~links.bits(links.join(position, other))
    labels = [0] * len(sets)
    for position, original in enumerate(visit):
        labels[original] = links.find(position)
    return labels


def _linked_by_count(
    ranks: list[int],
    postings: dict[int, int],
    candidates: int,
    size: int,
    starts: list[int],
    position: int,
) -> int:
    """The candidates B with 3·|A∩B| >= |A| + |B|, counting overlaps bit-parallel."""
    counter: list[int] = []  # counter[i] = bit i of every candidate's overlap count
    for token in ranks:
        carry = postings.get(token, 0) & candidates
        for i, bits in enumerate(counter):
            if not carry:
                break
            counter[i] = bits ^ carry
            carry &= bits
        if carry:
            counter.append(carry)
    linked = 0
    smallest = (size + 1) // 2
    # ceil((|A|+|B|)/3) is the overlap needed; it steps up every three sizes of B.
    for need in range((size + smallest + 2) // 3, (2 * size + 2) // 3 + 1):
        low_size = max(smallest, 3 * need - 2 - size)
        high_size = min(size, 3 * need - size)
        if low_size > high_size:
            continue
        span = (1 << min(starts[high_size + 1], position)) - (1 << starts[low_size])
        if span & candidates:
            linked |= _at_least(counter, need, candidates & span)
    return linked


def _at_least(counter: list[int], value: int, universe: int) -> int:
    """Members of ``universe`` whose bit-sliced count in ``counter`` is >= ``value``."""
    if value >> len(counter):
        return 0
    greater = 0
    equal = universe
    for i in range(len(counter) - 1, -1, -1):
        if value >> i & 1:
            equal &= counter[i]
        else:
            greater |= equal & counter[i]
            equal &= ~counter[i]
    return greater | equal


def _clusters(graph: DependencyGraph) -> list[ClusterJSON]:
    blocked = [node for node, state in enumerate(graph.status) if state == "blocked"]
    reason_of = {node: graph.items[node].blocked_reason for node in blocked}
    # reasons repeat, and so do token sets: tokenize each reason once, and keep one
    # token set of each content (the first, in the items' order), so what is asked
    # per item is asked of few sets, and 50,000 reasons do not hold 50,000 sets
    kinds: dict[frozenset[str], frozenset[str]] = {}
    tokens_of_reason: dict[str | None, frozenset[str]] = {}
    for reason in dict.fromkeys(reason_of.values()):
        tokens = reason_tokens(reason)
        tokens_of_reason[reason] = kinds.setdefault(tokens, tokens)
    distinct = {tokens: n for n, tokens in enumerate(filter(None, kinds))}
    labels = _link_token_sets(list(distinct))
    linked: dict[int, list[frozenset[str]]] = {}
    for tokens, n in distinct.items():
        linked.setdefault(labels[n], []).append(tokens)
    groups: dict[int, list[int]] = {}  # a linked label, or -1 - node for an item alone
    for node in blocked:  # id order, so every member list comes out in id order
        tokens = tokens_of_reason[reason_of[node]]
        groups.setdefault(labels[distinct[tokens]] if tokens else -1 - node, []).append(node)
    keys = sorted(groups, key=lambda key: groups[key][0])
    label = [-1] * len(graph.ids)
    for index, key in enumerate(keys):
        for node in groups[key]:
            label[node] = index
    clusters: list[ClusterJSON] = []
    for key, gated in zip(keys, graph.gated_by_label(label, len(keys)), strict=True):
        members = groups[key]
        shared = frozenset.intersection(*linked[key]) if key >= 0 else frozenset()
        member_ids = [graph.ids[node] for node in members]
        clusters.append(
            {
                "clusterId": "c" + member_ids[0],
                "memberIds": member_ids,
                "memberReasons": [reason_of[node] or "" for node in members],
                "sharedTokens": sorted(shared),
                "gatedIds": gated,
                "gatedCount": len(gated),
            }
        )
    return clusters


@_collector_paused
def cluster_blocked(items: Sequence[Item]) -> list[ClusterJSON]:
    """Group blocked items whose reasons are alike (token-set Jaccard >= 1/2, transitively)."""
    return _clusters(build_graph(items))


def gated_ids(items: Sequence[Item], item_ids: Iterable[object]) -> list[str]:
    """Blast radius of one decision on ``item_ids``: what they gate, minus themselves.

    Same set a cluster of exactly those members reports as ``gatedIds``. Callers asking
    several times about one list should ``build_graph`` once and use its ``gated_ids``.
    """
    return build_graph(items).gated_ids(item_ids)


@_collector_paused
def topology_report(items: Sequence[Item], *, cluster: bool) -> TopologyJSON:
    """The ``backlog topology`` payload: the topology, plus ``clusters`` when asked."""
    graph = build_graph(items)
    report = _topology(graph)
    if cluster:
        report["clusters"] = _clusters(graph)
    return report


# --------------------------------------------------------------------------- what waits on what


@_collector_paused
def topology_of(graph: DependencyGraph) -> TopologyJSON:
    """``compute_topology`` over a graph already built (one build for several questions)."""
    return _topology(graph)


@_collector_paused
def waiting_on(graph: DependencyGraph) -> list[WaitingJSON]:
    """What a starved backlog waits on; empty when something is selectable or nothing
    is pending.

    feature-forge's ``blockingRoots`` names only roots, so a done root with a blocked
    item below it reads as "nothing blocks". This names the real blockers: every
    item that is neither done nor pending (blocked, needs-human, deferred, in
    progress) and gates a pending item, and every dependency cycle that holds or
    gates one — each ``{ids, kind, gatedIds, gatedCount}``, ``kind`` being the
    item's kind or ``"cycle"``, in id order. In a starved backlog every pending item
    waits on at least one of them, so the list is never empty then.
    """
    status = graph.status
    pending = [state == "pending" for state in status]
    status_of = dict(enumerate(status))
    selectable = any(
        is_selectable(state, graph.deps[node], status_of) for node, state in enumerate(status)
    )
    if not any(pending) or selectable:
        return []
    found: list[tuple[int, WaitingJSON]] = []
    cycles: dict[int, list[int]] = {}
    for node, item in enumerate(graph.items):
        if graph.cyclic[graph.component[node]]:
            cycles.setdefault(graph.component[node], []).append(node)
        if status[node] in ("done", "pending"):
            continue
        gated = graph.gated_nodes([node])
        if any(pending[other] for other in gated):
            found.append((node, _waiting_entry(graph, [node], kind(item), gated)))
    for members in cycles.values():
        if all(status[node] == "done" for node in members):
            continue
        gated = graph.gated_nodes(members)
        if any(pending[other] for other in (*gated, *members)):
            found.append((members[0], _waiting_entry(graph, members, "cycle", gated)))
    return [entry for _, entry in sorted(found, key=lambda pair: pair[0])]


def _waiting_entry(graph: DependencyGraph, nodes: list[int], kind: str,
                   gated: list[int]) -> WaitingJSON:
    gated_ids = graph.ids_of(gated)
    return {"ids": [graph.ids[node] for node in nodes], "kind": kind,
            "gatedIds": gated_ids, "gatedCount": len(gated_ids)}
