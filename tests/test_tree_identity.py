"""Commit identity decided the way git decides, checked against ``git var``."""

from __future__ import annotations

import re
from pathlib import Path

import pygit2
import pytest
from helpers import git

from git_forge.tree.errors import GitError
from git_forge.tree.identity import author_and_committer, signature
from git_forge.tree.repo import open_repo

IDENTITY_VARS = [
    f"GIT_{role}_{part}" for role in ("AUTHOR", "COMMITTER") for part in ("NAME", "EMAIL", "DATE")
] + ["EMAIL"]


def git_ident(repo: Path, role: str) -> tuple[str, str, int, str]:
    line = git("var", f"GIT_{role.upper()}_IDENT", cwd=repo).strip()
    match = re.fullmatch(r"(.*) <(.*)> (\d+) ([+-]\d{4})", line)
    assert match, line
    return match.group(1), match.group(2), int(match.group(3)), match.group(4)


def ours(repo: Path, role: str) -> tuple[str, str, int, str]:
    sig = signature(open_repo(repo), role)  # type: ignore[arg-type]
    sign = "+" if sig.offset >= 0 else "-"
    hours, minutes = divmod(abs(sig.offset), 60)
    return sig.name, sig.email, sig.time, f"{sign}{hours:02d}{minutes:02d}"


def assert_same_identity(repo: Path, *, with_date: bool = False) -> None:
    for role in ("author", "committer"):
        expected, got = git_ident(repo, role), ours(repo, role)
        assert got[:2] == expected[:2], role
        if with_date:
            assert got[2:] == expected[2:], role


@pytest.fixture
def no_env_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in IDENTITY_VARS:
        monkeypatch.delenv(name, raising=False)


def test_environment_beats_config(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git("config", "user.name", "Config Name", cwd=git_repo)
    git("config", "user.email", "config@example.invalid", cwd=git_repo)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Env Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.invalid")
    monkeypatch.delenv("GIT_COMMITTER_NAME")
    monkeypatch.delenv("GIT_COMMITTER_EMAIL")
    assert ours(git_repo, "author")[:2] == ("Env Author", "author@example.invalid")
    assert ours(git_repo, "committer")[:2] == ("Config Name", "config@example.invalid")
    assert_same_identity(git_repo)


def test_default_signature_ignores_the_environment(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trap this module exists for: libgit2's default signature reads config only."""
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Env Author")
    assert open_repo(git_repo).repository.default_signature.name == "Forge Tester"
    assert ours(git_repo, "author")[0] == "Env Author"


def test_config_levels_and_role_keys(git_repo: Path, no_env_identity: None) -> None:
    assert ours(git_repo, "author")[:2] == ("Forge Tester", "tester@example.invalid")
    git("config", "user.name", "Local Name", cwd=git_repo)
    git("config", "author.email", "author-key@example.invalid", cwd=git_repo)
    git("config", "committer.name", "Committer Key", cwd=git_repo)
    assert ours(git_repo, "author")[:2] == ("Local Name", "author-key@example.invalid")
    assert ours(git_repo, "committer")[:2] == ("Committer Key", "tester@example.invalid")
    assert_same_identity(git_repo)


def test_both_roles_at_once_are_each_as_git_decides(
    git_repo: Path, no_env_identity: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``author_and_committer`` reads the configuration once for both roles: each
    still gets its own keys, and a role given whole by the environment keeps it."""
    git("config", "author.name", "Author Key", cwd=git_repo)
    git("config", "committer.email", "committer-key@example.invalid", cwd=git_repo)
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Env Committer")
    author, committer = author_and_committer(open_repo(git_repo))
    assert (author.name, author.email) == ("Author Key", "tester@example.invalid")
    assert (committer.name, committer.email) == ("Env Committer",
                                                 "committer-key@example.invalid")
    for role, sig in (("author", author), ("committer", committer)):
        assert git_ident(git_repo, role)[:2] == (sig.name, sig.email)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Env Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "env-author@example.invalid")
    author, committer = author_and_committer(open_repo(git_repo))
    assert (author.name, author.email) == ("Env Author", "env-author@example.invalid")
    assert committer.email == "committer-key@example.invalid"


def test_git_config_global_is_honoured(
    git_repo: Path, tmp_path: Path, no_env_identity: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other.gitconfig"
    other.write_text("[user]\n\tname = From Global Env\n\temail = env-global@example.invalid\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(other))
    assert ours(git_repo, "author")[:2] == ("From Global Env", "env-global@example.invalid")
    assert_same_identity(git_repo)


def test_command_line_config_is_honoured(
    git_repo: Path, no_env_identity: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What `git -c user.name="Pat \"P\" O'Neil" -c user.email=... forge …` hands down.
    monkeypatch.setenv(
        "GIT_CONFIG_PARAMETERS",
        "'user.name'='Pat \"P\" O'\\''Neil' 'user.email=pat@example.invalid'",
    )
    assert ours(git_repo, "author")[:2] == ('Pat "P" O\'Neil', "pat@example.invalid")
    assert_same_identity(git_repo)
    monkeypatch.delenv("GIT_CONFIG_PARAMETERS")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.name")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "Counted Name")
    assert ours(git_repo, "committer")[0] == "Counted Name"
    assert_same_identity(git_repo)


def test_email_variable_is_the_last_resort(
    git_repo: Path, tmp_path: Path, no_env_identity: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    only_name = tmp_path / "name-only.gitconfig"
    only_name.write_text("[user]\n\tname = Name Only\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(only_name))
    monkeypatch.setenv("EMAIL", "fallback@example.invalid")
    assert ours(git_repo, "author")[:2] == ("Name Only", "fallback@example.invalid")
    assert_same_identity(git_repo)


@pytest.mark.parametrize(
    "date",
    [
        "@1112911993 +0200",
        "1112911993 -0130",
        "Thu, 07 Apr 2005 22:13:13 +0200",
        "2005-04-07T22:13:13Z",
        "2005-04-07 22:13:13 +0200",
        "2005-04-07T22:13:13+05:30",
        "2005.04.07 22:13:13 +0200",  # git reads it; a copy of its rules did not
    ],
)
def test_dates_from_the_environment(git_repo: Path, monkeypatch: pytest.MonkeyPatch, date: str):
    monkeypatch.setenv("GIT_AUTHOR_DATE", date)
    monkeypatch.setenv("GIT_COMMITTER_DATE", date)
    assert_same_identity(git_repo, with_date=True)


def test_bad_date_is_a_clear_error(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_COMMITTER_DATE", "next tuesday-ish")
    with pytest.raises(GitError, match="invalid date format: .*GIT_COMMITTER_DATE") as caught:
        signature(open_repo(git_repo), "committer")
    assert caught.value.exit_code == 2


def test_no_identity_is_a_clear_error(
    git_repo: Path, tmp_path: Path, no_env_identity: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty_home = tmp_path / "empty-home"
    empty_home.mkdir()
    monkeypatch.setenv("HOME", str(empty_home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(empty_home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty_home / ".gitconfig"))
    # libgit2 ignores GIT_CONFIG_GLOBAL; the isolation fixture restores this afterwards.
    pygit2.settings.search_path[pygit2.enums.ConfigLevel.GLOBAL] = str(empty_home)
    with pytest.raises(GitError) as caught:
        signature(open_repo(git_repo), "author")
    message = caught.value.message
    assert "no git identity (author name and email unknown)" in message
    assert 'git config --global user.name "Your Name"' in message
    assert 'git config --global user.email "you@example.com"' in message
    assert "\n" not in message
