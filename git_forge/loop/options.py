"""What one run is asked to do: the configuration's ``loop`` keys, overridden by
whatever the command line gave. Built in this one place, so that a default lives
only in the configuration's key table and a flag only wins where it was given."""

import os
import shlex
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from git_forge.agents.profiles import Profile, profile_for, profile_instead
from git_forge.config import KEYS, MAX_MINUTES
from git_forge.errors import UsageError
from git_forge.words import usd
from git_forge.workspace import Workspace


def _default(name: str) -> Any:
    return KEYS[f"loop.{name}"].default


class Command(NamedTuple):
    """A command line from the configuration or a flag: as written (its white space
    collapsed: what reasons and the journal show), and split once into its words."""

    text: str
    argv: tuple[str, ...]


@dataclass(frozen=True)
class LoopOptions:
    #: The agent as given: a profile's name (``["claude"]``) or a command line.
    agent: list[str]
    iterations: int = _default("iterations")
    retries: int = _default("retries")
    timeout_minutes: float | None = _default("timeoutMinutes")
    pause_on_needs_human: bool = _default("pauseOnNeedsHuman")
    force: bool = False
    prompt_file: Path | None = None
    #: Extra flags after the profile's own (``loop.agentArgs`` / ``--agent-arg``).
    agent_args: tuple[str, ...] = ()
    idle_minutes: float | None = _default("idleTimeoutMinutes")
    max_cost_usd: float | None = _default("maxCostUsd")
    #: No new attempt once the run's tokens (in and out) reach it (``--max-tokens``).
    max_tokens: int | None = _default("maxTokens")
    #: No new attempt once the run is this many minutes old (``--max-duration``).
    max_duration_minutes: float | None = _default("maxDurationMinutes")
    #: ``wait`` out a usage limit, ``stop`` the run (exit 4), or retry on the
    #: ``fallback`` agent until it lifts.
    on_limit: str = _default("onLimit")
    #: The fallback agent as given (``loop.fallbackAgent``): a profile's name or a
    #: command line; empty without one.
    fallback_agent: list[str] = field(default_factory=list)
    fallback_agent_args: tuple[str, ...] = ()
    #: Minutes to wait at a limit whose end the agent did not say.
    limit_wait_minutes: float = _default("limitWait")
    #: The longest wait at a limit, in minutes: a later end is not believed.
    limit_wait_max_minutes: float = _default("limitWaitMax")
    max_consecutive_failures: int = _default("maxConsecutiveFailures")
    resume_sessions: bool = _default("resumeSessions")
    #: The notifier's argv (``loop.notify`` / ``--notify``), split once.
    notify: tuple[str, ...] = ()
    #: Whether the caller shows the agent's text as it streams (``--follow``).
    follow: bool = False
    #: Agents at once; above 1 each item works in a linked worktree of its own.
    parallel: int = _default("parallel")
    #: The verification gates (``loop.verify`` / ``--verify``): each command line split
    #: once, ``{report}`` in a word standing for the JUnit XML file it is to write.
    verify: tuple[Command, ...] = ()
    verify_timeout_minutes: float = _default("verifyTimeout")
    #: Judge a gate by the failures the run's starting tip did not have.
    verify_baseline: bool = _default("verifyBaseline")
    #: A parallel run checks an item's commits again on a tip that moved meanwhile.
    verify_on_integrate: bool = _default("verifyOnIntegrate")
    #: ``none``, ``bwrap`` or ``auto`` (``loop.sandbox`` / ``--sandbox``).
    sandbox: str = _default("sandbox")
    #: Whether a sandboxed agent has the machine's network (``--sandbox-net``).
    sandbox_network: bool = True
    #: More paths a sandboxed agent may write, absolute (``loop.sandboxWritable``).
    sandbox_writable: tuple[Path, ...] = ()

    @property
    def profile(self) -> Profile:
        return profile_for(self.agent)

    def profile_of(self, fallback: bool) -> Profile:
        """The profile of the agent, or of the fallback agent."""
        return profile_for(self.fallback_agent) if fallback else self.profile

    def argv(self, session: str | None = None, *, fallback: bool = False) -> list[str]:
        """The argv of one agent start (resuming ``session`` where the profile can) —
        of the fallback agent's, with ``fallback``."""
        if fallback:
            return self.profile_of(True).argv(self.fallback_agent, self.fallback_agent_args,
                                              session)
        return self.profile.argv(self.agent, self.agent_args, session)

    def warnings(self) -> list[str]:
        """What to tell before the run, which goes on all the same: a plain ``claude``
        or ``codex`` command line (the generic profile reads no cost, waits out no
        usage limit and resumes no session: its built-in profile does, and the
        flags that run it are named), and a ``--max-cost`` that the agent reports
        no cost for (it could never stop the run)."""
        said = []
        instead = profile_instead(self.agent)
        if instead is not None:
            name, extra = instead
            flags = shlex.join(["--agent", name, *(f"--agent-arg={word}" for word in extra)])
            config = f"loop.agent: {name}" + (f", loop.agentArgs: [{', '.join(extra)}]"
                                              if extra else "")
            line = shlex.quote(shlex.join(self.agent))
            said.append(f"the agent command line {line} runs {name} as a "
                        "plain program: git-forge reads no cost, waits out no usage limit and "
                        f"resumes no session; its {name} profile does: {flags} "
                        f"(in .forge.yaml: {config})")
        if self.max_cost_usd is not None and not self.profile.costs:
            who = (f"{self.profile.name} reports tokens, not what they cost"
                   if self.profile.named and self.profile.tokens else
                   f"{self.profile.name} reports neither tokens nor cost"
                   if self.profile.named else
                   "the agent is a plain command line, which reports no cost")
            said.append(f"--max-cost {usd(self.max_cost_usd)} cannot stop this run: {who}")
        if self.sandbox == "none" and (not self.sandbox_network or self.sandbox_writable):
            said.append("--sandbox-net and --sandbox-writable shape a sandbox, and this run "
                        "has none: give --sandbox bwrap (or loop.sandbox)")
        if self.max_tokens is not None and not self.profile.tokens:
            who = (f"{self.profile.name} reports no tokens" if self.profile.named else
                   "the agent is a plain command line, which reports no tokens")
            said.append(f"--max-tokens {self.max_tokens} cannot stop this run: {who}")
        return said


