"""Read-only access to a process root, from any process: list, show, read, render,
wait and request a stop. This is what ``git forge proc`` uses; it works while
the owning supervisor runs in another process and after it is gone, because it
only reads durable manifests and spools (and writes nothing but stop requests).
Removing finished processes is ``retention``'s, which ``proc list`` never imports.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from git_forge.lockprobe import lock_is_held
from git_forge.supervisor import liveness
from git_forge.supervisor.buffer import Chunk
from git_forge.supervisor.handles import is_valid_handle
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import Manifest, ManifestStore
from git_forge.supervisor.paths import ProcPaths
from git_forge.supervisor.render import RenderedOutput, render_base64, render_text
from git_forge.supervisor.requests import (
    DEFAULT_GRACE_SECONDS,
    StopRequest,
    check_stop,
    discard_stop_request,
    write_stop_request,
)
from git_forge.supervisor.spool import Extent, SpoolReader

POLL_SECONDS = 0.1
#: How long a requested stop may take beyond its grace period before we say so.
STOP_MARGIN_SECONDS = 10.0
#: The shortest handle prefix ``resolve`` accepts (git's shortest abbreviation).
MIN_PREFIX = 4
#: Candidates an ambiguous reference names at most.
MAX_CANDIDATES = 8


def render_chunk(
    handle: str, chunk: Chunk, *, total_bytes: int, terminal: bool, max_bytes: int,
    encoding: str = "text",
) -> RenderedOutput:
    """Render one read. ``terminal`` must describe the process as it was *before*
    the read, so that "terminal and at the end" really means no byte will follow."""
    if encoding == "base64":
        return render_base64(handle, chunk, total_bytes=total_bytes)
    if encoding != "text":
        raise ProcessError("invalid_arguments", f"unknown encoding {encoding!r}")
    return render_text(
        handle, chunk, total_bytes=total_bytes, end_of_stream=terminal,
        window_full=max_bytes > 0 and len(chunk.data) >= max_bytes,
    )


class ProcView:
    def __init__(self, root: Path | str, spool_root: Path | str | None = None) -> None:
        self.store = ManifestStore(root)
        self.paths = self.store.paths
        self.spool_paths = ProcPaths(Path(spool_root)) if spool_root else self.paths

    def manifest(self, handle: str) -> Manifest:
        return self.store.load(handle)

    def resolve(self, reference: str, label: str | None = None, noun: str = "label",
                named: Callable[[str, list[str]], str | None] | None = None,
                aside: str | None = None) -> str:
        """The handle ``reference`` names: a whole handle, a unique prefix of one
        (at least ``MIN_PREFIX`` characters), or — with ``label`` — a value of that
        origin label (the latest process started with it; the loop's ``item_id``
        lets an operator name an item, which ``noun`` words). ``named`` is how a
        reference names a value among those the processes carry (the caller's rule:
        an item's short number; default: the value itself). An ambiguous reference
        is ``invalid_arguments`` naming the candidates; one that names nothing is
        ``not_found``. ``aside``: a label that sets a process aside — the latest with
        the value is one without it, when there is one (the loop's verification gates
        carry ``gate``: an item's latest process is its agent's).

        Only the manifest root is listed and only handles it holds are returned:
        the reference itself never becomes part of a path, and nothing is created.
        """
        if is_valid_handle(reference):
            return reference
        handles = self.store.scan()
        prefixed = [h for h in handles if h.startswith(reference)] if reference else []
        matches = list(prefixed) if len(reference) >= MIN_PREFIX else []
        latest = self._latest_with(label, reference, named, aside) if label else None
        if latest is not None and latest not in matches:
            matches.append(latest)
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(
                f"{h} ({noun} {reference}'s latest)" if h == latest else h
                for h in matches[:MAX_CANDIDATES])
            more = f" and {len(matches) - MAX_CANDIDATES} more" if (
                len(matches) > MAX_CANDIDATES) else ""
            raise ProcessError("invalid_arguments",
                               f"{reference!r} is ambiguous: it could be {shown}{more}")
        if prefixed:  # too short a prefix of some handle (handles are random: say both)
            raise ProcessError("not_found", f"no process or {noun} matches {reference!r} (a "
                                            f"handle prefix needs at least {MIN_PREFIX} "
                                            "characters)")
        raise ProcessError("not_found", f"no process or {noun} matches {reference!r}")

    def _latest_with(self, label: str, reference: str,
                     named: Callable[[str, list[str]], str | None] | None,
                     aside: str | None = None) -> str | None:
        """The most recently created process whose origin ``label`` is the value
        ``reference`` names (``named``; default: ``reference`` itself), one without
        the label ``aside`` first."""
        if not reference:
            return None
        manifests, _ = self.manifests()
        value: str | None = reference
        if named is not None:
            carried = {m.origin.get(label) for m in manifests}
            value = named(reference, sorted(v for v in carried if isinstance(v, str)))
        mine = [m for m in manifests if value is not None and m.origin.get(label) == value]
        preferred = [m for m in mine if aside is None or m.origin.get(aside) is None]
        return (preferred or mine)[-1].handle if mine else None

    def manifests(self) -> tuple[list[Manifest], list[ProcessError]]:
        """Every readable manifest (oldest first) and an error for each unreadable one."""
        found: list[Manifest] = []
        errors: list[ProcessError] = []
        for handle in self.store.scan():
            try:
                found.append(self.store.load(handle))
            except ProcessError as exc:
                if exc.code != "not_found":  # deleted between scan and load
                    errors.append(exc)
        found.sort(key=lambda manifest: (manifest.created_at, manifest.handle))
        return found, errors

    def spool(self, handle: str) -> SpoolReader:
        return SpoolReader(self.spool_paths.spool(handle))

    def extent(self, manifest: Manifest) -> Extent:
        """The spool's extent, checked against what the manifest made durable."""
        extent = self.spool(manifest.handle).extent()
        if extent.total_bytes < manifest.cursors.total_bytes:
            raise ProcessError(
                "spool_corrupt",
                f"the spool of {manifest.handle} holds fewer bytes than its manifest records",
            )
        return extent

    def total_bytes(self, manifest: Manifest) -> int:
        """The bytes ``manifest``'s process has written so far: a running process's
        output grows past its manifest's cursors, so the spool is asked (an
        unreadable spool leaves the manifest's count)."""
        if manifest.terminal:
            return manifest.cursors.total_bytes
        try:
            return max(manifest.cursors.total_bytes,
                       self.spool(manifest.handle).extent().total_bytes)
        except ProcessError:
            return manifest.cursors.total_bytes

    def read(self, handle: str, cursor: int, max_bytes: int) -> tuple[Manifest, Chunk, int]:
        """(manifest before the read, the chunk, total bytes at the read)."""
        manifest = self.store.load(handle)
        extent = self.extent(manifest)
        chunk = self.spool(handle).read(cursor, max_bytes)
        return manifest, chunk, max(chunk.next_cursor, extent.total_bytes)

    def render(
        self, handle: str, cursor: int, max_bytes: int, encoding: str = "text"
    ) -> tuple[Manifest, RenderedOutput]:
        manifest, chunk, total = self.read(handle, cursor, max_bytes)
        rendered = render_chunk(
            handle, chunk, total_bytes=total, terminal=manifest.terminal, max_bytes=max_bytes,
            encoding=encoding,
        )
        return manifest, rendered

    def owner_alive(self) -> bool:
        """True while a live supervisor owns this root (it holds the owner lock)."""
        return lock_is_held(self.paths.owner_lock)

    def liveness(self, manifest: Manifest, owner_alive: bool | None = None) -> str | None:
        """``None`` for a terminal process; otherwise ``supervised`` (a live supervisor
        owns it), ``orphaned`` (its tree lives with no owner) or ``gone`` (nothing
        is left; the next restore marks it lost)."""
        if manifest.terminal:
            return None
        if self.owner_alive() if owner_alive is None else owner_alive:
            return "supervised"
        return "orphaned" if liveness.tree_alive(self.paths.alive(manifest.handle)) else "gone"

    def end_orphan(self, handle: str, grace: float | None = None) -> int | None:
        """Stop the tree of ``handle`` when it lives with no live owner, through the
        processes holding its liveness lock; the count ended, or ``None`` when it is
        not an orphan (a live owner's process is stopped through a request)."""
        self.store.load(handle)  # not_found for a handle that names nothing
        path = self.paths.alive(handle)
        if self.owner_alive() or not liveness.tree_alive(path):
            return None
        return liveness.end_orphan(
            path, DEFAULT_GRACE_SECONDS if grace is None else grace)

    def wait(self, handles: list[str], timeout: float | None = None) -> list[Manifest]:
        """Wait until every handle is terminal; ``owner_gone`` when nobody will finish one."""
        manifests = {handle: self.store.load(handle) for handle in handles}
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            pending = [h for h, manifest in manifests.items() if not manifest.terminal]
            if not pending:
                return [manifests[handle] for handle in handles]
            owner_alive = self.owner_alive()
            for handle in pending:
                manifests[handle] = self.store.load(handle)
            still = [h for h in pending if not manifests[h].terminal]
            if still and not owner_alive:
                raise ProcessError(
                    "owner_gone",
                    f"no running loop owns {still[0]}; the next loop run reconciles it",
                    handle=still[0],
                )
            if still and deadline is not None and time.monotonic() >= deadline:
                raise ProcessError(
                    "wait_timeout", f"{still[0]} is still {manifests[still[0]].state}",
                    handle=still[0],
                )
            if still:
                time.sleep(POLL_SECONDS)

    def stop(self, handle: str, mode: str = "terminate", grace: float | None = None) -> Manifest:
        """Ask the owning supervisor to stop ``handle`` and wait for the outcome.

        A terminal process gets nothing and its snapshot comes back. ``interrupt``
        never escalates: after ``grace`` seconds the snapshot comes back as it is.
        """
        check_stop(mode, grace)
        manifest = self.store.load(handle)
        if manifest.terminal:
            return manifest
        if not self.owner_alive():
            manifest = self.store.load(handle)
            if manifest.terminal:
                return manifest
            raise ProcessError(
                "owner_gone", "no running loop owns it; the next loop run reconciles it",
                handle=handle,
            )
        write_stop_request(self.paths, handle, StopRequest(mode, grace))
        wait_for = (grace if grace is not None else DEFAULT_GRACE_SECONDS) + (
            0.0 if mode == "interrupt" else STOP_MARGIN_SECONDS
        )
        try:
            return self.wait([handle], timeout=wait_for)[0]
        except ProcessError as exc:
            if exc.code == "wait_timeout" and mode == "interrupt":
                return self.store.load(handle)
            raise
        finally:
            if self.store.load(handle).terminal:
                discard_stop_request(self.paths, handle)
