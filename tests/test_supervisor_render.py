"""Safe text and base64 rendering of raw output."""

from __future__ import annotations

import base64
import random

import pytest

from git_forge.safetext import safe_text
from git_forge.supervisor.buffer import Chunk
from git_forge.supervisor.render import looks_binary, render_base64, render_text

HANDLE = "AbCdEfGhIjKlMnOpQrStUw"


@pytest.mark.parametrize(("raw", "text"), [
    (b"plain ascii\n", "plain ascii\n"),
    ("中文字符 and 日本語 — ✓\n".encode(), "中文字符 and 日本語 — ✓\n"),
    (b"tab\there\r\nline\n", "tab\there\r\nline\n"),
])
def test_clean_text_passes_through_unchanged(raw: bytes, text: str) -> None:
    rendered = safe_text(raw, final=False)
    assert (rendered.text, rendered.consumed, rendered.normalized) == (text, len(raw), False)


@pytest.mark.parametrize(("raw", "text"), [
    (b"bad \xff byte", "bad \ufffd byte"),
    (b"cut \xe4\xb8 here", "cut \ufffd here"),
    (b"bell\x07 nul\x00 del\x7f bs\x08", "bell nul del bs"),
    ("c1 \u0085 \u009b31m \u009d".encode(), "c1  31m "),
    ("bidi \u202eevil\u202c \u2066iso\u2069 \u200fmark".encode(), "bidi evil iso \u200fmark"),
    (b"\x1b[31mred\x1b[0m \x1b[1;38;5;200mbold\x1b[m", "red bold"),
    (b"\x1b[?25l\x1b[2J\x1b[Hcursor", "cursor"),
    (b"title\x1b]0;evil title\x07 done", "title done"),
    (b"link \x1b]8;;http://x\x1b\\text\x1b]8;;\x1b\\ end", "link text end"),
    (b"dcs \x1bP1$r0m\x1b\\ gone", "dcs  gone"),
    (b"apc \x1b_payload\x1b\\ pm \x1b^x\x1b\\.", "apc  pm ."),
    (b"save\x1b7 restore\x1b8 reset\x1bc", "save restore reset"),
    (b"charset \x1b(B ok", "charset  ok"),
    (b"lone \x1b\x01 escape", "lone  escape"),
    (b"\xe4\x1b[0m\xb8\xad", "\ufffd\ufffd\ufffd"),  # never glued across an escape
])
def test_normalization(raw: bytes, text: str) -> None:
    rendered = safe_text(raw, final=True)
    assert rendered.text == text
    assert rendered.normalized
    assert rendered.consumed == len(raw)


@pytest.mark.parametrize("raw", [
    b"abc\x1b", b"abc\x1b[", b"abc\x1b[38;5", b"abc\x1b]0;title", b"abc\x1b]0;title\x1b",
    b"abc\x1bP1$r", b"abc\x1b(", b"abc\xe4\xb8", b"abc\xf0\x9f\x98",
])
def test_an_incomplete_sequence_at_the_end_is_not_consumed(raw: bytes) -> None:
    rendered = safe_text(raw, final=False)
    assert rendered.text == "abc"
    assert rendered.consumed == 3  # next_cursor stops before the unfinished sequence
    final = safe_text(raw, final=True)
    assert final.consumed == len(raw)


def follow(stream: bytes, rng: random.Random) -> str:
    """Read ``stream`` the way a follower does: windows of random size, always from
    ``next_cursor``, with the stream growing under the reader."""
    cursor, written, text = 0, 0, []
    for _ in range(10 * len(stream) + 1000):  # a follower that stops advancing fails
        written = min(len(stream), written + rng.randint(0, 40))
        limit = rng.randint(12, 40)  # a window holds any one sequence of these pieces
        end = min(written, cursor + limit)
        chunk = Chunk(stream[cursor:end], end, False)
        rendered = render_text(
            HANDLE, chunk, total_bytes=written, end_of_stream=written == len(stream),
            window_full=end - cursor == limit,
        )
        text.append(rendered.output)
        assert rendered.start_cursor == cursor and rendered.next_cursor >= cursor
        cursor = rendered.next_cursor
        if cursor == len(stream):
            return "".join(text)
    raise AssertionError(f"the follower is stuck at {cursor} of {len(stream)} bytes")


