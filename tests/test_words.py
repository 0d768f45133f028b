"""Numbers in messages as a person reads them (git_forge.words)."""

from __future__ import annotations

from git_forge.words import counted, duration, usd


def test_counts_take_their_noun_in_the_right_number() -> None:
    assert [counted(n, "item") for n in (0, 1, 2)] == ["0 items", "1 item", "2 items"]
    assert counted(1, "process", "processes") == "1 process"
    assert counted(3, "process", "processes") == "3 processes"


def test_durations_are_seconds_under_a_minute_else_minutes() -> None:
    assert [duration(m) for m in (0.05, 0.02, 1 / 60, 0.5, 1, 1.5, 30, 10080)] == [
        "3 seconds", "1.2 seconds", "1 second", "30 seconds", "1 minute", "1.5 minutes",
        "30 minutes", "10080 minutes"]


def test_dollars_show_the_digits_a_small_amount_needs() -> None:
    assert [usd(a) for a in (0, 0.42, 1.5, 12.345, 0.05, 0.0999, 0.001, 0.0012, 0.00123)] == [
        "$0.00", "$0.42", "$1.50", "$12.35", "$0.05", "$0.10", "$0.001", "$0.0012", "$0.0012"]
