"""The model server the real-agent tier runs Claude Code and Codex against
(``model_server``), held to the shapes of the two APIs without the programs: the
tier's tests skip where the programs are not installed, these always run."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import waiting
from model_server import UNSCRIPTED, Fail, Hang, Limit, ModelServer, Say, Shell, Usage


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as started:
        yield started


def _post(server: ModelServer, path: str, body: Any,
          headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              **(headers or {})}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def _events(payload: bytes) -> list[tuple[str, dict[str, Any]]]:
    """``(event, data)`` of each server-sent event, in order."""
    found = []
    for block in payload.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if fields:
            found.append((fields["event"], json.loads(fields["data"])))
    return found


def _messages(text: str) -> dict[str, Any]:
    return {"model": "claude-test", "stream": True, "max_tokens": 100,
            "messages": [{"role": "user", "content": text}]}


def _responses(text: str) -> dict[str, Any]:
    return {"model": "gpt-test", "stream": True, "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}]}


def test_anthropic_text_and_tool_use_stream_as_the_messages_api_does(
        server: ModelServer) -> None:
    server.script(Shell("printf hi > out.txt", usage=Usage(100, 7, 20, 30)), Say("All done."))
    status, headers, payload = _post(server, "/v1/messages?beta=true", _messages("go"))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    events = _events(payload)
    assert [name for name, _ in events] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
        "message_stop"]
    assert events[0][1]["message"]["usage"] == {
        "input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 30,
        "cache_read_input_tokens": 20}
    tool = events[4][1]["content_block"]
    assert (tool["type"], tool["name"], tool["input"]) == ("tool_use", "Bash", {})
    assert json.loads(events[5][1]["delta"]["partial_json"])["command"] == "printf hi > out.txt"
    assert events[7][1]["delta"]["stop_reason"] == "tool_use"
    assert events[7][1]["usage"] == {"output_tokens": 7}
    assert headers["anthropic-ratelimit-unified-status"] == "allowed"
    _, _, payload = _post(server, "/v1/messages", _messages("go on"))
    assert _events(payload)[2][1]["delta"] == {"type": "text_delta", "text": "All done."}
    assert _post(server, "/v1/messages/count_tokens", _messages("x"))[2] == \
        b'{"input_tokens": 1000}'
    assert server.served() == Usage(1100, 57, 20, 30)


def test_openai_text_and_function_calls_stream_as_the_responses_api_does(
        server: ModelServer) -> None:
    server.script(Shell("printf hi > out.txt"), Say("All done.", Usage(300, 9, cache_read=200)))
    _, _, payload = _post(server, "/v1/responses", _responses("go"))
    events = _events(payload)
    assert [name for name, _ in events] == [
        "response.created", "response.output_item.added", "response.output_item.done",
        "response.completed"]
    call = events[2][1]["item"]
    assert (call["type"], call["name"]) == ("function_call", "exec_command")
    assert json.loads(call["arguments"]) == {"cmd": "printf hi > out.txt"}
    _, _, payload = _post(server, "/v1/responses", _responses("go on"))
    events = _events(payload)
    assert events[3] == ("response.output_text.delta", {
        "type": "response.output_text.delta", "item_id": events[1][1]["item"]["id"],
        "output_index": 0, "content_index": 0, "delta": "All done."})
    usage = events[-1][1]["response"]["usage"]
    assert (usage["input_tokens"], usage["input_tokens_details"], usage["output_tokens"]) == (
        500, {"cached_tokens": 200}, 9)


def test_a_retry_gets_the_same_turn_a_new_request_the_next(server: ModelServer) -> None:
    server.script(Fail(529), Say("Second."))
    session = {"X-Claude-Code-Session-Id": "s1"}
    first = _post(server, "/v1/messages", _messages("go"), session)
    again = _post(server, "/v1/messages", _messages("go"), session)
    assert first[0] == again[0] == 529
    assert json.loads(first[2])["error"]["type"] == "overloaded_error"
    other = _post(server, "/v1/messages", _messages("go"), {"X-Claude-Code-Session-Id": "s2"})
    assert other[0] == 200  # a new session: the next turn
    assert server.left() == 0 and server.unscripted == 0
    _post(server, "/v1/messages", _messages("more"), session)
    assert server.unscripted == 1
    assert [(request.turn, request.retry) for request in server.model_requests()] == [
        (Fail(529), False), (Fail(529), True), (Say("Second."), False), (UNSCRIPTED, False)]


def test_limits_come_as_each_api_reports_them(server: ModelServer) -> None:
    resets = int(time.time()) + 7200
    server.script(Limit(resets), Limit(resets), Limit(after=30), Limit())
    status, headers, body = _post(server, "/v1/messages", _messages("a"))
    assert status == 429 and json.loads(body)["error"]["type"] == "rate_limit_error"
    assert headers["anthropic-ratelimit-unified-status"] == "rejected"
    assert headers["anthropic-ratelimit-unified-reset"] == str(resets)
    assert headers["anthropic-ratelimit-unified-representative-claim"] == "five_hour"
    status, _, body = _post(server, "/v1/responses", _responses("b"))
    error = json.loads(body)["error"]
    assert status == 429 and error["type"] == "usage_limit_reached"
    assert error["resets_at"] == resets
    came = time.time()
    _, _, body = _post(server, "/v1/responses", _responses("c"))
    assert abs(json.loads(body)["error"]["resets_at"] - (came + 30)) <= 2
    assert server.model_requests()[2].resets_at == json.loads(body)["error"]["resets_at"]
    _, headers, body = _post(server, "/v1/messages", _messages("d"))
    assert "anthropic-ratelimit-unified-reset" not in headers


def test_other_requests_are_refused_and_kept(server: ModelServer) -> None:
    status, _, _ = _post(server, "/api/hello", {})
    assert status == 404
    assert [request.path for request in server.unknown] == ["/api/hello"]
    assert not server.model_requests()


def test_a_hang_answers_nothing_and_ends_when_the_server_closes() -> None:
    server = ModelServer()
    server.script(Hang(60))
    failures: list[BaseException] = []

    def ask() -> None:
        try:
            _post(server, "/v1/messages", _messages("go"))
        except Exception as exc:  # the connection ends with no answer
            failures.append(exc)

    asking = threading.Thread(target=ask)
    asking.start()
    waiting.wait_for(server.model_requests, timeout=10, what="the request to come")
    assert asking.is_alive()
    server.close()
    waiting.join(asking, timeout=10)
    assert failures