@dataclass(frozen=True)
class LoopFlags:
    """What the command line said about a run; ``None`` leaves a value to the
    configuration (``.forge.yaml``'s ``loop`` keys, else their defaults)."""

    agent: str | None = None
    iterations: int | None = None
    retries: int | None = None
    timeout_minutes: float | None = None
    prompt_file: str | None = None
    pause_on_needs_human: bool | None = None
    force: bool = False
    agent_args: Sequence[str] | None = None
    idle_minutes: float | None = None
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_duration_minutes: float | None = None
    on_limit: str | None = None
    fallback_agent: str | None = None
    fallback_agent_args: Sequence[str] | None = None
    max_consecutive_failures: int | None = None
    notify: str | None = None
    follow: bool = False
    parallel: int | None = None
    #: ``--verify CMD``, each one command line (they replace ``loop.verify``).
    verify: Sequence[str] | None = None
    #: ``--no-verify``: no gate this run, whatever ``loop.verify`` says.
    no_verify: bool = False
    sandbox: str | None = None
    #: ``--sandbox-net shared|none``.
    sandbox_net: str | None = None
    #: ``--sandbox-writable PATH``, each one path (they replace ``loop.sandboxWritable``).
    sandbox_writable: Sequence[str] | None = None


def _words(value: Any, what: str) -> tuple[str, ...]:
    """A list of words, or one line split once (never through a shell)."""
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError as exc:
            raise UsageError(f"cannot split {what}: {exc}") from exc
    return tuple(str(word) for word in value)


def _refuse_minutes(minutes: float | None, flag: str) -> None:
    """A duration no run could use: not positive, NaN, or more than a clock can add
    to now (``inf``, ``1e12``)."""
    if minutes is not None and not 0 < minutes <= MAX_MINUTES:  # NaN, inf: neither
        raise UsageError(f"{flag} must be a positive number of minutes, "
                         f"at most {MAX_MINUTES:,} (got {minutes:.10g})")


