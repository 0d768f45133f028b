"""A process that owns a Supervisor: for tests where the owner must be another process.

Usage: supervisor_owner.py ROOT JOURNAL PROJECT MODE ARGV_JSON...
Starts each command, prints ``{"handle": …, "pid": …}`` per line, then either holds
(MODE ``hold``: sleeps until killed, five minutes at most; ``hold-unwatched``: the
same without the watchdog, so that its processes outlive it) or waits for every
process (a minute each at most), shuts down and prints ``done`` (MODE ``wait``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from git_forge.loop.journal import Journal
from git_forge.loop.process_events import ProcessEventPublisher
from git_forge.supervisor.config import SupervisorConfig
from git_forge.supervisor.manifest import ManifestStore
from git_forge.supervisor.process import PreparedProcess
from git_forge.supervisor.supervisor import Supervisor


def main() -> None:
    root, journal, project, mode, *commands = sys.argv[1:]
    config = SupervisorConfig(
        grace_seconds=0.3, drain_timeout_seconds=0.5, flush_interval_seconds=0.1,
        watchdog=mode != "hold-unwatched",
    )
    supervisor = Supervisor(
        config, ManifestStore(Path(root)),
        lifecycle=ProcessEventPublisher(Journal(Path(journal), Path(project))),
    )
    handles = []
    for iteration, command in enumerate(commands, start=1):
        prepared = PreparedProcess(json.loads(command), cwd=project)
        handle = supervisor.start({"run_id": "owner-run"},
                                  {"item_id": "001", "iteration": iteration}, prepared)
        handles.append(handle)
        print(json.dumps({"handle": handle, "pid": supervisor.entry(handle).pid}), flush=True)
    if mode.startswith("hold"):
        time.sleep(300)
    for handle in handles:
        supervisor.wait(handle, timeout=60)
    supervisor.shutdown()
    print("done", flush=True)


if __name__ == "__main__":
    main()
