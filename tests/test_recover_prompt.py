"""recover's prompt and answers, as a person types and pastes them on a real terminal,
and as an answers file writes them: nothing is recorded that was not meant."""

from __future__ import annotations

import json
import os
import signal
import termios
from pathlib import Path

import pytest
from builders import blocked_backlog
from helpers import PtySession, git, run_forge, snapshot
from terminal_helpers import on_tty

PASTE_ON, PASTE_OFF = b"\x1b[?2004h", b"\x1b[?2004l"

#: Two items blocked on the same decision (one question, c001) and one of its own (c003).
REASONS = {"001": "Which database should store the greetings, SQLite or PostgreSQL?",
           "002": "Which database should store the preferences, SQLite or PostgreSQL?",
           "003": "No credentials for the package index are configured"}


@pytest.fixture
def questions(git_repo: Path) -> Path:
    return blocked_backlog(git_repo, REASONS)


def record_of(root: Path) -> list[tuple[str, str | None]]:
    path = root / ".forge" / "forge-decisions.json"
    if not path.exists():
        return []
    return [(e["itemId"], e["answer"]) for e in json.loads(path.read_text())["decisions"]]


def to_the_first_question(root: Path, *args: str, env: dict | None = None) -> PtySession:
    session = PtySession("recover", *args, cwd=root, env=env)
    session.expect("Merge questions that share a cause?")
    session.send("")
    session.expect("Your decision")
    return session


def finish_deferring(session: PtySession, *, answered: bool = True) -> int:
    """Enter (defer) at the second question, then commit recover's own change (when
    an answer changed the backlog)."""
    session.expect("Question 2 of 2 (c003)")
    session.expect("Your decision")
    session.send("")
    if answered:
        session.expect("recovery:")
        session.send("")
    return session.finish()


def paste_mode_switches(transcript: bytes) -> list[bytes]:
    return [transcript[i:i + len(PASTE_ON)] for i in range(len(transcript))
            if transcript.startswith((PASTE_ON, PASTE_OFF), i)]


# --- 1. an answers file's ids are the text written ---------------------------------------------

def test_an_answers_file_names_items_by_the_text_written(git_repo: Path, tmp_path: Path) -> None:
    """YAML 1.1 reads an unquoted 010 as the octal 8: the answer went to item 008 and
    010 was deferred; 012 (10) answered 010. Now 010 is 010, and 012, which names no
    open question, is refused before anything is recorded."""
    root = blocked_backlog(git_repo, {"008": "Which package index should releases go to?",
                                      "010": "Which database engine should we use?"})
    answers = tmp_path / "answers.yaml"
    answers.write_text("012: Use SQLite\n")
    before = snapshot(root, skip_git=False)
    refused = run_forge("recover", "--answers", str(answers), cwd=root)
    assert (refused.returncode, refused.stdout) == (2, ""), refused.stderr
    assert refused.stderr == ("Error: no open question for 012 (questions: c008, c010; "
                              "items: 008, 010)\n")
    after = snapshot(root, skip_git=False)
    assert after == before
    answers.write_text("010: Use SQLite\n")
    result = run_forge("recover", "--answers", str(answers), "--json", cwd=root)
    report = json.loads(result.stdout)
    assert [(r["itemId"], r["answer"]) for r in report["recorded"]] == [
        ("008", None), ("010", "Use SQLite")]
    items = {i["id"]: i for i in json.loads(run_forge("backlog", "list", "--json",
                                                      cwd=root).stdout)}
    assert (items["008"]["status"], items["010"]["status"]) == ("blocked", "pending")
    assert "humanAnswer" not in items["008"] and items["010"]["humanAnswer"] == "Use SQLite"


# --- 2. a paste is one answer ----------------------------------------------------------------

