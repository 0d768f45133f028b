"""Whether a gate's result holds failures of the item's own.

A gate runs once on the loop's starting tip (its baseline) and after each attempt
that says it is done. An attempt fails the gate only for what the baseline did not
already have:

* exit 0 passes;
* with a JUnit report, the failing tests not failing in the baseline are the
  item's; none (every failing test was failing already) passes, and a non-zero
  exit with no failing test at all passes only if the baseline exited the same;
* without a report, a command the baseline already failed (without a report
  either) cannot tell the item's failures apart: it passes (the run said so once,
  at its start); one the baseline passed, or wrote its report for, fails;
* a timed-out run fails.

Without a baseline (``loop.verifyBaseline: false``) every failure is the item's.

What a failure says is bounded: a one-line reason for the backlog and the
journal, and an excerpt for the next prompt (the first new failing test and its
assertion, not the whole log).
"""

from typing import NamedTuple

from git_forge.gates.junit import Failure, Report

#: The most of a failure the next prompt carries, in characters, and in lines.
EXCERPT_CHARS = 4000
EXCERPT_LINES = 40
#: The longest line of an excerpt or a reason kept whole.
LINE_CHARS = 300
#: How many other new failing tests an excerpt names.
NAMED_FAILURES = 10


class Baseline(NamedTuple):
    """A gate's result on a tip of the loop's branch (its starting tip, or one a commit
    the run did not make moved it to)."""

    command: str
    #: ``None``: it timed out.
    exit_status: int | None
    #: The failing tests of its report; ``None`` when it wrote none.
    failing: frozenset[str] | None


class GateRun(NamedTuple):
    """One run of a gate after an attempt."""

    command: str
    #: ``None``: it timed out.
    exit_status: int | None
    report: Report | None
    #: The end of what it printed (the caller bounds it).
    output: str


class Verdict(NamedTuple):
    """A gate run judged against its baseline."""

    passed: bool
    #: ``verify failed: <command>: <why>`` on one line (``None`` when it passed).
    reason: str | None
    #: What the next attempt's prompt is told of the failure (``""`` when it passed).
    excerpt: str
    #: The failing tests that are the item's.
    new: tuple[Failure, ...] = ()
    #: The failing tests the baseline had already.
    known: tuple[str, ...] = ()


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LINE_CHARS else text[:LINE_CHARS - 1] + "…"


def _bounded(lines: list[str]) -> str:
    kept: list[str] = []
    total = 0
    for line in lines[:EXCERPT_LINES]:
        line = line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + "…"
        if total + len(line) + 1 > EXCERPT_CHARS:
            kept.append("…")
            break
        kept.append(line)
        total += len(line) + 1
    if len(lines) > EXCERPT_LINES and kept[-1:] != ["…"]:
        kept.append("…")
    return "\n".join(kept)


def _last_lines(output: str, count: int) -> list[str]:
    return [line for line in output.splitlines() if line.strip()][-count:]


def _exited(run: GateRun) -> str:
    return "timed out" if run.exit_status is None else f"exit {run.exit_status}"


def _failed(run: GateRun, why: str, excerpt: str, new: tuple[Failure, ...] = (),
            known: tuple[str, ...] = ()) -> Verdict:
    return Verdict(False, f"verify failed: {run.command}: {_line(why)}", excerpt, new, known)


def _output_excerpt(run: GateRun) -> str:
    tail = _last_lines(run.output, EXCERPT_LINES)
    head = f"The check `{run.command}` failed ({_exited(run)})."
    if not tail:
        return head + " It printed nothing."
    return head + " The last lines it printed:\n" + _bounded(tail)


def _output_reason(run: GateRun) -> str:
    tail = _last_lines(run.output, 2)
    return " / ".join(tail) if tail else _exited(run)


def _tests_excerpt(run: GateRun, new: tuple[Failure, ...], known: tuple[str, ...]) -> str:
    first = new[0]
    lines = [f"The check `{run.command}` failed ({_exited(run)}): "
             f"{len(new)} failing test{'s' if len(new) != 1 else ''} of yours.",
             f"First failing test: {first.test_id}"]
    if first.message:
        lines.append(first.message)
    lines += first.detail.splitlines()
    excerpt = _bounded(lines)
    others = [failure.test_id for failure in new[1:]]
    if others:
        named = ", ".join(others[:NAMED_FAILURES])
        more = len(others) - NAMED_FAILURES
        excerpt += f"\nAlso failing: {_line(named)}" + (f" (and {more} more)" if more > 0 else "")
    if known:
        excerpt += (f"\n{len(known)} other failing test{'s' if len(known) != 1 else ''} "
                    "already failed before this item: not yours to fix.")
    return excerpt


def judge(run: GateRun, baseline: Baseline | None) -> Verdict:
    """``run`` judged against ``baseline`` (``None``: every failure is the item's)."""
    if run.exit_status == 0:
        return Verdict(True, None, "")
    if run.exit_status is None:
        return _failed(run, "timed out", _output_excerpt(run))
    if run.report is not None:
        before = baseline.failing if baseline is not None and baseline.failing else frozenset()
        new = tuple(f for f in run.report.failures if f.test_id not in before)
        known = tuple(f.test_id for f in run.report.failures if f.test_id in before)
        if new:
            why = f"{new[0].test_id}" + (f": {new[0].message}" if new[0].message else "")
            if len(new) > 1:
                why += f" (and {len(new) - 1} more)"
            return _failed(run, why, _tests_excerpt(run, new, known), new, known)
        if known or (baseline is not None and baseline.exit_status == run.exit_status):
            return Verdict(True, None, "", (), known)
        return _failed(run, _output_reason(run), _output_excerpt(run))
    if baseline is not None and baseline.failing is None and baseline.exit_status != 0:
        return Verdict(True, None, "")  # it cannot tell the item's failures apart
    # (A report the baseline wrote and this run did not: the run broke before it.)
    return _failed(run, _output_reason(run), _output_excerpt(run))


def describe_baseline(baseline: Baseline, branch: str) -> str | None:
    """The baseline in one sentence for the start of a run, or ``None`` when it passed."""
    if baseline.exit_status == 0:
        return None
    if baseline.exit_status is None:
        return (f"`{baseline.command}` timed out on {branch}: an item's run of it that "
                "times out too fails the gate")
    if baseline.failing:
        names = sorted(baseline.failing)
        shown = ", ".join(names[:NAMED_FAILURES]) + (
            f" (and {len(names) - NAMED_FAILURES} more)" if len(names) > NAMED_FAILURES else "")
        count = len(names)
        return (f"{count} test{'s' if count != 1 else ''} already failing on {branch} "
                f"(`{baseline.command}`): {shown}; an item fails the gate only for others")
    return (f"`{baseline.command}` already fails on {branch} (exit {baseline.exit_status}) "
            "and names no failing test: an item's failure of it cannot be told apart, "
            "so it does not hold an item back")
