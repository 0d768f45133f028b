"""The decision record through the installed CLI: format, rules, refusals, safety."""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import waiting
from helpers import run_forge

SCHEMA = json.loads(
    resources.files("git_forge").joinpath("schemas/forge-decisions.schema.json").read_text()
)


def assert_schema_valid(path: Path) -> dict:
    document = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator(SCHEMA).validate(document)
    return document


@pytest.fixture
def backlog(tmp_path: Path) -> Path:
    directory = tmp_path / "specs" / "loop-recovery"
    directory.mkdir(parents=True)
    return directory


def record_path(backlog: Path, state_dir: str = ".forge") -> Path:
    return backlog / state_dir / "forge-decisions.json"


def forge(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_forge("decision", *args, cwd=cwd)


def ok(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    result = forge(*args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result


def refused(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    result = forge(*args, cwd=cwd)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return result


def test_worked_sequence(backlog: Path, tmp_path: Path) -> None:
    d = str(backlog)
    ok("record", "--backlog-dir", d, "--item", "4", "--question", "Which DB?",
       "--answer", "Postgres", cwd=tmp_path)
    path = record_path(backlog)
    first = assert_schema_valid(path)
    assert list(first) == ["schemaVersion", "feature", "createdAt", "decisions", "updatedAt"]
    assert first["feature"] == "loop-recovery"
    assert list(first["decisions"][0]) == [
        "itemId", "question", "answer", "deferred", "decidedAt", "recordedBy", "appliedAt",
        "appliedBy",
    ]
    assert first["decisions"][0]["recordedBy"].startswith("git-forge@")

    ok("record", "--backlog-dir", d, "--item", "7", "--question", "Retry policy?",
       "--deferred", cwd=tmp_path)
    assert_schema_valid(path)
    ok("record", "--backlog-dir", d, "--item", "4", "--question", "Which DB?",
       "--answer", "SQLite", cwd=tmp_path)
    before_apply = assert_schema_valid(path)

    listing = json.loads(ok("list", "--backlog-dir", d, "--unapplied", "--json",
                            cwd=tmp_path).stdout)
    assert [e["itemId"] for e in listing["unapplied"]] == ["4", "7"]
    assert listing["unapplied"][0]["answer"] == "SQLite"
    assert listing["count"] == 2 and listing["feature"] == "loop-recovery"

    ok("apply", "--backlog-dir", d, "--item", "4", cwd=tmp_path)
    after = assert_schema_valid(path)
    # Append-only: the earlier entries are untouched, only the latest "4" is stamped.
    assert after["decisions"][:2] == before_apply["decisions"][:2]
    assert after["decisions"][2]["appliedAt"] is not None
    assert after["decisions"][2]["appliedBy"].startswith("git-forge@")
    assert {k: v for k, v in after["decisions"][2].items() if not k.startswith("applied")} == {
        k: v for k, v in before_apply["decisions"][2].items() if not k.startswith("applied")
    }
    listing = json.loads(ok("list", "--backlog-dir", d, "--unapplied", "--json",
                            cwd=tmp_path).stdout)
    assert [e["itemId"] for e in listing["unapplied"]] == ["7"]


def test_bytes_match_feature_forge_writer(backlog: Path, tmp_path: Path) -> None:
    """Same inputs → the bytes feature-forge's writer produces (timestamps aside)."""
    result = ok("record", "--backlog-dir", str(backlog), "--item", "4", "--question", "Q é",
                "--answer", "A — ü", "--actor", "host-label", "--json", cwd=tmp_path)
    raw = record_path(backlog).read_bytes()
    document = json.loads(raw)
    expected = {
        "schemaVersion": "1", "feature": "loop-recovery", "createdAt": document["createdAt"],
        "decisions": [{
            "itemId": "4", "question": "Q é", "answer": "A — ü", "deferred": False,
            "decidedAt": document["decisions"][0]["decidedAt"], "recordedBy": "host-label",
            "appliedAt": None, "appliedBy": None,
        }],
        "updatedAt": document["updatedAt"],
    }
    assert raw == (json.dumps(expected, indent=2, ensure_ascii=False) + "\n").encode()
    assert json.loads(result.stdout) == expected


def test_reads_and_extends_a_record_written_by_feature_forge(backlog: Path, tmp_path: Path) -> None:
    """A record in feature-forge's byte format under .rauf is read and appended to."""
    state = backlog / ".rauf"
    state.mkdir()
    entry = {"itemId": "12", "question": "q", "answer": None, "deferred": True,
             "decidedAt": "2026-01-01T00:00:00Z", "recordedBy": "forge-5-loop@box",
             "appliedAt": None, "appliedBy": None, "clusterId": "c12"}
    doc = {"schemaVersion": "1", "feature": "loop-recovery", "createdAt": "2026-01-01T00:00:00Z",
           "decisions": [entry], "updatedAt": "2026-01-01T00:00:00Z"}
    original = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    (state / "forge-decisions.json").write_text(original, encoding="utf-8")
    listing = json.loads(ok("list", "--backlog-dir", str(backlog), "--state-dir", ".rauf",
                            "--unapplied", "--json", cwd=tmp_path).stdout)
    assert listing["unapplied"] == [entry]
    ok("record", "--backlog-dir", str(backlog), "--state-dir", ".rauf", "--item", "12",
       "--question", "q", "--answer", "yes", cwd=tmp_path)
    new = assert_schema_valid(state / "forge-decisions.json")
    assert new["decisions"][0] == entry
    assert new["createdAt"] == "2026-01-01T00:00:00Z"
    # Serializing the untouched prefix gives the original bytes for that entry.
    assert json.dumps(entry, indent=2, ensure_ascii=False).replace("\n", "\n    ") in (
        (state / "forge-decisions.json").read_text())


def test_cluster_record_and_string_ordering(backlog: Path, tmp_path: Path) -> None:
    d = str(backlog)
    ok("record", "--backlog-dir", d, "--item", "4", "--item", "7", "--question", "Same cause?",
       "--deferred", "--cluster", "c4", cwd=tmp_path)
    document = assert_schema_valid(record_path(backlog))
    assert [(e["itemId"], e["clusterId"], e["answer"], e["deferred"])
            for e in document["decisions"]] == [("4", "c4", None, True), ("7", "c4", None, True)]
    for item in ("9", "10", "2"):
        ok("record", "--backlog-dir", d, "--item", item, "--question", "q", "--answer", "a",
           cwd=tmp_path)
    listing = json.loads(ok("list", "--backlog-dir", d, "--unapplied", "--json",
                            cwd=tmp_path).stdout)
    assert [e["itemId"] for e in listing["unapplied"]] == ["10", "2", "4", "7", "9"]


def test_a_later_entry_supersedes_a_cluster_entry_for_that_item_only(
    backlog: Path, tmp_path: Path
) -> None:
    d = str(backlog)
    ok("record", "--backlog-dir", d, "--item", "4", "--item", "7", "--question", "Q",
       "--answer", "A", "--cluster", "c4", cwd=tmp_path)
    ok("record", "--backlog-dir", d, "--item", "7", "--question", "Q", "--deferred",
       cwd=tmp_path)
    listing = json.loads(ok("list", "--backlog-dir", d, "--unapplied", "--json",
                            cwd=tmp_path).stdout)
    assert [(e["itemId"], e.get("clusterId"), e["deferred"]) for e in listing["unapplied"]] == [
        ("4", "c4", False), ("7", None, True)]


def test_missing_record_lists_empty_and_creates_nothing(backlog: Path, tmp_path: Path) -> None:
    plain = json.loads(ok("list", "--backlog-dir", str(backlog), "--json", cwd=tmp_path).stdout)
    assert plain == {"decisions": []}
    unapplied = json.loads(ok("list", "--backlog-dir", str(backlog), "--unapplied", "--json",
                              cwd=tmp_path).stdout)
    assert unapplied == {"feature": "loop-recovery", "unapplied": [], "count": 0}
    assert list(backlog.rglob("*")) == []


def test_human_output(backlog: Path, tmp_path: Path) -> None:
    d = str(backlog)
    out = ok("record", "--backlog-dir", d, "--item", "4", "--question", "Q", "--answer", "A",
             cwd=tmp_path).stdout
    assert out == "decision recorded — 1 entry on record for loop-recovery\n"
    out = ok("list", "--backlog-dir", d, "--unapplied", cwd=tmp_path).stdout
    assert out == "1 unapplied decision(s)\n  4: answered — Q\n"
    out = ok("apply", "--backlog-dir", d, "--item", "4", "--actor", "me@box", cwd=tmp_path).stdout
    assert out == "applied decision for item 4 (me@box)\n"


def test_list_prints_one_decision_a_line_and_finds_the_projects_backlog(
        git_repo: Path) -> None:
    """Like ``git log --oneline``: the item (a consolidated answer's cluster id and
    items), the answer's first line as safe text or (deferred) — and, as every other
    command, the project's backlog dir when ``--backlog-dir`` is not given."""
    assert run_forge("init", cwd=git_repo).returncode == 0
    (git_repo / "src").mkdir()
    for entry in (["--item", "002", "--item", "003", "--cluster", "c002", "--answer",
                   "Use Postgres\nwith a pool of 5"], ["--item", "005", "--deferred"],
                  ["--item", "006", "--answer", "\x1b[31mred\x1b[0m, said\rtwice"]):
        ok("record", *entry, "--question", "Which?", cwd=git_repo / "src")
    expected = ("c002 (002, 003): Use Postgres …\n"
                "005: (deferred)\n"
                "006: red, said …\n")
    assert ok("list", cwd=git_repo / "src").stdout == expected
    assert ok("list", "--backlog-dir", ".forge", cwd=git_repo).stdout == expected
    document = json.loads(ok("list", "--json", cwd=git_repo).stdout)
    assert [entry["itemId"] for entry in document["decisions"]] == ["002", "003", "005", "006"]
    assert json.loads(ok("list", "--unapplied", "--json", cwd=git_repo).stdout)["count"] == 4


def test_list_of_an_empty_record_prints_nothing(backlog: Path, tmp_path: Path) -> None:
    assert ok("list", "--backlog-dir", str(backlog), cwd=tmp_path).stdout == ""


def test_list_unapplied_names_the_items_still_waiting_in_the_order_recorded(
        backlog: Path, tmp_path: Path) -> None:
    d = str(backlog)
    for item, answer in (("2", "yes"), ("1", None), ("10", "no")):
        ok("record", "--backlog-dir", d, "--item", item, "--question", f"Q{item}?",
           *(("--answer", answer) if answer else ("--deferred",)), cwd=tmp_path)
    ok("apply", "--backlog-dir", d, "--item", "2", cwd=tmp_path)
    assert forge("list", "--backlog-dir", d, "--unapplied", cwd=tmp_path).stdout == (
        "2 unapplied decision(s)\n  1: deferred — Q1?\n  10: answered — Q10?\n")


def test_record_file_is_private(backlog: Path, tmp_path: Path) -> None:
    ok("record", "--backlog-dir", str(backlog), "--item", "1", "--question", "Q", "--deferred",
       cwd=tmp_path)
    assert stat.S_IMODE(record_path(backlog).stat().st_mode) == 0o600


ANSWER = ["record", "--item", "4", "--question", "Q", "--answer"]


ANSWER = ["record", "--item", "4", "--question", "Q", "--answer"]
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----"


@pytest.mark.parametrize("args", [
    ["record", "--item", "4", "--question", "Q"],
    [*ANSWER, "A", "--deferred"],
    ["apply", "--item", "99"],
    [*ANSWER, PRIVATE_KEY],
    [*ANSWER, "use ghp_abcdefghijklmnopqrstuvwxyz0123"],
    [*ANSWER, "AKIAIOSFODNN7EXAMPLE"],
    [*ANSWER, "sk-proj-abcdefghijklmnop1234567890"],
    [*ANSWER, "token aZ3kQ9xP2mL7vB1nR8tY4wE6uI0oS5dF"],
])
def test_refusals_leave_the_record_byte_identical(
    args: list[str], backlog: Path, tmp_path: Path
) -> None:
    d = str(backlog)
    ok("record", "--backlog-dir", d, "--item", "4", "--question", "Q", "--answer", "A",
       cwd=tmp_path)
    before = record_path(backlog).read_bytes()
    lock = record_path(backlog).with_name("forge-decisions.json.lock")
    label = lock.read_bytes()
    refused(args[0], "--backlog-dir", d, *args[1:], cwd=tmp_path)
    assert record_path(backlog).read_bytes() == before
    assert lock.read_bytes() == label  # not even the lock file's label changed


def test_refusals_on_a_fresh_backlog_create_nothing(backlog: Path, tmp_path: Path) -> None:
    d = str(backlog)
    refused("apply", "--backlog-dir", d, "--item", "4", cwd=tmp_path)
    refused("record", "--backlog-dir", d, "--item", "4", "--question", "Q", "--answer",
            "ghp_abcdefghijklmnopqrstuvwxyz0123", cwd=tmp_path)
    assert list(backlog.rglob("*")) == []


def test_apply_twice_is_refused(backlog: Path, tmp_path: Path) -> None:
    d = str(backlog)
    ok("record", "--backlog-dir", d, "--item", "4", "--question", "Q", "--answer", "A",
       cwd=tmp_path)
    ok("apply", "--backlog-dir", d, "--item", "4", cwd=tmp_path)
    before = record_path(backlog).read_bytes()
    result = refused("apply", "--backlog-dir", d, "--item", "4", cwd=tmp_path)
    assert "already applied" in result.stderr
    assert record_path(backlog).read_bytes() == before


def test_missing_backlog_dir_is_refused(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    for verb in (["list"], ["list", "--unapplied"], ["apply", "--item", "1"],
                 ["record", "--item", "1", "--question", "Q", "--deferred"]):
        result = refused(verb[0], "--backlog-dir", missing, *verb[1:], cwd=tmp_path)
        assert "no backlog directory" in result.stderr
        assert result.stderr.endswith(" (git forge init sets one up)\n"), result.stderr
    assert not (tmp_path / "nope").exists()


def test_a_state_dir_out_of_the_backlog_dir_is_refused_an_absent_config_is_the_defaults(
        backlog: Path, tmp_path: Path) -> None:
    """A state dir name leads into the backlog dir, never out of it; a config named
    with ``--config`` that does not exist means the defaults, as in feature-forge
    (whose own tests call the verbs so)."""
    d = str(backlog)
    entry = ["--item", "4", "--question", "Q", "--answer", "A"]
    escaping = refused("record", "--backlog-dir", d, "--state-dir", "../../escape", *entry,
                       cwd=tmp_path)
    assert "is outside the backlog dir" in escaping.stderr
    assert list(tmp_path.rglob("*")) == [backlog.parent, backlog]  # nothing written anywhere
    for verb in (["record", *entry], ["list"], ["apply", "--item", "4"]):
        ok(verb[0], "--backlog-dir", d, "--config", str(tmp_path / "nope.json"), *verb[1:],
           cwd=tmp_path)
    defaults = json.loads((backlog / ".forge" / "forge-decisions.json").read_text())
    assert [entry["question"] for entry in defaults["decisions"]] == ["Q"]
    (backlog / ".forge" / "forge-decisions.json").unlink()
    ok("record", "--backlog-dir", d, "--state-dir", "nested/state", *entry, cwd=tmp_path)
    assert (backlog / "nested" / "state" / "forge-decisions.json").is_file()
    # a state dir that is a symlink is the operator's layout: read as it is written
    (tmp_path / "elsewhere").mkdir()
    (backlog / ".linked").symlink_to(tmp_path / "elsewhere")
    ok("record", "--backlog-dir", d, "--state-dir", ".linked", *entry, cwd=tmp_path)
    assert (tmp_path / "elsewhere" / "forge-decisions.json").is_file()


@pytest.mark.parametrize("content", [b"{not json", b"[]", b"null", b'{"decisions": 3}',
                                     b'{"decisions": [{"question": "no id"}]}', b"\xff\xfe"])
def test_corrupt_record_is_refused_by_every_verb(
    content: bytes, backlog: Path, tmp_path: Path
) -> None:
    path = record_path(backlog)
    path.parent.mkdir()
    path.write_bytes(content)
    d = str(backlog)
    for verb in (["list"], ["list", "--unapplied"], ["apply", "--item", "1"],
                 ["record", "--item", "1", "--question", "Q", "--deferred"]):
        result = refused(verb[0], "--backlog-dir", d, *verb[1:], cwd=tmp_path)
        assert str(path) in result.stderr
        assert path.read_bytes() == content
    assert sorted(p.name for p in path.parent.iterdir()) in (
        ["forge-decisions.json"], ["forge-decisions.json", "forge-decisions.json.lock"])


def test_state_dir_resolution(tmp_path: Path) -> None:
    backlog = tmp_path / "feat"
    backlog.mkdir()
    args = ["--backlog-dir", str(backlog), "--item", "1", "--question", "Q", "--deferred"]
    ok("record", *args, cwd=tmp_path)
    assert (backlog / ".forge" / "forge-decisions.json").is_file()
    ok("record", *args, "--state-dir", ".rauf", cwd=tmp_path)
    assert (backlog / ".rauf" / "forge-decisions.json").is_file()
    # A forge.config.json in the working directory makes it the config source.
    (tmp_path / "forge.config.json").write_text('{"loopRunner": {"stateDir": ".custom"}}')
    ok("record", *args, cwd=tmp_path)
    assert (backlog / ".custom" / "forge-decisions.json").is_file()
    (tmp_path / "forge.config.json").write_text('{"loopRunner": {}}')
    ok("record", *args, cwd=tmp_path)
    assert len(json.loads((backlog / ".rauf" / "forge-decisions.json").read_text())[
        "decisions"]) == 2


def test_an_empty_state_dir_is_the_backlog_dir_itself(tmp_path: Path) -> None:
    """``--state-dir ''`` and ``loopRunner.stateDir: ""`` put the record in the backlog dir,
    as feature-forge's ``backlog_dir / state_dir`` does — not in the default."""
    backlog = tmp_path / "feat"
    backlog.mkdir()
    args = ["--backlog-dir", str(backlog), "--item", "1", "--question", "Q", "--deferred"]
    ok("record", *args, "--state-dir", "", cwd=tmp_path)
    assert sorted(p.name for p in backlog.iterdir() if not p.name.endswith(".lock")) == [
        "forge-decisions.json"]
    (tmp_path / "forge.config.json").write_text('{"loopRunner": {"stateDir": ""}}')
    ok("record", *args, cwd=tmp_path)
    listing = json.loads(ok("list", "--backlog-dir", str(backlog), "--json",
                            cwd=tmp_path).stdout)
    assert len(listing["decisions"]) == 2
    # An explicit --state-dir still wins over the config file.
    ok("record", *args, "--state-dir", ".rauf", cwd=tmp_path)
    assert (backlog / ".rauf" / "forge-decisions.json").is_file()
    assert len(json.loads((backlog / "forge-decisions.json").read_text())["decisions"]) == 2


def test_backlog_dir_named_like_the_state_dir_is_the_state_dir(tmp_path: Path) -> None:
    backlog = tmp_path / ".forge"
    backlog.mkdir()
    ok("record", "--backlog-dir", str(backlog), "--item", "1", "--question", "Q", "--deferred",
       cwd=tmp_path)
    assert (backlog / "forge-decisions.json").is_file()


WRITER = """
import sys
from git_forge import decisions
rec = decisions.open_record(sys.argv[1], ".forge")
for n in range(int(sys.argv[3])):
    decisions.record(rec, [f"{sys.argv[2]}-{n}"], "q", answer="a")
    print(n, flush=True)
"""


def test_eight_concurrent_writers_lose_nothing(backlog: Path) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(backlog), f"w{w}", "50"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for w in range(8)
    ]
    for proc in writers:
        _, err = waiting.communicate(proc)
        assert proc.returncode == 0, err
    document = assert_schema_valid(record_path(backlog))
    ids = [e["itemId"] for e in document["decisions"]]
    assert len(ids) == 400 and len(set(ids)) == 400
    for w in range(8):  # each writer's own entries stay in its order
        mine = [i for i in ids if i.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{n}" for n in range(50)]


def test_sigkill_at_any_instant_leaves_a_parseable_complete_record(backlog: Path) -> None:
    rng = random.Random(7)
    acknowledged: list[dict] = []
    for round_ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(backlog), f"r{round_}",
                                 "100000"], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        # Let it write for a while, then kill it mid-stride.
        target = rng.randint(3, 40)
        for _ in range(target):
            waiting.readline(proc)
        time.sleep(rng.random() * 0.02)
        os.kill(proc.pid, signal.SIGKILL)
        waiting.communicate(proc)
        document = assert_schema_valid(record_path(backlog))
        # Every entry written before survives, unchanged and in order.
        assert document["decisions"][: len(acknowledged)] == acknowledged
        assert len(document["decisions"]) >= len(acknowledged) + target
        acknowledged = document["decisions"]
    # A killed writer may leave its temp file behind; the next locked write sweeps it.
    waiting.run([sys.executable, "-c", WRITER, str(backlog), "last", "1"], check=True,
                stdout=subprocess.DEVNULL)
    assert [p.name for p in record_path(backlog).parent.iterdir() if p.name.endswith(".tmp")] == []


def test_apply_all_stamps_every_item_in_one_write_or_none(backlog: Path) -> None:
    from git_forge import decisions

    rec = decisions.open_record(backlog, ".forge")
    decisions.record_all(rec, [decisions.NewDecision(i, "Q", "A") for i in ("1", "2", "3")])
    before = rec.path.read_bytes()
    with pytest.raises(decisions.DecisionError, match="no decision recorded for item '9'"):
        decisions.apply_all(rec, ["1", "9"])
    assert rec.path.read_bytes() == before  # all or none
    decisions.apply_all(rec, ["1", "3"], actor="bench")
    document = assert_schema_valid(rec.path)
    stamped = {e["itemId"]: (e["appliedAt"], e["appliedBy"]) for e in document["decisions"]}
    assert stamped["2"] == (None, None)
    assert stamped["1"][1] == stamped["3"][1] == "bench" and stamped["1"][0] is not None
    with pytest.raises(decisions.DecisionError, match="already applied"):
        decisions.apply_all(rec, ["2", "3"])
    assert decisions.unapplied_view(rec)["count"] == 1


def test_apply_entries_stamps_the_entry_applied_never_a_later_one(backlog: Path) -> None:
    """A deferral recorded by another process after this pass's answer stays unapplied
    (and latest, so it surfaces again); the answer the runner got is the one stamped."""
    from git_forge import decisions

    rec = decisions.open_record(backlog, ".forge")
    ours = decisions.record_all(rec, [decisions.NewDecision("1", "Q", "red"),
                                      decisions.NewDecision("2", "Q", "blue")],
                                actor="pass-a")["decisions"]
    meanwhile = run_forge("decision", "record", "--backlog-dir", str(backlog), "--item", "1",
                          "--question", "Q", "--deferred", "--actor", "pass-b")
    assert meanwhile.returncode == 0, meanwhile.stderr
    decisions.apply_entries(rec, ours, actor="pass-a")
    document = assert_schema_valid(rec.path)
    by_actor = [(e["itemId"], e["recordedBy"], e["answer"], e["appliedBy"])
                for e in document["decisions"]]
    assert by_actor == [("1", "pass-a", "red", "pass-a"), ("2", "pass-a", "blue", "pass-a"),
                        ("1", "pass-b", None, None)]
    assert [e["itemId"] for e in decisions.unapplied_view(rec)["unapplied"]] == ["1"]
    before = rec.path.read_bytes()
    deferral = document["decisions"][2]
    for stale in (ours[:1], [deferral]):  # stamped already; a deferral is never applied
        with pytest.raises(decisions.DecisionError,
                           match="item '1': the decision to stamp .* not an unapplied answer"):
            decisions.apply_entries(rec, stale)
        assert rec.path.read_bytes() == before


@pytest.mark.parametrize("config", ["{bad", "[]", '{"loopRunner": 3}',
                                    '{"loopRunner": {"stateDir": 7}}'])
@pytest.mark.parametrize("verb", [["record", "--item", "1", "--question", "Q", "--deferred"],
                                  ["list"], ["apply", "--item", "1"]])
def test_a_config_that_is_there_but_not_valid_is_refused(tmp_path: Path, config: str,
                                                         verb: list[str]) -> None:
    """As backlog topology refuses it: never read as the defaults, so no record is
    written, or read, under a state dir the user did not mean."""
    backlog = tmp_path / "feat"
    backlog.mkdir()
    path = tmp_path / "forge.config.json"
    path.write_text(config)
    for named in ([], ["--config", str(path)]):
        result = run_forge("decision", *verb, "--backlog-dir", str(backlog), *named,
                           cwd=tmp_path)
        assert result.returncode == 2 and result.stdout == "", result.stdout
        assert result.stderr.startswith("Error: ") and path.name in result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert list(backlog.iterdir()) == [] and sorted(tmp_path.iterdir()) == [backlog, path]