def loop_options(workspace: Workspace, flags: LoopFlags) -> LoopOptions:
    """The run's options: each flag given, else its ``loop.*`` setting. A value no
    run could use (an agent line that cannot be split, a missing prompt file, a
    timeout that is not positive) is a usage error before anything starts."""

    def setting(name: str) -> Any:
        return workspace.config.get(f"loop.{name}", _default(name))

    agent = flags.agent if flags.agent is not None else setting("agent")
    try:
        argv = shlex.split(agent) if isinstance(agent, str) else list(agent or [])
    except ValueError as exc:
        raise UsageError(f"cannot split the agent command line: {exc}") from exc
    prompt_file = _prompt_file(workspace, flags.prompt_file or setting("promptFile"))
    timeout = flags.timeout_minutes if flags.timeout_minutes is not None \
        else setting("timeoutMinutes")
    _refuse_minutes(timeout, "--timeout")
    pause = flags.pause_on_needs_human

    def given(flag: Any, name: str) -> Any:
        return flag if flag is not None else setting(name)

    idle = given(flags.idle_minutes, "idleTimeoutMinutes")
    _refuse_minutes(idle, "--idle-timeout")
    max_cost = given(flags.max_cost_usd, "maxCostUsd")
    if max_cost is not None and not 0 <= max_cost < float("inf"):
        raise UsageError(f"--max-cost must be a number of US dollars, 0 or more "
                         f"(got {max_cost:.10g})")
    max_tokens = given(flags.max_tokens, "maxTokens")
    if max_tokens is not None and max_tokens < 1:
        raise UsageError(f"--max-tokens must be at least 1 (got {max_tokens})")
    max_duration = given(flags.max_duration_minutes, "maxDurationMinutes")
    _refuse_minutes(max_duration, "--max-duration")
    on_limit = given(flags.on_limit, "onLimit")
    if on_limit not in ("wait", "stop", "fallback"):
        raise UsageError(f"--on-limit must be wait, stop or fallback (got {on_limit})")
    fallback = given(flags.fallback_agent, "fallbackAgent")
    try:
        fallback_argv = shlex.split(fallback) if fallback else []
    except ValueError as exc:
        raise UsageError(f"cannot split the fallback agent's command line: {exc}") from exc
    if on_limit == "fallback" and not fallback_argv:
        raise UsageError("--on-limit fallback needs the agent to fall back to: "
                         "--fallback-agent (loop.fallbackAgent)")
    fallback_args = (tuple(flags.fallback_agent_args) if flags.fallback_agent_args
                     else _words(setting("fallbackAgentArgs"), "loop.fallbackAgentArgs"))
    failures = given(flags.max_consecutive_failures, "maxConsecutiveFailures")
    if failures < 1:
        raise UsageError("--max-consecutive-failures must be at least 1")
    # ``--agent-arg`` replaces loop.agentArgs, as every flag replaces its key.
    agent_args = (tuple(flags.agent_args) if flags.agent_args
                  else _words(setting("agentArgs"), "loop.agentArgs"))
    parallel = flags.parallel if flags.parallel is not None else setting("parallel")
    if parallel < 1:
        raise UsageError("--parallel must be at least 1")
    verify = () if flags.no_verify else _commands(
        flags.verify if flags.verify else setting("verify"),
        "--verify" if flags.verify else "loop.verify")
    sandbox = given(flags.sandbox, "sandbox")
    if sandbox not in ("none", "bwrap", "auto"):
        raise UsageError(f"--sandbox must be none, bwrap or auto (got {sandbox})")
    network = given(flags.sandbox_net, "sandboxNet")
    if network not in ("shared", "none"):
        raise UsageError(f"--sandbox-net must be shared or none (got {network})")
    writable = _paths(workspace.root, flags.sandbox_writable if flags.sandbox_writable
                      else _words(setting("sandboxWritable"), "loop.sandboxWritable"),
                      "--sandbox-writable" if flags.sandbox_writable else "loop.sandboxWritable")
    return LoopOptions(
        agent=list(argv),
        iterations=flags.iterations if flags.iterations is not None else setting("iterations"),
        retries=flags.retries if flags.retries is not None else setting("retries"),
        timeout_minutes=timeout,
        pause_on_needs_human=bool(pause if pause is not None else setting("pauseOnNeedsHuman")),
        force=flags.force,
        prompt_file=prompt_file,
        agent_args=agent_args,
        idle_minutes=idle,
        max_cost_usd=max_cost,
        max_tokens=max_tokens,
        max_duration_minutes=max_duration,
        on_limit=on_limit,
        fallback_agent=fallback_argv if on_limit == "fallback" else [],
        fallback_agent_args=fallback_args,
        limit_wait_minutes=setting("limitWait"),
        limit_wait_max_minutes=setting("limitWaitMax"),
        max_consecutive_failures=failures,
        resume_sessions=bool(setting("resumeSessions")),
        notify=_words(given(flags.notify, "notify"), "the notify command line"),
        follow=flags.follow,
        parallel=parallel,
        verify=verify,
        verify_timeout_minutes=setting("verifyTimeout"),
        verify_baseline=bool(setting("verifyBaseline")),
        verify_on_integrate=bool(setting("verifyOnIntegrate")),
        sandbox=sandbox,
        sandbox_network=network == "shared",
        sandbox_writable=writable,
    )


