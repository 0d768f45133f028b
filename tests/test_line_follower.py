"""``LineFollower``: whole lines in order, and every line left out said where it was.

The source here is a growing byte string with the spool's read rules (a cursor before
what is kept starts at what is kept, with ``gap``); the real loop over a real spool is
``test_loop_follow.py``'s flood.
"""

from __future__ import annotations

import random

import pytest

from git_forge.loop.attempt import FollowedText
from git_forge.supervisor.buffer import Chunk
from git_forge.supervisor.follow import BEHIND_BYTES, LINE_BYTES, LineFollower

WHERE = "git forge proc output 001"


class GrowingOutput:
    """Output as a spool keeps it: appended bytes, and a start before which they were let go."""

    def __init__(self) -> None:
        self.data = b""
        self.kept_from = 0

    def output_bytes(self, handle: str) -> int:
        return len(self.data)

    def read(self, handle: str, cursor: int, max_bytes: int) -> Chunk:
        start = max(cursor, self.kept_from)
        end = min(len(self.data), start + max_bytes)
        return Chunk(self.data[start:end], end, cursor < self.kept_from)


def _follower() -> tuple[GrowingOutput, LineFollower]:
    source = GrowingOutput()
    return source, LineFollower(source, "h", WHERE)


def test_lines_come_whole_however_the_bytes_arrive() -> None:
    source, follower = _follower()
    source.data += b"first li"
    assert follower.take() == []
    source.data += b"ne\nsecond\nthi"
    assert follower.take() == ["first line", "second"]
    source.data += b"rd"
    assert follower.take(final=True) == ["third"]  # the unended last line, at the end


def test_falling_behind_skips_to_a_line_boundary_and_counts_exactly() -> None:
    source, follower = _follower()
    lines = [f"line {n:06}".encode() for n in range(200_000)]  # 2.2 MB, over BEHIND_BYTES
    source.data = b"\n".join(lines) + b"\nFORGE_DONE\n"
    assert len(source.data) > BEHIND_BYTES
    shown = follower.take(final=True)
    note = shown[0]
    assert note.startswith("… ") and note.endswith(f" lines skipped — {WHERE}")
    count = int(note.split()[1].replace(",", ""))
    rest = shown[1:]
    # what is shown after the note is exactly the lines after the skipped ones
    assert rest == [line.decode() for line in lines[count:]] + ["FORGE_DONE"]


