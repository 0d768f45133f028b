"""Refused before anything starts: what a run, a pre-launch check or a recover pass
cannot go through with is found before it takes an item, records an answer or says
"go" — one line ``Error: …``, exit 2, every file byte for byte as it was — never
half-way through, with items left ``in_progress``. And what git can create,
git-forge can put back.

Real repositories, the real installed ``git forge``, an agent that is a
script first on PATH (it logs every start: a refused run starts none).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from builders import backlog_repo, init_repository, item, set_items
from helpers import git, run_forge, snapshot
from templates import Templates
from test_conflicts import Conflict, build_conflict

#: The agent, found on PATH as ``forge-test-agent``: it logs its start and writes a
#: file of its own; with ``FORGE_TEST_CLASH`` set, every item also rewrites the first
#: line of shared.txt its own way (items run side by side then conflict).
AGENT = r'''#!{python}
import json, os
item = os.environ["FORGE_ITEM_ID"]
with open(os.environ["FORGE_TEST_LOG"], "a") as log:
    log.write(json.dumps({{"item": item, "cwd": os.getcwd()}}) + "\n")
if os.environ.get("FORGE_TEST_CLASH"):
    lines = open("shared.txt").read().splitlines(keepends=True)
    lines[0] = f"line one, as item {{item[:8]}} has it\n"
    open("shared.txt", "w").write("".join(lines))
open(f"item-{{item[:8]}}.txt", "w").write("work\n")
print("FORGE_DONE")
'''


class Project:
    """A repository with a committed backlog, and the agent first on PATH."""

    def __init__(self, root: Path, tmp: Path) -> None:
        self.root = root
        self.log = tmp / "agents.ndjson"
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        agent = bin_dir / "forge-test-agent"
        agent.write_text(AGENT.format(python=sys.executable))
        agent.chmod(0o755)
        self.env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                    "FORGE_TEST_LOG": str(self.log)}

    def forge(self, *args: str):
        return run_forge(*args, cwd=self.root, env=self.env, timeout=120)

    def loop(self, *args: str):
        return self.forge("loop", "run", "--agent", "forge-test-agent", *args)

    def commit_items(self, items: list[dict]) -> None:
        set_items(self.root / ".forge" / "backlog.json", items)
        git("add", "-A", cwd=self.root)
        git("commit", "-qm", "items", cwd=self.root)

    def items(self) -> dict[str, dict]:
        document = json.loads((self.root / ".forge" / "backlog.json").read_text())
        return {entry["id"]: entry for entry in document["items"]}

    def started(self) -> list[str]:
        """The items whose agent started."""
        if not self.log.exists():
            return []
        return [json.loads(line)["item"] for line in self.log.read_text().splitlines()]

    def refs(self) -> str:
        return git("for-each-ref", "--format=%(refname) %(objectname)", cwd=self.root)


def build_project(root: Path) -> None:
    backlog_repo(root, "First", "Second")
    (root / "shared.txt").write_text("line one\nline two\n")
    git("add", "shared.txt", cwd=root)
    git("commit", "-qm", "shared", cwd=root)


@pytest.fixture
def project(templates: Templates, tmp_path: Path) -> Project:
    return Project(templates.copy("refused-two-items", build_project, tmp_path / "repo"),
                   tmp_path)


def assert_refused(result, *words: str) -> None:
    """Exit 2, nothing on stdout, one line ``Error: …`` holding ``words`` on stderr."""
    assert (result.returncode, result.stdout) == (2, ""), result.stdout + result.stderr
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


# --- an item id too long for a file name ------------------------------------------------------


def test_an_id_too_long_to_name_a_file_is_refused_before_a_parallel_run_takes_an_item(
        project: Project) -> None:
    long_id = "1" * 300  # a worktree .forge/worktrees/<id> cannot be made: file name too long
    project.commit_items([item(long_id), item("002")])
    before, refs = snapshot(project.root), project.refs()
    refused = project.loop("--parallel", "2")
    assert_refused(refused, "backlog.json is invalid", f'invalid item id "{long_id}"',
                   "(expected a string of 3 to 64 digits)")
    assert snapshot(project.root) == before and project.refs() == refs
    assert project.started() == []
    assert not (project.root / ".forge" / "worktrees").exists()
    # an id at the bound names its worktree, branch and files: the run goes through
    longest = "9" * 64
    project.commit_items([item(longest, title="Longest"), item("002", title="Short")])
    ran = project.loop("--parallel", "2")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert sorted(project.started()) == sorted([longest, "002"])
    assert {entry["status"] for entry in project.items().values()} == {"done"}
    assert f"[forge] {longest}: Longest" in git("log", "--format=%s", cwd=project.root)
    assert git("status", "--porcelain", cwd=project.root) == ""


# --- a name git creates, put back by restore ---------------------------------------------------


def test_a_discarded_file_with_a_255_byte_name_is_restored_as_git_would(tmp_path: Path) -> None:
    root = init_repository(tmp_path / "repo")
    assert run_forge("init", cwd=root).returncode == 0
    plain = "a" * 251 + ".txt"
    accented = "é" * 126 + "xyz"  # 255 bytes: a temp name's cut falls inside a character
    tracked = "t" * 255
    link = "l" * 255
    for name in (plain, accented, tracked, link):
        assert len(name.encode()) == 255
    (root / tracked).write_text("as committed\n")
    git("add", "-A", cwd=root)
    git("commit", "-qm", "forge and a long name", cwd=root)
    (root / plain).write_bytes(b"plain\x00bytes\n")
    (root / accented).write_text("run me\n")
    (root / accented).chmod(0o755)
    (root / tracked).write_text("changed since\n")
    os.symlink(plain, root / link)
    names = sorted(os.listdir(root))
    wanted = {name: os.lstat(root / name) for name in (plain, accented, tracked, link)}
    contents = {name: (root / name).read_bytes() for name in (plain, accented, tracked)}

    discarded = run_forge("reconcile", "--discard", "unattributed", "--confirm-discard",
                          "--json", cwd=root)
    assert discarded.returncode == 0, discarded.stdout + discarded.stderr
    (ref,) = git("for-each-ref", "--format=%(refname)", "refs/forge/discarded",
                 cwd=root).split()
    assert git("status", "--porcelain", cwd=root) == ""

    restored = run_forge("reconcile", "--restore", ref, cwd=root)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert sorted(os.listdir(root)) == names  # every one back, no temp file left
    for name, was in wanted.items():
        now = os.lstat(root / name)
        assert stat.S_IFMT(now.st_mode) == stat.S_IFMT(was.st_mode), name
        assert now.st_mode & 0o111 == was.st_mode & 0o111, name
    assert os.readlink(root / link) == plain
    for name, data in contents.items():
        assert (root / name).read_bytes() == data
        assert git("cat-file", "blob", f"{ref}:{name}", cwd=root).encode() == data  # git's copy


# --- state files a run will need ---------------------------------------------------------------


@pytest.mark.parametrize("content", [
    "{not json\n", "null\n", "[]\n", '{"conflicts": {"002": "not a record"}}\n',
], ids=["not-json", "null", "not-an-object", "entry-not-a-record"])
def test_a_corrupt_conflicts_record_is_refused_before_any_item_is_taken(
        project: Project, content: str) -> None:
    (project.root / ".forge" / "conflicts.json").write_text(content)
    before, refs = snapshot(project.root), project.refs()
    project.env["FORGE_TEST_CLASH"] = "1"  # the run's first conflict would write the record
    refused = project.loop("--parallel", "2")
    assert_refused(refused, "conflicts.json is corrupt", "refusing to touch it")
    assert snapshot(project.root) == before and project.refs() == refs
    assert project.started() == []


def test_a_corrupt_notification_record_is_refused_when_a_notifier_is_set(
        project: Project) -> None:
    (project.root / ".forge" / "notified.json").write_text("{not json\n")
    before = snapshot(project.root)
    refused = project.loop("--notify", "true")
    assert_refused(refused, "notified.json is corrupt")
    assert snapshot(project.root) == before and project.started() == []


# --- config values, checked at load -----------------------------------------------------------


@pytest.mark.parametrize(("key", "setting"), [
    ("loop.agentArgs", 'loop: {agentArgs: ["--x\\0y"]}'),
    ("loop.agentArgs", 'loop: {agentArgs: "--model op\\0us"}'),
    ("loop.agent", 'loop: {agent: "forge-test-agent\\0"}'),
    ("loop.notify", 'loop: {notify: "true\\0"}'),
    ("loop.promptFile", 'loop: {promptFile: "prompt\\0.md"}'),
    ("backlog", 'backlog: ".forge\\0x"'),
    ("loopRunner.stateDir", 'loopRunner: {stateDir: "st\\0ate"}'),
])
def test_a_nul_in_a_config_value_is_refused_at_load(project: Project, key: str,
                                                    setting: str) -> None:
    (project.root / ".forge.yaml").write_text(setting + "\n")  # YAML's escape: a real NUL
    git("add", ".forge.yaml", cwd=project.root)
    git("commit", "-qm", "config", cwd=project.root)
    before = snapshot(project.root)
    run = ["loop", "run"] if key == "loop.agent" else ["loop", "run", "--agent",
                                                        "forge-test-agent"]
    for args in (run, ["status"]):
        refused = project.forge(*args)
        assert_refused(refused, f".forge.yaml: {key} holds a NUL character")
    assert snapshot(project.root) == before and project.started() == []
    assert {entry["status"] for entry in project.items().values()} == {"pending"}


def test_a_nul_in_feature_forge_s_config_is_refused_at_load(project: Project) -> None:
    (project.root / "forge.config.json").write_text(
        json.dumps({"loopRunner": {"stateDir": ".rauf\u0000"}}) + "\n")
    before = snapshot(project.root)
    refused = project.loop()
    assert_refused(refused, "forge.config.json: loopRunner.stateDir holds a NUL character")
    assert snapshot(project.root) == before and project.started() == []


# --- the same arguments, the same answer ---------------------------------------------------------


#: Locations every command refuses (exit 2), as ``status`` words it.
REFUSED_LOCATIONS = [
    ["no-such-dir"], ["README.md"], ["--backlog", "../outside"], ["--backlog", ".git"],
    ["--backlog", "."], ["--backlog=/"], ["no-such-dir", "--json"],
    ["--backlog", "../outside", "--json"],
]


def test_preflight_answers_a_location_as_status_answers_it(project: Project) -> None:
    before = snapshot(project.root)
    for args in REFUSED_LOCATIONS:  # a clean tree, and yet no "go"
        status = project.forge("status", *args)
        assert_refused(status)
        preflight = project.forge("preflight", *args)
        assert (preflight.returncode, preflight.stdout, preflight.stderr) == (
            2, "", status.stderr), args
    assert snapshot(project.root) == before
    for args in ([], ["."], [".forge"], ["--backlog", ".forge"]):  # these still go
        clean = project.forge("preflight", *args)
        assert (clean.returncode, clean.stdout, clean.stderr) == (0, "", ""), args
    (project.root / "new.txt").write_text("x\n")
    dirty = project.forge("preflight", "--backlog", ".forge")
    assert dirty.returncode == 1 and "  ?? new.txt" in dirty.stderr.splitlines()


# --- recover: an answer its apply cannot carry out is not recorded ------------------------------


@pytest.fixture
def conflict(templates: Templates, tmp_path: Path) -> Conflict:
    root = templates.copy("parallel-conflict", build_conflict, tmp_path / "repo")
    git("worktree", "repair", *map(str, (root / ".forge" / "worktrees").iterdir()), cwd=root)
    found = Conflict(root, tmp_path / "agents.ndjson")
    git("update-index", "-q", "--refresh", cwd=found.tree)
    return found


def test_a_retry_whose_worktree_holds_a_nested_repository_is_refused_unrecorded(
        conflict: Conflict) -> None:
    nested = conflict.tree / "nested"
    init_repository(nested)  # its own repository: no ref of ours can keep its content
    before, refs = conflict.files(), conflict.refs()
    inside = snapshot(nested, skip_git=False)
    refused = conflict.run("recover", "--answer", f"{conflict.loser}=retry")
    assert_refused(refused, f"item {conflict.loser} cannot be retried",
                   "nested/ is a nested git repository")
    assert conflict.files() == before and conflict.refs() == refs
    assert not (conflict.root / ".forge" / "forge-decisions.json").exists()
    assert snapshot(nested, skip_git=False) == inside
    assert git("branch", "--list", conflict.branch, cwd=conflict.root).strip()
