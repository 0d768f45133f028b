"""Run ``git-forge ARGS`` with a small private tmpfs over one directory: a disk
that fills up. For tests only; needs ``unshare -rm`` (a user and mount namespace).

Usage: full_disk.py DIR SIZE TRIGGER COPY_TO -- ARGV...
Mounts a tmpfs of SIZE over DIR (in a new mount namespace), starts ARGV, prints
its pid, and — if the file TRIGGER appears (outside the tmpfs) — runs
``git-forge loop stop`` inside the same namespace (its output is not passed on).
When ARGV ends, copies what the tmpfs holds to COPY_TO (the tmpfs goes with the
namespace). Exits with ARGV's status; its stderr is passed through.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time


def main() -> int:
    directory, size, trigger, copy_to, separator, *argv = sys.argv[1:]
    assert separator == "--"
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", directory],
                   check=True)
    child = subprocess.Popen(argv)
    print(child.pid, flush=True)
    deadline = time.monotonic() + 120
    while child.poll() is None and time.monotonic() < deadline:
        if os.path.exists(trigger):
            os.unlink(trigger)
            # Its own words are not the run's: the run may have ended on its own
            # already (its agent's output could not be recorded), and then this
            # says "no loop is running". The run's stderr is what is passed through.
            subprocess.run([argv[0], "loop", "stop"], check=False, timeout=60,
                           capture_output=True)
        time.sleep(0.05)
    if child.poll() is None:
        child.kill()
    status = child.wait(timeout=30)
    shutil.copytree(directory, copy_to, symlinks=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