def test_a_follower_never_loses_or_garbles_text_across_windows() -> None:
    pieces = [b"hello ", "中文 ".encode(), b"\x1b[31m", b"red", b"\x1b[0m", b" \xff ",
              b"\x1b]0;title\x07", "😀".encode(), b"\r\n", b"\x1bP1$r\x1b\\", b"\x1b7",
              b"\x01", b"tab\t"]
    rng = random.Random(42)
    for _ in range(200):
        stream = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 30)))
        expected = safe_text(stream, final=True).text
        assert follow(stream, rng) == expected, stream


def test_a_window_full_of_an_unfinished_sequence_still_makes_progress() -> None:
    data = b"\x1b]0;" + b"x" * 60
    rendered = render_text(HANDLE, Chunk(data, 64, False), total_bytes=1000,
                           end_of_stream=False, window_full=True)
    assert rendered.next_cursor == 64 and rendered.output == ""
    partial = render_text(HANDLE, Chunk(data, 64, False), total_bytes=64,
                          end_of_stream=False, window_full=False)
    assert partial.next_cursor == 0  # not full: wait for the rest


def test_binary_detection() -> None:
    assert not looks_binary(b"")
    assert not looks_binary(b"text " * 100)
    assert looks_binary(b"a" * 98 + b"\x00\x00")  # 2% NUL
    assert not looks_binary(b"a" * 99 + b"\x00" + b"a" * 100)  # 0.5% NUL
    noise = random.Random(1).randbytes(4096)
    assert looks_binary(noise)  # ~8 bits/byte
    assert not looks_binary(noise[:200])  # too short for entropy to mean anything
    assert not looks_binary(("中文字符" * 500).encode())


def test_text_and_base64_results() -> None:
    raw = b"\x1b[1mbold\x1b[0m\xff\x00"
    chunk = Chunk(raw, 100 + len(raw), True)
    text = render_text(HANDLE, chunk, total_bytes=200, end_of_stream=False, window_full=False)
    assert text.output == "bold\ufffd"
    end = 100 + len(raw)
    assert (text.start_cursor, text.next_cursor) == (100, end)
    assert text.gap and text.normalized
    assert text.artifact == {"id": HANDLE, "start_cursor": 100, "end_cursor": end,
                             "encoding": "base64"}
    b64 = render_base64(HANDLE, chunk, total_bytes=200)
    assert base64.b64decode(b64.output) == raw
    assert (b64.start_cursor, b64.next_cursor, b64.normalized) == (100, end, False)


def test_results_hold_no_path_and_no_pid() -> None:
    raw = random.Random(3).randbytes(64)
    for rendered in (
        render_text(HANDLE, Chunk(raw, 64, False), total_bytes=64, end_of_stream=True,
                    window_full=False),
        render_base64(HANDLE, Chunk(raw, 64, False), total_bytes=64),
    ):
        document = rendered.to_dict()
        # Every field is the handle, a cursor, a flag, the encoding or the rendered bytes:
        # there is no place a path or a process id could hide.
        assert document.pop("handle") == HANDLE
        assert document.pop("encoding") in ("text", "base64")
        assert isinstance(document.pop("output"), str)
        assert document.pop("artifact") == {"id": HANDLE, "start_cursor": 0, "end_cursor": 64,
                                            "encoding": "base64"}
        assert document == {"start_cursor": 0, "next_cursor": 64, "total_bytes": 64,
                            "gap": False, "normalized": document["normalized"],
                            "binary": document["binary"]}
        assert all(isinstance(value, int) for value in document.values())
