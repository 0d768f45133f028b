"""Running a process under bubblewrap: the whole file system read-only but the
directories it may write, a private ``/tmp``, optionally no network.

The command line is bubblewrap's (``bwrap``), built here and nowhere else:

* ``--ro-bind / /``, then a fresh ``/dev``, ``/proc`` and a ``/tmp`` of its own; a
  path the process needs that lies under ``/tmp`` (the repository, ``HOME``, its
  program, the directories on its ``PATH``: ``visible``) is bound back read-only
  with the whole directory of ``/tmp`` it is in (where the links in it lead);
* the ``writable`` directories bound read-write, and the ``read_only`` ones inside
  them bound read-only again — every bind in the order of its depth, so that a
  directory bound inside another wins (a worktree inside a read-only state
  directory is writable; a state directory inside a writable main checkout is not);
  a path that does not exist is skipped (``--bind-try``);
* ``--cap-drop ALL``: run as root, the process keeps no capability (it could
  otherwise remount the file system writable);
* ``--unshare-pid`` and ``--die-with-parent``: the sandbox's processes live in a
  PID namespace of their own, which the kernel empties when its first process
  dies, and that process is killed when bubblewrap is — so no process of the
  sandbox outlives it, whatever it did to leave its process group;
* ``--unshare-net`` when the network is off (its loopback is its own then: a model
  server on the host's 127.0.0.1 is out of reach).

Signals: bubblewrap does not pass a signal on to the process it runs, and dies of
SIGTERM itself — which would kill the process before it could end as it chooses.
So bubblewrap runs with SIGTERM, SIGINT and SIGHUP ignored (``env
--ignore-signal``), and the process with them restored (``env --default-signal``,
GNU coreutils 8.31 and later): the supervisor's SIGTERM to the process group then
reaches the process alone, which ends, and bubblewrap with it. SIGKILL cannot be
ignored and ends the whole tree. A process killed by a signal is reported by
bubblewrap as an exit status of 128 + the signal's number.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from git_forge.supervisor.manifest import SandboxJSON

#: The signals bubblewrap must not die of before the process it runs has ended.
_PASSED = "TERM,INT,HUP"
#: How long the check that bubblewrap works may take.
_PROBE_SECONDS = 10.0
#: The package that installs bubblewrap (Debian, Ubuntu, Fedora, Arch alike).
PACKAGE = "bubblewrap"
PRIVATE_TMP = Path("/tmp")  # noqa: S108 - the sandbox's own /tmp, a tmpfs


class SandboxError(Exception):
    """bubblewrap cannot run here; the message says why and what to install."""


@dataclass(frozen=True)
class Sandbox:
    """Where one process may write, and whether it has the network."""

    #: Directories (or files) the process may write.
    writable: tuple[Path, ...]
    #: Paths inside ``writable`` ones that stay read-only.
    read_only: tuple[Path, ...] = ()
    #: Paths the process must see that may lie under ``/tmp`` (bound back read-only).
    visible: tuple[Path, ...] = ()
    #: Paths inside writable ones that do not exist and must not be left behind — a
    #: file git would read outside the sandbox (a main git directory's ``commondir``),
    #: which a bind cannot keep from being made: removed when the process ends.
    absent: tuple[Path, ...] = ()
    network: bool = True
    #: The bubblewrap program (found on ``PATH`` by ``check``).
    program: str = "bwrap"
    #: The ``env`` that ignores and restores signals around bubblewrap.
    env_program: str = "env"

    def wrap(self, argv: Sequence[str], cwd: str | Path) -> list[str]:
        """``argv`` as it runs in the sandbox, in ``cwd``."""
        binds: list[tuple[Path, str]] = []
        writable = _distinct(self.writable)
        shown: dict[Path, None] = {}
        for path in _distinct(self.visible):  # never over what it may write
            if _under(path, PRIVATE_TMP) and not any(
                    path == top or _under(path, top) for top in writable):
                # the whole directory of /tmp it is in: what its links lead to is there
                # too (an npm prefix's .bin links into the packages beside it)
                shown.setdefault(PRIVATE_TMP / path.relative_to(PRIVATE_TMP).parts[0], None)
        binds += [(path, "--ro-bind-try") for path in shown]
        binds += [(path, "--bind-try") for path in writable]
        binds += [(path, "--ro-bind-try") for path in _distinct(self.read_only)]
        binds.sort(key=lambda bind: len(bind[0].parts))  # stable: parents first
        words = [self.env_program, f"--ignore-signal={_PASSED}", self.program,
                 *_BASE, *(() if self.network else ("--unshare-net",))]
        for path, how in binds:
            words += [how, str(path), str(path)]
        words += ["--chdir", str(cwd), "--", self.env_program, f"--default-signal={_PASSED}",
                  *argv]
        return words

    def clear_absent(self) -> list[str]:
        """Remove what the process made of ``absent``; what was removed."""
        removed = []
        for path in self.absent:
            try:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            except FileNotFoundError:
                continue
            except OSError:
                pass  # said all the same: it is there, and should not be
            removed.append(str(path))
        return removed

    def describe(self) -> SandboxJSON:
        return {"kind": "bwrap", "writable": [str(path) for path in _distinct(self.writable)],
                "network": self.network}


#: What every sandbox is: the root read-only, its own /dev, /proc and /tmp, its own
#: PID namespace, ended with bubblewrap, and no capability — run as root, one would
#: let the process mount the file system writable again.
_BASE = ("--die-with-parent", "--unshare-pid", "--cap-drop", "ALL", "--ro-bind", "/", "/",
         "--dev", "/dev", "--proc", "/proc", "--tmpfs", str(PRIVATE_TMP))


def check(env: dict[str, str] | None = None) -> Sandbox:
    """A sandbox that writes nothing, with the programs found on ``env``'s ``PATH``,
    once bubblewrap has run it here (the caller fills in its paths); ``SandboxError``
    with the reason when it is not installed or cannot make one (user namespaces
    off, a container that forbids them, an ``env`` too old to pass signals)."""
    path = (env or os.environ).get("PATH")
    program = shutil.which("bwrap", path=path)
    if program is None:
        raise SandboxError(f"bwrap is not installed (install the {PACKAGE} package)")
    env_program = shutil.which("env", path=path) or "env"
    probe = Sandbox(writable=(), program=program, env_program=env_program)
    try:
        done = subprocess.run(probe.wrap(["true"], "/"), capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=_PROBE_SECONDS, env=env,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"bwrap cannot run a sandbox here: {exc}") from exc
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = said[-1].strip() if said else f"it exited with {done.returncode}"
        raise SandboxError(f"bwrap cannot run a sandbox here: {reason}")
    return probe


def _distinct(paths: Iterable[Path]) -> list[Path]:
    """Each path once, absolute and with its links resolved (bubblewrap binds what a
    link names; the link itself then leads there)."""
    seen: dict[Path, None] = {}
    for path in paths:
        seen.setdefault(Path(os.path.realpath(path)), None)
    return list(seen)


def _under(path: Path, top: Path) -> bool:
    return top in path.parents
