"""Backlog topology and clustering (the pure core), in-process.

The references below are written straight from the topology spec — naive walks and an
all-pairs union-find — and the fast implementation must agree with them exactly.
"""

from __future__ import annotations

import functools
import json
import random
import re

import builders
import pytest

from git_forge.backlog import topology
from git_forge.backlog.errors import BacklogError
from git_forge.backlog.item import Item
from git_forge.backlog.topology import id_key, parse_items, reason_tokens
from git_forge.cli.render_topology import render_text, waiting_text


def items_of(entries: list) -> list:
    """The backlogs here are written as the runner lists them (JSON objects); the
    topology reads them as Items. Anything else goes in as it is, to be refused."""
    return [Item(entry) if isinstance(entry, dict) else entry for entry in entries]


def build_graph(items: list) -> topology.DependencyGraph:
    return topology.build_graph(items_of(items))


def compute_topology(items: list) -> dict:
    return topology.compute_topology(items_of(items))


def cluster_blocked(items: list) -> list[dict]:
    return topology.cluster_blocked(items_of(items))


def gated_ids(items: list, item_ids: list) -> list[str]:
    return topology.gated_ids(items_of(items), item_ids)


def topology_report(items: list, *, cluster: bool) -> dict:
    return topology.topology_report(items_of(items), cluster=cluster)


TOPOLOGY_KEYS = [
    "itemCount", "rootCount", "roots", "maxChainDepth", "selectable", "starvation", "warnings",
]
CLUSTER_KEYS = ["clusterId", "memberIds", "memberReasons", "sharedTokens", "gatedIds", "gatedCount"]


def item(item_id: str, *deps: str, status: str = "pending", reason: str | None = None) -> dict:
    """An item depending on ``deps``, in this file's shorthand."""
    extra = {} if reason is None else {"blockedReason": reason}
    return builders.item(item_id, status, dependsOn=list(deps), **extra)


def blocked(item_id: str, reason: str | None, *deps: str, **extra) -> dict:
    return {**item(item_id, *deps, status="blocked", reason=reason), **extra}


# --------------------------------------------------------------------------- references


def ref_key(item_id: str) -> tuple:
    return (0, int(item_id), item_id) if item_id.isascii() and item_id.isdigit() else (1, item_id)


def ref_tokens(reason: str | None) -> set[str]:
    words = re.split(r"[^a-z0-9]+", (reason or "").lower())
    return {w for w in words if w and not re.match(r"^(?:\d+|[a-z]*\d+)$", w)}


def ref_graph(items: list[dict]):
    by_id = {str(it["id"]): it for it in items}
    ids = sorted(by_id, key=ref_key)
    deps = {i: [str(d) for d in by_id[i].get("dependsOn") or [] if str(d) in by_id] for i in ids}
    dependents: dict[str, list[str]] = {i: [] for i in ids}
    for i in ids:
        for d in deps[i]:
            dependents[d].append(i)
    reach = {}
    for start in ids:
        seen: set[str] = set()
        todo = list(dependents[start])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(dependents[node])
        reach[start] = seen
    gated = {i: reach[i] - {i} for i in ids}
    on_cycle = {i for i in ids if i in reach[i]}
    return by_id, ids, deps, gated, on_cycle


