"""The one timestamp format of git-forge's files: UTC, second precision, ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """``2026-11-29T10:11:12Z`` — what backlog.json, state.json and the decision
    record hold (the supervisor's manifests keep milliseconds of their own)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
