"""The agents git-forge knows by name, and the generic one.

``--agent claude`` runs ``claude -p --output-format stream-json --verbose`` with
the prompt on stdin; ``--agent codex`` runs ``codex exec --json -``; ``--agent
gemini`` runs ``gemini --output-format stream-json --skip-trust`` (the prompt on
stdin makes it headless); ``--agent qwen`` runs ``qwen --output-format
stream-json``; ``--agent copilot`` runs ``copilot --output-format json``; ``--agent opencode`` runs
``opencode run --format json``. The user's
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

A named profile also says which versions of its program git-forge was verified
with (``Verified``): ``git forge agents`` reads the version a program reports
and says when it is outside that range, since its stream may then differ from
the one the readers expect.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from git_forge import capture
from git_forge.agents.classify import (
    FailureReader,
    copilot_failure,
    gemini_failure,
    qwen_failure,
)
from git_forge.agents.streams import (
    ClaudeStream,
    CodexStream,
    CopilotStream,
    GeminiStream,
    OpenCodeStream,
    QwenStream,
    StreamReader,
    TextSink,
    session_problem,
)
from git_forge.safetext import safe_text

#: A version number as its parts: ``2.1.332`` is ``(2, 1, 332)``.
Version = tuple[int, ...]
#: The first dotted number in a ``--version`` output (ASCII digits only).
_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+)+")


def parse_version(text: str) -> Version | None:
    """The first dotted number in ``text`` (``codex-cli 0.171.0`` → ``(0, 171, 0)``),
    or ``None`` when it holds none (or one too long to be a number)."""
    found = _VERSION.search(text)
    if found is None:
        return None
    try:
        return tuple(int(part) for part in found.group().split("."))
    except ValueError:  # more digits than int() reads from a string
        return None


def format_version(version: Version) -> str:
    """``(2, 1, 332)`` as ``2.1.332``: the number as the programs print it."""
    return ".".join(map(str, version))


@dataclass(frozen=True)
class Verified:
    """The versions of a program git-forge was verified with, both ends included."""

    lowest: Version
    highest: Version

    def status(self, version: Version | None) -> str:
        """``verified`` inside the range, ``older`` or ``newer`` outside it,
        ``unknown`` when no version was read."""
        if version is None:
            return "unknown"
        if version < self.lowest:
            return "older"
        return "newer" if version > self.highest else "verified"


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
    #: The versions of its program git-forge was verified with (every named
    #: profile has a range; the generic one has none).
    verified: Verified | None = None
    #: Whether its program reports what an attempt cost (Claude Code; Codex reports
    #: tokens only, and a plain command nothing): ``--max-cost`` can stop only such a run.
    costs: bool = False
    #: Whether its program reports the tokens an attempt used (all named ones but
    #: Copilot CLI): ``--max-tokens`` can stop only such a run.
    tokens: bool = True
    #: Where its program keeps what it must write as it runs (its settings, sessions,
    #: logs), given the environment it runs in: a sandboxed agent may write there.
    state: Callable[[Mapping[str, str]], tuple[Path, ...]] | None = None
    #: Its own reading of a failure (exit codes of its own), before the shared rules.
    failure: FailureReader | None = None

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


#: The versions the real-program test tier (tests/test_real_agents.py) ran, the
#: lowest and the highest of each program: widen a range only once that tier
#: passes with the new version.
VERIFIED: dict[str, Verified] = {
    "claude": Verified((2, 1, 197), (2, 1, 332)),
    "codex": Verified((0, 171, 0), (0, 171, 0)),
    "gemini": Verified((0, 61, 0), (0, 61, 0)),
    "qwen": Verified((0, 15, 10), (0, 24, 4)),
    "copilot": Verified((1, 0, 102), (1, 0, 102)),
    "opencode": Verified((1, 18, 33), (1, 18, 33)),
}

def _claude_state(env: Mapping[str, str]) -> tuple[Path, ...]:
    """Claude Code's own files: ``$CLAUDE_CONFIG_DIR``, or ``~/.claude`` and the
    files beside it whose names begin ``.claude`` (``~/.claude.json``, its backups)."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return (Path(env["CLAUDE_CONFIG_DIR"]),)
    home = _home(env)
    if home is None:
        return ()
    beside = sorted(home.glob(".claude?*")) if home.is_dir() else []
    return (home / ".claude", *beside)