def ref_topology(items: list[dict]) -> dict:
    """The spec, naively: BFS for gated sets, memoised depth that cycles reset to 0."""
    by_id, ids, deps, gated, on_cycle = ref_graph(items)

    @functools.cache
    def depth(node: str) -> int:
        return 0 if node in on_cycle else 1 + max((depth(d) for d in deps[node]), default=0)

    roots = [
        {"id": i, "gatedCount": len(gated[i]), "gatedIds": sorted(gated[i], key=ref_key)}
        for i in ids
        if not deps[i]
    ]
    max_depth = max((depth(i) for i in ids), default=0)
    status = {i: by_id[i].get("status") for i in ids}
    selectable = sum(
        1 for i in ids if status[i] == "pending" and all(status[d] == "done" for d in deps[i])
    )
    pending = sum(1 for i in ids if status[i] == "pending")
    threshold = -(-len(ids) // 2)
    warnings = []
    if len(ids) > 1 and any(deps.values()):
        if any(r["gatedCount"] >= threshold for r in roots):
            warnings.append("single-root-fanout")
        if max_depth >= threshold:
            warnings.append("chain-depth")
    starvation = None
    if selectable == 0 and pending > 0:
        starvation = {
            "starved": True,
            "blockingRoots": [
                {"id": r["id"], "gatedCount": r["gatedCount"]}
                for r in roots
                if r["gatedCount"] > 0 and status[r["id"]] != "done"
            ],
        }
    return {
        "itemCount": len(ids), "rootCount": len(roots), "roots": roots,
        "maxChainDepth": max_depth, "selectable": selectable, "starvation": starvation,
        "warnings": warnings,
    }


def ref_clusters(items: list[dict]) -> list[dict]:
    """The spec, naively: Jaccard over every pair of blocked items, then union-find."""
    by_id, ids, _deps, gated, _on_cycle = ref_graph(items)
    members = [i for i in ids if by_id[i].get("status") == "blocked"]
    tokens = {i: ref_tokens(by_id[i].get("blockedReason")) for i in members}
    parent = {i: i for i in members}

    def find(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for n, a in enumerate(members):
        for b in members[n + 1:]:
            union = tokens[a] | tokens[b]
            if union and len(tokens[a] & tokens[b]) / len(union) >= 0.5:
                parent[find(b)] = find(a)
    groups: dict[str, list[str]] = {}
    for i in members:
        groups.setdefault(find(i), []).append(i)
    clusters = []
    for group in sorted(groups.values(), key=lambda g: ref_key(g[0])):
        shared = set.intersection(*(tokens[m] for m in group))
        blast = set().union(*(gated[m] for m in group)) - set(group)
        clusters.append({
            "clusterId": "c" + group[0],
            "memberIds": group,
            "memberReasons": [by_id[m].get("blockedReason") or "" for m in group],
            "sharedTokens": sorted(shared),
            "gatedIds": sorted(blast, key=ref_key),
            "gatedCount": len(blast),
        })
    return clusters


VOCABULARY = [
    "the", "for", "api", "key", "missing", "schema", "decision", "host", "cannot", "reach",
    "needs", "human", "approve", "design", "token", "billing", "search", "queue", "auth",
]
NOISE = ["42", "req12", "t7", "007", "item3"]


def random_reason(rng: random.Random, vocabulary: list[str]) -> str | None:
    if rng.random() < 0.08:
        return rng.choice([None, "", "42 req12 -- t7"])
    words = [rng.choice(vocabulary) for _ in range(rng.randint(1, 7))]
    words += rng.sample(NOISE, rng.randint(0, 2))
    rng.shuffle(words)
    text = " ".join(words)
    return text.upper() if rng.random() < 0.1 else text


def random_backlog(rng: random.Random, size: int, *, cyclic: bool) -> list[dict]:
    ids = [str(n) for n in range(1, size + 1)]
    for n in rng.sample(range(size), min(3, size)):
        ids[n] = rng.choice([f"x{n}", f"0{rng.randint(1, size)}", f"a-{n}"])
    ids = list(dict.fromkeys(ids))
    items = []
    for n, item_id in enumerate(ids):
        pool = ids if cyclic else ids[:n]
        deps = [rng.choice(pool) for _ in range(rng.randint(0, 3))] if pool else []
        if rng.random() < 0.1:
            deps.append("ext-999")
        status = rng.choice(["pending", "pending", "done", "blocked", "blocked", "in_progress"])
        entry = {"id": item_id, "status": status, "dependsOn": deps}
        if status == "blocked":
            entry["blockedReason"] = random_reason(rng, VOCABULARY)
        items.append(entry)
    return items


# --------------------------------------------------------------------------- examples


def test_line_of_four() -> None:
    items = [item("1"), item("2", "1"), item("3", "2"), item("4", "3")]
    assert compute_topology(items) == {
        "itemCount": 4,
        "rootCount": 1,
        "roots": [{"id": "1", "gatedCount": 3, "gatedIds": ["2", "3", "4"]}],
        "maxChainDepth": 4,
        "selectable": 1,
        "starvation": None,
        "warnings": ["single-root-fanout", "chain-depth"],
    }


def test_diamond_has_depth_three() -> None:
    items = [item("a"), item("b", "a"), item("c", "a"), item("d", "b", "c")]
    result = compute_topology(items)
    assert result["maxChainDepth"] == 3
    assert result["roots"] == [{"id": "a", "gatedCount": 3, "gatedIds": ["b", "c", "d"]}]


def test_three_independent_items() -> None:
    result = compute_topology([item("1"), item("2"), item("3")])
    assert result["rootCount"] == 3
    assert [r["gatedCount"] for r in result["roots"]] == [0, 0, 0]
    assert result["maxChainDepth"] == 1
    assert result["warnings"] == []
    assert result["selectable"] == 3


def test_two_cycle_with_a_dependent_starves_without_blocking_roots() -> None:
    items = [item("1", "2"), item("2", "1"), item("3", "1")]
    result = compute_topology(items)
    assert result["rootCount"] == 0
    assert result["roots"] == []
    assert result["selectable"] == 0
    assert result["starvation"] == {"starved": True, "blockingRoots": []}
    assert result["maxChainDepth"] == 1  # item 3 alone: the cycle breaks the chain
    graph = build_graph(items)
    assert graph.gated_ids(["1"]) == ["2", "3"]
    assert graph.gated_ids(["2"]) == ["1", "3"]
    assert graph.gated_ids(["3"]) == []


def test_cycle_breaks_a_chain_and_dependents_count_from_it() -> None:
    items = [item("1", "2"), item("2", "1"), item("3", "1"), item("4", "3"), item("5")]
    result = compute_topology(items)
    assert result["maxChainDepth"] == 2  # 3 <- 4
    assert result["roots"] == [{"id": "5", "gatedCount": 0, "gatedIds": []}]


def test_self_dependency_is_a_cycle() -> None:
    items = [item("1", "1"), item("2", "1")]
    result = compute_topology(items)
    assert result["rootCount"] == 0
    assert result["maxChainDepth"] == 1  # item 2; item 1 is on its own cycle
    assert gated_ids(items, ["1"]) == ["2"]  # never itself


def test_thousand_item_chain() -> None:
    items = [item(str(n), *([str(n - 1)] if n > 1 else [])) for n in range(1, 1001)]
    result = compute_topology(items)
    assert result["maxChainDepth"] == 1000
    assert result["roots"][0]["gatedCount"] == 999


def test_empty_backlog() -> None:
    assert compute_topology([]) == {
        "itemCount": 0, "rootCount": 0, "roots": [], "maxChainDepth": 0, "selectable": 0,
        "starvation": None, "warnings": [],
    }
    assert topology_report([], cluster=True)["clusters"] == []


def test_keys_come_in_contract_order() -> None:
    report = topology_report([item("1"), blocked("2", "x y", "1")], cluster=True)
    assert list(report) == [*TOPOLOGY_KEYS, "clusters"]
    assert list(report["roots"][0]) == ["id", "gatedCount", "gatedIds"]
    assert list(report["clusters"][0]) == CLUSTER_KEYS
    assert list(topology_report([item("1")], cluster=False)) == TOPOLOGY_KEYS


def test_external_dependencies_are_dropped() -> None:
    items = [item("1", "900", "901"), item("2", "1", "902")]
    result = compute_topology(items)
    assert result["roots"] == [{"id": "1", "gatedCount": 1, "gatedIds": ["2"]}]
    assert result["selectable"] == 1  # item 1: its dependencies are not in this backlog
    assert result["maxChainDepth"] == 2


def test_selectable_needs_pending_and_every_dependency_done() -> None:
    items = [
        item("1", status="done"),
        item("2", status="in_progress"),
        item("3", "1"),  # selectable
        item("4", "1", "2"),  # 2 is not done
        item("5", "1", status="blocked"),
        item("6"),  # selectable root
    ]
    assert compute_topology(items)["selectable"] == 2


def test_starvation_names_unfinished_roots_that_gate_something() -> None:
    items = [
        item("1", status="blocked"),
        item("2", "1"),
        item("3", status="done"),
        item("4", "3", status="blocked"),
        item("5", "4"),
        item("6", status="in_progress"),
    ]
    result = compute_topology(items)
    assert result["selectable"] == 0
    assert result["starvation"] == {
        "starved": True,
        "blockingRoots": [{"id": "1", "gatedCount": 1}],
    }


def test_no_starvation_without_pending_items() -> None:
    items = [item("1", status="blocked"), item("2", "1", status="blocked")]
    assert compute_topology(items)["starvation"] is None


@pytest.mark.parametrize(
    ("items", "warnings"),
    [
        # 5 items: threshold ceil(2.5) = 3
        ([item("1"), item("2", "1"), item("3", "1"), item("4", "1"), item("5")],
         ["single-root-fanout"]),
        ([item("1"), item("2", "1"), item("3", "1"), item("4"), item("5")], []),
        ([item("1"), item("2", "1"), item("3", "2"), item("4"), item("5")], ["chain-depth"]),
        ([item("1"), item("2", "1"), item("3", "2"), item("4", "3"), item("5")],
         ["single-root-fanout", "chain-depth"]),
        ([item("1"), item("2", "1"), item("3"), item("4", "3"), item("5")], []),
        # suppressed: one item (depth 1 >= ceil(0.5)), and no edges at all
        ([item("1")], []),
        ([item("1"), item("2")], []),
        ([item("1", "99"), item("2", "98")], []),
    ],
)
def test_warning_thresholds_and_suppression(items: list[dict], warnings: list[str]) -> None:
    assert compute_topology(items)["warnings"] == warnings


def test_the_graph_orders_ids_exactly_as_id_key_does() -> None:
    rng = random.Random(7)
    alphabets = ["0123456789", "123456789", "0123456789ab", "0١٢"]
    for _ in range(300):
        letters = rng.choice(alphabets)
        width = rng.choice([None, 1, 3])
        ids = {"".join(rng.choice(letters) for _ in range(width or rng.randint(0, 4)))
               for _ in range(rng.randint(0, 12))}
        graph = build_graph([item(i) for i in ids])
        assert graph.ids == sorted(ids, key=id_key), ids


def test_ids_sort_numerically_then_as_strings() -> None:
    ids = ["b", "10", "2", "a", "003", "3", "1"]
    assert sorted(ids, key=id_key) == ["1", "2", "003", "3", "10", "a", "b"]
    result = compute_topology([item(i) for i in ids])
    assert [r["id"] for r in result["roots"]] == ["1", "2", "003", "3", "10", "a", "b"]


def test_a_later_duplicate_id_wins() -> None:
    items = [item("1"), item("2", "1"), item("2", status="done")]
    result = compute_topology(items)
    assert result["itemCount"] == 2
    assert result["rootCount"] == 2
    assert result["selectable"] == 1


def test_integer_ids_are_keyed_as_strings() -> None:
    items = [{"id": 1, "status": "pending"}, {"id": 2, "status": "pending", "dependsOn": [1]}]
    assert compute_topology(items)["roots"] == [{"id": "1", "gatedCount": 1, "gatedIds": ["2"]}]


# --------------------------------------------------------------------------- clustering


def test_jaccard_half_clusters() -> None:
    clusters = cluster_blocked([blocked("1", "alpha beta gamma"), blocked("2", "alpha beta delta")])
    assert clusters == [{
        "clusterId": "c1",
        "memberIds": ["1", "2"],
        "memberReasons": ["alpha beta gamma", "alpha beta delta"],
        "sharedTokens": ["alpha", "beta"],
        "gatedIds": [],
        "gatedCount": 0,
    }]


def test_jaccard_below_half_stays_apart() -> None:
    clusters = cluster_blocked(
        [blocked("1", "alpha beta gamma"), blocked("2", "alpha beta delta epsilon")]
    )
    assert [c["memberIds"] for c in clusters] == [["1"], ["2"]]
    assert clusters[0]["sharedTokens"] == ["alpha", "beta", "gamma"]


def test_reason_tokens_drop_numbers_and_ids() -> None:
    assert reason_tokens("Missing 42 API key for req12 and t7") == {
        "missing", "api", "key", "for", "and",
    }
    assert reason_tokens(None) == frozenset()
    assert reason_tokens("a1b x9y z 12abc 007") == {"a1b", "x9y", "z", "12abc"}


def test_reason_tokens_match_the_spec_regex() -> None:
    # ASCII text takes a path of its own (a byte translation), the rest the regex split
    rng = random.Random(11)
    ascii_only = "abcXYZ0129 -_.:/\n\t\x0b\x1c\x7f"
    mixed = ascii_only + "éİ\u00df\u212a²"
    for n in range(6000):
        alphabet = ascii_only if n % 2 else mixed
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert reason_tokens(text) == ref_tokens(text), text


def test_reasonless_and_noise_only_items_stay_singletons() -> None:
    items = [blocked("1", None), blocked("2", ""), blocked("3", "42 req12 -- t7"),
             blocked("4", "42 req12 -- t7")]
    clusters = cluster_blocked(items)
    assert [c["memberIds"] for c in clusters] == [["1"], ["2"], ["3"], ["4"]]
    assert [c["memberReasons"] for c in clusters] == [
        [""], [""], ["42 req12 -- t7"], ["42 req12 -- t7"],
    ]
    assert all(c["sharedTokens"] == [] for c in clusters)


def test_clusters_are_transitive() -> None:
    items = [
        blocked("1", "alpha beta gamma delta"),
        blocked("2", "alpha beta gamma epsilon"),  # J(1,2) = 3/5
        blocked("3", "alpha beta epsilon zeta"),  # J(2,3) = 3/5, J(1,3) = 2/6
    ]
    clusters = cluster_blocked(items)
    assert [c["memberIds"] for c in clusters] == [["1", "2", "3"]]
    assert clusters[0]["sharedTokens"] == ["alpha", "beta"]


def test_only_blocked_items_cluster_whatever_their_kind() -> None:
    reason = "need a decision on the billing schema"
    items = [
        blocked("1", reason, needsHuman=True),
        blocked("2", reason),
        blocked("3", reason, deferred=True),
        item("4", status="pending", reason=reason),
        item("5", status="done", reason=reason),
        item("6", status="in_progress", reason=reason),
    ]
    clusters = cluster_blocked(items)
    assert [c["memberIds"] for c in clusters] == [["1", "2", "3"]]


def test_cluster_id_uses_the_lowest_id_in_id_order() -> None:
    clusters = cluster_blocked([blocked("10", "api key missing"), blocked("2", "api key missing")])
    assert clusters[0]["clusterId"] == "c2"
    assert clusters[0]["memberIds"] == ["2", "10"]


def test_clusters_sorted_by_lowest_member() -> None:
    items = [blocked("5", "alpha"), blocked("1", "beta"), blocked("3", "alpha"),
             blocked("x", "beta")]
    clusters = cluster_blocked(items)
    assert [c["memberIds"] for c in clusters] == [["1", "x"], ["3", "5"]]


def test_cluster_gates_the_union_of_its_members_subtrees_minus_members() -> None:
    items = [
        blocked("1", "missing api key"),
        blocked("2", "missing api key", "1"),
        item("3", "2"),
        item("4", "1"),
        item("5"),
        item("6", "5"),
    ]
    [cluster] = cluster_blocked(items)
    assert cluster["gatedIds"] == ["3", "4"]
    assert cluster["gatedCount"] == 2
    assert gated_ids(items, ["1", "2"]) == ["3", "4"]
    assert gated_ids(items, ["2", "1", "unknown"]) == ["3", "4"]
    assert gated_ids(items, ["5"]) == ["6"]
    assert gated_ids(items, []) == []


def random_clustering_input(rng: random.Random, count: int) -> list[dict]:
    common = ["the", "for", "a", "to", "of"]
    vocabulary = common * 3 + [f"w{chr(97 + n)}" for n in range(rng.randint(3, 14))]
    items = []
    for n in range(count):
        deps = [str(rng.randint(1, n))] if n and rng.random() < 0.5 else []
        status = "blocked" if rng.random() < 0.8 else "pending"
        items.append(item(str(n + 1), *deps, status=status,
                          reason=random_reason(rng, vocabulary)))
    return items


@pytest.mark.parametrize("one_by_one", [None, 0, 10**9])
def test_fast_clustering_equals_all_pairs(monkeypatch: pytest.MonkeyPatch, one_by_one) -> None:
    """Exactness: both the one-by-one and the bit-parallel verification paths."""
    if one_by_one is not None:
        monkeypatch.setattr(topology, "_VERIFY_ONE_BY_ONE", one_by_one)
    rng = random.Random(7 if one_by_one is None else one_by_one % 1000)
    for _ in range(30):
        items = random_clustering_input(rng, rng.randint(1, 140))
        assert cluster_blocked(items) == ref_clusters(items)


# --------------------------------------------------------------------------- compatibility


def test_matches_the_reference_on_acyclic_backlogs() -> None:
    rng = random.Random(3)
    for _ in range(150):
        items = random_backlog(rng, rng.randint(0, 40), cyclic=False)
        expected = {**ref_topology(items), "clusters": ref_clusters(items)}
        assert json.dumps(topology_report(items, cluster=True)) == json.dumps(expected)


def test_matches_the_spec_on_cyclic_backlogs() -> None:
    rng = random.Random(4)
    for _ in range(150):
        items = random_backlog(rng, rng.randint(1, 30), cyclic=True)
        expected = {**ref_topology(items), "clusters": ref_clusters(items)}
        assert topology_report(items, cluster=True) == expected


def shaped_backlog(rng: random.Random, size: int, *, later: float, odd_ids: bool) -> list[dict]:
    """Chains, fans, dependencies on later ids (``later``: how often; a cycle, or just out
    of id order), self-dependencies, duplicated and missing dependencies, integer and
    non-numeric ids: the shapes the graph takes shortcuts on."""
    ids: list = [str(n) for n in range(1, size + 1)]
    for n in rng.sample(range(size), size // 10 if odd_ids else 0):
        ids[n] = rng.choice([f"x{n}", f"0{n}", n + 1000])
    items = []
    for n, item_id in enumerate(ids):
        shape = rng.random()
        if shape < later:
            deps = [rng.choice(ids)]
        elif shape < 0.3 and n:
            deps = [ids[n - 1]]  # a chain
        elif shape < 0.5 and n:
            deps = [rng.choice(ids[:n]) for _ in range(rng.randint(1, 4))]
        else:
            deps = []
        if rng.random() < later / 2:
            deps += [str(item_id), deps[0] if deps else "ext-1"]
        if rng.random() < 0.1:
            deps.append(f"ext-{n}")
        status = rng.choice(["pending", "done", "blocked", "blocked", "in_progress"])
        entry = {"id": item_id, "status": status, "dependsOn": [
            dep if rng.random() < 0.9 or not str(dep).isdigit() else int(dep) for dep in deps]}
        if status == "blocked":
            entry["blockedReason"] = random_reason(rng, VOCABULARY[:8])
        items.append(entry)
    return items


def test_matches_the_reference_on_shaped_backlogs() -> None:
    rng = random.Random(6)
    for trial in range(60):
        items = shaped_backlog(rng, rng.randint(1, 250), later=[0, 0.003, 0.05][trial % 3],
                               odd_ids=trial % 2 == 1)
        expected = {**ref_topology(items), "clusters": ref_clusters(items)}
        assert json.dumps(topology_report(items, cluster=True)) == json.dumps(expected), trial
        graph = build_graph(items)
        _, ids, _, gated, _ = ref_graph(items)
        for _ in range(5):
            asked = rng.sample(ids, rng.randint(0, min(6, len(ids))))
            union = set().union(*(gated[i] for i in asked)) - set(asked)
            assert graph.gated_ids(asked) == sorted(union, key=ref_key)


def test_output_is_identical_for_every_input_order() -> None:
    rng = random.Random(5)
    for _ in range(25):
        items = random_backlog(rng, rng.randint(2, 30), cyclic=rng.random() < 0.7)
        expected = json.dumps(topology_report(items, cluster=True))
        for _ in range(20):
            shuffled = [dict(it, dependsOn=rng.sample(it["dependsOn"], len(it["dependsOn"])))
                        for it in rng.sample(items, len(items))]
            assert json.dumps(topology_report(shuffled, cluster=True)) == expected


# --------------------------------------------------------------------------- parse_items


def test_parse_items_accepts_an_array_or_an_items_object() -> None:
    items = [item("1"), item("2", "1")]
    assert parse_items(json.dumps(items)) == items
    assert parse_items(json.dumps({"items": items, "other": 1})) == items
    assert parse_items("{}") == []
    assert parse_items("[]") == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "invalid items JSON: "),
        ("", "invalid items JSON: "),
        ("[" * 100_000, "invalid items JSON: "),
        ("[{\"id\": " + "9" * 5000 + "}]", "invalid items JSON: "),
        ("42", "items JSON must be an array or an object with an 'items' array"),
        ("\"text\"", "items JSON must be an array or an object with an 'items' array"),
        ("null", "items JSON must be an array or an object with an 'items' array"),
        ("{\"items\": {}}", "items JSON must be an array or an object with an 'items' array"),
        ("{\"items\": null}", "items JSON must be an array or an object with an 'items' array"),
        ("[1]", "backlog item at index 0 is not an object"),
        ("[{\"id\": \"1\"}, [\"2\"]]", "backlog item at index 1 is not an object"),
        ("[{\"status\": \"pending\"}]", "backlog item at index 0 has no id"),
        ("[{\"id\": true}]", "backlog item at index 0: id must be a string or an integer"),
        ("[{\"id\": null}]", "backlog item at index 0: id must be a string or an integer"),
        ("[{\"id\": \"1\", \"dependsOn\": \"2\"}]", "backlog item 1: dependsOn must be an array"),
        ("[{\"id\": \"1\", \"blockedReason\": 5}]",
         "backlog item 1: blockedReason must be a string"),
    ],
)
def test_parse_items_refusals(raw: str, message: str) -> None:
    with pytest.raises(BacklogError) as caught:
        parse_items(raw)
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_core_functions_refuse_malformed_items_too() -> None:
    with pytest.raises(BacklogError, match="not an object"):
        compute_topology(["1"])  # type: ignore[list-item]
    with pytest.raises(BacklogError, match="has no id"):
        cluster_blocked([{"status": "blocked"}])


