"""Process manifests (``{stateDir}/proc/<handle>.manifest.json``) and their store.

A manifest is the durable identity and outcome of one supervised process. The
store enforces on disk what the lifecycle promises in memory: identity never
changes, a state change is an allowed edge, a terminal result is final, cursors
and the completion marker only move forward, and an allocated lifecycle event id
is never replaced. A file that does not parse is never overwritten.
"""

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple, NotRequired, TypedDict, cast

from git_forge.clock import parse_stamp, precise_now
from git_forge.errors import StoreError, os_error_text
from git_forge.jsonfile import read_json, write_json
from git_forge.layout import MANIFEST_SUFFIX
from git_forge.locks import locked
from git_forge.parsing import DocumentTooComplex, load_json
from git_forge.supervisor.handles import is_valid_handle, require_handle
from git_forge.supervisor.lifecycle import (
    ALL_STATES,
    REASONS,
    ProcessError,
    State,
    check_transition,
    is_terminal,
)
from git_forge.supervisor.paths import FILE_MODE, ProcPaths

MANIFEST_VERSION = 1


def finish_time(created_at: str) -> str:
    """Now, but never before ``created_at`` (the wall clock may have stepped back)."""
    now = precise_now()
    return created_at if parse_stamp(now) < parse_stamp(created_at) else now


def new_event_id() -> str:
    return str(uuid.uuid4())


class Owner(NamedTuple):
    """Who started the process (opaque to the supervisor)."""

    run_id: str


Label = str | int | None


class Origin(NamedTuple):
    """What the process was started for: labels its caller chose (the loop gives
    ``item_id`` and ``iteration``), stored and handed back as they are. The
    supervisor never reads them; it only keeps them scalars (strings, integers,
    null), so every manifest stays a flat, comparable record."""

    labels: tuple[tuple[str, Label], ...] = ()

    @classmethod
    def of(cls, labels: Mapping[str, Any] | None = None) -> "Origin":
        """From a mapping; ``ValueError`` for a label that is not a scalar."""
        pairs = []
        for key, value in (labels or {}).items():
            if not isinstance(key, str) or not (
                value is None or isinstance(value, str)
                or (isinstance(value, int) and not isinstance(value, bool))):
                raise ValueError(f"origin label {key!r} is not a string, integer or null")
            pairs.append((key, value))
        return cls(tuple(pairs))

    def get(self, key: str) -> Label:
        return dict(self.labels).get(key)

    def to_dict(self) -> dict[str, Label]:
        return dict(self.labels)


class SandboxJSON(TypedDict):
    """What a manifest says of the sandbox its process ran in (docs/manifests.md;
    ``supervisor.sandbox`` describes one so)."""

    kind: str
    writable: list[str]
    network: bool


class Command(NamedTuple):
    argv: tuple[str, ...]
    cwd: str
    #: The sandbox it ran in, if any (``sandbox.Sandbox.describe``).
    sandbox: SandboxJSON | None = None


class Cursors(NamedTuple):
    """The durable output window: bytes ``[retained_from, total_bytes)`` are kept."""

    total_bytes: int = 0
    retained_from: int = 0


class Result(NamedTuple):
    exit_code: int | None = None
    reason: str | None = None


class EventIds(NamedTuple):
    """Lifecycle ids minted before the spawn, so every publication can be retried
    and deduplicated by id."""

    started: str | None = None
    completed: str | None = None
    lost: str | None = None
    command_id: str | None = None

    @classmethod
    def mint(cls) -> "EventIds":
        return cls(new_event_id(), new_event_id(), new_event_id(), new_event_id())


class OwnerJSON(TypedDict):
    run_id: str


class CommandJSON(TypedDict):
    argv: list[str]
    cwd: str
    sandbox: NotRequired[SandboxJSON]


class CursorsJSON(TypedDict):
    total_bytes: int
    retained_from: int


class ResultJSON(TypedDict):
    exit_code: int | None
    reason: str | None


class EventIdsJSON(TypedDict):
    started: str | None
    completed: str | None
    lost: str | None
    command_id: str | None


class ManifestJSON(TypedDict):
    """A manifest on disk (formats.md, "Supervisor manifests"): snake_case keys,
    the optional timestamps left out while unset."""

    version: int
    handle: str
    owner: OwnerJSON
    origin: dict[str, Label]
    command: CommandJSON
    state: str
    created_at: str
    started_at: NotRequired[str]
    finished_at: NotRequired[str]
    deadline: NotRequired[str]
    cursors: CursorsJSON
    result: ResultJSON
    events: EventIdsJSON
    completion_published: int
    #: The caller's JSON object, opaque here (``Manifest.receipt``).
    receipt: NotRequired[dict[str, object]]
    #: What its sandbox removed as it ended (``Manifest.sandbox_removed``).
    sandbox_removed: NotRequired[list[str]]