def _codex_state(env: Mapping[str, str]) -> tuple[Path, ...]:
    """Codex's home: ``$CODEX_HOME``, else ``~/.codex``."""
    if env.get("CODEX_HOME"):
        return (Path(env["CODEX_HOME"]),)
    home = _home(env)
    return (home / ".codex",) if home is not None else ()


def _in_home(name: str) -> Callable[[Mapping[str, str]], tuple[Path, ...]]:
    """A program whose own files are one directory in the home (Gemini CLI's
    ``~/.gemini``, Qwen Code's ``~/.qwen``: settings, chats)."""
    def state(env: Mapping[str, str]) -> tuple[Path, ...]:
        home = _home(env)
        return (home / name,) if home is not None else ()
    return state


def _copilot_state(env: Mapping[str, str]) -> tuple[Path, ...]:
    """Copilot CLI's own files: ``$COPILOT_HOME`` or ``~/.copilot``, and the cache it
    unpacks itself into (``~/.cache/copilot``)."""
    home = _home(env)
    own = Path(env["COPILOT_HOME"]) if env.get("COPILOT_HOME") else (
        home / ".copilot" if home is not None else None)
    cache = home / ".cache" / "copilot" if home is not None else None
    return tuple(path for path in (own, cache) if path is not None)


def _opencode_state(env: Mapping[str, str]) -> tuple[Path, ...]:
    """OpenCode's own files: its data, cache and config directories (XDG), where it
    keeps its sessions and installs its plugins as it runs."""
    home = _home(env)
    if home is None:
        return ()
    return tuple(Path(env.get(variable) or home / default) / "opencode" for variable, default in (
        ("XDG_DATA_HOME", ".local/share"), ("XDG_CACHE_HOME", ".cache"),
        ("XDG_CONFIG_HOME", ".config"), ("XDG_STATE_HOME", ".local/state")))


def _home(env: Mapping[str, str]) -> Path | None:
    home = env.get("HOME")
    return Path(home) if home else None


PROFILES: dict[str, Profile] = {
    "claude": Profile(
        "claude", "claude", ("claude", "-p", "--output-format", "stream-json", "--verbose"),
        ClaudeStream, resume=lambda session: (f"--resume={session}",), structured=True,
        verified=VERIFIED["claude"], costs=True, state=_claude_state),
    # ``codex exec --json [flags] -`` → ``codex exec --json [flags] resume <thread> -``
    "codex": Profile(
        "codex", "codex", ("codex", "exec", "--json"), CodexStream, tail=("-",),
        resume=lambda session: ("resume", session), structured=True,
        verified=VERIFIED["codex"], state=_codex_state),
    # ``gemini --output-format stream-json --skip-trust``: the prompt on stdin runs it
    # headless; a fresh worktree is a folder it has never trusted (exit 55 without
    # ``--skip-trust``); the approval mode (``--yolo``) is the user's to give.
    "gemini": Profile(
        "gemini", "gemini", ("gemini", "--output-format", "stream-json", "--skip-trust"),
        GeminiStream, resume=lambda session: (f"--resume={session}",), structured=True,
        verified=VERIFIED["gemini"], state=_in_home(".gemini"), failure=gemini_failure),
    # ``qwen --output-format stream-json``: the prompt on stdin runs it headless; its
    # server and key (``--auth-type openai``, ``OPENAI_BASE_URL``…) and ``--yolo`` are
    # the user's to give.
    "qwen": Profile(
        "qwen", "qwen", ("qwen", "--output-format", "stream-json"), QwenStream,
        resume=lambda session: (f"--resume={session}",), structured=True,
        verified=VERIFIED["qwen"], state=_in_home(".qwen"), failure=qwen_failure),
    # ``copilot --output-format json``: the prompt on stdin runs it headless; what it may
    # do on its own (``--allow-all-tools``, ``--allow-all-paths``) is the user's to give.
    "copilot": Profile(
        "copilot", "copilot", ("copilot", "--output-format", "json"), CopilotStream,
        resume=lambda session: (f"--resume={session}",), structured=True,
        verified=VERIFIED["copilot"], state=_copilot_state, failure=copilot_failure,
        tokens=False),
    # ``opencode run --format json``: the prompt on stdin; ``--auto`` (its permissions)
    # and its provider (``opencode.json``) are the user's to give.
    "opencode": Profile(
        "opencode", "opencode", ("opencode", "run", "--format", "json"), OpenCodeStream,
        resume=lambda session: (f"--session={session}",), structured=True,
        verified=VERIFIED["opencode"], state=_opencode_state, failure=copilot_failure,
        costs=True),
}
GENERIC = Profile("generic", None, (), StreamReader, tokens=False)


