"""What one run is asked to do. Each default lives only in the configuration's key
table (``loop.*``), which ``git forge config`` lists."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from git_forge.config import KEYS


def _default(name: str) -> Any:
    return KEYS[f"loop.{name}"].default


@dataclass(frozen=True)
class LoopOptions:
    agent: list[str]
    iterations: int = _default("iterations")
    retries: int = _default("retries")
    timeout_minutes: float | None = _default("timeoutMinutes")
    pause_on_needs_human: bool = _default("pauseOnNeedsHuman")
    force: bool = False
    prompt_file: Path | None = None
