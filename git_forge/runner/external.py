"""The external runner: a rauf-compatible program driven through argv templates.

Each template (``listCommand``, ``versionCommand``, the answer and unblock
commands of recovery.md) is split into argv once with ``shlex``; then every
``{bin}``, ``{backlogDir}``, ``{id}`` and ``{answer}`` is substituted *inside* its
argv element, in one pass, and the argv is executed without a shell. An answer
such as ``"; touch pwned #`` therefore reaches the runner as one literal
argument and can never become a command. Non-zero exits and unparseable output
are raised as ``RunnerError`` quoting the runner verbatim.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from git_forge import capture
from git_forge.backlog.errors import BacklogError
from git_forge.backlog.item import Item
from git_forge.backlog.topology import parse_items
from git_forge.credentials import credential_refusal
from git_forge.errors import os_error_text
from git_forge.parsing import DocumentTooComplex, load_json
from git_forge.runner.base import Runner, RunnerError
from git_forge.runner.versions import is_answer_capable

#: Seconds a single runner command may take before it is abandoned.
DEFAULT_TIMEOUT = 120.0
#: How much of an unparseable output a message quotes.
_QUOTE_LIMIT = 2000
_TOKEN = re.compile(r"\{(bin|backlogDir|id|answer)\}")


def split_template(name: str, template: str) -> list[str]:
    """A command template as argv; an unusable template is a ``RunnerError``."""
    try:
        argv = shlex.split(template)
    except ValueError as exc:
        raise RunnerError(f"loopRunner.{name} cannot be split into arguments ({exc}): "
                          f"{template}") from exc
    if not argv:
        raise RunnerError(f"loopRunner.{name} is empty")
    return argv


def substitute(argv: list[str], values: dict[str, str | None]) -> list[str]:
    """Replace ``{token}``s inside each element, in one pass (a substituted value
    is never scanned again). An element that is exactly a token whose value is
    ``None`` is dropped (``unblock`` without an id)."""
    result: list[str] = []
    for element in argv:
        tokens = _TOKEN.findall(element)
        if any(values.get(token, "") is None for token in tokens):
            if _TOKEN.fullmatch(element):
                continue
            raise RunnerError(f"cannot leave {{{tokens[0]}}} empty inside {element!r}")
        result.append(_TOKEN.sub(lambda match: str(values.get(match.group(1), match.group(0))),
                                 element))
    return result


def _quote(text: str) -> str:
    text = text.strip()
    if len(text) > _QUOTE_LIMIT:
        return f"{text[:_QUOTE_LIMIT]}… ({len(text) - _QUOTE_LIMIT} more characters)"
    return text or "(no output)"


class ExternalRunner(Runner):
    """A runner program such as rauf, or git-forge itself as ``bin``."""

    kind = "external"

    def __init__(
        self,
        *,
        bin: str,
        root: Path,
        backlog_dir: str,
        list_command: str,
        version_command: str,
        answer_command: str,
        unblock_command: str,
        recovery_min_version: str = "0.14.0",
        install_hint: str | None = None,
        run_command: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.bin = bin
        self.root = Path(root)
        self.backlog_dir = backlog_dir
        self.templates = {"listCommand": list_command, "versionCommand": version_command,
                          "answerCommand": answer_command, "unblockCommand": unblock_command}
        if run_command:
            self.templates["runCommand"] = run_command
        self.recovery_min_version = recovery_min_version
        self.install_hint = install_hint
        self.timeout = timeout
        self._probe: tuple[str | None, str | None] | None = None

    def describe(self) -> str:
        return f"external ({self.bin})"

    # --- running ---------------------------------------------------------------------------

    def resolve_bin(self) -> str:
        """A bare ``bin`` is looked up on PATH; one containing ``/`` is relative to
        the repository root."""
        if "/" in self.bin:
            path = Path(self.bin)
            return str(path if path.is_absolute() else self.root / path)
        found = shutil.which(self.bin)
        if found is None:
            hint = f"; {self.install_hint}" if self.install_hint else ""
            raise RunnerError(f"runner {self.bin!r} not found on PATH{hint}")
        return found

    def argv(self, name: str, *, item_id: str | None = None, answer: str = "") -> list[str]:
        """The argv of one templated command, substituted and ready to execute."""
        values = {"bin": self.resolve_bin(), "backlogDir": self.backlog_dir, "id": item_id,
                  "answer": answer}
        return substitute(split_template(name, self.templates[name]), values)

    def run(self, argv: list[str]) -> str:
        """Run ``argv`` (no shell, cwd = repository root); its stdout, or a
        ``RunnerError`` quoting the runner when it fails (of its stderr, only the
        tail is kept: ``capture``)."""
        shown = shlex.join(argv)
        try:
            proc = capture.run(argv, cwd=self.root, timeout=self.timeout, keep_stdout=True)
        except capture.HelperTimeout as exc:
            raise RunnerError(f"`{shown}` did not finish within {self.timeout:g}s",
                              argv=argv) from exc
        except OSError as exc:
            raise RunnerError(f"cannot run `{shown}`: {os_error_text(exc)}", argv=argv) from exc
        stdout = proc.stdout.decode("utf-8", "replace")
        stderr = proc.stderr.decode("utf-8", "replace")
        if proc.returncode != 0:
            raise RunnerError(
                f"`{shown}` exited with status {proc.returncode}: {_quote(stderr or stdout)}",
                argv=argv, exit_status=proc.returncode, stdout=stdout, stderr=stderr,
            )
        return stdout

    @staticmethod
    def decode(argv: list[str], stdout: str) -> Any:
        """``stdout`` as JSON, or a ``RunnerError`` quoting it."""
        try:
            return load_json(stdout, f"the output of `{shlex.join(argv)}`")
        except (ValueError, DocumentTooComplex) as exc:
            raise RunnerError(
                f"`{shlex.join(argv)}` printed output that is not JSON ({exc}): {_quote(stdout)}",
                argv=argv, exit_status=0, stdout=stdout,
            ) from exc

    def run_json(self, argv: list[str]) -> Any:
        """Run ``argv`` and parse its stdout as JSON."""
        return self.decode(argv, self.run(argv))

    def launch(self) -> int:
        """Run the runner's own loop (``runCommand``) in the foreground: stdio and
        Ctrl-C are the operator's, the exit status is the runner's."""
        if "runCommand" not in self.templates:
            raise RunnerError(f"loopRunner.runCommand is not set: git-forge does not know how "
                              f"to start {self.bin}'s loop (e.g. '{{bin}} run . --backlog "
                              f"{{backlogDir}}')")
        argv = self.argv("runCommand")
        try:
            return subprocess.run(argv, cwd=self.root, check=False).returncode
        except OSError as exc:
            raise RunnerError(f"cannot run `{shlex.join(argv)}`: {os_error_text(exc)}",
                              argv=argv) from exc

    # --- the contract ----------------------------------------------------------------------

    def list_items(self) -> list[Item]:
        """The list output (a bare array, or ``{"items": [...]}``), read by the same
        rules as ``backlog topology --items-stdin``."""
        argv = self.argv("listCommand")
        stdout = self.run(argv)
        self.decode(argv, stdout)
        try:
            return parse_items(stdout)
        except BacklogError as exc:
            raise RunnerError(
                f"`{shlex.join(argv)}` printed an item list that cannot be used "
                f"({exc.message}): {_quote(stdout)}", argv=argv, exit_status=0, stdout=stdout,
            ) from exc

    def _object(self, argv: list[str]) -> dict[str, object]:
        document = self.run_json(argv)
        if not isinstance(document, dict):
            raise RunnerError(f"`{shlex.join(argv)}` printed JSON that is not an object: "
                              f"{_quote(json.dumps(document))}", argv=argv)
        return document

    def answer(self, item_id: str, text: str) -> dict[str, object]:
        refusal = credential_refusal(text, f"to pass the answer for {item_id} to the runner")
        if refusal:
            raise RunnerError(refusal)
        return self._object(self.argv("answerCommand", item_id=item_id, answer=text))

    def unblock(self, item_id: str | None = None) -> dict[str, object]:
        return self._object(self.argv("unblockCommand", item_id=item_id))

    def probe_version(self) -> tuple[str | None, str | None]:
        """``(version, None)`` or ``(None, why)``; probed once per runner object."""
        if self._probe is None:
            try:
                document = self._object(self.argv("versionCommand"))
            except RunnerError as exc:
                self._probe = (None, exc.message)
            else:
                version = document.get("version")
                self._probe = ((version, None) if isinstance(version, str) and version
                               else (None, f"no version in {_quote(json.dumps(document))}"))
        return self._probe

    def version(self) -> str | None:
        """The runner's version string, or ``None`` (a miss is not an error)."""
        return self.probe_version()[0]

    def answer_capable(self) -> bool:
        return is_answer_capable(self.version(), self.recovery_min_version)
