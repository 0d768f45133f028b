"""Effective configuration and where each value came from.

Layers, later wins: built-in defaults < user ``config.yaml`` (platformdirs user
config dir) < repository ``.forge.yaml`` < a feature-forge ``forge.config.json``
``loopRunner`` block < command-line flags. Every value is addressed by a dotted
key (``loopRunner.stateDir``) and carries the label of the layer that set it,
which ``git forge config`` prints.

The YAML files are ours, so an unknown key or a wrong type is an error naming
the file and the key. ``forge.config.json`` belongs to feature-forge: unknown
keys in its ``loopRunner`` block are carried along, not refused, and its
presence makes ``.rauf`` the default state dir (where feature-forge and rauf keep
theirs), so both tools agree on where the decision record lives.
"""

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from git_forge.errors import ForgeError, os_error_text
from git_forge.layout import (
    DEFAULT_BACKLOG_DIR,
    DEFAULT_STATE_DIR,
    FEATURE_FORGE_CONFIG,
    RAUF_STATE_DIR,
    REPO_CONFIG,
    USER_CONFIG,
    user_config_dir,
)
from git_forge.parsing import DocumentTooComplex, load_json

SOURCE_DEFAULT = "default"
SOURCE_REPO = REPO_CONFIG
SOURCE_FEATURE_FORGE = FEATURE_FORGE_CONFIG
SOURCE_FLAG = "flag"

#: Runner-contract command templates (recovery.md); ``{token}``s are substituted
#: inside single argv elements, never through a shell.
DEFAULT_LIST_COMMAND = "{bin} backlog list . --backlog {backlogDir} --json"
DEFAULT_VERSION_COMMAND = "{bin} version --json"
ANSWER_COMMAND = "{bin} backlog answer . {id} {answer} --backlog {backlogDir} --json"
UNBLOCK_COMMAND = "{bin} backlog unblock . {id} --backlog {backlogDir} --json"
EMBEDDED_BIN = "embedded"


class ConfigError(ForgeError):
    """A configuration file that cannot be used (exit 2), naming the file and key."""


class _Key(NamedTuple):
    default: Any
    kinds: tuple[type, ...]
    nullable: bool = False
    minimum: float | None = None
    doc: str = ""
    #: The largest value (``None``: any); a duration's is what a clock can add to now.
    maximum: float | None = None
    #: ``""`` is a value of its own (not a missing one): ``stateDir: ""`` is the backlog dir.
    empty_ok: bool = False
    #: The only values a string key may take (``None``: any).
    choices: tuple[str, ...] | None = None


_STR = (str,)
_INT = (int,)
_NUMBER = (int, float)
#: The longest duration a setting or flag may give: far beyond any real run, well
#: inside what a clock can add to now (``inf`` or ``1e12`` minutes overflow a date).
MAX_MINUTES = 1_000_000
MAX_SECONDS = 1_000_000
_INFINITY = float("inf")
#: A list of strings (``agentArgs: [--model, opus]``); one string is split like a command line.
_WORDS = (list, str)