# --------------------------------------------------------------------------- render_text


def test_render_text_lines() -> None:
    items = [
        item("1", status="blocked", reason="missing api key 42"),
        item("2", "1", status="blocked", reason="Missing API key req7"),
        item("10", status="blocked", reason="api key missing"),
        item("3", "2"),
        item("11", "10"),
        item("12", "10"),
        item("4"),
    ]
    payload = topology_report(items, cluster=True)
    # feature-forge's backlog-topology prints exactly these lines for this input.
    assert render_text(payload) == [
        "Topology: 7 items, 3 roots, max chain depth 3, selectable 1",
        "  root 1 gates 2 item(s)",
        "  root 10 gates 2 item(s)",
        "  root 4 gates 0 item(s)",
        "  cluster c1: members 1, 2, 10 (gates 3 item(s))",
    ]
    assert render_text(payload, verbose=True) == [
        *render_text(payload),
        "    shared: api, key, missing",
    ]


def test_render_text_warnings_and_starvation() -> None:
    items = [item("1", status="blocked", reason="42"), item("2", "1"), item("3", "2")]
    assert render_text(topology_report(items, cluster=False)) == [
        "Topology: 3 items, 1 roots, max chain depth 3, selectable 0",
        "  root 1 gates 2 item(s)",
        "  warning: single-root-fanout",
        "  warning: chain-depth",
        "  starved: no selectable item; blocking roots: 1",
    ]
    lines = render_text(topology_report(items, cluster=True))
    assert lines[-1] == "  cluster c1: members 1 (gates 2 item(s))"
    cycle = [item("1", "2"), item("2", "1")]
    # No blocking root: feature-forge leaves the list empty, trailing space and all.
    assert render_text(compute_topology(cycle))[-1] == (
        "  starved: no selectable item; blocking roots: "
    )


