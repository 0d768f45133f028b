"""The tests a JUnit XML report names as failing, read from an untrusted file.

Most test runners write JUnit XML (``pytest --junitxml``, ``jest-junit``, ``go-junit-
report``, ``cargo nextest``, Maven's surefire): ``<testcase classname=… name=…>``
elements, each holding a ``<failure>`` or an ``<error>`` when it failed (a
``<skipped>`` one did not). A test's id is ``classname::name`` (the name alone
without a class), which is what a baseline's set of failures is compared by.

The report comes from the project's own command, so it is input like any file of a
cloned repository: it is read only up to ``MAX_REPORT_BYTES``, and through the
standard library's expat, whose version here (2.4 and later) refuses an entity
expansion attack and never fetches an external entity.
"""

import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import NamedTuple

from git_forge.errors import ForgeError

#: The largest report read (a suite of 100,000 tests writes about 20 MiB).
MAX_REPORT_BYTES = 64 * 1024 * 1024


class ReportError(ForgeError):
    """The report is missing, too large, or not JUnit XML."""


class Failure(NamedTuple):
    """One failing test: its id, its failure's one-line message, and its text."""

    test_id: str
    message: str
    detail: str


class Report(NamedTuple):
    """A JUnit XML report: how many tests it names, and the failing ones in order."""

    tests: int
    failures: tuple[Failure, ...]

    @property
    def failing(self) -> frozenset[str]:
        return frozenset(failure.test_id for failure in self.failures)


def test_id(classname: str, name: str) -> str:
    return f"{classname}::{name}" if classname else name


def read_report(path: Path) -> Report:
    """The report at ``path``; ``ReportError`` when there is none to read."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ReportError(f"no report at {path} ({exc.strerror})") from exc
    if size > MAX_REPORT_BYTES:
        raise ReportError(f"the report at {path} is larger than {MAX_REPORT_BYTES} bytes")
    try:
        root = ElementTree.parse(path).getroot()
    except (ElementTree.ParseError, OSError) as exc:
        raise ReportError(f"the report at {path} is not XML: {exc}") from exc
    if root.tag not in ("testsuites", "testsuite"):
        raise ReportError(f"the report at {path} is not JUnit XML (its root is <{root.tag}>)")
    tests = 0
    failures: list[Failure] = []
    for case in root.iter("testcase"):
        tests += 1
        failed = case.find("failure")
        if failed is None:
            failed = case.find("error")
        if failed is None:
            continue
        message = (failed.get("message") or "").strip()
        detail = (failed.text or "").strip()
        failures.append(Failure(test_id(case.get("classname") or "", case.get("name") or ""),
                                message.splitlines()[0] if message else "", detail))
    return Report(tests, tuple(failures))
