"""Configuration layering, sources, and errors that name the file and the key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_forge

from git_forge.config import ConfigError, load_config, only_comments, user_config_path
from git_forge.layout import NotAWorkTree
from git_forge.workspace import find_root, locate


@pytest.fixture
def user_config(isolated_env: Path) -> Path:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_user_config_lives_in_the_isolated_xdg_dir(isolated_env: Path) -> None:
    assert user_config_path() == isolated_env / ".config" / "git-forge" / "config.yaml"


def test_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config["backlog"] == ".forge" and config.state_dir == ".forge"
    assert config.runner_bin is None
    assert config["loopRunner.recoveryMinRunnerVersion"] == "0.14.0"
    assert config["loopRunner.listCommand"] == "{bin} backlog list . --backlog {backlogDir} --json"
    assert (config["loop.iterations"], config["loop.retries"], config["loop.timeoutMinutes"]) == (
        50, 2, 30)
    assert config["supervisor.maxProcessSpoolBytes"] == 64 * 1024 * 1024
    assert {s.source for s in config.settings()} == {"default"}


def test_layers_later_wins(tmp_path: Path, user_config: Path) -> None:
    user_config.write_text("backlog: user-backlog\nloop:\n  iterations: 7\n  retries: 5\n"
                           "loopRunner:\n  bin: user-runner\n  stateDir: .userstate\n")
    (tmp_path / ".forge.yaml").write_text("loop:\n  retries: 1\n  agent: my-agent --fast\n"
                                          "loopRunner:\n  bin: repo-runner\n")
    config = load_config(tmp_path, {"loop.iterations": 3, "loop.agent": None})
    assert config["backlog"] == "user-backlog"
    assert config.source("backlog") == f"user ({user_config})"
    assert (config["loop.retries"], config.source("loop.retries")) == (1, ".forge.yaml")
    assert (config["loop.iterations"], config.source("loop.iterations")) == (3, "flag")
    assert (config["loop.agent"], config.source("loop.agent")) == ("my-agent --fast",
                                                                   ".forge.yaml")
    assert config.runner_bin == "repo-runner"
    assert (config.state_dir, config.source("loopRunner.stateDir")) == (
        ".userstate", f"user ({user_config})")

    (tmp_path / "forge.config.json").write_text(json.dumps(
        {"loopRunner": {"bin": "rauf", "installHint": "npm i -g rauf", "futureKey": [1]},
         "other": "ignored"}))
    config = load_config(tmp_path)
    assert (config.runner_bin, config.source("loopRunner.bin")) == ("rauf", "forge.config.json")
    # A feature-forge config implies its own state dir default, over the YAML layers.
    assert (config.state_dir, config.source("loopRunner.stateDir")) == (".rauf",
                                                                        "forge.config.json")
    assert (config["loopRunner.futureKey"], config.source("loopRunner.futureKey")) == (
        [1], "forge.config.json")
    assert config.section("loopRunner")["installHint"] == "npm i -g rauf"
    assert [s.key for s in config.settings()][-1] == "loopRunner.futureKey"

    (tmp_path / "forge.config.json").write_text(json.dumps({"loopRunner": {"stateDir": ".x"}}))
    assert load_config(tmp_path).state_dir == ".x"
    assert load_config(tmp_path, {"loopRunner.stateDir": ".flag"}).state_dir == ".flag"


@pytest.mark.parametrize(("content", "message"), [
    ("loop:\n  iteratons: 5\n", "unknown key loop.iteratons"),
    ("colour: true\n", "unknown key colour"),
    ("loop:\n  iterations: ten\n", 'loop.iterations must be an integer (got "ten")'),
    ("loop:\n  iterations: 0\n", "loop.iterations must be at least 1 (got 0)"),
    ("loop:\n  iterations: true\n", "loop.iterations must be an integer (got true)"),
    ("loop:\n  pauseOnNeedsHuman: 1\n", "loop.pauseOnNeedsHuman must be true or false"),
    ("loopRunner:\n  recoveryMinRunnerVersion: 0.14\n",
     'loopRunner.recoveryMinRunnerVersion must be a string (got 0.14; quote it: "0.14")'),
    ("loopRunner:\n  stateDir: '  '\n", "loopRunner.stateDir must be a string"),
    ("loopRunner: [1, 2]\n", "loopRunner must be a mapping"),
    ("- a\n- b\n", "expected a mapping of settings"),
    ("loop: {iterations: [\n", "is not valid YAML: line 2: expected the node content"),
    # numbers no JSON output can hold, durations no clock can add to now
    ("loop:\n  timeoutMinutes: .nan\n", "loop.timeoutMinutes must be a finite number (got nan)"),
    ("loop:\n  limitWait: -.inf\n", "loop.limitWait must be a finite number (got -inf)"),
    ("loop:\n  idleTimeoutMinutes: 2000000\n",
     "loop.idleTimeoutMinutes must be at most 1,000,000 (got 2000000)"),
    ("recover:\n  lockWaitSeconds: 1000000.5\n",
     "recover.lockWaitSeconds must be at most 1,000,000 (got 1000000.5)"),
])
def test_invalid_yaml_names_file_and_key(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / ".forge.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError) as error:
        load_config(tmp_path)
    assert str(path) in error.value.message and message in error.value.message
    assert error.value.exit_code == 2


def test_invalid_user_config_is_named(tmp_path: Path, user_config: Path) -> None:
    user_config.write_text("supervisor:\n  graceSeconds: soon\n")
    with pytest.raises(ConfigError, match=f"{user_config}: supervisor.graceSeconds must be a "
                                          "number"):
        load_config(tmp_path)


def test_empty_files_are_fine(tmp_path: Path, user_config: Path) -> None:
    user_config.write_text("")
    (tmp_path / ".forge.yaml").write_text("# only comments\nloop:\n")
    assert load_config(tmp_path)["loop.iterations"] == 50


@pytest.mark.parametrize("text", [
    "", "\n", "# a\n", "  # indented\n\n# é ünïcode\r\n", "#\n   \n#: x\n# key: value",
    "# trailing spaces   \n", "#\tcomment with a tab\n", "\t# a tab first\n", "#\x0c\n",
    "\ufeff# bom\n", "# a\rb: 1\n", "---\n", "--- # doc\n", "%YAML 1.1\n---\n",
    "key: 1 # c\n", "# c\nkey:\n", "...\n", "# c\x85key: 1\n", "# c\u2028key: 1\n", "\t\n",
    "# c\n\u00a0\n", "# \u00a0nbsp\n",
])
def test_only_comments_means_the_yaml_parser_would_find_nothing(text: str) -> None:
    # The configuration skips importing pyyaml for a file that is only comments;
    # that must never hide a value, a directive or an error the parser would see.
    import yaml

    if only_comments(text):
        assert yaml.safe_load(text) is None
    else:
        assert text.strip(" \n") and not set(text) <= set(" \n")


def test_the_example_config_init_writes_is_only_comments(git_repo: Path) -> None:
    assert run_forge("init", cwd=git_repo).returncode == 0
    assert only_comments((git_repo / ".forge.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "is not valid JSON"),
    ("[]", "expected a JSON object"),
    ('{"loopRunner": "rauf"}', "loopRunner must be an object"),
    ('{"loopRunner": {"bin": 7}}',
     'loopRunner.bin must be a string or null (got 7; quote it: "7")'),
])
def test_invalid_feature_forge_config(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "forge.config.json").write_text(content)
    with pytest.raises(ConfigError) as error:
        load_config(tmp_path)
    assert "forge.config.json" in error.value.message and message in error.value.message


def test_workspace_resolution(git_repo: Path) -> None:
    sub = git_repo / "src" / "deep"
    sub.mkdir(parents=True)
    assert find_root(sub) == git_repo.resolve()
    workspace = locate(sub)
    assert workspace.root == git_repo.resolve()
    assert workspace.backlog_dir == workspace.state_dir == git_repo.resolve() / ".forge"
    other = locate(sub, "specs/feat")
    assert other.backlog_dir == git_repo.resolve() / "specs" / "feat"
    assert other.state_dir == other.backlog_dir / ".forge"
    assert other.config.source("backlog") == "flag"
    (git_repo / ".forge.yaml").write_text("backlog: plans/x\nloopRunner:\n  stateDir: .st\n")
    configured = locate(git_repo)
    assert configured.backlog_dir == git_repo.resolve() / "plans" / "x"
    assert configured.state_dir == configured.backlog_dir / ".st"
    assert locate(git_repo, str(git_repo / "abs")).backlog_dir == git_repo.resolve() / "abs"
    with pytest.raises(ConfigError, match="not a directory"):
        locate(git_repo / "missing")


@pytest.mark.parametrize(("name", "content"), [
    (".forge.yaml", "backlog: specs/feat\nloopRunner:\n  stateDir: ''\n"),
    ("forge.config.json", '{"loopRunner": {"stateDir": ""}}'),
])
def test_an_empty_state_dir_is_the_backlog_dir_itself(git_repo: Path, name: str,
                                                      content: str) -> None:
    """feature-forge reads ``stateDir: ""`` as ``{backlogDir}/`` itself; so does git-forge."""
    (git_repo / name).write_text(content)
    workspace = locate(git_repo, "specs/feat")
    assert workspace.config.state_dir == ""
    assert workspace.state_dir == workspace.backlog_dir == git_repo.resolve() / "specs" / "feat"
    assert run_forge("init", "--backlog", "specs/feat", cwd=git_repo).returncode == 0
    status = run_forge("status", "--backlog", "specs/feat", "--json", cwd=git_repo)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["stateDir"] == "specs/feat"
    shown = run_forge("config", "--json", cwd=git_repo)
    assert shown.returncode == 0, shown.stderr


def test_outside_git_the_path_is_the_root_for_configuration_only(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert locate(plain, need_work_tree=False).root == plain.resolve()
    with pytest.raises(NotAWorkTree, match="not a git repository"):
        locate(plain)


def test_config_command(git_repo: Path, user_config: Path) -> None:
    user_config.write_text("loop:\n  retries: 4\n")
    (git_repo / ".forge.yaml").write_text("loop:\n  iterations: 9\n")
    result = run_forge("config", "--json", "--backlog", "b", cwd=git_repo)
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["loop.iterations"] == {"value": 9, "source": ".forge.yaml"}
    assert shown["loop.retries"] == {"value": 4, "source": f"user ({user_config})"}
    assert shown["backlog"] == {"value": "b", "source": "flag"}
    assert shown["loopRunner.bin"] == {"value": "embedded", "source": "default"}
    text = run_forge("config", cwd=git_repo).stdout.splitlines()
    assert len(text) == len(shown)
    assert any(line.startswith("loop.iterations=9 ") and line.endswith(".forge.yaml")
               for line in text)

    (git_repo / ".forge.yaml").write_text("loop:\n  iterations: many\n")
    bad = run_forge("config", cwd=git_repo)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == (f"Error: {git_repo.resolve() / '.forge.yaml'}: loop.iterations must "
                          'be an integer (got "many")\n')


def test_decision_verbs_use_the_effective_state_dir(git_repo: Path) -> None:
    backlog = git_repo / "specs" / "feat"
    backlog.mkdir(parents=True)
    (git_repo / ".forge.yaml").write_text("loopRunner:\n  stateDir: .mystate\n")
    args = ["decision", "record", "--backlog-dir", "specs/feat", "--item", "001",
            "--question", "Q", "--deferred"]
    assert run_forge(*args, cwd=git_repo).returncode == 0
    assert (backlog / ".mystate" / "forge-decisions.json").is_file()
    # --state-dir and a forge.config.json at --config still win, as before.
    assert run_forge(*args, "--state-dir", ".explicit", cwd=git_repo).returncode == 0
    assert (backlog / ".explicit" / "forge-decisions.json").is_file()
    (git_repo / "forge.config.json").write_text("{}")
    assert run_forge(*args, cwd=git_repo).returncode == 0
    assert (backlog / ".rauf" / "forge-decisions.json").is_file()


USER_DIR_CASES = [
    {"HOME": "/home/someone"},
    {"HOME": "/home/someone/"},
    {"HOME": "/"},
    {"HOME": "/home/someone", "XDG_CONFIG_HOME": ""},
    {"HOME": "/home/someone", "XDG_CONFIG_HOME": "   "},
    {"HOME": "/home/someone", "XDG_CONFIG_HOME": "/srv/conf"},
    {"HOME": "/home/someone", "XDG_CONFIG_HOME": "/srv/conf/"},
    {"HOME": "/home/someone", "XDG_CONFIG_HOME": "relative/conf"},
    {"HOME": "relative-home"},
]


@pytest.mark.parametrize("environ", USER_DIR_CASES, ids=lambda env: repr(sorted(env.items())))
def test_the_user_config_dir_is_what_platformdirs_says(environ: dict[str, str]) -> None:
    """``layout.user_config_dir`` computes the common Linux case without importing
    platformdirs; every case, computed or not, must be platformdirs' own answer."""
    probe = ("import json, platformdirs\n"
             "from git_forge.layout import user_config_dir\n"
             "print(json.dumps([user_config_dir(), platformdirs.user_config_dir('git-forge')]))\n")
    env = {"PATH": os.environ.get("PATH", ""), **environ}
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    ours, theirs = json.loads(result.stdout)
    assert ours == theirs


@pytest.mark.parametrize("state_dir", [".forge", ".forge/", "./.forge", ""])
def test_a_state_dir_that_names_the_backlog_dir_is_the_backlog_dir(
        tmp_path: Path, state_dir: str) -> None:
    """``stateDir: .forge/`` (or ``./.forge``) names the directory ``.forge`` names: the
    state lives beside the backlog, not in ``.forge/.forge``; so does an empty one."""
    from git_forge.layout import state_directory, state_directory_path

    backlog_dir = tmp_path / ".forge"
    backlog_dir.mkdir()
    assert state_directory(backlog_dir, state_dir) == backlog_dir
    assert state_directory_path(str(backlog_dir), state_dir) == str(backlog_dir)
    assert state_directory(backlog_dir, "state") == backlog_dir / "state"