#: Every key git-forge understands, in the order ``git forge config`` lists them.
KEYS: dict[str, _Key] = {
    "backlog": _Key(DEFAULT_BACKLOG_DIR, _STR, doc="backlog directory, relative to the repo"),
    "loopRunner.bin": _Key(EMBEDDED_BIN, _STR, nullable=True,
                           doc='runner executable; "embedded" = the built-in runner'),
    "loopRunner.stateDir": _Key(DEFAULT_STATE_DIR, _STR, empty_ok=True,
                                doc='state dir name ("": the backlog dir itself)'),
    "loopRunner.listCommand": _Key(DEFAULT_LIST_COMMAND, _STR),
    "loopRunner.versionCommand": _Key(DEFAULT_VERSION_COMMAND, _STR),
    "loopRunner.statusJsonCommand": _Key(None, _STR, nullable=True),
    "loopRunner.runCommand": _Key(None, _STR, nullable=True),
    "loopRunner.installHint": _Key(None, _STR, nullable=True),
    "loopRunner.minRunnerVersion": _Key(None, _STR, nullable=True),
    "loopRunner.recoveryMinRunnerVersion": _Key("0.14.0", _STR),
    "loop.agent": _Key(None, _STR, nullable=True,
                       doc="agent: claude, codex, gemini, qwen, copilot, opencode, or a "
                           "command line"),
    "loop.agentArgs": _Key((), _WORDS, doc="extra flags for the agent (a list, or one line)"),
    "loop.iterations": _Key(50, _INT, minimum=1),
    "loop.retries": _Key(2, _INT, minimum=0),
    "loop.timeoutMinutes": _Key(30, _NUMBER, minimum=0.01, maximum=MAX_MINUTES),
    "loop.promptFile": _Key(None, _STR, nullable=True),
    "loop.pauseOnNeedsHuman": _Key(False, (bool,)),
    "loop.idleTimeoutMinutes": _Key(None, _NUMBER, nullable=True, minimum=0.01,
                                    maximum=MAX_MINUTES,
                                    doc="end an agent silent this long (null: never)"),
    "loop.maxCostUsd": _Key(None, _NUMBER, nullable=True, minimum=0,
                            doc="start no iteration once the run's cost reaches this"),
    "loop.maxTokens": _Key(None, _INT, nullable=True, minimum=1,
                           doc="start no iteration once the run's agents used this many "
                               "tokens (in and out)"),
    "loop.maxDurationMinutes": _Key(None, _NUMBER, nullable=True, minimum=0.01,
                                    maximum=MAX_MINUTES,
                                    doc="start no iteration once the run is this old"),
    "loop.onLimit": _Key("wait", _STR, choices=("wait", "stop", "fallback"),
                         doc="at a usage limit: wait until it lifts, stop (exit 4), or retry "
                             "on loop.fallbackAgent until it lifts"),
    "loop.fallbackAgent": _Key(None, _STR, nullable=True,
                               doc="the agent an item's retry runs on while the agent's usage "
                                   "limit lasts (loop.onLimit: fallback)"),
    "loop.fallbackAgentArgs": _Key((), _WORDS, doc="extra flags for the fallback agent"),
    "loop.limitWait": _Key(15, _NUMBER, minimum=0.01, maximum=MAX_MINUTES,
                           doc="minutes to wait at a limit whose end time is not given"),
    "loop.limitWaitMax": _Key(7 * 24 * 60, _NUMBER, minimum=0.01, maximum=MAX_MINUTES,
                              doc="the longest wait at a usage limit, in minutes"),
    "loop.maxConsecutiveFailures": _Key(3, _INT, minimum=1,
                                        doc="identical failures in a row that stop the run"),
    "loop.resumeSessions": _Key(True, (bool,),
                                doc="a retry of an item resumes its agent session"),
    "loop.notify": _Key(None, _STR, nullable=True,
                        doc="command run with one JSON event on stdin (no shell)"),
    "loop.parallel": _Key(1, _INT, minimum=1,
                          doc="agents at once, each in a worktree of its own (1: one at a time)"),
    "loop.verify": _Key((), _WORDS, doc="checks run after an agent says done: a list of "
                                        "command lines (one line: one check), no shell"),
    "loop.verifyTimeout": _Key(10, _NUMBER, minimum=0.01, maximum=MAX_MINUTES,
                               doc="minutes one check may run"),
    "loop.verifyOnIntegrate": _Key(True, (bool,),
                                   doc="a parallel run checks an item's work again on the tip "
                                       "it lands on, when that moved since the item started"),
    "loop.verifyBaseline": _Key(True, (bool,),
                                doc="an item fails a check only for failures the run's "
                                    "starting tip did not have"),
    "loop.sandbox": _Key("none", _STR, choices=("none", "bwrap", "auto"),
                         doc="run each agent and check under bubblewrap, writing only its own "
                             "tree (auto: when bwrap works here)"),
    "loop.sandboxNet": _Key("shared", _STR, choices=("shared", "none"),
                            doc="a sandboxed agent's network: the machine's, or none"),
    "loop.sandboxWritable": _Key((), _WORDS,
                                 doc="more paths a sandboxed agent may write (~ is your home)"),
    "recover.lockWaitSeconds": _Key(10, _NUMBER, minimum=0, maximum=MAX_SECONDS,
                                    doc="how long a recover pass waits for another one"),
    "recover.confirmAnswers": _Key(True, (bool,),
                                   doc="an answer typed at recover's prompt is shown back "
                                       "and recorded only once confirmed"),
    "supervisor.maxProcessSpoolBytes": _Key(64 * 1024 * 1024, _INT, minimum=1),
    "supervisor.graceSeconds": _Key(10, _NUMBER, minimum=0, maximum=MAX_SECONDS),
    "supervisor.maxProcesses": _Key(4, _INT, minimum=1),
    "supervisor.drainTimeoutSeconds": _Key(2, _NUMBER, minimum=0.01, maximum=MAX_SECONDS,
                                           doc="how long an agent's leftovers may finish"),
    "supervisor.keepRuns": _Key(10, _INT, minimum=1,
                                doc="runs whose processes are kept (older ones are pruned)"),
    "supervisor.watchdog": _Key(True, (bool,),
                                doc="end every agent tree when the loop dies (off: measure)"),
}

