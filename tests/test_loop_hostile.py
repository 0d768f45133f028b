"""The loop on the trees real projects have: links, odd names, submodules,
nested repositories, sparse checkouts, filters, every ignore source, stale
locks — it matches git, never writes outside the repository, and never dies
mid-run over a path (it blocks the item with the reason and goes on).
Also: the ``{prompt_file}`` copy is never left behind, and a dependency cycle
is named (exit 5), not reported as ``complete``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import abandoned, commit_project, git, run_forge
from test_tree_hostile import outside_digest

#: A scripted agent: per item, per attempt, a list of steps from AGENT_PLAN.
AGENT = r'''
import json, os, pathlib, shutil, subprocess, sys
item = os.environ["FORGE_ITEM_ID"]
plan = json.loads(pathlib.Path(os.environ["AGENT_PLAN"]).read_text())
step = plan.get(item, {"signal": "FORGE_DONE"})
for argv in step.get("git", []):
    subprocess.run(["git", *argv], check=True, capture_output=True)
for name in step.get("rm", []):
    path = pathlib.Path(name)
    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
for name, content in step.get("files", {}).items():
    path = pathlib.Path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
for name, target in step.get("links", {}).items():
    if os.path.lexists(name):
        os.unlink(name)
    os.symlink(target, name)
if "prompt_from" in step:
    pathlib.Path(step["prompt_from"]).write_text(pathlib.Path(sys.argv[1]).read_text())
print(step.get("signal", ""), flush=True)
'''


class Project:
    """A project with a committed backlog of three independent items."""

    def __init__(self, root: Path, tmp: Path) -> None:
        self.root, self.tmp = root, tmp
        self.agent = tmp / "agent.py"
        self.agent.write_text(AGENT)
        self.plan_file = tmp / "plan.json"

    def run(self, plan: dict, *args: str, agent: str | None = None,
            env: dict[str, str] | None = None, via_git: list[str] | None = None,
            ) -> subprocess.CompletedProcess:
        self.plan_file.write_text(json.dumps(plan))
        argv = ["loop", "run", "--agent", agent or f"{sys.executable} {self.agent}", *args]
        full_env = {"AGENT_PLAN": str(self.plan_file), **(env or {})}
        if via_git is not None:  # as a user runs it: git [-c …] forge loop run …
            return subprocess.run(["git", *via_git, "forge", *argv], cwd=self.root, text=True,
                                  capture_output=True, env={**os.environ, **full_env},
                                  timeout=120)
        return run_forge(*argv, cwd=self.root, env=full_env)

    def mark_outside(self) -> None:
        """Hash everything around the repository (the run's own plan file aside)."""
        self.plan_file.write_text("{}")
        self._outside = self._digest()

    def _digest(self) -> dict[str, tuple]:
        found = outside_digest(self.tmp, self.root)
        found.pop("plan.json", None)
        return found

    def assert_outside_untouched(self) -> None:
        assert self._digest() == self._outside

    def items(self) -> dict[str, dict]:
        document = json.loads((self.root / ".forge" / "backlog.json").read_text())
        return {item["id"]: item for item in document["items"]}

    def events(self) -> list[dict]:
        text = (self.root / ".forge" / "events.ndjson").read_text()
        return [json.loads(line) for line in text.splitlines()]

    def files_of(self, rev: str) -> list[str]:
        return git("show", "--name-only", "--format=", rev, cwd=self.root).splitlines()

    def status(self) -> str:
        return git("status", "--porcelain", "-uall", "--no-renames", cwd=self.root)

    def subjects(self) -> list[str]:
        return git("log", "--format=%s", cwd=self.root).splitlines()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project, built once: init, three items, config.txt and a sub directory."""
    root = tmp_path_factory.mktemp("loop-hostile") / "repo"
    root.mkdir()
    (root / "config.txt").write_text("repo content\n")
    (root / "sub").mkdir()
    (root / "sub" / "f.txt").write_text("in sub\n")
    commit_project(root, ("First", "Second", "Third"))
    return root


@pytest.fixture
def project(built: Path, tmp_path: Path) -> Project:
    root = tmp_path / "repo"
    shutil.copytree(built, root, symlinks=True)
    git("update-index", "-q", "--refresh", cwd=root)  # the copy's stat data is new
    (tmp_path / "outside.txt").write_text("precious\n")
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "f.txt").write_text("outside dir\n")
    return Project(root, tmp_path)


def test_a_blocked_agent_s_links_and_odd_names_are_kept_never_followed(
    project: Project,
) -> None:
    project.mark_outside()
    result = project.run({
        "001": {"signal": "FORGE_BLOCKED: the links are wrong",
                "links": {"config.txt": "../outside.txt", "ext": "../outdir",
                          "dangling": "nowhere"},
                "rm": ["sub"], "files": {"back\\slash.txt": "b\n", "new\nline.txt": "n\n",
                                         "trailing space ": "t\n"}},
        "002": {"signal": "FORGE_DONE", "files": {"done.txt": "done\n"}},
    })
    assert result.returncode == 5, result.stderr
    project.assert_outside_untouched()
    items = project.items()
    assert items["001"]["status"] == "blocked"
    assert items["001"]["blockedReason"] == "the links are wrong"
    assert items["002"]["status"] == items["003"]["status"] == "done"
    assert project.status() == ""
    assert (project.root / "config.txt").read_text() == "repo content\n"
    assert (project.root / "sub" / "f.txt").read_text() == "in sub\n"
    # The kept work holds every leftover as git would: the links as links.
    [kept] = abandoned(project.root, "001")
    assert git("show", f"{kept}:config.txt", cwd=project.root) == "../outside.txt"
    names = git("show", "--name-only", "--format=", "-z", f"{kept}^3", cwd=project.root)
    assert set(names.split("\0")) - {""} == {"back\\slash.txt", "dangling", "ext",
                                             "new\nline.txt", "trailing space "}
    assert project.files_of("HEAD~1") == [".forge/backlog.json", "done.txt"]


def test_a_filtered_leftover_is_put_back_smudged_as_git_checkout_writes_it(
    project: Project,
) -> None:
    rot = "tr a-zA-Z n-za-mN-ZA-M"
    git("config", "--global", "filter.rot.clean", rot, cwd=project.root)
    git("config", "--global", "filter.rot.smudge", rot, cwd=project.root)
    (project.root / ".gitattributes").write_text("*.rot filter=rot\n")
    (project.root / "note.rot").write_text("plain words\n")
    git("add", "-A", cwd=project.root)
    git("commit", "-qm", "filtered", cwd=project.root)
    project.mark_outside()
    result = project.run({"001": {"signal": "FORGE_BLOCKED: no",
                                  "files": {"note.rot": "changed\n"}}}, "--iterations", "1")
    assert result.returncode in (0, 5), result.stderr
    assert (project.root / "note.rot").read_text() == "plain words\n"
    assert project.status() == ""
    project.assert_outside_untouched()


def test_a_submodule_s_dirt_is_left_in_it_and_the_run_goes_on(project: Project) -> None:
    upstream = project.tmp / "upstream"
    upstream.mkdir()
    git("init", "-q", "-b", "main", cwd=upstream)
    (upstream / "lib.txt").write_text("v1\n")
    git("add", ".", cwd=upstream)
    git("commit", "-qm", "v1", cwd=upstream)
    git("submodule", "add", "-q", str(upstream), "vendor/lib", cwd=project.root)
    git("commit", "-qm", "submodule", cwd=project.root)
    project.mark_outside()
    result = project.run({
        "001": {"signal": "FORGE_BLOCKED: the library needs a patch",
                "files": {"vendor/lib/lib.txt": "patched\n", "mine.txt": "mine\n"}},
        "002": {"signal": "FORGE_DONE", "files": {"two.txt": "2\n"}},
    })
    assert result.returncode == 5, result.stderr
    items = project.items()
    assert items["001"]["blockedReason"] == "the library needs a patch"
    assert "vendor/lib" in items["001"]["notes"]
    assert items["002"]["status"] == items["003"]["status"] == "done"
    assert "vendor/lib left in the tree, not kept as its abandoned work" in result.stdout
    assert "git -C vendor/lib status" in result.stdout
    # The submodule's change is its own: still there, in no commit and not kept.
    assert (project.root / "vendor/lib/lib.txt").read_text() == "patched\n"
    assert project.status() == " M vendor/lib\n"
    assert project.files_of("HEAD~1") == [".forge/backlog.json", "two.txt"]
    stashed = git("show", "--name-only", "--format=", f"{abandoned(project.root, '001')[-1]}^3",
                  cwd=project.root)
    assert stashed == "mine.txt\n"
    blocked = next(e for e in project.events() if e["type"] == "item_blocked")
    assert blocked["leftInTree"] == ["vendor/lib"]
    project.assert_outside_untouched()


def test_a_nested_repository_is_left_untracked_reported_and_reconcilable(
    project: Project,
) -> None:
    result = project.run({
        "001": {"signal": "FORGE_DONE", "git": [["init", "-q", "nested"]],
                "files": {"work.txt": "work\n"}},
    })
    assert result.returncode == 0, result.stderr
    items = project.items()
    assert all(item["status"] == "done" for item in items.values())
    # done, but never plainly: the path left and where it stays are said
    assert any(line.startswith("  001 done: ") and ", but not all of it: nested (" in line
               and f"stays uncommitted in {project.root}" in line
               for line in result.stdout.splitlines()), result.stdout
    completed = next(e for e in project.events() if e["type"] == "item_completed")
    assert [entry["path"] for entry in completed["uncommitted"]] == ["nested"]
    assert project.files_of("HEAD~2") == [".forge/backlog.json", "work.txt"]
    assert project.status() == "?? nested/\n"
    # One status everywhere: the pre-launch check stops on it and reconcile shows it.
    stop = run_forge("preflight", "--json", cwd=project.root)
    assert stop.returncode != 0 and json.loads(stop.stdout)["paths"] == ["?? nested/"]
    listed = run_forge("reconcile", "--json", cwd=project.root)
    assert listed.returncode == 6
    groups = json.loads(listed.stdout)["groups"]
    assert [path for group in groups for path in group["paths"]] == [
        {"path": "nested/", "xy": "??"}]
    recovered = run_forge("recover", "--non-interactive", "--json", cwd=project.root)
    assert recovered.returncode == 6, recovered.stderr
    tree = json.loads(recovered.stdout)["tree"]
    assert [p for group in tree["groups"] for p in group["paths"]] == [
        {"path": "nested/", "xy": "??"}]
    refused = run_forge("reconcile", "--commit", groups[0]["id"], cwd=project.root)
    assert refused.returncode == 2
    assert "nested git repository" in refused.stderr
    assert "git -C nested status" in refused.stderr
    assert project.status() == "?? nested/\n"
    # With two decisions, the refusal of one comes before the other acts.
    (project.root / "work.txt").write_text("more work\n")
    head = git("rev-parse", "HEAD", cwd=project.root)
    both = run_forge("reconcile", "--commit", "item-001", "--stash", "unattributed",
                     cwd=project.root)
    assert both.returncode == 2 and "nested git repository" in both.stderr
    assert git("rev-parse", "HEAD", cwd=project.root) == head
    assert project.status() == " M work.txt\n?? nested/\n"


@pytest.mark.parametrize("source", ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_COUNT", "git -c"])
def test_a_file_ignored_by_any_config_source_is_never_committed(project: Project,
                                                                source: str) -> None:
    excludes = project.tmp / "excludes"
    excludes.write_text("secret.env\n")
    env: dict[str, str] = {}
    via_git = None
    if source == "GIT_CONFIG_GLOBAL":  # a file libgit2 never reads (not ~/.gitconfig)
        elsewhere = project.tmp / "elsewhere.gitconfig"
        shutil.copy(os.environ["GIT_CONFIG_GLOBAL"], elsewhere)
        git("config", "--file", str(elsewhere), "core.excludesFile", str(excludes),
            cwd=project.root)
        env = {"GIT_CONFIG_GLOBAL": str(elsewhere)}
    elif source == "GIT_CONFIG_COUNT":
        env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.excludesFile",
               "GIT_CONFIG_VALUE_0": str(excludes)}
    else:
        via_git = ["-c", f"core.excludesFile={excludes}"]
    plan = {"001": {"signal": "FORGE_DONE", "files": {"secret.env": "TOKEN=x\n",
                                                       "code.py": "code\n"}}}
    result = project.run(plan, "--iterations", "1", env=env, via_git=via_git)
    assert result.returncode == 0, result.stderr
    assert project.files_of("HEAD") == [".forge/backlog.json", "code.py"]
    assert "secret.env" not in git("ls-tree", "-r", "--name-only", "HEAD", cwd=project.root)
    assert (project.root / "secret.env").exists()


def test_a_sparse_checkout_commit_touches_exactly_the_item_s_paths(project: Project) -> None:
    git("sparse-checkout", "set", "--cone", ".forge", cwd=project.root)
    assert not (project.root / "sub").exists()
    result = project.run({"001": {"signal": "FORGE_DONE", "files": {"top.txt": "t\n"}}},
                         "--iterations", "1")
    assert result.returncode == 0, result.stderr
    assert project.files_of("HEAD") == [".forge/backlog.json", "top.txt"]
    tree = git("ls-tree", "-r", "--name-only", "HEAD", cwd=project.root).splitlines()
    assert "sub/f.txt" in tree and "config.txt" in tree
    assert project.status() == ""
    listed = run_forge("reconcile", "--json", cwd=project.root)
    assert (listed.returncode, json.loads(listed.stdout)["groups"]) == (0, [])


def test_a_stale_ref_lock_is_named_before_any_item_is_taken(project: Project) -> None:
    lock = project.root / ".git" / "refs" / "heads" / "main.lock"
    lock.write_text("")
    backlog = (project.root / ".forge" / "backlog.json").read_bytes()
    result = project.run({"001": {"signal": "FORGE_DONE", "files": {"x.txt": "x\n"}}})
    assert result.returncode == 2
    assert result.stderr.startswith("Error: ") and len(result.stderr.splitlines()) == 1
    assert f"rm {lock}" in result.stderr
    assert (project.root / ".forge" / "backlog.json").read_bytes() == backlog
    assert not (project.root / "x.txt").exists()  # the agent never ran


def test_a_commit_that_fails_after_the_agent_ran_blocks_the_item_never_done(
    project: Project,
) -> None:
    result = project.run({"001": {"signal": "FORGE_DONE", "files": {"work.txt": "work\n",
                                                                     ".git/HEAD.lock": ""}}})
    assert result.returncode == 1, result.stderr
    assert "HEAD.lock" in result.stderr
    item = project.items()["001"]
    assert item["status"] == "blocked" and item.get("completedAt") is None
    assert "the commit failed" in item["blockedReason"]
    assert "HEAD.lock" in item["blockedReason"]
    assert project.items()["002"]["status"] == "pending"  # the run ended there
    # The agent's work is kept safe; nothing was committed as done.
    assert git("show", f"{abandoned(project.root, '001')[-1]}^3:work.txt",
               cwd=project.root) == "work\n"
    assert not any(s.startswith("[forge] 001: First") for s in project.subjects())
    state = json.loads((project.root / ".forge" / "state.json").read_text())
    assert state["status"] == "error"
    assert any(e["type"] == "item_blocked" and e["itemId"] == "001" for e in project.events())


def test_the_prompt_file_is_removed_and_never_committed(project: Project) -> None:
    copy = project.tmp / "seen-prompt.md"
    result = project.run({"001": {"signal": "FORGE_DONE", "prompt_from": str(copy)},
                          "002": {"signal": "FORGE_BLOCKED: no"}},
                         agent=f"{sys.executable} {project.agent} {{prompt_file}}")
    assert result.returncode == 5, result.stderr
    assert "First" in copy.read_text()  # the agent did read it
    assert list((project.root / ".forge").glob("prompt-*")) == []
    assert project.status() == ""
    committed = git("log", "--name-only", "--format=", cwd=project.root)
    assert "prompt-" not in committed
    assert "/prompt-*.md" in (project.root / ".forge" / ".gitignore").read_text().splitlines()


def test_a_dependency_cycle_is_named_and_exits_5(project: Project) -> None:
    path = project.root / ".forge" / "backlog.json"
    document = json.loads(path.read_text())
    deps = {"001": ["002"], "002": ["001"], "003": ["001"]}
    for item in document["items"]:
        item["dependsOn"] = deps[item["id"]]
    path.write_text(json.dumps(document, indent=2) + "\n")
    git("commit", "-qam", "a hand-made cycle", cwd=project.root)
    result = project.run({})
    assert result.returncode == 5, result.stderr
    assert "dependency cycle 001 → 002 → 001" in result.stderr
    assert "items 001, 002 stay pending, and 003 wait on them" in result.stderr
    assert all(item["status"] == "pending" for item in project.items().values())


@pytest.mark.parametrize("decision", [["--stash", "unattributed"],
                                      ["--discard", "unattributed", "--confirm-discard"]])
def test_reconcile_replaces_a_link_out_of_the_repository_never_writes_through_it(
    project: Project, decision: list[str],
) -> None:
    """The reported reproducer, through the command line, against git on a copy."""
    (project.root / "config.txt").unlink()
    os.symlink("../outside.txt", project.root / "config.txt")
    theirs = project.tmp / "theirs"
    shutil.copytree(project.root, theirs, symlinks=True)
    result = run_forge("reconcile", *decision, cwd=project.root)
    assert result.returncode == 0, result.stderr
    assert (project.tmp / "outside.txt").read_text() == "precious\n"
    assert (project.root / "config.txt").read_text() == "repo content\n"
    git("stash", "push", "-q", "--", "config.txt", cwd=theirs)
    for probe in (("status", "--porcelain", "-uall", "--no-renames"), ("ls-files", "-s")):
        assert git(*probe, cwd=project.root) == git(*probe, cwd=theirs)
    assert os.lstat(project.root / "config.txt").st_mode == os.lstat(
        theirs / "config.txt").st_mode
