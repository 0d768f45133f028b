"""What a verification gate's result means: the failing tests of a real JUnit XML
report (written by a real ``pytest --junitxml`` in a project made here), judged
against the loop's starting tip, and hostile reports refused."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import waiting

from git_forge.gates.junit import MAX_REPORT_BYTES, ReportError, read_report
from git_forge.gates.verdict import (
    EXCERPT_CHARS,
    Baseline,
    GateRun,
    describe_baseline,
    judge,
)

PROJECT_TESTS = '''
import pytest

def test_passes():
    assert 1 + 1 == 2

def test_was_red():
    assert "old" == "new", "this one failed before the item"

{extra}

@pytest.mark.skip(reason="not today")
def test_skipped():
    assert False
'''


def pytest_report(tmp_path: Path, extra: str = "") -> tuple[int, Path, str]:
    """Run a real pytest over a small project; its exit status, report and output."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "test_things.py").write_text(PROJECT_TESTS.format(extra=extra))
    report = tmp_path / "report.xml"
    result = waiting.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "no:randomly", f"--junitxml={report}", "test_things.py"],
                         cwd=project, capture_output=True, text=True, timeout=60)
    return result.returncode, report, result.stdout + result.stderr


def test_a_real_pytest_report_names_its_failing_tests(tmp_path: Path) -> None:
    status, path, _ = pytest_report(tmp_path, "def test_broken():\n    assert [1] == [2]\n")
    report = read_report(path)
    assert status == 1 and report.tests == 4
    assert report.failing == {"test_things::test_was_red", "test_things::test_broken"}
    red = report.failures[0]
    assert red.message.startswith("AssertionError: this one failed before the item")
    assert "assert 'old' == 'new'" in red.detail


def test_only_the_items_own_failures_fail_the_gate(tmp_path: Path) -> None:
    status, path, output = pytest_report(tmp_path)
    baseline = Baseline("pytest", status, read_report(path).failing)
    assert describe_baseline(baseline, "main") == (
        "1 test already failing on main (`pytest`): test_things::test_was_red; an item "
        "fails the gate only for others")
    # the item leaves the red test red and adds none: it passes
    same = judge(GateRun("pytest", status, read_report(path), output), baseline)
    assert (same.passed, same.known) == (True, ("test_things::test_was_red",))
    # the item breaks a test: its own failure, first in the excerpt, the old one named apart
    status, path, output = pytest_report(
        tmp_path, "def test_new():\n    value = 41\n    assert value == 42, 'off by one'\n")
    verdict = judge(GateRun("pytest", status, read_report(path), output), baseline)
    assert not verdict.passed
    assert verdict.reason == ("verify failed: pytest: test_things::test_new: AssertionError: "
                              "off by one")
    assert [f.test_id for f in verdict.new] == ["test_things::test_new"]
    assert verdict.excerpt.startswith("The check `pytest` failed (exit 1): 1 failing test of "
                                      "yours.\nFirst failing test: test_things::test_new\n")
    assert "assert 41 == 42" in verdict.excerpt
    assert verdict.excerpt.endswith("1 other failing test already failed before this item: "
                                    "not yours to fix.")
    # without a baseline every failure is the item's
    alone = judge(GateRun("pytest", status, read_report(path), output), None)
    assert [f.test_id for f in alone.new] == ["test_things::test_was_red",
                                               "test_things::test_new"]


def test_an_item_that_fixes_the_red_test_passes(tmp_path: Path) -> None:
    status, path, _ = pytest_report(tmp_path)
    baseline = Baseline("pytest", status, read_report(path).failing)
    fixed = PROJECT_TESTS.replace('"old" == "new"', '"new" == "new"')
    (tmp_path / "project" / "test_things.py").write_text(fixed.format(extra=""))
    result = waiting.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          f"--junitxml={path}", "test_things.py"], cwd=tmp_path / "project",
                         capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert judge(GateRun("pytest", 0, read_report(path), result.stdout), baseline).passed


def test_a_report_the_run_did_not_write_fails_where_the_baseline_wrote_one() -> None:
    baseline = Baseline("pytest --junitxml={report}", 1, frozenset({"t::a"}))
    crashed = judge(GateRun(baseline.command, 4, None, "ERROR: usage\nno such option\n"),
                    baseline)
    assert not crashed.passed
    assert crashed.reason == "verify failed: pytest --junitxml={report}: ERROR: usage / no " \
                             "such option"


def test_without_reports_the_exit_status_is_compared() -> None:
    red = Baseline("make lint", 2, None)
    assert judge(GateRun("make lint", 2, None, "lint: 3 problems"), red).passed
    assert "does not hold an item back" in (describe_baseline(red, "main") or "")
    green = Baseline("make lint", 0, None)
    assert describe_baseline(green, "main") is None
    failed = judge(GateRun("make lint", 2, None, "src/a.py:1: E501\n\n"), green)
    assert failed.reason == "verify failed: make lint: src/a.py:1: E501"
    assert failed.excerpt == ("The check `make lint` failed (exit 2). The last lines it "
                              "printed:\nsrc/a.py:1: E501")
    timed_out = judge(GateRun("make lint", None, None, ""), green)
    assert timed_out.reason == "verify failed: make lint: timed out"
    assert timed_out.excerpt == "The check `make lint` failed (timed out). It printed nothing."


def test_a_flood_of_output_gives_a_bounded_excerpt_and_reason() -> None:
    flood = "".join(f"line {n} " + "x" * 5000 + "\n" for n in range(100_000))
    verdict = judge(GateRun("flood", 1, None, flood), Baseline("flood", 0, None))
    assert len(verdict.excerpt) <= EXCERPT_CHARS + 200
    assert verdict.reason is not None and len(verdict.reason) < 400
    assert "\n" not in verdict.reason


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "report.xml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, why", [
    ("not xml at all", "is not XML"),
    ("<html><body/></html>", "is not JUnit XML (its root is <html>)"),
    # an entity expansion attack: expat refuses it
    ('<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
     + "".join(f'<!ENTITY {chr(98 + n)} "' + f"&{chr(97 + n)};" * 10 + '">' for n in range(8))
     + ']><testsuite><testcase name="t"><failure message="&i;"/></testcase></testsuite>',
     "is not XML"),
])
def test_a_hostile_or_broken_report_is_refused(tmp_path: Path, text: str, why: str) -> None:
    with pytest.raises(ReportError, match=re.escape(why)):
        read_report(_write(tmp_path, text))


def test_an_external_entity_is_never_fetched(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the user's secret\n")
    path = _write(tmp_path, f'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY s SYSTEM '
                            f'"file://{secret}">]><testsuite><testcase name="t"><failure '
                            'message="x">&s;</failure></testcase></testsuite>')
    try:
        report = read_report(path)
    except ReportError:
        return
    assert all("secret" not in failure.detail for failure in report.failures)


def test_a_report_too_large_and_a_missing_one_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "huge.xml"
    with path.open("wb") as out:
        out.truncate(MAX_REPORT_BYTES + 1)
    with pytest.raises(ReportError, match="larger than"):
        read_report(path)
    with pytest.raises(ReportError, match="no report at"):
        read_report(tmp_path / "absent.xml")