def test_verbose_lines_explain_under_the_line_they_explain() -> None:
    items = [item("1", status="done"), item("2", "1", status="blocked", reason="server down"),
             item("3", "2")]
    payload = topology_report(items, cluster=True)
    waiting = topology.waiting_on(build_graph(items))
    assert render_text(payload, verbose=True, waiting=waiting) == [
        "Topology: 3 items, 1 roots, max chain depth 3, selectable 0",
        "  root 1 gates 2 item(s)",
        "  warning: single-root-fanout",
        "    root 1 gates 2 of 3 items (the warning starts at 2)",
        "  warning: chain-depth",
        "    the longest dependency chain has 3 of 3 items (the warning starts at 2)",
        "  starved: no selectable item; blocking roots: ",
        "    waiting on 2 (blocked) gating 3",
        "  cluster c2: members 2 (gates 1 item(s))",
        "    shared: down, server",
    ]
    # Without -v, the lines are feature-forge's and nothing else.
    assert render_text(payload, waiting=waiting) == [
        line for line in render_text(payload, verbose=True, waiting=waiting)
        if not line.startswith("    ")]


# --------------------------------------------------------------------------- waiting_on


def waiting(items: list[dict]) -> list[dict]:
    return topology.waiting_on(build_graph(items))


def test_a_done_root_with_a_blocked_item_below_it_names_the_blocked_item() -> None:
    items = [item("1", status="done"), blocked("2", "staging is down", "1"), item("3", "2")]
    # feature-forge's blockingRoots stays empty (the root is done) ...
    assert compute_topology(items)["starvation"] == {"starved": True, "blockingRoots": []}
    # ... and the backlog waits on 2, which gates 3.
    assert waiting(items) == [{"ids": ["2"], "kind": "blocked", "gatedIds": ["3"],
                               "gatedCount": 1}]


