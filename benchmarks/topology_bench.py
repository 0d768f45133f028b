"""Benchmark: backlog topology + clustering on large backlogs, in-process.

(a) 10,000 items, 5,000 of them blocked, reasons drawn from a few hundred phrasings (with
    ids and numbers mixed in, as agents write them), each item depending on up to three
    earlier ones;
(b) a 10,000-deep chain (every other item blocked);
(c) (a) and (b) again, starting from the JSON text through ``parse_items`` (which makes
    the Items the other rows are given ready-made);
(d) a harder clustering input: 5,000 blocked reasons that are all distinct, ten words each
    drawn from a Zipf law over 300 words, so identical reasons cannot be merged up front
    and every reason shares common words with thousands of others.
"""

from __future__ import annotations

import json
import random
import tracemalloc

from timing import timed

from git_forge.backlog.item import Item
from git_forge.backlog.topology import parse_items, topology_report
from git_forge.cli.output import json_text

ITEMS = 10_000
BLOCKED = 5_000

CAUSES = [
    "missing the API key for the {} service",
    "needs a decision on the {} schema migration",
    "cannot reach the {} host from the sandbox",
    "the {} credentials are not configured",
    "unclear which {} version to target",
    "tests for the {} module fail on main",
    "waiting for the {} team to approve the design",
    "the {} endpoint returns 403 for the bot account",
    "no fixture data for the {} import",
    "license of the {} dependency is unknown",
    "the {} spec contradicts the {} requirement",
    "rate limit hit on the {} sandbox",
    "need a human to pick the {} naming convention",
    "the {} build needs a signing certificate",
    "ambiguous acceptance criteria for {}",
]
SUBJECTS = [
    "billing", "payments", "search", "auth", "storage", "queue", "mailer", "export",
    "reporting", "gateway", "cache", "ledger", "profile", "upload", "metrics", "audit",
    "webhook", "invoice", "catalog", "session",
]


def phrasings() -> list[str]:
    """15 causes x 20 subjects = 300 phrasings."""
    return [cause.format(subject, subject) for cause in CAUSES for subject in SUBJECTS]


def noisy(rng: random.Random, text: str, item: int) -> str:
    """Ids and numbers an agent mixes in; the tokenizer drops them."""
    return f"{text} (item {item:05d}, see req{rng.randrange(100)} / t{rng.randrange(9)})"


def wide_backlog(seed: int = 1, count: int = ITEMS, blocked_count: int = BLOCKED) -> list[dict]:
    rng = random.Random(seed)
    texts = phrasings()
    blocked = set(rng.sample(range(count), blocked_count))
    items = []
    for n in range(count):
        deps = sorted({rng.randrange(n) for _ in range(rng.randrange(4))}) if n else []
        item = {
            "id": f"{n + 1:06d}",
            "status": "blocked" if n in blocked else rng.choice(["pending", "done"]),
            "dependsOn": [f"{d + 1:06d}" for d in deps],
        }
        if n in blocked:
            item["blockedReason"] = noisy(rng, rng.choice(texts), n + 1)
        items.append(item)
    return items


def deep_chain(seed: int = 2, count: int = ITEMS) -> list[dict]:
    rng = random.Random(seed)
    texts = phrasings()
    items = []
    for n in range(count):
        item = {
            "id": str(n + 1),
            "status": "blocked" if n % 2 else "pending",
            "dependsOn": [str(n)] if n else [],
        }
        if n % 2:
            item["blockedReason"] = noisy(rng, rng.choice(texts), n + 1)
        items.append(item)
    return items


def distinct_reasons(seed: int = 3) -> list[dict]:
    """(a)'s graph, with every blocked reason distinct: ten words drawn from a Zipf law."""
    items = wide_backlog(seed)
    rng = random.Random(seed)
    vocabulary = [f"w{a}{b}" for a in "abcdefghijklmnopqrst" for b in "abcdefghijklmno"]
    weights = [1 / rank for rank in range(1, len(vocabulary) + 1)]
    seen: set[frozenset[str]] = set()
    for item in items:
        if item["status"] == "blocked":
            while True:
                words = rng.choices(vocabulary, weights, k=10)
                if frozenset(words) not in seen:
                    break
            seen.add(frozenset(words))
            item["blockedReason"] = " ".join(words)
    return items



def as_items(entries: list[dict]) -> list[Item]:
    return [Item(entry) for entry in entries]


def describe(items: list[Item]) -> str:
    report = topology_report(items, cluster=True)
    clusters = report["clusters"]
    multi = sum(1 for cluster in clusters if len(cluster["memberIds"]) > 1)
    gated = sum(cluster["gatedCount"] for cluster in clusters)
    return (
        f"{report['itemCount']:,} items, depth {report['maxChainDepth']:,}, "
        f"{len(clusters):,} clusters ({multi:,} of 2+), {gated:,} gated ids listed"
    )


def main() -> None:
    wide_json, chain_json = wide_backlog(), deep_chain()
    wide_text, chain_text = json.dumps(wide_json), json.dumps(chain_json)
    wide, chain, hard = as_items(wide_json), as_items(chain_json), as_items(distinct_reasons())
    rows = [
        ("(a) 10,000 items / 5,000 blocked", wide, lambda: topology_report(wide, cluster=True)),
        ("(b) 10,000-deep chain", chain, lambda: topology_report(chain, cluster=True)),
        ("(c) (a) via parse_items(JSON text)", wide,
         lambda: topology_report(parse_items(wide_text), cluster=True)),
        ("(c) (b) via parse_items(JSON text)", chain,
         lambda: topology_report(parse_items(chain_text), cluster=True)),
        ("(d) (a) with 5,000 distinct reasons", hard, lambda: topology_report(hard, cluster=True)),
    ]
    print("backlog topology + clustering (topology_report(cluster=True)), median of 5")
    for label, items, fn in rows:
        print(f"  {label:<38} {timed(fn) * 1000:8.1f} ms   [{describe(items)}]")
    print("at scale: time (median of 3) and peak memory of one call (tracemalloc), "
          "against the size of its JSON output")
    big = as_items(wide_backlog(count=100_000, blocked_count=50_000))
    long_chain = as_items(deep_chain(count=50_000))
    for label, items in (("(e) 100,000 items / 50,000 blocked", big),
                         ("(f) 50,000-deep chain", long_chain)):
        def report(items: list[Item] = items) -> dict:
            return topology_report(items, cluster=True)

        seconds = timed(report, repeat=3)
        tracemalloc.start()
        output = report()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        size = len(json.dumps(output))
        writing = timed(lambda output=output: json_text(output), repeat=3)
        print(f"  {label:<38} {seconds * 1000:8.1f} ms, peak {peak / 2**20:7.1f} MiB, "
              f"output {size / 2**20:6.1f} MiB ({peak / size:.1f}x)   [{describe(items)}]")
        print(f"  {'':<38} writing that output as --json does: {writing * 1000:8.1f} ms "
              f"(the topology is {seconds / writing:.2f}x that)")
    print("goals: 100,000 items under 3 s; peak memory within a few times the output")


if __name__ == "__main__":
    main()