class Manifest(NamedTuple):
    handle: str
    owner: Owner
    origin: Origin
    command: Command
    state: str
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    deadline: str | None = None
    cursors: Cursors = Cursors()
    result: Result = Result()
    events: EventIds = EventIds()
    completion_published: int = 0
    version: int = MANIFEST_VERSION
    #: What the caller made of the process (a JSON object it handed the gate, see
    #: ``PreparedProcess.receipt``): opaque here, written once, never changed.
    receipt: dict[str, object] | None = None
    #: What the process made that its sandbox must not leave behind, removed as it
    #: ended (``sandbox.Sandbox.absent``).
    sandbox_removed: tuple[str, ...] = ()

    @property
    def terminal(self) -> bool:
        return is_terminal(self.state)

    def evolve(self, **changes: Any) -> "Manifest":
        return self._replace(**changes)

    def to_dict(self) -> ManifestJSON:
        """The on-disk form: snake_case keys, optional timestamps omitted when unset."""
        document: dict[str, object] = {
            "version": self.version,
            "handle": self.handle,
            "owner": {"run_id": self.owner.run_id},
            "origin": self.origin.to_dict(),
            "command": self._command(),
            "state": self.state,
            "created_at": self.created_at,
        }
        for key in ("started_at", "finished_at", "deadline"):
            value = getattr(self, key)
            if value is not None:
                document[key] = value
        document["cursors"] = {
            "total_bytes": self.cursors.total_bytes,
            "retained_from": self.cursors.retained_from,
        }
        document["result"] = {"exit_code": self.result.exit_code, "reason": self.result.reason}
        document["events"] = {
            "started": self.events.started,
            "completed": self.events.completed,
            "lost": self.events.lost,
            "command_id": self.events.command_id,
        }
        document["completion_published"] = self.completion_published
        if self.receipt is not None:
            document["receipt"] = self.receipt
        if self.sandbox_removed:
            document["sandbox_removed"] = list(self.sandbox_removed)
        return cast(ManifestJSON, document)

    def _command(self) -> CommandJSON:
        command: CommandJSON = {"argv": list(self.command.argv), "cwd": self.command.cwd}
        if self.command.sandbox is not None:
            command["sandbox"] = self.command.sandbox
        return command

    @classmethod
    def from_dict(cls, document: Any) -> "Manifest":
        """Parse the on-disk form; ``ValueError`` names the first thing that is wrong."""
        if not isinstance(document, dict):
            raise ValueError("not a JSON object")
        owner = _object(document, "owner")
        origin = _object(document, "origin")
        command = _object(document, "command")
        cursors = _object(document, "cursors")
        result = _object(document, "result")
        events = _object(document, "events")
        argv = command.get("argv")
        if not isinstance(argv, list) or not all(isinstance(arg, str) for arg in argv):
            raise ValueError("command.argv is not a list of strings")
        return cls(
            version=_typed(document, "version", int),
            handle=_typed(document, "handle", str),
            owner=Owner(run_id=_typed(owner, "run_id", str)),
            origin=Origin.of(origin),
            command=Command(argv=tuple(argv), cwd=_typed(command, "cwd", str),
                            sandbox=_sandbox(command.get("sandbox"))),
            state=_typed(document, "state", str),
            created_at=_typed(document, "created_at", str),
            started_at=_typed(document, "started_at", str, optional=True),
            finished_at=_typed(document, "finished_at", str, optional=True),
            deadline=_typed(document, "deadline", str, optional=True),
            cursors=Cursors(
                total_bytes=_typed(cursors, "total_bytes", int),
                retained_from=_typed(cursors, "retained_from", int),
            ),
            result=Result(
                exit_code=_typed(result, "exit_code", int, optional=True),
                reason=_typed(result, "reason", str, optional=True),
            ),
            events=EventIds(
                started=_typed(events, "started", str, optional=True),
                completed=_typed(events, "completed", str, optional=True),
                lost=_typed(events, "lost", str, optional=True),
                command_id=_typed(events, "command_id", str, optional=True),
            ),
            completion_published=_typed(document, "completion_published", int),
            receipt=_typed(document, "receipt", dict, optional=True),
            sandbox_removed=_removed(document.get("sandbox_removed")),
        )


def _sandbox(value: object) -> SandboxJSON | None:
    if value is None:
        return None
    if not (isinstance(value, dict) and isinstance(value.get("kind"), str)
            and isinstance(value.get("network"), bool)
            and isinstance(value.get("writable"), list)
            and all(isinstance(path, str) for path in value["writable"])):
        raise ValueError("command.sandbox is not a sandbox")
    return {"kind": value["kind"], "writable": list(value["writable"]),
            "network": value["network"]}