def test_waiting_names_each_kind_and_real_cycles_only() -> None:
    items = [
        blocked("1", "which db", needsHuman=True), item("2", "1"),
        blocked("3", "no signal", deferred=True), item("4", "3"),
        item("5", "6"), item("6", "5"), item("7", "5"),
        {"id": "8", "status": "in_progress"}, item("9", "8"),
    ]
    assert [(e["ids"], e["kind"], e["gatedIds"]) for e in waiting(items)] == [
        (["1"], "needs-human", ["2"]),
        (["3"], "deferred", ["4"]),
        (["5", "6"], "cycle", ["7"]),
        (["8"], "in_progress", ["9"]),
    ]
    assert waiting_text(waiting(items)) == (
        "1 (needs human) gating 2; 3 (deferred) gating 4; "
        "the dependency cycle 5 ↔ 6 gating 7; 8 (in progress) gating 9")


def test_nothing_waits_when_something_is_selectable_or_nothing_is_pending() -> None:
    assert waiting([blocked("1", "x"), item("2", "1"), item("3")]) == []
    assert waiting([blocked("1", "x"), item("2", "1", status="done")]) == []
    assert waiting([]) == []


def test_a_long_gated_list_is_cut_and_counted() -> None:
    items = [blocked("1", "x")] + [item(str(n), "1") for n in range(2, 10)]
    assert waiting_text(waiting(items)) == (
        "1 (blocked) gating 2, 3, 4, 5, 6, … (8 in all)")


