"""The runner contract: version parsing, the embedded runner, and the external runner
against a scripted fake runner and against git-forge itself."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from builders import blocked, item, write_backlog

from git_forge.backlog.store import BacklogStore
from git_forge.runner import runner_for
from git_forge.runner.base import Change, ChangeFailed, Runner, RunnerError
from git_forge.runner.embedded import EmbeddedRunner
from git_forge.runner.external import ExternalRunner, substitute
from git_forge.runner.versions import is_answer_capable, parse_version
from git_forge.workspace import locate

INJECTIONS = ['"; touch pwned #', "$(touch pwned)", "`touch pwned`", "'; touch pwned; '",
              "a && touch pwned", "{id} {bin} --json", "-x; rm -rf pwned"]

FAKE_RUNNER = """\
#!{python}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps({{"argv": args, "cwd": os.getcwd()}}) + "\\n")
mode = os.environ.get("FAKE_MODE", "ok")
if mode == "fail":
    sys.stderr.write("Error: Item not found: 042\\nsecond line of the runner\\n")
    sys.exit(2)
if mode == "garbage":
    print("Traceback? not json {{")
    sys.exit(0)
if args[:1] == ["version"]:
    print(os.environ.get("FAKE_VERSION_OUTPUT", json.dumps({{"version": "0.14.0"}})))
elif args[:2] == ["backlog", "list"]:
    print(os.environ.get("FAKE_LIST", "[]"))
elif args[:2] == ["backlog", "answer"]:
    print(json.dumps({{"answered": args[3], "status": "pending"}}))
elif args[:2] == ["backlog", "unblock"]:
    ids = [a for a in args[3:4] if not a.startswith("-")]
    print(json.dumps({{"unblockedCount": len(ids), "unblockedIds": ids}}))
else:
    sys.exit(64)