_SECTIONS = frozenset(key.split(".", 1)[0] for key in KEYS if "." in key)


class Setting(NamedTuple):
    key: str
    value: Any
    source: str


class Config:
    """Effective values by dotted key, each with the label of the layer that set it."""

    __slots__ = ("values", "sources")

    def __init__(self, values: dict[str, Any] | None = None,
                 sources: dict[str, str] | None = None) -> None:
        self.values: dict[str, Any] = {} if values is None else values
        self.sources: dict[str, str] = {} if sources is None else sources

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Config):
            return NotImplemented
        return (self.values, self.sources) == (other.values, other.sources)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the mapping it is

    def __repr__(self) -> str:
        return f"Config(values={self.values!r}, sources={self.sources!r})"

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def source(self, key: str) -> str:
        return self.sources[key]

    def set(self, key: str, value: Any, source: str) -> None:
        self.values[key] = value
        self.sources[key] = source

    def settings(self) -> Iterator[Setting]:
        """Known keys in their documented order, then carried extras sorted."""
        extras = sorted(key for key in self.values if key not in KEYS)
        for key in [*KEYS, *extras]:
            yield Setting(key, self.values[key], self.sources[key])

    def section(self, name: str) -> dict[str, Any]:
        """``loopRunner`` → ``{"bin": …, "stateDir": …}`` (extras included)."""
        prefix = name + "."
        return {key[len(prefix):]: value for key, value in self.values.items()
                if key.startswith(prefix)}

    @property
    def runner_bin(self) -> str | None:
        """The external runner's ``bin``, or ``None`` for the embedded runner."""
        value = self.values.get("loopRunner.bin")
        return None if value in (None, "", EMBEDDED_BIN) else value

    @property
    def state_dir(self) -> str:
        return str(self.values["loopRunner.stateDir"])


# --- validation -------------------------------------------------------------------------------


def _type_name(spec: _Key) -> str:
    if spec.kinds == (bool,):
        return "true or false"
    if spec.kinds == _INT:
        return "an integer"
    if spec.kinds == _NUMBER:
        return "a number"
    if spec.kinds == _WORDS:
        return "a list of strings"
    if spec.choices:
        return " or ".join(json.dumps(choice) for choice in spec.choices)
    return "a string"


