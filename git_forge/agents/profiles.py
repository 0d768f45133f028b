"""The agents git-forge knows by name, and the generic one.

``--agent claude`` runs ``claude -p --output-format stream-json --verbose`` with
the prompt on stdin; ``--agent codex`` runs ``codex exec --json -``. The user's
extra flags (``loop.agentArgs`` / ``--agent-arg``) follow. Any other command line
is the generic profile: run as given, its plain output read as today. A profile
says how to resume a session on a retry and how to read its stream.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from git_forge.agents.streams import ClaudeStream, CodexStream, StreamReader, TextSink


@dataclass(frozen=True)
class Profile:
    name: str
    #: The executable looked up on PATH (``None`` for the generic profile).
    binary: str | None
    base: tuple[str, ...]
    reader: Callable[[TextSink | None], StreamReader]
    #: Turns a fresh argv into one that resumes ``session`` (``None``: cannot).
    resume: Callable[[list[str], str], list[str]] | None = None
    #: Whether its stdout is a structured stream (JSON lines).
    structured: bool = False

    def argv(self, extra: Sequence[str] = (), session: str | None = None) -> list[str]:
        argv = [*self.base, *extra]
        if session and self.resume is not None:
            return self.resume(argv, session)
        return argv


def _claude_resume(argv: list[str], session: str) -> list[str]:
    return [*argv, "--resume", session]


def _codex_resume(argv: list[str], session: str) -> list[str]:
    # ``codex exec [flags] -`` → ``codex exec resume <thread> [flags] -``
    head, rest = argv[:2], argv[2:]
    return [*head, "resume", session, *rest]


PROFILES: dict[str, Profile] = {
    "claude": Profile("claude", "claude",
                      ("claude", "-p", "--output-format", "stream-json", "--verbose"),
                      ClaudeStream, _claude_resume, structured=True),
    "codex": Profile("codex", "codex", ("codex", "exec", "--json", "-"), CodexStream,
                     _codex_resume, structured=True),
}
GENERIC = Profile("generic", None, (), StreamReader)


def profile_for(command: Sequence[str]) -> Profile:
    """The named profile when the agent is just a profile's name, else generic."""
    if len(command) == 1 and command[0] in PROFILES:
        return PROFILES[command[0]]
    return GENERIC


def describe(profile: Profile, timeout: float = 10.0) -> dict[str, object]:
    """``git forge agents``: is the binary on PATH, and which version is it."""
    if profile.binary is None:
        return {"name": profile.name, "binary": None, "path": None, "version": None,
                "command": "any command line (--agent 'CMD ARGS')"}
    path = shutil.which(profile.binary)
    version = None
    if path is not None:
        try:
            result = subprocess.run([path, "--version"], capture_output=True, text=True,
                                    timeout=timeout)
            version = (result.stdout or result.stderr).strip().splitlines()[0] or None
        except (OSError, subprocess.TimeoutExpired, IndexError):
            version = None
    return {"name": profile.name, "binary": profile.binary, "path": path, "version": version,
            "command": " ".join(profile.base)}
