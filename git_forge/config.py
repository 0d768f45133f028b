"""Effective configuration and where each value came from.

Layers, later wins: built-in defaults < user ``config.yaml`` < repository
``.forge.yaml`` < a feature-forge ``forge.config.json`` ``loopRunner`` block <
command-line flags.
"""

from __future__ import annotations

import json
from pathlib import Path

from git_forge.layout import DEFAULT_STATE_DIR, RAUF_STATE_DIR

FEATURE_FORGE_CONFIG = "forge.config.json"


def feature_forge_state_dir(config_path: Path) -> str | None:
    """The state dir a feature-forge config implies, or ``None`` without one.

    Mirrors feature-forge's own resolver: an existing ``forge.config.json``
    selects its ``loopRunner.stateDir``, defaulting to ``.rauf`` (also when the
    file does not parse, as feature-forge tolerates that too).
    """
    if not config_path.is_file():
        return None
    try:
        document = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return RAUF_STATE_DIR
    loop_runner = document.get("loopRunner") if isinstance(document, dict) else None
    state_dir = loop_runner.get("stateDir") if isinstance(loop_runner, dict) else None
    return state_dir if isinstance(state_dir, str) and state_dir else RAUF_STATE_DIR


def decision_state_dir(explicit: str | None, config_path: Path) -> str:
    """State dir for the ``decision`` verbs: ``--state-dir``, else the
    forge.config.json at ``--config``, else git-forge's default."""
    if explicit:
        return explicit
    return feature_forge_state_dir(config_path) or DEFAULT_STATE_DIR