def test_a_bracketed_paste_is_one_answer_never_the_next_questions(questions: Path) -> None:
    session = to_the_first_question(questions)
    # While the prompt waits the terminal brackets a paste, and echoes no ^[[200~.
    session.wait_reading()  # the question is printed before the prompt sets the terminal
    assert not termios.tcgetattr(session.fd)[3] & termios.ECHOCTL
    session.type(b"\x1b[200~Use SQLite\rand keep\rthe old schema\x1b[201~ for now\r")
    text = session.expect("Record it?")
    assert "  | Use SQLite\r\n  | and keep\r\n  | the old schema for now\r\n" in text
    session.send("y")
    assert finish_deferring(session) == 0, session.text
    assert record_of(questions) == [("001", "Use SQLite\nand keep\nthe old schema for now"),
                                    ("002", "Use SQLite\nand keep\nthe old schema for now"),
                                    ("003", None)]
    switches = paste_mode_switches(session.transcript)
    assert switches[0] == PASTE_ON and switches == [PASTE_ON, PASTE_OFF] * (len(switches) // 2)
    # Only a terminal at both ends is asked, and only then is the mode switched.
    code, output = on_tty(questions, "recover")  # stdout a terminal, stdin not
    assert code == 3 and b"outcome: needs-human" in output
    assert PASTE_ON not in output and PASTE_OFF not in output


def test_lines_that_arrive_together_are_one_answer(questions: Path) -> None:
    """A terminal without bracketed paste sends a paste's lines in one burst."""
    session = to_the_first_question(questions)
    session.type(b"Use SQLite\rand keep\rthe old schema\r")
    session.expect("Record it?")
    session.send("y")
    assert finish_deferring(session) == 0, session.text
    assert record_of(questions)[0] == ("001", "Use SQLite\nand keep\nthe old schema")


def test_a_bursts_unfinished_last_line_is_that_answers_not_the_next_questions(
        questions: Path) -> None:
    """A paste whose last line has no newline: the terminal holds that line until
    Enter, and Enter ends this answer — it never answers question 2."""
    session = to_the_first_question(questions, "--yes")
    session.type(b"Use SQLite\rand keep\rthe old schema")
    session.send(" for now")
    assert finish_deferring(session) == 0, session.text
    assert record_of(questions) == [("001", "Use SQLite\nand keep\nthe old schema for now"),
                                    ("002", "Use SQLite\nand keep\nthe old schema for now"),
                                    ("003", None)]


@pytest.mark.parametrize("paste", [
    b"\x1b[200~" + b"x" * 5000 + b"\x1b[201~",  # its end marker is lost with the tail
    b"x" * 5000,
    b"Use SQLite\r" + b"x" * 5000,
])
def test_a_line_the_terminal_cuts_is_refused_never_cut_or_waited_on(
        questions: Path, paste: bytes) -> None:
    """A terminal keeps 4095 characters of a line: a longer one is refused with a
    word once Enter ends it, and the question asked again — never recorded cut,
    never a paste waited on for ever."""
    session = to_the_first_question(questions, "--yes")
    session.type(paste)
    session.send("")
    session.expect("That answer has a line longer than the terminal keeps (4095 characters)",
                   timeout=10)
    session.expect("Your decision")
    session.send("Use SQLite")
    assert finish_deferring(session) == 0, session.text
    assert record_of(questions) == [("001", "Use SQLite"), ("002", "Use SQLite"),
                                    ("003", None)]


def test_a_paste_at_a_prompt_for_one_line_is_refused_and_asked_again(questions: Path) -> None:
    session = PtySession("recover", cwd=questions)
    session.expect("Merge questions that share a cause?")
    session.type(b"\x1b[200~c001\rc003\x1b[201~\r")
    session.expect("That was 2 lines at once (a paste?): type the ids on one line.")
    session.expect("Merge questions that share a cause?")
    session.send("")
    session.expect("Question 1 of 2 (c001)")
    session.expect("Your decision")
    session.send("Use SQLite")
    session.expect("Record it? [y/N]")
    session.type(b"y\ry\r")
    session.expect("That was 2 lines at once (a paste?): type y or n on one line.")
    session.expect("Record it? [y/N]")
    session.send("y")
    assert finish_deferring(session) == 0, session.text
    assert record_of(questions) == [("001", "Use SQLite"), ("002", "Use SQLite"),
                                    ("003", None)]


@pytest.mark.parametrize("cancel", ["interrupt", "end_input"])
def test_bracketed_paste_is_switched_off_again_however_a_prompt_ends(
        questions: Path, cancel: str) -> None:
    session = to_the_first_question(questions)
    session.wait_reading()
    assert not termios.tcgetattr(session.fd)[3] & termios.ECHOCTL
    getattr(session, cancel)()
    while session._read(0.2):  # to the end of its output; the terminal stays open
        pass
    assert termios.tcgetattr(session.fd)[3] & termios.ECHOCTL
    assert session.finish() == 3, session.text
    switches = paste_mode_switches(session.transcript)
    assert PASTE_ON in switches and switches[-1] == PASTE_OFF
    assert switches == [PASTE_ON, PASTE_OFF] * (len(switches) // 2)


# --- 3. nothing recorded by accident ---------------------------------------------------------

def test_help_at_a_decision_prompt_is_help_and_records_nothing(questions: Path) -> None:
    session = to_the_first_question(questions)
    for word in ("?", "help"):
        session.send(word)
        text = session.expect("Your decision")
        assert "Enter or defer" in text and "cancel" in text
        assert "Record it?" not in text
    session.send("")
    assert finish_deferring(session, answered=False) == 3, session.text
    assert record_of(questions) == [("001", None), ("002", None), ("003", None)]


def test_an_answer_is_shown_back_with_its_items_and_recorded_only_once_confirmed(
        questions: Path) -> None:
    session = to_the_first_question(questions)
    session.send("Use SQLite")
    text = session.expect("Record it? [y/N]")
    assert "Your decision for c001, to be recorded for items 001, 002:\r\n  | Use SQLite" in text
    session.send("")  # no: nothing is recorded, the question is asked again
    session.expect("Not recorded: give your decision again (Enter: defer).")
    session.expect("Your decision")
    session.send("Use PostgreSQL")
    session.expect("Record it? [y/N]")
    session.send("y")
    assert finish_deferring(session) == 0, session.text
    assert record_of(questions) == [("001", "Use PostgreSQL"), ("002", "Use PostgreSQL"),
                                    ("003", None)]


def test_help_or_another_word_at_the_confirmation_asks_it_again(questions: Path) -> None:
    """Only y records; ? says what each answer does, and a word that is neither y nor
    n (the decision typed again, say) is refused rather than taken as no."""
    session = to_the_first_question(questions)
    session.send("Use SQLite")
    session.expect("Record it? [y/N]")
    session.send("?")
    session.expect("y records it, for the items above; n or Enter does not, and asks for "
                   "your decision again")
    session.expect("Record it? [y/N]")
    session.send("Use SQLite")
    session.expect("Please answer y or n (?: what each does).")
    session.expect("Record it? [y/N]")
    session.send("y")
    assert finish_deferring(session) == 0, session.text
    assert "Not recorded" not in session.text
    assert record_of(questions) == [("001", "Use SQLite"), ("002", "Use SQLite"),
                                    ("003", None)]


@pytest.mark.parametrize("how", ["--yes", "config"])
def test_yes_or_the_config_key_records_without_asking_to_confirm(questions: Path,
                                                                 how: str) -> None:
    if how == "config":
        (questions / ".forge.yaml").write_text("recover:\n  confirmAnswers: false\n")
        git("add", ".forge.yaml", cwd=questions)
        git("commit", "-qm", "confirm no answers", cwd=questions)
    session = to_the_first_question(questions, *(["--yes"] if how == "--yes" else []))
    session.send("?")  # the help says what happens to an answer now
    text = session.expect("Your decision")
    assert "recorded for the items this question names as you give it" in text
    session.send("Use SQLite")
    assert finish_deferring(session) == 0, session.text
    assert "Record it?" not in session.text
    assert record_of(questions) == [("001", "Use SQLite"), ("002", "Use SQLite"),
                                    ("003", None)]


# --- 5. the merge prompt ----------------------------------------------------------------------

def test_the_questions_come_first_and_a_merge_can_be_undone(questions: Path) -> None:
    session = PtySession("recover", cwd=questions)
    text = session.expect("Merge questions that share a cause?").replace("\r", "")
    prompt_at = text.rindex("Merge questions that share a cause?")
    for item_id, reason in REASONS.items():  # every question, with its reasons, first
        assert text.index(f"    {item_id}: {reason}\n") < prompt_at
    prompt = text[prompt_at:]
    assert "c001" not in prompt and "c003" not in prompt  # no example pairs two questions
    session.send("?")
    session.expect("Merge only questions that really share a cause")
    session.expect("Merge questions that share a cause?")
    session.send("undo")
    session.expect("Nothing to undo: no questions are merged.")
    session.send("c001 c3")
    session.expect("Merged into one question: c001 (items 001, 002, 003); undo splits it again.")
    session.expect("1 question from the blocked items:")
    session.expect("Merge questions that share a cause? (their ids; 'undo'")
    session.send("undo")
    session.expect("Merge undone.")
    session.expect("2 questions from the blocked items:")
    session.expect("Merge questions that share a cause?")
    session.send("")
    session.expect("Question 1 of 2 (c001)")
    session.expect("Your decision")
    session.send("")
    assert finish_deferring(session, answered=False) == 3, session.text
    assert record_of(questions) == [("001", None), ("002", None), ("003", None)]


@pytest.mark.parametrize("number", [signal.SIGHUP, signal.SIGTERM])
def test_a_hang_up_or_sigterm_at_a_prompt_records_what_was_confirmed(
        questions: Path, number: int) -> None:
    """The terminal closed (SIGHUP) or the process told to end (SIGTERM) at a prompt:
    the input is over, as with Ctrl-D — the answers confirmed are recorded, the rest
    deferred — where the process died and lost them; bracketed paste is switched
    off on the way out (SIGTERM: the terminal is still there to see it)."""
    session = to_the_first_question(questions)
    session.send("Use SQLite")
    session.expect("Record it?")
    session.send("y")
    session.expect("Question 2 of 2 (c003)")
    session.expect("Your decision")
    session.wait_reading()
    os.kill(session.pid, number)
    code = session.finish()
    assert code in (0, 3), session.text  # the pass's outcome, not death by the signal
    assert record_of(questions) == [("001", "Use SQLite"), ("002", "Use SQLite"),
                                    ("003", None)]
    if number == signal.SIGTERM:
        assert paste_mode_switches(session.transcript)[-1] == PASTE_OFF


def test_an_arrow_key_at_a_prompt_leaves_nothing_in_the_answer(questions: Path) -> None:
    """The line reader takes a cursor key in as its bytes (ESC O A, ESC [ D): they are
    no part of the answer, where the Up arrow's final letter stayed in it."""
    session = to_the_first_question(questions)
    session.type(b"\x1bOAUse \x1b[DSQLite\x1b[1;5C\r")
    text = session.expect("Record it?")
    assert "  | Use SQLite\r\n" in text, text
    session.send("y")
    assert finish_deferring(session) == 0, session.text
    assert record_of(questions)[:2] == [("001", "Use SQLite"), ("002", "Use SQLite")]
