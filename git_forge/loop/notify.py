"""Telling the operator once: ``loop.notify`` / ``--notify CMD``.

The command line is split once (never a shell) and run with one JSON event on
its stdin when the loop starts waiting on a usage limit, pauses for a human,
trips the circuit breaker, ends with items waiting for a decision, or is
stopped. Each event goes out once: the keys of the ones sent (event, item,
reason) are kept in ``{stateDir}/notified.json``, so a restarted run does not
send again what an earlier one already said. A notifier that fails (cannot
start, exits non-zero, outlives its deadline) is written to the journal as
``notify_failed`` and the loop goes on.
"""

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict

from git_forge import capture
from git_forge.clock import wire_now
from git_forge.errors import ForgeError
from git_forge.jsonfile import read_document, update_json
from git_forge.layout import NOTIFIED_FILE

#: How long a notifier may run before it is killed (and counted as failed).
NOTIFY_TIMEOUT = 15.0
#: Keys kept in the sent set (the oldest are forgotten first).
KEEP_KEYS = 500

USAGE_LIMIT = "usage_limit_wait"
PAUSED = "paused_human"
BREAKER = "circuit_breaker"
WAITING = "waiting_for_decision"
STOPPED = "stopped"


class SentJSON(TypedDict):
    """notified.json: the keys of the notifications sent, the latest ``KEEP_KEYS``."""

    sent: list[str]


def check_record(state_dir: Path) -> None:
    """A ``StoreError`` when notified.json is one the notifier could not update (it
    does not parse, or holds JSON null): a run with a notifier refuses it before any
    work, instead of failing every notification it sends."""
    read_document(Path(state_dir) / NOTIFIED_FILE)


class Notifier:
    """Sends each event once per run and across restarts; never raises."""

    def __init__(self, argv: Sequence[str], state_dir: Path, run_id: str, project: Path,
                 failed: Callable[[str, str], None]) -> None:
        self.argv = list(argv)
        self.path = Path(state_dir) / NOTIFIED_FILE
        self.run_id = run_id
        self.project = project
        #: Told ``(event, why)`` when a notification could not be delivered.
        self.failed = failed

    def send(self, event: str, key: str, **fields: Any) -> bool:
        """Run the notifier with ``event`` unless ``key`` was sent before; whether it ran."""
        if not self.argv:
            return False
        full_key = f"{event}:{key}"
        try:
            if not self._claim(full_key):
                return False
        except ForgeError as exc:
            self.failed(event, f"cannot record it in {self.path.name}: {exc.message}")
            return False
        document = {"event": event, "runId": self.run_id, "project": str(self.project),
                    "timestamp": wire_now(), **fields}
        text = json.dumps(document, ensure_ascii=False, allow_nan=False)
        why = _run(self.argv, text.encode() + b"\n", self.project)
        if why is not None:
            self.failed(event, why)
        return True

    def _claim(self, key: str) -> bool:
        """Add ``key`` to the sent set; ``False`` when it was already there."""

        def claim(current: Any) -> SentJSON:
            found = current.get("sent") if isinstance(current, dict) else None
            sent = [entry for entry in found if isinstance(entry, str)] \
                if isinstance(found, list) else []
            if key in sent:
                raise _AlreadySent
            sent.append(key)
            return {"sent": sent[-KEEP_KEYS:]}

        try:
            update_json(self.path, claim, durable=False)
        except _AlreadySent:
            return False
        return True


class _AlreadySent(Exception):
    """The key is in the sent set: nothing to write."""


def _run(argv: list[str], payload: bytes, cwd: Path) -> str | None:
    """Run the notifier once, in its own process group (the whole group is killed
    past the deadline); why it failed — its stderr's last line — or ``None``. Only
    the tail of what it prints is kept (``capture``)."""
    try:
        finished = capture.run(argv, cwd=cwd, input=payload, timeout=NOTIFY_TIMEOUT,
                               new_session=True)
    except OSError as exc:
        return f"{argv[0]}: {exc.strerror or exc}"
    except capture.HelperTimeout:
        return f"{argv[0]} did not finish within {NOTIFY_TIMEOUT:g} s"
    if finished.returncode != 0:
        lines = finished.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{argv[0]} exited {finished.returncode}" + (f": {lines[-1]}" if lines else "")
    return None
