"""``LineFollower``: whole lines in order, and every line left out said where it was.

The source here is a growing byte string with the spool's read rules (a cursor before
what is kept starts at what is kept, with ``gap``); the real loop over a real spool is
``test_loop_follow.py``'s flood.
"""

from __future__ import annotations

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