"""


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scripted rauf-compatible runner; returns its log file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "fakerauf"
    script.write_text(FAKE_RUNNER.format(python=sys.executable))
    script.chmod(0o755)
    log = tmp_path / "runner.log"
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def calls(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def external(root: Path, **overrides) -> ExternalRunner:
    settings = {
        "bin": "fakerauf", "root": root, "backlog_dir": "specs/feature x",
        "list_command": "{bin} backlog list . --backlog {backlogDir} --json",
        "version_command": "{bin} version --json",
        "answer_command": "{bin} backlog answer . {id} {answer} --backlog {backlogDir} --json",
        "unblock_command": "{bin} backlog unblock . {id} --backlog {backlogDir} --json",
        "install_hint": "pip install rauf",
    }
    settings.update(overrides)
    return ExternalRunner(**settings)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


# --- versions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "parsed"), [
    ("0.14.0", (0, 14, 0)), ("v0.14.0", (0, 14, 0)), ("0.14", (0, 14, 0)), ("1", (1, 0, 0)),
    ("1.2.3.4", (1, 2, 3)), ("0.14.0-rc1", None), ("vv0.14.0", None), ("", None),
    ("0..1", None), ("x.y.z", None), ("0.-1.0", None), (None, None), (14, None),
])
def test_parse_version(text, parsed) -> None:
    assert parse_version(text) == parsed


@pytest.mark.parametrize(("version", "capable"), [
    ("0.14.0", True), ("v0.14", True), ("0.15.0", True), ("1.0.0", True),
    ("0.13.99", False), ("0.14.0-rc1", False), (None, False), ("garbage", False),
])
def test_answer_capability_threshold(version, capable) -> None:
    assert is_answer_capable(version, "0.14.0") is capable


# --- substitution -------------------------------------------------------------------------


def test_substitution_is_per_element_and_single_pass() -> None:
    argv = substitute(["{bin}", "--answer={answer}", "{id}", "x{backlogDir}y", "{other}"],
                      {"bin": "/b", "answer": "{id} $(x)", "id": "001", "backlogDir": "d d"})
    assert argv == ["/b", "--answer={id} $(x)", "001", "xd dy", "{other}"]
    assert substitute(["{bin}", "unblock", "{id}", "--json"],
                      {"bin": "/b", "id": None}) == ["/b", "unblock", "--json"]
    with pytest.raises(RunnerError, match="cannot leave"):
        substitute(["--item={id}"], {"id": None})


# --- the external runner against the fake --------------------------------------------------


@pytest.mark.parametrize("answer", INJECTIONS)
def test_answer_reaches_the_runner_as_one_literal_argument(
    answer: str, fake: Path, root: Path, tmp_path: Path
) -> None:
    runner = external(root)
    assert runner.answer("001", answer) == {"answered": "001", "status": "pending"}
    (call,) = calls(fake)
    assert call["argv"] == ["backlog", "answer", ".", "001", answer, "--backlog",
                            "specs/feature x", "--json"]
    assert call["cwd"] == str(root)
    assert not list(tmp_path.rglob("pwned")) and not Path("pwned").exists()


def test_quoted_template_tokens_still_make_one_argument(fake: Path, root: Path) -> None:
    runner = external(root, answer_command='{bin} backlog answer . {id} "{answer}" '
                                           "--backlog '{backlogDir}' --json")
    runner.answer("007", "$(touch pwned); echo hi")
    assert calls(fake)[0]["argv"][3:6] == ["007", "$(touch pwned); echo hi", "--backlog"]
    assert not (root / "pwned").exists()


def test_list_accepts_a_bare_array_or_an_items_object(
    fake: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = [{"id": "001", "status": "blocked"}, {"id": "002", "status": "done"}]
    monkeypatch.setenv("FAKE_LIST", json.dumps(items))
    assert external(root).list_items() == items
    monkeypatch.setenv("FAKE_LIST", json.dumps({"items": items, "extra": 1}))
    assert external(root).list_items() == items
    monkeypatch.setenv("FAKE_LIST", json.dumps({"project": "p"}))
    assert external(root).list_items() == []
    assert calls(fake)[0]["argv"] == ["backlog", "list", ".", "--backlog", "specs/feature x",
                                      "--json"]
    for shape in ('{"items": {"a": 1}}', '"a string"', "[1, 2]", '[{"title": "no id"}]'):
        monkeypatch.setenv("FAKE_LIST", shape)
        with pytest.raises(RunnerError, match="printed an item list that cannot be used"):
            external(root).list_items()


def test_unblock_with_and_without_id(fake: Path, root: Path) -> None:
    runner = external(root)
    assert runner.unblock("003") == {"unblockedCount": 1, "unblockedIds": ["003"]}
    runner.unblock()
    assert [c["argv"] for c in calls(fake)] == [
        ["backlog", "unblock", ".", "003", "--backlog", "specs/feature x", "--json"],
        ["backlog", "unblock", ".", "--backlog", "specs/feature x", "--json"],
    ]


@pytest.mark.parametrize("call", [
    lambda r: r.list_items(), lambda r: r.answer("042", "x"), lambda r: r.unblock("042"),
])
def test_a_failing_runner_is_quoted_verbatim(
    call, fake: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "fail")
    with pytest.raises(RunnerError) as failure:
        call(external(root))
    error = failure.value
    assert "exited with status 2: Error: Item not found: 042\nsecond line of the runner" in (
        error.message)
    assert error.exit_status == 2
    assert error.stderr == "Error: Item not found: 042\nsecond line of the runner\n"


@pytest.mark.parametrize("call", [
    lambda r: r.list_items(), lambda r: r.answer("001", "x"), lambda r: r.unblock(),
])
def test_garbage_output_is_a_typed_error(
    call, fake: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "garbage")
    with pytest.raises(RunnerError, match=r"printed output that is not JSON .*: "
                                          r"Traceback\? not json \{"):
        call(external(root))


def test_version_probe_once_and_capability(
    fake: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = external(root)
    assert runner.version() == "0.14.0" and runner.answer_capable()
    runner.version()
    assert len(calls(fake)) == 1 and calls(fake)[0]["argv"] == ["version", "--json"]
    for output, version, capable in [
        ('{"version": "v0.15"}', "v0.15", True),
        ('{"version": "0.13.2"}', "0.13.2", False),
        ('{"version": "0.14.0-rc1"}', "0.14.0-rc1", False),
        ('{"name": "rauf"}', None, False),
        ("not json", None, False),
    ]:
        monkeypatch.setenv("FAKE_VERSION_OUTPUT", output)
        runner = external(root)
        assert (runner.version(), runner.answer_capable()) == (version, capable), output


def test_a_failing_version_probe_is_a_miss_not_an_error(
    fake: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODE", "fail")
    runner = external(root)
    assert runner.version() is None and runner.answer_capable() is False
    assert "Item not found: 042" in runner.probe_version()[1]
    missing = external(root, bin="no-such-runner-anywhere")
    assert missing.version() is None and not missing.answer_capable()


def test_bin_lookup(fake: Path, root: Path, tmp_path: Path) -> None:
    with pytest.raises(RunnerError, match="'no-such-runner' not found on PATH; pip install rauf"):
        external(root, bin="no-such-runner").list_items()
    tools = root / "tools"
    tools.mkdir()
    (tools / "runner").write_bytes((tmp_path / "bin" / "fakerauf").read_bytes())
    (tools / "runner").chmod(0o755)
    # A bin containing "/" is relative to the repository root, not the caller's cwd.
    assert external(root, bin="tools/runner").list_items() == []
    with pytest.raises(RunnerError, match="cannot run"):
        external(root, bin="tools/missing").list_items()


def test_bad_templates(fake: Path, root: Path) -> None:
    with pytest.raises(RunnerError, match="listCommand cannot be split"):
        external(root, list_command="{bin} 'unbalanced").list_items()
    with pytest.raises(RunnerError, match="listCommand is empty"):
        external(root, list_command="  ").list_items()


# --- the embedded runner ------------------------------------------------------------------


def _blocked_backlog(tmp_path: Path, ids: tuple[str, ...]) -> Path:
    backlog = tmp_path / ".forge"
    write_backlog(backlog, [blocked(item_id, "q?", type="bug", priority=1, title="t")
                            for item_id in ids])
    return backlog


def test_embedded_runner(tmp_path: Path) -> None:
    backlog = _blocked_backlog(tmp_path, ("001",))
    runner = EmbeddedRunner(backlog)
    assert runner.answer_capable() and runner.version() == "0.14.0"
    assert runner.list_items()[0]["status"] == "blocked"
    assert runner.answer("001", "$(touch pwned)") == {"answered": "001", "status": "pending"}
    assert BacklogStore.in_dir(backlog).get("001")["humanAnswer"] == "$(touch pwned)"
    with pytest.raises(RunnerError) as refused:
        runner.unblock("001")
    assert refused.value.message == "Item 001 is not blocked (status: pending)"
    assert refused.value.exit_code == 2
    with pytest.raises(RunnerError, match="no backlog at"):
        EmbeddedRunner(tmp_path / "elsewhere").list_items()


def test_every_runner_probes_its_version_and_only_a_program_launches(
    fake: Path, root: Path, tmp_path: Path
) -> None:
    embedded = EmbeddedRunner(tmp_path)
    assert embedded.probe_version() == (embedded.version(), None)
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(RunnerError, match="the embedded runner has no loop of its own to "
                                          "launch: run `git forge loop run`"):
        embedded.launch()
    assert sorted(tmp_path.rglob("*")) == before
    assert external(root).probe_version() == ("0.14.0", None)
    with pytest.raises(RunnerError, match="loopRunner.runCommand is not set"):
        external(root).launch()


# --- runner_for and git-forge as its own external runner ---------------------------------------


def _repo_with_backlog(git_repo: Path) -> Path:
    backlog = git_repo / "specs" / "feat"
    write_backlog(backlog, [blocked("001", "which?", type="bug", priority=1, title="a"),
                            item("002", "blocked", type="bug", priority=1, title="b")])
    return backlog


def test_runner_for_selects_by_config(git_repo: Path) -> None:
    _repo_with_backlog(git_repo)
    assert isinstance(runner_for(locate(git_repo, "specs/feat")), EmbeddedRunner)
    (git_repo / ".forge.yaml").write_text("loopRunner:\n  bin: embedded\n")
    assert isinstance(runner_for(locate(git_repo, "specs/feat")), EmbeddedRunner)
    (git_repo / "forge.config.json").write_text(json.dumps(
        {"loopRunner": {"bin": "rauf", "installHint": "npm i -g rauf"}}))
    runner = runner_for(locate(git_repo / "specs", "specs/feat"))
    assert isinstance(runner, ExternalRunner)
    assert (runner.bin, runner.backlog_dir, runner.root) == ("rauf", "specs/feat", git_repo)
    assert runner.install_hint == "npm i -g rauf"


def test_git_forge_serves_as_its_own_external_runner(git_repo: Path) -> None:
    """A feature-forge config with ``loopRunner.bin: git-forge`` works end to end."""
    backlog = _repo_with_backlog(git_repo)
    (git_repo / "forge.config.json").write_text(json.dumps({"loopRunner": {"bin": "git-forge"}}))
    runner = runner_for(locate(git_repo, "specs/feat"))
    assert isinstance(runner, ExternalRunner)
    assert runner.version() == "0.14.0" and runner.answer_capable()
    assert [item["id"] for item in runner.list_items()] == ["001", "002"]
    answer = '"; touch pwned # $(touch pwned)'
    assert runner.answer("001", answer) == {"answered": "001", "status": "pending"}
    assert BacklogStore.in_dir(backlog).get("001")["humanAnswer"] == answer
    assert not list(git_repo.rglob("pwned"))
    before = (backlog / "backlog.json").read_bytes()
    with pytest.raises(RunnerError) as refused:
        runner.answer("001", "again")
    assert refused.value.exit_status == 2
    assert refused.value.stderr == "Error: Item 001 is not blocked (status: pending)\n"
    assert (backlog / "backlog.json").read_bytes() == before
    assert runner.unblock() == {"unblockedCount": 1, "unblockedIds": ["002"]}


def test_embedded_apply_changes_is_one_write_accepted_once(tmp_path: Path) -> None:
    backlog = _blocked_backlog(tmp_path, ("001", "002", "003"))
    accepted: list[list[str]] = []
    EmbeddedRunner(backlog).apply_changes(
        [Change("001", "use a"), Change("002", None), Change("003", "use c")], accepted.append)
    assert accepted == [["001", "002", "003"]]
    items = {i["id"]: i for i in BacklogStore.in_dir(backlog).items()}
    assert [items[i]["status"] for i in ("001", "002", "003")] == ["pending"] * 3
    assert items["001"]["humanAnswer"] == "use a" and "humanAnswer" not in items["002"]


def test_embedded_apply_changes_stops_at_a_refusal_like_call_by_call(tmp_path: Path) -> None:
    backlog = _blocked_backlog(tmp_path, ("001", "002", "003"))
    accepted: list[list[str]] = []
    with pytest.raises(ChangeFailed) as failed:
        EmbeddedRunner(backlog).apply_changes(
            [Change("001", "use a"), Change("002", "  "), Change("003", "use c")],
            accepted.append)
    assert failed.value.item_id == "002"
    assert failed.value.error.message == "the answer text may not be empty"
    assert failed.value.error.exit_code == 2
    assert accepted == [["001"]]  # the change before the refusal is kept and accepted
    status = {i["id"]: i["status"] for i in BacklogStore.in_dir(backlog).items()}
    assert status == {"001": "pending", "002": "blocked", "003": "blocked"}


def test_embedded_apply_changes_on_a_missing_backlog_fails_the_first_change(
    tmp_path: Path
) -> None:
    with pytest.raises(ChangeFailed) as failed:
        EmbeddedRunner(tmp_path / "nowhere").apply_changes([Change("007", None)],
                                                           lambda ids: None)
    assert failed.value.item_id == "007" and "no backlog at" in failed.value.error.message


def test_call_by_call_apply_changes_accepts_each_and_stops_when_told(tmp_path: Path) -> None:
    # The default (an external runner's): `accepted` after every single call; an
    # exception from it (a failed stamp) stops the calls that would follow.
    backlog = _blocked_backlog(tmp_path, ("001", "002", "003"))

    class OneByOne(EmbeddedRunner):
        apply_changes = Runner.apply_changes

    accepted: list[list[str]] = []

    def stamp(ids: list[str]) -> None:
        accepted.append(ids)
        if ids == ["002"]:
            raise RuntimeError("stamp failed")

    with pytest.raises(RuntimeError, match="stamp failed"):
        OneByOne(backlog).apply_changes(
            [Change("001", "a"), Change("002", None), Change("003", "c")], stamp)
    assert accepted == [["001"], ["002"]]
    status = {i["id"]: i["status"] for i in BacklogStore.in_dir(backlog).items()}
    assert status == {"001": "pending", "002": "pending", "003": "blocked"}