def _checked_value(label: str, key: str, value: Any) -> Any:
    """``value`` if it fits ``key``; else a ``ConfigError`` naming file and key."""
    spec = KEYS[key]
    if value is None and spec.nullable:
        return None
    ok = isinstance(value, spec.kinds) and not (
        isinstance(value, bool) and bool not in spec.kinds)
    if (ok and isinstance(value, str) and not value.strip() and not spec.nullable
            and not (spec.empty_ok and value == "") and spec.kinds != _WORDS):
        ok = False
    if ok and isinstance(value, list):
        ok = all(isinstance(word, str) for word in value)
    if ok and spec.choices is not None and value not in spec.choices:
        ok = False
    if not ok:
        expected = _type_name(spec) + (" or null" if spec.nullable else "")
        hint = ""
        if spec.kinds == _STR and isinstance(value, int | float) and not isinstance(value, bool):
            hint = f'; quote it: "{value}"'
        raise ConfigError(f"{label}: {key} must be {expected} (got {json.dumps(value)}{hint})")
    words = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    if any("\0" in word for word in words):
        # No argument, path or command line can hold one: found at load, not when
        # the agent fails to start after an item was taken.
        raise ConfigError(f"{label}: {key} holds a NUL character, which no command line "
                          "or path can hold")
    if isinstance(value, float) and not -_INFINITY < value < _INFINITY:  # inf, -inf, NaN
        raise ConfigError(f"{label}: {key} must be a finite number (got {value})")
    if spec.minimum is not None and value < spec.minimum:
        raise ConfigError(f"{label}: {key} must be at least {spec.minimum:g} (got {value})")
    if spec.maximum is not None and value > spec.maximum:
        raise ConfigError(f"{label}: {key} must be at most {spec.maximum:,.10g} (got {value})")
    return value


def _flatten(label: str, document: Any) -> dict[str, Any]:
    """A parsed YAML layer as dotted keys; unknown keys and bad shapes are errors."""
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ConfigError(f"{label}: expected a mapping of settings at the top level")
    flat: dict[str, Any] = {}
    for name, value in document.items():
        name = str(name)
        if name in _SECTIONS:
            if value is None:
                continue
            if not isinstance(value, dict):
                raise ConfigError(f"{label}: {name} must be a mapping of settings")
            for sub, sub_value in value.items():
                key = f"{name}.{sub}"
                if key not in KEYS:
                    raise ConfigError(f"{label}: unknown key {key}")
                flat[key] = _checked_value(label, key, sub_value)
        elif name in KEYS:
            flat[name] = _checked_value(label, name, value)
        else:
            raise ConfigError(f"{label}: unknown key {name}")
    return flat


# --- layers -----------------------------------------------------------------------------------


def user_config_path() -> Path:
    """``config.yaml`` in the platform's user config dir (``~/.config/git-forge``)."""
    return Path(user_config_dir()) / USER_CONFIG


def only_comments(text: str) -> bool:
    """True when ``text`` is certainly an empty YAML stream: every line blank or a
    comment made of printable characters (Python's printable set lies inside
    YAML's). Anything else — a tab, a BOM, a lone ``\\r``, a directive — is left
    to the YAML parser, which may still find it empty."""
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        content = line.lstrip(" ")
        if content and not (content.startswith("#") and content.isprintable()):
            return False
    return True


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {os_error_text(exc)}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text: {exc}") from exc
    if only_comments(text):
        # The example .forge.yaml ``init`` writes is all comments: nothing to parse.
        return None
    from git_forge import yamlfile  # common-case boundary: PyYAML only for settings

    try:
        return yamlfile.load_yaml(text, path)
    except DocumentTooComplex as exc:
        raise ConfigError(exc.message) from exc
    except yamlfile.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {yamlfile.yaml_problem(exc)}") from exc


def feature_forge_layer(path: Path) -> dict[str, Any]:
    """The ``loopRunner`` block of a forge.config.json as dotted keys (extras kept),
    with the ``.rauf`` state dir default its presence implies."""
    try:
        document = load_json(path.read_text(encoding="utf-8"), path)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {os_error_text(exc)}") from exc
    except DocumentTooComplex as exc:
        raise ConfigError(exc.message) from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top level")
    block = document.get("loopRunner", {})
    if block is None:
        block = {}
    if not isinstance(block, dict):
        raise ConfigError(f"{path}: loopRunner must be an object")
    flat: dict[str, Any] = {"loopRunner.stateDir": RAUF_STATE_DIR}
    for name, value in block.items():
        key = f"loopRunner.{name}"
        flat[key] = _checked_value(str(path), key, value) if key in KEYS else value
    return flat