def ref_waiting(items: list[dict]) -> list[dict]:
    """The definition, naively: every non-done, non-pending item gating a pending one,
    and every cycle (mutually reachable items) that holds or gates a pending one."""
    by_id, ids, deps, gated, on_cycle = ref_graph(items)
    status = {i: by_id[i].get("status") for i in ids}
    pending = {i for i in ids if status[i] == "pending"}
    if not pending or any(all(status[d] == "done" for d in deps[i]) for i in pending):
        return []
    found = []
    for i in ids:
        if status[i] not in ("done", "pending") and gated[i] & pending:
            found.append((ref_key(i), {"ids": [i], "kind": ref_kind(by_id[i]),
                                       "gatedIds": sorted(gated[i], key=ref_key)}))
    groups: list[set[str]] = []
    for i in sorted(on_cycle, key=ref_key):
        if not any(i in group for group in groups):
            groups.append({j for j in on_cycle if j == i or (j in gated[i] and i in gated[j])})
    for group in groups:
        members = sorted(group, key=ref_key)
        outside = set().union(*(gated[m] for m in members)) - group
        if any(status[m] != "done" for m in members) and (outside | group) & pending:
            found.append((ref_key(members[0]), {"ids": members, "kind": "cycle",
                                                "gatedIds": sorted(outside, key=ref_key)}))
    return [entry for _, entry in sorted(found, key=lambda pair: pair[0])]


