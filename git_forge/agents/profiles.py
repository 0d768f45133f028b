"""The agents git-forge knows by name, and the generic one.

``--agent claude`` runs ``claude -p --output-format stream-json --verbose`` with
the prompt on stdin; ``--agent codex`` runs ``codex exec --json -``. The user's
extra flags (``loop.agentArgs`` / ``--agent-arg``) come after the profile's own
words, and a resumed session's words after them: ``codex exec --json --sandbox
workspace-write resume THREAD -`` (``codex exec resume`` takes none of ``exec``'s
flags after it: they go before ``resume``). Any other command line is the generic
profile: run as given, its plain output read as today. A profile says how to
resume a session on a retry and how to read its stream.

A session id comes from the agent's stream, so it is untrusted: only one of the
shape ``streams.session_problem`` accepts is ever resumed (never one that starts
with ``-``), and where the CLI allows it, it is one token with its option
(``--resume=ID``: commander.js reads the value after ``=`` whatever it looks
like). Codex takes the thread id as a positional (``exec resume ID``), which a
validated id cannot turn into an option.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from git_forge import capture
from git_forge.agents.streams import (
    ClaudeStream,
    CodexStream,
    StreamReader,
    TextSink,
    session_problem,
)


@dataclass(frozen=True)
class Profile:
    name: str
    #: The executable looked up on PATH (``None`` for the generic profile).
    binary: str | None
    #: The argv before the user's extra flags …
    base: tuple[str, ...]
    reader: Callable[[TextSink | None], StreamReader]
    #: … and at the very end (Codex's ``-``: the prompt is on stdin).
    tail: tuple[str, ...] = ()
    #: The words that resume ``session``, after the user's flags, before ``tail``
    #: (``None``: the profile cannot resume).
    resume: Callable[[str], tuple[str, ...]] | None = None
    #: Whether its stdout is a structured stream (JSON lines).
    structured: bool = False

    @property
    def named(self) -> bool:
        """A built-in profile (``claude``, ``codex``), not a command line."""
        return self.binary is not None

    def argv(self, command: Sequence[str] = (), extra: Sequence[str] = (),
             session: str | None = None) -> list[str]:
        """The argv of one start: ``command`` for the generic profile, the
        profile's own words otherwise; ``extra`` flags; resuming ``session``."""
        if not self.named:
            return [*command, *extra]
        resume: tuple[str, ...] = ()
        if session and self.resume is not None:
            problem = session_problem(session)
            if problem is not None:  # the readers never keep one: a caller's mistake
                raise ValueError(f"refusing to resume {problem}")
            resume = self.resume(session)
        return [*self.base, *extra, *resume, *self.tail]


PROFILES: dict[str, Profile] = {
    "claude": Profile(
        "claude", "claude", ("claude", "-p", "--output-format", "stream-json", "--verbose"),
        ClaudeStream, resume=lambda session: (f"--resume={session}",), structured=True),
    # ``codex exec --json [flags] -`` → ``codex exec --json [flags] resume <thread> -``
    "codex": Profile(
        "codex", "codex", ("codex", "exec", "--json"), CodexStream, tail=("-",),
        resume=lambda session: ("resume", session), structured=True),
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
                "command": "any command line (--agent 'CMD ARGS')",
                "resumes": False, "reports": "its last line (the signal)"}
    path = shutil.which(profile.binary)
    version = None
    if path is not None:
        try:
            result = capture.run([path, "--version"], timeout=timeout)
            lines = (result.stdout or result.stderr).decode().strip().splitlines()
            version = lines[0].strip() if lines else None
        except (OSError, capture.HelperTimeout, UnicodeDecodeError):
            version = None
    reports = ("tokens and cost" if profile.name == "claude" else "tokens (no cost)")
    return {"name": profile.name, "binary": profile.binary, "path": path, "version": version,
            "command": " ".join([*profile.base, *profile.tail]), "resumes": True,
            "reports": reports}