def _removed(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(path, str) for path in value):
        raise ValueError("sandbox_removed is not a list of paths")
    return tuple(value)


def _object(document: dict[str, object], key: str) -> dict[str, object]:
    value = document.get(key)
    if not isinstance(value, dict):
        raise ValueError(f"{key} is not an object")
    return value


def _typed(document: dict[str, object], key: str, kind: type, *,
           optional: bool = False) -> Any:
    value = document.get(key)
    if value is None and optional:
        return None
    # bool is an int subclass; a JSON true is never a count or an exit code.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{key} is not a {kind.__name__}")
    return value


def _timestamp_problem(value: str | None, name: str) -> str | None:
    if value is None:
        return None
    try:
        stamp = parse_stamp(value)
    except ValueError:
        return f"{name} is not an ISO-8601 timestamp"
    if stamp.tzinfo is None:
        return f"{name} has no time zone"
    return None


def manifest_problem(manifest: Manifest) -> str | None:
    """The first rule ``manifest`` breaks on its own, or ``None`` when it is valid."""
    if manifest.version != MANIFEST_VERSION:
        return f"unsupported manifest version {manifest.version}"
    if not is_valid_handle(manifest.handle):
        return "handle is not a valid process handle"
    if not manifest.owner.run_id:
        return "owner.run_id is empty"
    if not manifest.command.argv or not manifest.command.argv[0]:
        return "command.argv is empty"
    if manifest.state not in ALL_STATES:
        return f"unknown state {manifest.state!r}"
    for name in ("created_at", "started_at", "finished_at", "deadline"):
        problem = _timestamp_problem(getattr(manifest, name), name)
        if problem:
            return problem
    terminal = is_terminal(manifest.state)
    if terminal != (manifest.finished_at is not None):
        return "finished_at must be set exactly when the state is terminal"
    if manifest.finished_at is not None and (
        parse_stamp(manifest.finished_at) < parse_stamp(manifest.created_at)
    ):
        return "finished_at is before created_at"
    if manifest.state == State.RUNNING and manifest.started_at is None:
        return "a running manifest needs started_at"
    if (manifest.result.exit_code is not None) != (manifest.state == State.EXITED):
        return "exit_code must be set exactly when the state is exited"
    expected_reason = REASONS.get(manifest.state)
    if manifest.result.reason != expected_reason:
        return f"result.reason must be {expected_reason!r} in state {manifest.state}"
    cursors = manifest.cursors
    if cursors.total_bytes < 0 or cursors.retained_from < 0:
        return "cursors must not be negative"
    if cursors.retained_from > cursors.total_bytes:
        return "cursors.retained_from is beyond cursors.total_bytes"
    if manifest.completion_published < 0:
        return "completion_published must not be negative"
    for name in ("started", "completed", "lost", "command_id"):
        value = getattr(manifest.events, name)
        if value is not None:
            try:
                uuid.UUID(value)
            except ValueError:
                return f"events.{name} is not a UUID"
    return None


def validate(manifest: Manifest) -> None:
    problem = manifest_problem(manifest)
    if problem:
        raise ProcessError("invalid_arguments", f"invalid manifest: {problem}")


def check_update(old: Manifest, new: Manifest) -> None:
    """Refuse a save that would rewrite what ``old`` already made permanent."""
    if (old.handle, old.owner, old.origin) != (new.handle, new.owner, new.origin):
        raise ProcessError("manifest_conflict", "identity (handle, owner, origin) is immutable")
    if (old.command, old.created_at) != (new.command, new.created_at):
        raise ProcessError("manifest_conflict", "command and created_at are immutable")
    if old.state != new.state:
        check_transition(old.state, new.state)
    if old.terminal and (old.result, old.finished_at) != (new.result, new.finished_at):
        raise ProcessError("manifest_conflict", "a terminal result never changes")
    if old.terminal and old.cursors != new.cursors:
        raise ProcessError("manifest_conflict", "the cursors of a terminal manifest are final")
    if new.cursors.total_bytes < old.cursors.total_bytes:
        raise ProcessError("manifest_conflict", "cursors.total_bytes moved backward")
    if new.cursors.retained_from < old.cursors.retained_from:
        raise ProcessError("manifest_conflict", "cursors.retained_from moved backward")
    if new.completion_published < old.completion_published:
        raise ProcessError("manifest_conflict", "completion_published moved backward")
    for name in ("started", "completed", "lost", "command_id"):
        before, after = getattr(old.events, name), getattr(new.events, name)
        if before is not None and before != after:
            raise ProcessError("manifest_conflict", f"events.{name} is already allocated")
    if old.receipt is not None and old.receipt != new.receipt:
        raise ProcessError("manifest_conflict", "a receipt never changes once written")