def ref_kind(entry: dict) -> str:
    if entry.get("status") == "blocked" and entry.get("needsHuman") is True:
        return "needs-human"
    if entry.get("status") == "blocked" and entry.get("deferred") is True:
        return "deferred"
    return str(entry.get("status"))


def test_waiting_matches_the_definition_and_covers_every_pending_item() -> None:
    rng = random.Random(21)
    starved = 0
    for _ in range(400):
        items = random_backlog(rng, rng.randint(1, 25), cyclic=rng.random() < 0.5)
        for entry in items:
            if entry["status"] == "blocked" and rng.random() < 0.4:
                entry[rng.choice(["needsHuman", "deferred"])] = True
        found = waiting(items)
        assert [{k: e[k] for k in ("ids", "kind", "gatedIds")} for e in found] == (
            ref_waiting(items)), items
        assert all(e["gatedCount"] == len(e["gatedIds"]) for e in found)
        if compute_topology(items)["starvation"] is not None:
            starved += 1
            covered = {i for e in found for i in e["ids"] + e["gatedIds"]}
            pending = {str(e["id"]) for e in items if e["status"] == "pending"}
            assert pending <= covered, items
    assert starved > 50  # the property was exercised


# --------------------------------------------------------------------------- cycles, selection


def ref_reaches_itself(items: list[dict], start: str) -> bool:
    """Straight from the definition: ``start`` depends on itself through its dependencies."""
    edges = {str(e["id"]): [str(d) for d in e.get("dependsOn") or ()] for e in items}
    seen: set[str] = set()
    frontier = list(edges.get(start, ()))
    while frontier:
        node = frontier.pop()
        if node == start:
            return True
        if node in edges and node not in seen:
            seen.add(node)
            frontier.extend(edges[node])
    return False


def test_a_cycle_is_found_exactly_when_an_item_reaches_itself() -> None:
    rng = random.Random(31)
    found = 0
    for _ in range(300):
        items = random_backlog(rng, rng.randint(1, 20), cyclic=True)
        cycles = topology.dependency_cycles(items_of(items))
        for entry in items:
            start = str(entry["id"])
            cycle = topology.cycle_through(items_of(items), start)
            assert (cycle is not None) == ref_reaches_itself(items, start), (items, start)
            if cycle is None:
                continue
            found += 1
            edges = {str(e["id"]): {str(d) for d in e["dependsOn"]} for e in items}
            assert cycle[0] == start and len(set(cycle)) == len(cycle)
            assert all(cycle[(n + 1) % len(cycle)] in edges[node] for n, node in enumerate(cycle))
            assert any(start in named for named in cycles)  # every item on a cycle is named
    assert found > 300  # the property was exercised