def profile_for(command: Sequence[str]) -> Profile:
    """The named profile when the agent is just a profile's name, else generic."""
    if len(command) == 1 and command[0] in PROFILES:
        return PROFILES[command[0]]
    return GENERIC


#: The flags of a plain command line that a profile gives its program itself
#: (``True``: with the value after it).
_PROFILE_FLAGS: dict[str, dict[str, bool]] = {
    "claude": {"-p": False, "--print": False, "--verbose": False, "--output-format": True},
    "codex": {"--json": False},
    "gemini": {"--output-format": True, "-o": True, "--skip-trust": False},
    "qwen": {"--output-format": True, "-o": True},
    "copilot": {"--output-format": True},
    "opencode": {"run": False, "--format": True},
}


def profile_instead(command: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
    """For a command line whose program is ``claude`` or ``codex`` (by its name, a
    path too) but that is not just the profile's name — the generic profile, which
    reads no cost, waits out no usage limit and resumes no session —: that profile's
    name and the flags that run the same under it, without the words the profile
    says itself (``claude -p --permission-mode acceptEdits`` → ``claude``,
    ``(--permission-mode, acceptEdits)``; ``codex exec --sandbox workspace-write -`` →
    ``codex``, ``(--sandbox, workspace-write)``); else ``None``."""
    if not command or profile_for(command).named:
        return None
    name = command[0].rsplit("/", 1)[-1]
    flags = _PROFILE_FLAGS.get(name)
    if flags is None:
        return None
    words = list(command[1:])
    if name == "codex":  # ``exec`` (or ``e``) first, the prompt on stdin (``-``) last
        words = words[1:] if words[:1] in (["exec"], ["e"]) else words
        words = words[:-1] if words[-1:] == ["-"] else words
    extra: list[str] = []
    rest = iter(words)
    for word in rest:
        option, equals, _ = word.partition("=")
        if option in flags:
            if flags[option] and not equals:
                next(rest, None)  # its value
            continue
        extra.append(word)
    return name, tuple(extra)


def describe(profile: Profile, timeout: float = 10.0) -> dict[str, object]:
    """``git forge agents``: is the binary on PATH, which version is it, and is that
    a version git-forge was verified with.

    What ``--version`` prints is untrusted: it becomes safe text (escape sequences
    and controls removed) before anything is read from it, so a number hidden in
    an escape sequence is never the version, and ``versionText`` (its first line)
    can be shown on a terminal."""
    if profile.binary is None or profile.verified is None:  # generic: every named one has both
        return {"name": profile.name, "binary": None, "path": None, "version": None,
                "versionText": None, "verified": None, "versionStatus": None,
                "command": "any command line (--agent 'CMD ARGS')",
                "resumes": False, "reports": "its last line (the signal)"}
    path = shutil.which(profile.binary)
    said = ""
    version = None
    if path is not None:
        try:
            result = capture.run([path, "--version"], timeout=timeout)
            said = safe_text(result.stdout or result.stderr, final=True).text
            # A failed --version is no version: Codex without its platform package
            # dies in Node, whose last words name Node's version.
            version = parse_version(said) if result.returncode == 0 else None
        except (OSError, capture.HelperTimeout):
            pass
    lines = said.strip().splitlines()
    verified = profile.verified
    reports = ("tokens and cost" if profile.costs else "tokens (no cost)" if profile.tokens
               else "neither tokens nor cost")
    return {"name": profile.name, "binary": profile.binary, "path": path,
            "version": None if version is None else format_version(version),
            "versionText": lines[0].strip() if lines else None,
            "verified": {"lowest": format_version(verified.lowest),
                         "highest": format_version(verified.highest)},
            "versionStatus": verified.status(version),
            "command": " ".join([*profile.base, *profile.tail]), "resumes": True,
            "reports": reports}