def test_a_slow_reader_is_told_once_per_stretch_left_out() -> None:
    source, follower = _follower()
    source.data = b"a\n" * 10
    assert follower.take() == ["a"] * 10
    source.data += b"b" * 100 + b"\n"
    source.data += (b"y" * 99 + b"\n") * (BEHIND_BYTES // 100 + 10)
    source.data += b"tail\n"
    shown = follower.take(final=True)
    skips = [line for line in shown if line.startswith("… ")]
    assert len(skips) == 1
    count = int(skips[0].split()[1].replace(",", ""))
    shown_y = [line for line in shown if line.startswith("y")]
    assert count + len(shown_y) == 1 + BEHIND_BYTES // 100 + 10  # the b line and the y lines
    assert shown[-1] == "tail"


def test_a_line_longer_than_the_limit_is_cut_and_says_so() -> None:
    source, follower = _follower()
    source.data = b"z" * (LINE_BYTES * 3) + b"\nnext\n"
    shown = follower.take(final=True)
    assert len(shown) == 2
    assert shown[0].startswith("z" * LINE_BYTES + " … (line cut at ")
    assert shown[0].endswith(f" — {WHERE})")
    assert shown[1] == "next"


def test_bytes_the_spool_let_go_are_said_not_glued() -> None:
    source, follower = _follower()
    source.data = b"one\ntw"
    assert follower.take() == ["one"]
    source.data += b"o\nthree\nfour\n"
    source.kept_from = len(b"one\ntwo\nth")  # "two" and the start of "three" are gone
    shown = follower.take(final=True)
    # the lines in what was let go cannot be counted: their bytes are said instead
    assert shown[0] == f"… 1 line skipped, and 4 B no longer kept — {WHERE}"
    assert shown[1:] == ["four"]


def test_escape_sequences_never_pass() -> None:
    source, follower = _follower()
    source.data = b"\x1b[2Jclear\x1b]0;title\x07 done\n"
    assert follower.take(final=True) == ["clear done"]


def _walk(data: bytes, shown: list[str]) -> None:
    """What was shown, walked along ``data``'s lines: each line shown is the next one
    (a cut one starts it), each note stands for exactly the lines it counts, and the
    walk ends at the last line."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    position = 0
    for text in shown:
        if text.startswith("… ") and f" skipped — {WHERE}" in text:
            count = int(text.split()[1].replace(",", ""))
            assert count > 0
            position += count
            continue
        assert position < len(lines), f"a line shown past the end: {text[:40]!r}"
        cut = f" … (line cut at 16.0 KiB — {WHERE})"
        if text.endswith(cut):
            assert len(lines[position]) > LINE_BYTES
            assert lines[position].startswith(text.removesuffix(cut).encode())
        else:
            assert text == lines[position].decode(), position
        position += 1
    assert position == len(lines)


@pytest.mark.parametrize("seed", range(16))
def test_any_output_read_at_any_pace_is_shown_or_counted_exactly(seed: int) -> None:
    randomness = random.Random(seed)

    def line() -> bytes:
        roll = randomness.random()
        length = (randomness.randint(0, 60) if roll < 0.7 else
                  randomness.randint(LINE_BYTES - 3, LINE_BYTES + 3) if roll < 0.85 else
                  randomness.randint(100, 300_000) if roll < 0.97 else
                  randomness.randint(1_000_000, 2_500_000))
        return bytes([randomness.choice(b"abcdefgh")]) * length

    data = b"\n".join(line() for _ in range(randomness.randint(1, 300)))
    if randomness.random() < 0.5:
        data += b"\n"
    source, follower = _follower()
    shown: list[str] = []
    while len(source.data) < len(data):
        grown = randomness.choice([1, 7, 100, 5_000, 70_000, 300_000, 1_500_000])
        source.data = data[:len(source.data) + randomness.randint(1, grown)]
        if randomness.random() < 0.7:
            shown += follower.take()
    shown += follower.take(final=True)
    _walk(data, shown)


def test_a_blank_line_is_a_line() -> None:
    source, follower = _follower()
    source.data = b"one\n\n\ntwo\n\n"
    assert follower.take(final=True) == ["one", "", "", "two", ""]


def test_a_skip_while_a_cut_line_is_read_on_counts_the_next_line() -> None:
    source, follower = _follower()
    source.data = b"c" * 100_000  # a line being cut: its rest is read on
    shown = follower.take()
    assert len(shown) == 1 and shown[0].startswith("c" * LINE_BYTES + " … (line cut at")
    source.data += b"\n" + b"d" * 3_000_000 + b"\nafter\n"  # then far behind
    assert follower.take(final=True) == [f"… 1 line skipped — {WHERE}", "after"]


def test_a_line_redrawn_with_carriage_returns_is_what_it_said_last() -> None:
    source, follower = _follower()
    source.data = b"dl 10%\rdl 55%\rdl 100%\n\rplain\r\n"
    assert follower.take(final=True) == ["dl 100%", "plain"]


def test_an_agent_s_streamed_text_is_held_as_lines_the_same_way() -> None:
    followed = FollowedText(WHERE)
    followed.add("one\rONE\n\n" + "w" * (LINE_BYTES + 10) + "\nlast\n")
    lines = followed.take()
    assert lines[:2] == ["ONE", ""]
    assert lines[2] == "w" * LINE_BYTES + f" … (line cut at 16.0 KiB — {WHERE})"
    assert lines[3:] == ["last"]
    assert followed.take() == []


def test_a_progress_bar_redrawn_past_the_limit_shows_its_last_state() -> None:
    source, follower = _follower()
    bar = b"".join(b"downloading %5d of 1000\r" % n for n in range(1000))  # ~24 KB
    source.data = bar + b"downloading done\n"
    assert follower.take(final=True) == ["downloading done"]
    source.data += bar[:LINE_BYTES + 100]  # still redrawing: no cut of a stale fragment
    shown = follower.take()
    assert shown == [] or not shown[0].endswith(f"— {WHERE})")
