"""The demo's scripted agent: a stand-in for Claude Code or Codex, without an LLM.

It reads the prompt on stdin, finds the item id in the ``## Backlog item`` heading
and acts out a small script per item: it completes some items by writing files,
asks the same question for two items in different words, blocks one after leaving
a half-written file behind, and completes any item whose prompt carries the
human's answer. Unknown items are completed with a note file.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

ITEM_HEADING = re.compile(r"^## Backlog item (\S+): (.*)$", re.MULTILINE)
#: The human's answer in the prompt: after the words that introduce it, to the next section.
ANSWER = re.compile(r"^(?:The human's answer:|The human says:|## The human's answer)\n"
                    r"(.*?)(?=\n## |\Z)", re.MULTILINE | re.DOTALL)

GREET = '''"""Greetings."""


def greet(name: str) -> str:
    return f"Hello, {name}!"
'''

CLI = '''"""Command line: python -m cli NAME."""

import sys

from greet import greet

if __name__ == "__main__":
    print(greet(sys.argv[1] if len(sys.argv) > 1 else "world"))
'''

#: item id → (files to write, final signal line) when there is no human answer.
SCRIPT: dict[str, tuple[dict[str, str], str]] = {
    "001": ({"greet.py": GREET}, "FORGE_DONE"),
    "002": ({"cli.py": CLI}, "FORGE_DONE"),
    "003": ({}, "FORGE_NEEDS_HUMAN: Which database should store the greetings, "
                "SQLite or PostgreSQL?"),
    "004": ({}, "FORGE_NEEDS_HUMAN: Which database should store user preferences, "
                "SQLite or PostgreSQL?"),
    "006": ({"dist/RELEASE-NOTES.md": "# Release notes (draft)\n\n- greetings\n"},
            "FORGE_BLOCKED: No credentials for the package index are configured "
            "on this machine"),
}


def answer_in(prompt: str) -> str | None:
    found = ANSWER.search(prompt)
    return found.group(1).strip() if found else None


def main() -> int:
    prompt = sys.stdin.read()
    heading = ITEM_HEADING.search(prompt)
    if heading is None:
        print("FORGE_BLOCKED: the prompt names no backlog item")
        return 0
    item_id, title = heading.group(1), heading.group(2)
    print(f"demo agent: working on {item_id} ({title})", flush=True)
    time.sleep(0.2)
    answer = answer_in(prompt)
    files, signal = SCRIPT.get(item_id, ({}, "FORGE_DONE"))
    if answer is not None or item_id not in SCRIPT:
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or item_id
        note = f"# {title}\n\nDone by the demo agent.\n"
        if answer is not None:
            note += f"\nThe human decided: {answer}\n"
        files, signal = {f"notes/{item_id}-{slug}.md": note}, "FORGE_DONE"
    for name, content in files.items():
        path = Path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        print(f"demo agent: wrote {name}", flush=True)
    print(signal)
    return 0


if __name__ == "__main__":
    sys.exit(main())
