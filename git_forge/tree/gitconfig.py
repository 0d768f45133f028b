"""Reading a git configuration value the way git resolves it.

libgit2 assembles system, XDG, global, local and worktree configuration, but
it ignores what git reads from the environment: ``GIT_CONFIG_GLOBAL``,
``GIT_CONFIG_SYSTEM``, ``GIT_CONFIG_NOSYSTEM``, and the command-line values
``git -c key=value forge …`` hands to its subcommand (``GIT_CONFIG_PARAMETERS``,
``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``). Those
matter for the commit identity, so this module layers them on top.

Precedence, highest first (git's): command line, worktree, local, global
(``GIT_CONFIG_GLOBAL`` replaces ``~/.gitconfig`` and the XDG file), system;
within one file the last value wins.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import pygit2
from pygit2.enums import ConfigLevel

from git_forge.tree.repo import Repo

_TRUE = {"1", "true", "yes", "on"}
_GLOBAL_LEVELS = {ConfigLevel.GLOBAL, ConfigLevel.XDG}
_SYSTEM_LEVELS = {ConfigLevel.SYSTEM, ConfigLevel.PROGRAMDATA}


def _normalise_key(key: str) -> str:
    """git compares section and variable names case-insensitively, subsections not."""
    parts = key.split(".")
    if len(parts) < 2:
        return key.lower()
    return ".".join([parts[0].lower(), *parts[1:-1], parts[-1].lower()])


def _parse_config_parameters(text: str) -> list[tuple[str, str | None]]:
    """``GIT_CONFIG_PARAMETERS``: space-separated shell-single-quoted entries.

    git writes ``'key'='value'`` (since 2.31) or ``'key=value'`` (older), with a
    quote inside written as ``'\\''``; a key without ``=`` is a boolean true.
    """
    pairs: list[tuple[str, str | None]] = []
    position, length = 0, len(text)
    while position < length:
        while position < length and text[position].isspace():
            position += 1
        if position >= length:
            break
        key_parts: list[str] = []
        value_parts: list[str] | None = None
        current = key_parts
        while position < length and not text[position].isspace():
            char = text[position]
            if char == "'":
                end = text.find("'", position + 1)
                if end < 0:
                    end = length
                current.append(text[position + 1:end])
                position = end + 1
            elif char == "\\" and position + 1 < length:
                current.append(text[position + 1])
                position += 2
            elif char == "=" and value_parts is None:
                value_parts = []
                current = value_parts
                position += 1
            else:
                current.append(char)
                position += 1
        key = "".join(key_parts)
        if value_parts is not None:
            pairs.append((key, "".join(value_parts)))
        elif "=" in key:
            name, _, value = key.partition("=")
            pairs.append((name, value))
        else:
            pairs.append((key, None))
    return pairs


def _command_line_values() -> list[tuple[str, str | None]]:
    """``git -c`` values, in the order git applies them (later wins)."""
    pairs: list[tuple[str, str | None]] = []
    try:
        count = int(os.environ.get("GIT_CONFIG_COUNT", "0") or "0")
    except ValueError:
        count = 0
    for number in range(count):
        key = os.environ.get(f"GIT_CONFIG_KEY_{number}")
        if key:
            pairs.append((key, os.environ.get(f"GIT_CONFIG_VALUE_{number}", "")))
    pairs.extend(_parse_config_parameters(os.environ.get("GIT_CONFIG_PARAMETERS", "")))
    return pairs


def _file_values(path: str, keys: set[str]) -> dict[str, list[str | None]]:
    """Every value of each of ``keys`` in the config file at ``path`` (none if it is
    unreadable); ``None`` for a key written without ``= value``."""
    found: dict[str, list[str | None]] = {}
    if not os.path.isfile(path):
        return found
    try:
        for entry in pygit2.Config(path):
            name = _normalise_key(entry.name)
            if name in keys:
                found.setdefault(name, []).append(entry.value)
    except (pygit2.GitError, OSError):
        return {}
    return found


def config_values(
    repo: Repo, keys: Iterable[str], *, bare: str | None = None
) -> dict[str, str | None]:
    """The value git would use for each of ``keys`` in ``repo`` (None when it is not
    set), from one pass over the configuration: a commit asks for several keys, and
    each pass re-reads every file. ``bare`` is what a key written in a file without
    ``= value`` reads as: git reads it as true for a boolean (pass ``"true"``); by
    default it counts as not set. (``git -c key`` without a value is always true.)"""
    wanted = {key: _normalise_key(key) for key in keys}
    names = set(wanted.values())
    result: dict[str, str | None] = {}
    for name, value in reversed(_command_line_values()):
        normal = _normalise_key(name)
        if normal in names and normal not in result:
            result[normal] = "true" if value is None else value
    pending = names - set(result)
    if pending:
        global_file = os.environ.get("GIT_CONFIG_GLOBAL")
        system_file = os.environ.get("GIT_CONFIG_SYSTEM")
        skip_system = (os.environ.get("GIT_CONFIG_NOSYSTEM") or "").lower() in _TRUE
        by_key: dict[str, dict[int, list[str | None]]] = {}
        for entry in repo.repository.config:
            normal = _normalise_key(entry.name)
            if normal not in pending:
                continue
            level = entry.level
            if global_file is not None and level in _GLOBAL_LEVELS:
                continue
            if (skip_system or system_file is not None) and level in _SYSTEM_LEVELS:
                continue
            by_key.setdefault(normal, {}).setdefault(int(level), []).append(entry.value)
        if global_file is not None:
            for normal, values in _file_values(global_file, pending).items():
                by_key.setdefault(normal, {}).setdefault(
                    int(ConfigLevel.GLOBAL), []).extend(values)
        if system_file is not None and not skip_system:
            for normal, values in _file_values(system_file, pending).items():
                by_key.setdefault(normal, {}).setdefault(
                    int(ConfigLevel.SYSTEM), []).extend(values)
        for normal, by_level in by_key.items():
            value = by_level[max(by_level)][-1]
            result[normal] = bare if value is None else value
    return {key: result.get(normal) for key, normal in wanted.items()}


def config_value(repo: Repo, key: str) -> str | None:
    """The value git would use for ``key`` in ``repo``, or None when it is not set."""
    return config_values(repo, (key,))[key]
