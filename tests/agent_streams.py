"""The streams Claude Code and Codex write, line for line, as the tests' fakes and
parsers use them: compact JSON (``JSON.stringify`` / serde), one event a line, with
fields beyond those git-forge reads (a parser must ignore them)."""

from __future__ import annotations

import json
from typing import Any


def line(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


# -- Claude Code: claude -p --output-format stream-json --verbose ------------------------
def claude_init(session: str, cwd: str = "/repo") -> str:
    return line({"type": "system", "subtype": "init", "cwd": cwd, "session_id": session,
                 "tools": ["Task", "Bash", "Edit", "Read", "Write"], "mcp_servers": [],
                 "model": "claude-sonnet-4-5-20250929", "permissionMode": "acceptEdits",
                 "slash_commands": ["compact", "review"], "apiKeySource": "none",
                 "claude_code_version": "2.0.31", "output_style": "default",
                 "uuid": "0b2c6a1e-7e1f-4a53-9d0e-3c1d8d0a9f11"})


def claude_assistant(session: str, text: str, error: str | None = None) -> str:
    """An assistant message; ``error`` makes it the synthetic one Claude Code writes
    for a failure it meets before any API call (``authentication_failed``)."""
    event: dict[str, Any] = {"type": "assistant", "message": {
        "id": "msg_01XyZ", "type": "message", "role": "assistant",
        "model": "<synthetic>" if error else "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": text}], "stop_reason": None,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 1500, "output_tokens": 40}},
        "parent_tool_use_id": None, "session_id": session,
        "uuid": "5d5a2f0b-9b0c-4c1d-8a8e-21c0f1e0a2b3"}
    if error:
        event["error"] = error
    return line(event)


def claude_tool_use(session: str) -> str:
    return line({"type": "assistant", "message": {
        "id": "msg_01Tool", "type": "message", "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_01", "name": "Write",
                     "input": {"file_path": "/repo/x.py", "content": "x = 1\n"}}]},
        "parent_tool_use_id": None, "session_id": session})


def claude_rate_limit(session: str, status: str, resets_at: int,
                      kind: str = "five_hour") -> str:
    return line({"type": "rate_limit_event", "rate_limit_info": {
        "status": status, "resetsAt": resets_at, "rateLimitType": kind,
        "utilization": 0.97 if status != "allowed" else 0.4, "isUsingOverage": False,
        "surpassedThreshold": 0.9}, "session_id": session,
        "uuid": "a1b2c3d4-0000-4000-8000-000000000001"})


def claude_result(session: str, text: str, *, is_error: bool = False,
                  subtype: str = "success", cost: float = 0.0123, turns: int = 3,
                  usage: dict[str, int] | None = None) -> str:
    return line({"type": "result", "subtype": subtype, "is_error": is_error,
                 "duration_ms": 8123, "duration_api_ms": 7011, "num_turns": turns,
                 "result": text, "session_id": session, "total_cost_usd": cost,
                 "usage": usage or {"input_tokens": 1200, "cache_creation_input_tokens": 300,
                                    "cache_read_input_tokens": 4500, "output_tokens": 650,
                                    "server_tool_use": {"web_search_requests": 0},
                                    "service_tier": "standard"},
                 "modelUsage": {}, "permission_denials": [],
                 "uuid": "d4c3b2a1-1111-4111-8111-111111111111"})


# -- Codex: codex exec --json - ---------------------------------------------------------
def codex_thread(thread: str) -> str:
    return line({"type": "thread.started", "thread_id": thread})


def codex_turn_started() -> str:
    return line({"type": "turn.started"})


def codex_message(text: str, item_id: str = "item_3") -> str:
    return line({"type": "item.completed", "item": {"id": item_id, "type": "agent_message",
                                                    "text": text}})


def codex_command(command: str, exit_code: int = 0) -> str:
    return line({"type": "item.completed", "item": {
        "id": "item_1", "type": "command_execution", "command": command,
        "aggregated_output": "ok\n", "exit_code": exit_code, "status": "completed"}})


def codex_turn_completed(input_tokens: int = 9000, cached: int = 6000,
                         output: int = 800) -> str:
    return line({"type": "turn.completed", "usage": {
        "input_tokens": input_tokens, "cached_input_tokens": cached,
        "output_tokens": output}})


def codex_turn_failed(message: str) -> str:
    return line({"type": "turn.failed", "error": {"message": message}})


def codex_error(message: str) -> str:
    return line({"type": "error", "message": message})