def needs_fsync(manifest: Manifest) -> bool:
    """Whether saving ``manifest`` must be durable before the caller goes on.

    The ``starting`` manifest (before the spawn) and a terminal one before its
    completion is published (before ``exited`` is signalled; restore's
    ``lost_on_restore`` before the ``lost`` event) must. Two versions need not,
    because restore already covers their loss: ``running`` (a ``starting``
    manifest whose tree is gone is reconciled exactly like a ``running`` one,
    and a live tree is an orphan either way) and a terminal manifest whose
    completion is marked published (a lost mark only makes the next restore
    publish again, with the persisted ids, which the journal deduplicates).
    Without fsyncs the replace is still atomic and survives a SIGKILL."""
    if manifest.state == State.RUNNING:
        return False
    return not (manifest.terminal and manifest.completion_published)


class ManifestStore:
    """Load, save, delete and scan the manifests under one explicit root.

    An invalid handle is ``not_found`` before any path exists; reads create
    nothing; writes are atomic (through ``git_forge.atomic``) and mode 0600.
    """

    def __init__(self, root: Path | str) -> None:
        self.paths = ProcPaths(Path(root))

    @property
    def root(self) -> Path:
        return self.paths.root

    def load(self, handle: str) -> Manifest:
        path = self.paths.manifest(handle)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise ProcessError("not_found", "no such process handle") from None
        except OSError as exc:
            raise ProcessError("manifest_corrupt",
                               f"cannot read {path}: {os_error_text(exc)}") from exc
        return _parse(path, raw, handle)

    def exists(self, handle: str) -> bool:
        return self.paths.manifest(handle).exists()

    def save(self, manifest: Manifest) -> None:
        """validate → sidecar lock → load the existing file → update check → atomic replace.

        Durable (fsynced) unless restore already stands in for this version's loss
        in a power cut (``needs_fsync``)."""
        validate(manifest)
        path = self.paths.manifest(manifest.handle)
        try:
            self.paths.ensure_root()
        except OSError as exc:
            raise ProcessError("process_setup_failed",
                               f"cannot create {self.root}: {os_error_text(exc)}") from exc

        def mutate(current: Any) -> ManifestJSON:
            if current is not None:
                try:
                    existing = Manifest.from_dict(current)
                except ValueError as exc:
                    raise ProcessError(
                        "manifest_corrupt", f"{path} is corrupt ({exc}); refusing to touch it"
                    ) from exc
                if existing.handle != manifest.handle:
                    raise ProcessError("manifest_corrupt", f"{path} holds another handle")
                check_update(existing, manifest)
            return manifest.to_dict()

        try:
            # update_json's steps without its sweep for stale temp files, which lists
            # the directory: here a root with one entry per process ever run. Restore
            # sweeps them (``retention.sweep_stale_temp_files``).
            with locked(path):
                current = read_json(path, default=None)
                if current is None and path.exists():
                    raise StoreError(f"{path} is corrupt (it holds JSON null); "
                                     "refusing to touch it")
                write_json(path, mutate(current), indent=None, mode=FILE_MODE,
                           durable=needs_fsync(manifest))
        except StoreError as exc:
            if _unparseable(path):
                raise ProcessError("manifest_corrupt", exc.message) from exc
            raise ProcessError("process_setup_failed", exc.message) from exc

    def delete(self, handle: str) -> None:
        path = self.paths.manifest(handle)
        try:
            path.unlink()
        except FileNotFoundError:
            raise ProcessError("not_found", "no such process handle") from None

    def scan(self) -> list[str]:
        """Handles of every manifest file in the root, sorted; creates nothing."""
        try:
            names = [entry.name for entry in self.root.iterdir()]
        except (FileNotFoundError, NotADirectoryError):
            return []
        handles = [
            name[: -len(MANIFEST_SUFFIX)] for name in names if name.endswith(MANIFEST_SUFFIX)
        ]
        return sorted(handle for handle in handles if is_valid_handle(handle))


def _unparseable(path: Path) -> bool:
    """True when ``path`` exists and does not hold a JSON document."""
    try:
        return load_json(path.read_bytes().decode("utf-8"), path) is None
    except FileNotFoundError:
        return False
    except (OSError, ValueError, DocumentTooComplex):
        return True


def _parse(path: Path, raw: bytes, handle: str) -> Manifest:
    try:
        manifest = Manifest.from_dict(load_json(raw.decode("utf-8"), path))
    except DocumentTooComplex as exc:
        raise ProcessError("manifest_corrupt", exc.message) from exc
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProcessError("manifest_corrupt", f"{path} is corrupt ({exc})") from exc
    problem = manifest_problem(manifest)
    if problem:
        raise ProcessError("manifest_corrupt", f"{path} is invalid ({problem})")
    if manifest.handle != require_handle(handle):
        raise ProcessError("manifest_corrupt", f"{path} holds another handle")
    return manifest