def load_config(
    root: Path | str | None,
    flags: Mapping[str, Any] | None = None,
    *,
    user_path: Path | None = None,
    feature_forge: Path | None = None,
) -> Config:
    """The effective configuration for the repository at ``root``.

    ``flags`` maps dotted keys to command-line values; ``None`` values are
    flags that were not given. ``root`` may be ``None`` outside any project.
    ``feature_forge``: the forge.config.json a ``--config PATH`` names, read instead
    of the root's; where no file is, there is no such layer (feature-forge's
    defaults, as feature-forge takes an absent ``--config``), and a file that is
    there must be valid.
    """
    config = Config()
    for key, spec in KEYS.items():
        config.set(key, spec.default, SOURCE_DEFAULT)

    user = user_path if user_path is not None else user_config_path()
    users: dict[str, Any] = {}
    if user.is_file():
        label = f"user ({user})"
        users = _flatten(str(user), _read_yaml(user))
        for key, value in users.items():
            config.set(key, value, label)

    if root is not None:
        root = Path(root)
        repo = root / REPO_CONFIG
        if repo.is_file():
            for key, value in _flatten(str(repo), _read_yaml(repo)).items():
                _refuse_widening(str(repo), key)
                if not _weakens(key, value, users):
                    config.set(key, value, SOURCE_REPO)
    if feature_forge is None and root is not None:
        feature_forge = root / FEATURE_FORGE_CONFIG
    if feature_forge is not None and feature_forge.is_file():
        for key, value in feature_forge_layer(feature_forge).items():
            config.set(key, value, SOURCE_FEATURE_FORGE)

    for key, value in (flags or {}).items():
        if value is not None:
            config.set(key, value, SOURCE_FLAG)
    return config


#: How strict each sandbox setting's values are, least first: a repository's file
#: (which a clone brings, and an agent in a tree could write) never weakens what the
#: user's own config chose.
_STRICTNESS = {"loop.sandbox": ("none", "auto", "bwrap"), "loop.sandboxNet": ("shared", "none")}


def _weakens(key: str, value: Any, users: Mapping[str, Any]) -> bool:
    """Whether the repository's ``value`` for ``key`` is less strict than the user's."""
    order = _STRICTNESS.get(key)
    if order is None or key not in users or value not in order or users[key] not in order:
        return False
    return order.index(value) < order.index(users[key])


def _refuse_widening(label: str, key: str) -> None:
    """What a sandboxed agent may write beyond its tree is the user's to say, never a
    repository's."""
    if key == "loop.sandboxWritable":
        raise ConfigError(f"{label}: loop.sandboxWritable is set only in your own config "
                          f"({user_config_path()}) or with --sandbox-writable: a repository "
                          "must not widen what its agents may write")


# --- the decision verbs' resolver (feature-forge compatible) ---------------------------------


def feature_forge_state_dir(config_path: Path) -> str | None:
    """The state dir a feature-forge config implies, or ``None`` without one.

    Mirrors feature-forge's own resolver: an existing ``forge.config.json``
    selects its ``loopRunner.stateDir``, defaulting to ``.rauf``; ``""`` is kept,
    as there, and means the backlog dir itself. Unlike feature-forge, a file that is
    there but not a valid configuration is refused (``feature_forge_layer``), as
    every other command refuses it, rather than read as the defaults: a record
    written under a state dir the user did not mean is a decision lost.
    """
    if not config_path.is_file():
        return None
    state_dir = feature_forge_layer(config_path)["loopRunner.stateDir"]
    return state_dir if isinstance(state_dir, str) else RAUF_STATE_DIR


def decision_state_dir(
    explicit: str | None, config_path: Path, effective: Config | None = None
) -> str:
    """State dir for the ``decision`` verbs: ``--state-dir`` (``''`` included: the
    backlog dir itself, as in feature-forge), else the forge.config.json at
    ``--config``, else the effective configuration's ``loopRunner.stateDir``
    (git-forge's default without one)."""
    if explicit is not None:
        return explicit
    implied = feature_forge_state_dir(config_path)
    if implied is not None:
        return implied
    return effective.state_dir if effective is not None else DEFAULT_STATE_DIR