def _paths(root: Path, words: Sequence[str], what: str) -> tuple[Path, ...]:
    """The more paths a sandboxed agent may write, as a user writes them (``~`` is
    their home, a relative path the repository root's), resolved once, before any
    item is taken: a link an agent makes later cannot move one. A path that is not
    there, the root of the file system, or one that holds the repository or is in it
    (each agent writes its own tree already; another tree is not its to write) is
    refused."""
    paths = []
    top = Path(os.path.realpath(root))
    for word in words:
        if not word:
            raise UsageError(f"{what}: an empty path")
        path = Path(os.path.realpath(root / Path(word).expanduser()))
        if not path.exists():
            raise UsageError(f"{what}: {word} does not exist")
        if path == top or path in top.parents or top in path.parents:
            raise UsageError(f"{what}: {word} holds the repository or is in it: each agent "
                             "writes its own tree, and no other")
        paths.append(path)
    return tuple(paths)


def program_found(argv: Sequence[str], root: Path) -> list[str]:
    """``argv`` as it starts in any tree, so that every tree runs the same file: a
    relative path (``./agent.sh``, ``../my-agent.sh``) is the repository root's — as
    ``--prompt-file``'s, where the up-front check looks for it and a serial run
    starts its agent — and so is a program found along a relative ``PATH`` entry. A
    name found along an absolute ``PATH`` entry, an absolute path and
    ``{prompt_file}`` stay as written: they name the same file from any tree."""
    if not argv:
        return list(argv)
    program = argv[0]
    if "{prompt_file}" in program or os.path.isabs(program):
        return list(argv)
    if "/" not in program:
        found = shutil.which(program, path=rooted_path(root))
        if found is None or not found.startswith(f"{root}{os.sep}"):
            return list(argv)  # along an absolute PATH entry: the same file everywhere
        return [found, *argv[1:]]
    return [os.path.join(root, program), *argv[1:]]


def rooted_path(root: Path, path: str | None = None) -> str:
    """``PATH`` (default: this process's) with its relative entries the repository
    root's, as a serial run's agent finds them."""
    entries = (path if path is not None else os.environ.get("PATH", os.defpath)).split(
        os.pathsep)
    return os.pathsep.join(entry if os.path.isabs(entry) else os.path.join(root, entry)
                           for entry in entries)


def _commands(value: Any, what: str) -> tuple[Command, ...]:
    """Command lines, each split once (never through a shell): a list of lines, or
    one line. An empty one is refused: it would run nothing and pass every item."""
    lines = [value] if isinstance(value, str) else list(value or ())
    commands = []
    for line in lines:
        argv = _words(str(line), what)
        if not argv:
            raise UsageError(f"{what}: an empty command line")
        commands.append(Command(" ".join(str(line).split()), argv))
    return tuple(commands)


def _prompt_file(workspace: Workspace, given: str | None) -> Path | None:
    """The prompt file, relative to the repository root; it must exist."""
    if not given:
        return None
    path = Path(given)
    if not path.is_absolute():
        path = workspace.root / path
    if not path.is_file():
        raise UsageError(f"no prompt file at {path}")
    return path