def test_a_cycle_through_a_ten_thousand_deep_chain() -> None:
    count = 10_000
    items = [item(str(n), str(n % count + 1)) for n in range(1, count + 1)]
    assert topology.cycle_through(items_of(items), "1") == [str(n) for n in range(1, count + 1)]
    items[-1]["dependsOn"] = []
    assert topology.cycle_through(items_of(items), "1") is None
    assert topology.dependency_cycles(items_of(items)) == []


def test_the_loop_and_the_topology_select_by_one_rule() -> None:
    from git_forge.backlog import model

    rng = random.Random(41)
    for _ in range(300):
        items = random_backlog(rng, rng.randint(1, 25), cyclic=rng.random() < 0.5)
        done = {str(e["id"]) for e in items if e["status"] == "done"}
        known = {str(e["id"]) for e in items}
        expected = {str(e["id"]) for e in items if e["status"] == "pending"
                    and all(d in done for d in e["dependsOn"] if d in known)}
        assert {e["id"] for e in model.selectable_items(items_of(items))} == expected, items
        assert compute_topology(items)["selectable"] == len(expected), items


# --------------------------------------------------------------------------- scale


def test_ten_thousand_deep_chain_completes() -> None:
    count = 10_000
    items = [
        item(str(n), *([str(n - 1)] if n > 1 else []), status="blocked" if n % 2 else "pending",
             reason=f"missing the api key for service {n % 7}")
        for n in range(1, count + 1)
    ]
    report = topology_report(items, cluster=True)
    assert report["maxChainDepth"] == count
    assert report["roots"][0]["gatedCount"] == count - 1
    assert report["roots"][0]["gatedIds"][-1] == str(count)
    [cluster] = report["clusters"]
    assert len(cluster["memberIds"]) == count // 2
    assert cluster["gatedCount"] == count // 2  # the even items


def test_ten_thousand_item_ring_completes() -> None:
    count = 10_000
    items = [item(str(n), str(n % count + 1)) for n in range(1, count + 1)]
    report = compute_topology(items)
    assert report["rootCount"] == 0
    assert report["maxChainDepth"] == 0
    assert len(gated_ids(items, ["1"])) == count - 1


def test_ten_thousand_items_five_thousand_blocked_completes() -> None:
    rng = random.Random(9)
    phrasings = [f"{a} the {b} for {c}" for a in VOCABULARY[:8] for b in VOCABULARY[8:14]
                 for c in VOCABULARY[14:]]
    blocked_ids = set(rng.sample(range(10_000), 5_000))
    items = []
    for n in range(10_000):
        deps = [str(rng.randrange(n) + 1) for _ in range(rng.randrange(4))] if n else []
        if n in blocked_ids:
            items.append(blocked(str(n + 1), f"{rng.choice(phrasings)} req{n}", *deps))
        else:
            items.append(item(str(n + 1), *deps))
    report = topology_report(items, cluster=True)
    assert report["itemCount"] == 10_000
    assert sum(len(c["memberIds"]) for c in report["clusters"]) == 5_000
    assert all(len(c["memberIds"]) > 1 for c in report["clusters"])


def test_the_acyclic_shortcut_finds_what_tarjan_finds() -> None:
    # Kahn's order answers an acyclic graph; a cycle (a self-dependency included) is
    # left to Tarjan. Either way: the same components, each after its successors, and
    # an order listing each component's members side by side, after its successors'.
    import random

    from git_forge.backlog.topology import _acyclic_order, _components, _tarjan

    rng = random.Random(7)
    for trial in range(60):
        count = rng.randrange(1, 40)
        succ = [sorted({rng.randrange(count) for _ in range(rng.randrange(3))} -
                       (set() if trial % 3 == 0 else set(range(node + 1))))
                for node in range(count)]
        component, order, cyclic = _components(succ)
        expected_component, expected_groups = _tarjan(succ)
        groups: dict[int, list[int]] = {}
        for node in order:
            groups.setdefault(component[node], []).append(node)
        assert sorted(map(sorted, groups.values())) == sorted(map(sorted, expected_groups))
        assert sorted(order) == list(range(count))
        runs = [component[node] for n, node in enumerate(order)
                if n == 0 or component[order[n - 1]] != component[node]]
        assert len(runs) == len(set(runs))  # each component's members side by side
        assert [cyclic[component[group[0]]] for group in expected_groups] == [
            len(group) > 1 or group[0] in succ[group[0]] for group in expected_groups]
        assert (_acyclic_order(succ) is None) == any(
            len(group) > 1 or group[0] in succ[group[0]] for group in expected_groups)
        place = {node: n for n, node in enumerate(order)}
        for node, targets in enumerate(succ):
            for target in targets:  # successors first: a successor's component is earlier
                assert component[target] <= component[node]
                assert component[target] == component[node] or place[target] < place[node]


def test_the_collector_is_paused_during_a_graph_and_left_as_it_was() -> None:
    import gc

    seen: list[bool] = []

    @topology._collector_paused
    def probe() -> None:
        seen.append(gc.isenabled())
        raise BacklogError("refused")

    assert gc.isenabled()
    with pytest.raises(BacklogError):
        probe()
    assert seen == [False] and gc.isenabled()  # resumed, even after an error
    gc.disable()
    try:
        topology_report([item("1"), item("2", "1")], cluster=True)
        assert not gc.isenabled()  # a caller's pause is not undone
    finally:
        gc.enable()
