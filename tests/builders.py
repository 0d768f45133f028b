"""What the tests build — items, backlogs, repositories with a committed backlog —
defined once, so that a test says only what is particular to it.

Items and documents are plain JSON values, as ``backlog.json`` holds them; the
repositories are real ones, built through ``git`` and ``git forge`` themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import waiting
from helpers import forge_argv


def init_repository(root: Path) -> Path:
    """A real repository on branch main with one commit (README.md), at ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for args in (("init", "-q", "-b", "main"), ("add", "README.md"),
                 ("commit", "-q", "-m", "initial commit")):
        if args[0] == "add":
            (root / "README.md").write_text("# test repository\n")
        waiting.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


def item(item_id: str, status: str = "pending", **fields: Any) -> dict[str, Any]:
    """An item with every field the schema names, as ``backlog add`` writes it;
    ``fields`` override or add to them (in place, so the key order stays the schema's)."""
    base: dict[str, Any] = {
        "id": item_id, "type": "feature", "priority": 2, "title": f"item {item_id}",
        "description": "", "acceptanceCriteria": [], "status": status, "completedAt": None,
        "dependsOn": [],
    }
    base.update(fields)
    return base


def blocked(item_id: str, reason: str, **fields: Any) -> dict[str, Any]:
    """A blocked item waiting on a human's answer to ``reason``."""
    return item(item_id, "blocked", blockedReason=reason, needsHuman=True, **fields)


def backlog_document(items: Iterable[dict[str, Any]], *, project: str = "p",
                     **top: Any) -> dict[str, Any]:
    """A whole ``backlog.json`` document holding ``items`` (``top``: more top-level keys)."""
    return {"schemaVersion": "1", "project": project, "description": "",
            "items": list(items), **top}


def write_backlog(directory: Path, items: Iterable[dict[str, Any]], *, project: str = "p",
                  **top: Any) -> Path:
    """``directory/backlog.json`` (the directory made if missing) holding ``items``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "backlog.json"
    path.write_text(json.dumps(backlog_document(items, project=project, **top), indent=2) + "\n")
    return path


def set_items(path: Path, items: Iterable[dict[str, Any]]) -> None:
    """Replace the items of the backlog at ``path`` (one ``git forge init`` wrote),
    keeping the rest of its document."""
    document = json.loads(path.read_text())
    document["items"] = list(items)
    path.write_text(json.dumps(document, indent=2) + "\n")


def _forge(root: Path, *args: str) -> None:
    waiting.run([*forge_argv(), *args], cwd=root, check=True, capture_output=True)


def _git(root: Path, *args: str) -> None:
    waiting.run(["git", *args], cwd=root, check=True, capture_output=True)


def backlog_repo(root: Path, *items: str | Sequence[str]) -> Path:
    """A repository (``init_repository``) whose backlog, made by ``git forge init``
    and committed as "backlog", holds ``items``: each a title, or the arguments of
    one ``git forge backlog add``."""
    init_repository(root)
    _forge(root, "init")
    for added in items:
        _forge(root, "backlog", "add", *(["--title", added] if isinstance(added, str)
                                         else added))
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "backlog")
    return root


def one_item_backlog(root: Path) -> None:
    """A repository whose committed backlog holds one pending item, "One"."""
    backlog_repo(root, "One")


def blocked_backlog(root: Path, reasons: dict[str, str], *, config: str | None = None) -> Path:
    """``git forge init`` in the repository at ``root``, its backlog holding one item
    per id of ``reasons`` that waits on a human's answer to its reason, committed as
    "backlog" (with ``config`` as ``.forge.yaml``, when given)."""
    _forge(root, "init")
    set_items(root / ".forge" / "backlog.json",
              [blocked(item_id, reason, priority=1, title=f"Item {item_id}")
               for item_id, reason in reasons.items()])
    if config is not None:
        (root / ".forge.yaml").write_text(config)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "backlog")
    return root


def submodule_upstream(root: Path) -> Path:
    """A repository to add as a submodule: one commit ("v1") of ``lib.txt``."""
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    (root / "lib.txt").write_text("v1\n")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "v1")
    return root
