"""Hostile text never reaches a terminal: every byte git-forge prints is scanned.

Item titles, descriptions, blocked reasons, questions, answers, stash messages,
commit subjects, file names, state.json values, config values, agent output and
the errors quoting them carry an OSC 52 clipboard write, CSI sequences, a DCS
string, BEL, a raw C1 CSI and DEL. Through real child processes — piped, and on
a real pseudo-terminal where git-forge colours and draws its live line — no ESC,
BEL, C1, DEL or bidirectional override reaches the output except git-forge's own
SGR colours and line erase; ``--json`` escapes C1, DEL and the overrides and still
round-trips every byte.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import waiting
from helpers import PtySession, git, run_forge
from templates import Templates
from terminal_helpers import on_tty

from git_forge.safetext import clean

#: A clipboard write, screen clear, a colour git-forge never uses for this, a raw C1
#: CSI, DEL, BEL, a DCS string, and a right-to-left override and an isolate that
#: would show the line in another order than its own.
HOSTILE = ("x\x1b]52;c;ZXZpbA==\x07 csi\x1b[2J\x1b[H\x1b[35m c1\u009b31m del\x7f bel\x07"
           " dcs\x1bP1$r\x1b\\ rlo\u202edesrever\u202c iso\u2067x\u2069 end")
#: A file name that is a terminal attack of its own (git quotes it; git-forge must too,
#: or at least never print it raw).
EVIL_NAME = "evil\x1b]0;pwned\x07\u009b.txt"
#: git-forge's own sequences: its SGR colours, the live line's erase, and bracketed
#: paste switched on and off around a prompt's read.
OWN = re.compile(r"\x1b\[(?:0|1|2|31|32|33|36)m|\x1b\[K|\x1b\[\?2004[hl]")
FORBIDDEN = re.compile("[\x1b\x07\x7f\x80-\x9f\u202a-\u202e\u2066-\u2069]")

AGENT = r'''
import pathlib, re, sys
hostile = sys.argv[1]
evil = sys.argv[2]
prompt = sys.stdin.read()
item = re.search(r"^## Backlog item (\S+): ", prompt, re.M).group(1)
print("agent on " + item + ": " + hostile, flush=True)
sys.stdout.buffer.write(b"raw c1 \x9b31m and \xff byte\n")
sys.stdout.flush()
if item == "001":
    pathlib.Path(evil).write_text("one\n")
    print("FORGE_DONE")
elif item == "002":
    print("FORGE_NEEDS_HUMAN: which storage should the greetings use?")
else:
    pathlib.Path("left.txt").write_text("left\n")
    print("FORGE_BLOCKED: no credentials " + hostile)
'''


def assert_harmless(raw: bytes, *, own: bool = False) -> str:
    """``raw`` is UTF-8 with no ESC, BEL, C1 or DEL — except, when ``own``,
    git-forge's own SGR colours, line erase and bracketed paste switches. Returns
    the text."""
    text = raw.decode("utf-8")
    rest = OWN.sub("", text) if own else text
    found = FORBIDDEN.search(rest)
    assert found is None, (
        f"{found.group()!r} at {found.start()} in output: {rest[max(0, found.start() - 60):]!r}")
    return text


def forge(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """A real child process, bytes captured (stdout and stderr are both scanned)."""
    return run_forge(*args, cwd=root, input=b"", env=env)


def harmless(result: subprocess.CompletedProcess) -> str:
    return assert_harmless(result.stdout) + assert_harmless(result.stderr)


def _edit_json(path: Path, change) -> None:
    document = json.loads(path.read_text("utf-8"))
    change(document)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "utf-8")


# --- one project, built once: a loop run over hostile items with a hostile agent ------------

def _agent_command(base: Path) -> str:
    script = base / "agent.py"
    script.write_text(AGENT)
    return shlex.join([sys.executable, str(script), HOSTILE, EVIL_NAME])


def _build(root: Path) -> subprocess.CompletedProcess:
    """The project, and (returned) the loop run that left it so; the agent lives beside it."""
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    (root / "README.md").write_text("# hostile\n")
    git("add", "README.md", cwd=root)
    git("commit", "-qm", "initial", cwd=root)
    assert forge(root, "init").returncode == 0
    for number in range(3):
        result = forge(root, "backlog", "add", "--title", f"title {number} {HOSTILE}",
                       "--description", f"description {HOSTILE}", "--ac", f"ac {HOSTILE}",
                       "--notes", f"notes {HOSTILE}")
        assert result.returncode == 0, result.stderr
    git("add", "-A", cwd=root)
    git("commit", "-qm", "backlog", cwd=root)
    loop = forge(root, "loop", "run", "--follow", "--agent", _agent_command(root.parent))
    assert loop.returncode == 5, loop.stderr
    # The runner keeps only safe text of what an agent said; a hand edit leaves hostile
    # text in the file (committed, so the tree is clean).
    def hand_edit(doc: dict) -> None:
        doc["items"][1]["humanAnswer"] = f"answer {HOSTILE}"
        doc["items"][2]["blockedReason"] = f"no credentials {HOSTILE}"

    _edit_json(root / ".forge" / "backlog.json", hand_edit)
    git("commit", "-qam", "hand edit", cwd=root)
    return loop


@pytest.fixture
def project(templates: Templates, tmp_path: Path) -> Path:
    """A copy of the built project (built on first use, under this test's isolation)."""
    return templates.copy("hostile-text", _build, tmp_path / "repo")


@pytest.fixture
def built(templates: Templates, project: Path) -> dict:
    """What building the project printed: its loop run."""
    return {"loop": templates.result("hostile-text")}


def test_the_loop_progress_follow_and_summary_lines(project: Path, built: dict) -> None:
    text = harmless(built["loop"])
    assert clean(f"title 0 {HOSTILE}") in text
    assert "agent on 001: " + clean(HOSTILE) in text  # --follow, through the boundary
    assert "raw c1 \ufffd31m and \ufffd byte" in text


def test_backlog_list_and_show_piped(project: Path) -> None:
    listed = harmless(forge(project, "backlog", "list"))
    assert clean(f"title 2 {HOSTILE}") in listed
    shown = harmless(forge(project, "backlog", "show", "002"))
    for field in ("description", "ac", "notes", "answer"):
        assert clean(f"{field} {HOSTILE}") in shown
    shown = harmless(forge(project, "backlog", "show", "003"))
    assert clean(f"no credentials {HOSTILE}") in shown


def test_backlog_list_on_a_terminal_keeps_only_git_forges_own_colours(project: Path) -> None:
    code, raw = on_tty(project, "backlog", "list")
    text = assert_harmless(raw, own=True)
    assert code == 0 and "\x1b[32m" in text  # done, in git-forge's green
    assert "\x1b[35m" not in text  # the title's own colour never reaches the terminal
    code, raw = on_tty(project, "backlog", "show", "003")
    assert code == 0 and clean(f"description {HOSTILE}") in assert_harmless(raw, own=True)


def test_json_escapes_c1_and_del_and_round_trips(project: Path) -> None:
    for args in (("backlog", "list", "--json"), ("backlog", "show", "001", "--json"),
                 ("recover", "--plan", "--json")):
        result = forge(project, *args)
        harmless(result)
        assert b"\\u009b" in result.stdout and b"\\u007f" in result.stdout, args
        assert b"\\u202e" in result.stdout and b"\\u2067" in result.stdout, args
        assert b"\\u001b]52" in result.stdout, args
    for args in (("status", "--json"), ("proc", "list", "--json"), ("reconcile", "--json")):
        json.loads(harmless(forge(project, *args)))
    items = json.loads(forge(project, "backlog", "list", "--json").stdout)
    assert items[0]["title"] == f"title 0 {HOSTILE}"  # every byte kept, only escaped
    plan = json.loads(forge(project, "recover", "--plan", "--json").stdout)
    assert any(HOSTILE in reason for q in plan["questions"] for reason in q["reasons"])


def test_json_that_is_all_ascii_escapes_del_too(project: Path) -> None:
    """An answer whose hostile text is all ASCII (ESC sequences, BEL, DEL; no C1, no
    override) takes the output's ASCII path: DEL is escaped there as well, ESC and
    BEL by JSON itself, and every byte round-trips."""
    ascii_hostile = "x\x1b]52;c;ZXZpbA==\x07 csi\x1b[2J del\x7f\x7f end"
    recorded = forge(project, "decision", "record", "--backlog-dir", ".forge", "--item",
                     "003", "--question", "q", "--answer", ascii_hostile)
    assert recorded.returncode == 0, recorded.stderr
    for args in (("--unapplied", "--json"), ("--json",)):
        result = forge(project, "decision", "list", "--backlog-dir", ".forge", *args)
        harmless(result)
        assert result.stdout.isascii() and result.stdout.count(b"\\u007f") >= 2, args
        document = json.loads(result.stdout)
        entries = document["unapplied" if args[0] == "--unapplied" else "decisions"]
        assert entries[-1]["answer"] == ascii_hostile


def test_status_with_a_hostile_state_file(project: Path) -> None:
    _edit_json(project / ".forge" / "state.json",
               lambda doc: doc.update(error=f"error {HOSTILE}", currentItem=f"0{HOSTILE}"))
    text = harmless(forge(project, "status"))
    assert clean(f"error {HOSTILE}") in text


def test_recover_plan_and_scripted_report(project: Path) -> None:
    plan = harmless(forge(project, "recover", "--plan"))
    assert clean(f"no credentials {HOSTILE}") in plan
    report = forge(project, "recover", "--answer", "003=use the staging index",
                   "--defer", "002")
    text = harmless(report)
    assert "recorded  003" in text, text


def test_recover_interactive_questions_on_a_real_terminal(project: Path) -> None:
    session = PtySession("recover", cwd=project)
    for _ in range(3):  # the merge prompt, then one per question (002, 003): Enter defers
        session.expect("Enter:")
        session.send("")
    code = session.finish()
    assert code == 3, session.text  # needs-human remains
    text = assert_harmless(session.transcript, own=True)
    assert clean(f"no credentials {HOSTILE}") in text


def test_decision_list_and_errors_that_quote_hostile_text(project: Path) -> None:
    recorded = forge(project, "decision", "record", "--backlog-dir", ".forge", "--item", "003",
                     "--question", f"question {HOSTILE}", "--answer", f"use {HOSTILE}")
    assert recorded.returncode == 0, recorded.stderr
    text = harmless(forge(project, "decision", "list", "--backlog-dir", ".forge",
                          "--unapplied"))
    assert clean(f"question {HOSTILE}") in text
    harmless(forge(project, "decision", "list", "--backlog-dir", ".forge"))
    missing = forge(project, "backlog", "show", f"9{HOSTILE}")
    assert missing.returncode == 2
    error = harmless(missing)
    assert error.startswith("Error: ") and error.count("\n") == 1


def test_reconcile_evidence_and_stash_lines_and_preflight_stop(project: Path) -> None:
    (project / EVIL_NAME).write_text("changed after the run\n")  # item 001's file
    (project / f"new {EVIL_NAME}").write_text("untracked\n")
    (project / "stashed.txt").write_text("stash me\n")
    git("stash", "push", "-u", "-m", f"{HOSTILE} from item 003", "--", "stashed.txt",
        cwd=project)
    _edit_json(project / ".forge" / "state.json",
               lambda doc: doc.update(startedAt=f"2024 {HOSTILE}", currentItem="003"))
    plan = forge(project, "reconcile")
    text = harmless(plan)
    assert "touched by item 001" in text and clean(HOSTILE) in text, text
    harmless(forge(project, "reconcile", "--json"))
    stop = forge(project, "preflight")
    assert stop.returncode != 0
    assert clean(f"2024 {HOSTILE}") in harmless(stop)
    refused = forge(project, "loop", "run", "--agent", "true")
    assert refused.returncode == 2 and harmless(refused)
    code, raw = on_tty(project, "reconcile")
    assert_harmless(raw, own=True)
    stashed = forge(project, "reconcile", "--stash", "item-001")
    assert stashed.returncode == 6  # the untracked file is still there, undecided
    assert "item-001: stashed as" in harmless(stashed)


def test_proc_list_and_show(project: Path) -> None:
    rows = json.loads(forge(project, "proc", "list", "--json").stdout)
    assert rows
    harmless(forge(project, "proc", "list"))
    shown = harmless(forge(project, "proc", "show", rows[0]["handle"]))
    assert clean(HOSTILE) in shown  # the agent's argv, as the manifest holds it
    output = harmless(forge(project, "proc", "output", rows[0]["handle"]))
    assert "agent on" in output


def test_completion_candidates_with_their_titles(project: Path) -> None:
    result = forge(project, "__complete", "items", "--describe")
    assert result.returncode == 0 and clean(f"title 1 {HOSTILE}") in harmless(result)


def test_config_values_echoed_back(project: Path) -> None:
    (project / ".forge.yaml").write_text(json.dumps({"loop": {"agent": f"agent {HOSTILE}"}}))
    text = harmless(forge(project, "config"))
    assert clean(f"agent {HOSTILE}") in text
    harmless(forge(project, "config", "--json"))


def test_a_live_loop_on_a_terminal_and_ndjson(project: Path, tmp_path: Path) -> None:
    forge(project, "backlog", "add", "--title", f"again {HOSTILE}")
    git("commit", "-qam", "one more", cwd=project)
    agent = _agent_command(tmp_path)
    code, raw = on_tty(project, "loop", "run", "--agent", agent, "--iterations", "1")
    text = assert_harmless(raw, own=True)
    assert code in (0, 5) and clean(f"again {HOSTILE}") in text, text
    git("stash", "push", "-u", "-q", cwd=project)
    forge(project, "backlog", "add", "--title", f"third {HOSTILE}")
    git("commit", "-qam", "another", cwd=project)
    streamed = forge(project, "loop", "run", "--ndjson", "--agent", agent, "--iterations", "1")
    assert streamed.returncode in (0, 5), streamed.stderr
    harmless(streamed)
    events = [json.loads(line) for line in streamed.stdout.decode().splitlines()]
    assert any(event.get("title") == f"third {HOSTILE}" for event in events), events


def test_a_traceback_passes_the_boundary_too(tmp_path: Path) -> None:
    """The last resort: a bug's traceback quoting hostile text is printed safely."""
    code = ("import sys\nfrom git_forge.cli import main as m\n"
            "def boom(*args, **kwargs):\n    raise RuntimeError(" + repr(HOSTILE) + ")\n"
            "m._dispatch = boom\nsys.exit(m.main(['status']))\n")
    result = waiting.run([sys.executable, "-c", code], capture_output=True)
    assert result.returncode == 1
    assert "RuntimeError: " + clean(HOSTILE) in assert_harmless(result.stderr)


def test_an_argument_that_is_not_utf8_is_refused_and_nothing_is_written(project: Path) -> None:
    backlog = project / ".forge" / "backlog.json"
    before = backlog.read_bytes()
    raw_c1 = os.fsdecode(b"raw \x9b31m c1 byte")  # as `printf '\233'` passes it
    result = forge(project, "backlog", "add", "--title", raw_c1)
    assert result.returncode == 2
    text = harmless(result)
    assert text.startswith("Error: ") and "not valid UTF-8" in text and text.count("\n") == 1
    assert backlog.read_bytes() == before


def test_a_lone_surrogate_in_a_file_is_printed_as_u_fffd_and_escaped_in_json(
    project: Path
) -> None:
    backlog = project / ".forge" / "backlog.json"
    document = json.loads(backlog.read_text("utf-8"))
    document["items"][0]["title"] = "half \ud800 a pair"
    backlog.write_text(json.dumps(document, indent=2))  # ASCII: "\ud800" as an escape
    listed = forge(project, "backlog", "list")
    assert listed.returncode == 0 and "half \ufffd a pair" in harmless(listed)
    as_json = forge(project, "backlog", "list", "--json")
    assert b"half \\ud800 a pair" in as_json.stdout
    assert json.loads(harmless(as_json))[0]["title"] == "half \ud800 a pair"
