"""A model server on 127.0.0.1 for the real Claude Code and Codex programs.

It speaks as much of two APIs as the programs need to run a task end to end:
Anthropic's Messages API (``POST /v1/messages``, streamed as server-sent events,
and ``POST /v1/messages/count_tokens``) for Claude Code, and OpenAI's Responses
API (``POST /v1/responses``, streamed) for Codex. What the model does is scripted
per test, one turn per model request, in order:

* ``Say(text)`` — a text answer (the signal goes in it);
* ``Shell(command)`` — a call of the program's shell tool (Claude Code's ``Bash``,
  Codex's ``exec_command``); the program runs it and asks again with its result;
* ``Fail(status)`` — an HTTP error with the body that API sends with it (401, 429,
  500, 529; Anthropic's 400: an API key out of credit);
* ``Limit(at=…)`` or ``Limit(after=…)`` — the account's usage limit, as each real
  server reports it (Anthropic: a 429 with the ``anthropic-ratelimit-unified-*``
  headers of a subscription; OpenAI: a 429 whose error is ``usage_limit_reached``
  with ``resets_at``);
* ``Hang(seconds)`` — no answer at all for that long (or until the server closes).

A program that retries a failed request sends the same conversation in the same
session again: such a request gets the turn its first try got, so one ``Fail`` is
one failed attempt however many times the program retries it. A request beyond
the script gets ``UNSCRIPTED`` (words with no signal) and is counted.

Every request is recorded (``requests``) with the turn and the tokens it was
served, so a test can hold git-forge's receipts to what the programs were given;
requests for anything else are answered 404 and kept in ``unknown``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANTHROPIC = "anthropic"
OPENAI = "openai"
GEMINI = "gemini"
#: OpenAI Chat Completions (Qwen Code, OpenCode, Copilot CLI).
CHAT = "chat"


@dataclass(frozen=True)
class Usage:
    """The tokens one answer is said to have cost: ``input`` read afresh,
    ``cache_read`` read from the prompt cache (OpenAI counts them in its input
    tokens too, Anthropic apart), ``cache_write`` written to it (Anthropic only)."""

    input: int = 1000
    output: int = 50
    cache_read: int = 0
    cache_write: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input + other.input, self.output + other.output,
                     self.cache_read + other.cache_read, self.cache_write + other.cache_write)


NO_USAGE = Usage(0, 0)


@dataclass(frozen=True)
class Say:
    text: str
    usage: Usage = Usage()


@dataclass(frozen=True)
class Shell:
    command: str
    #: Words said before the call, as a model does.
    say: str = "Running it."
    usage: Usage = Usage()


@dataclass(frozen=True)
class Fail:
    status: int


@dataclass(frozen=True)
class Limit:
    #: When the limit lifts (epoch seconds) …
    at: float | None = None
    #: … or this many seconds after the request came (neither: the server does not say).
    after: float | None = None

    def resets(self, now: float) -> int | None:
        """When it lifts for a request at ``now``, in whole seconds as both APIs say it."""
        if self.at is not None:
            return int(self.at)
        return None if self.after is None else int(now + self.after)


@dataclass(frozen=True)
class Hang:
    seconds: float = 60.0


Turn = Say | Shell | Fail | Limit | Hang

UNSCRIPTED = Say("No turn was scripted for this request.", NO_USAGE)


@dataclass
class Request:
    """One request the server answered."""

    api: str | None
    path: str
    headers: dict[str, str]
    body: Any
    #: The turn that answered it (``None``: not a model request).
    turn: Turn | None = None
    #: A program's retry of an earlier request.
    retry: bool = False
    #: The tokens served with it.
    usage: Usage = NO_USAGE
    #: When it came (epoch seconds).
    at: float = field(default_factory=time.time)
    #: When the ``Limit`` that answered it said the limit lifts.
    resets_at: int | None = None


#: Anthropic's error type and message for each status a script uses.
_ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "Your credit balance is too low to access the Anthropic "
                                   "API. Please go to Plans & Billing to upgrade or purchase "
                                   "credits."),
    401: ("authentication_error", "invalid x-api-key"),
    429: ("rate_limit_error", "This request would exceed your account's rate limit. "
                              "Please try again later."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}
#: OpenAI's error type, code and message for each status a script uses.
_OPENAI_ERRORS = {
    401: ("invalid_request_error", "invalid_api_key",
          "Incorrect API key provided: sk-fake***. You can find your API key at "
          "https://platform.openai.com/account/api-keys."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached. Please try again later."),
    500: ("server_error", None,
          "The server had an error while processing your request. Sorry about that!"),
}
#: The headers that name the program's session (Claude Code's; Codex's thread).
_SESSION_HEADERS = ("x-claude-code-session-id", "session-id", "session_id")


def _conversation(api: str, headers: dict[str, str], body: Any) -> str:
    """What a program's retry of a request sends again byte for byte: its session
    and the conversation so far, the messages (Anthropic) or input (OpenAI). A new
    attempt has a new session, or (resumed) a longer conversation."""
    field = {ANTHROPIC: "messages", GEMINI: "contents", CHAT: "messages"}.get(api, "input")
    said = body.get(field) if isinstance(body, dict) else body
    session = [headers.get(name) for name in _SESSION_HEADERS]
    return hashlib.sha256(json.dumps([session, said], sort_keys=True).encode()).hexdigest()


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class ModelServer:
    """The server, serving on a free port of 127.0.0.1 from its start; ``close()``
    ends it and every ``Hang``."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.unknown: list[Request] = []
        self.unscripted = 0
        self._turns: list[Turn] = []
        self._answered: dict[str, Turn] = {}
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name="model-server", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def script(self, *turns: Turn) -> None:
        """Append turns to the script: each answers the next model request."""
        with self._lock:
            self._turns.extend(turns)

    def left(self) -> int:
        """Scripted turns no request has taken yet."""
        with self._lock:
            return len(self._turns)

    def model_requests(self) -> list[Request]:
        with self._lock:
            return [request for request in self.requests if request.turn is not None]

    def served(self) -> Usage:
        """The tokens served in all."""
        total = NO_USAGE
        for request in self.model_requests():
            total = total + request.usage
        return total

    def close(self) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(10)

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _answer(self, request: Request) -> Turn:
        """The turn that answers ``request`` (a model request), recorded with it."""
        assert request.api is not None
        # Gemini CLI resends a resumed session's conversation as it was, and retries no
        # request the script fails (its per-day quota, a 401): each request is a turn.
        key = (_conversation(request.api, request.headers, request.body)
               if request.api != GEMINI else f"gemini-{len(self.requests)}")
        with self._lock:
            turn = self._answered.get(key)
            request.retry = turn is not None
            if turn is None:
                if self._turns:
                    turn = self._turns.pop(0)
                else:
                    turn, self.unscripted = UNSCRIPTED, self.unscripted + 1
                self._answered[key] = turn
            request.turn = turn
            if isinstance(turn, Say | Shell):
                request.usage = turn.usage
            elif isinstance(turn, Limit):
                request.resets_at = turn.resets(request.at)
            self.requests.append(request)
        return turn

    def _record(self, request: Request) -> None:
        with self._lock:
            (self.requests if request.api is not None else self.unknown).append(request)

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):08d}"


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # what was asked is recorded, not printed

        def do_GET(self) -> None:
            self._dispatch()

        def do_POST(self) -> None:
            self._dispatch()

        def _dispatch(self) -> None:
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw  # compressed, or not JSON: kept as it came
            headers = {name.lower(): value for name, value in self.headers.items()}
            api = {"/v1/messages": ANTHROPIC, "/v1/messages/count_tokens": ANTHROPIC,
                   "/v1/responses": OPENAI, "/v1/chat/completions": CHAT,
                   }.get(path) if self.command == "POST" else None
            if api == CHAT and isinstance(body, dict) and body.get("stream") is True \
                    and not body.get("tools"):
                # a program's side question with no tools (OpenCode titles its session):
                # answered, never a scripted turn
                server._record(Request(None, path, headers, body))
                return self._chat_side()
            if api == CHAT and not (isinstance(body, dict) and body.get("stream") is True):
                # a program's own question beside the conversation (who speaks next, a
                # title): answered, never a scripted turn
                server._record(Request(None, path, headers, body))
                return self._json(200, _chat_completion(
                    '{"reasoning": "a test", "next_speaker": "user"}', NO_USAGE))
            if self.command == "POST" and path.startswith("/v1beta/models/"):
                if path.endswith(":generateContent"):  # Gemini CLI's router: no turn
                    server._record(Request(None, path, headers, body))
                    return self._json(200, _gemini_answer(
                        '{"complexity_reasoning": "a test", "complexity_score": 10}', NO_USAGE))
                api = GEMINI if path.endswith(":streamGenerateContent") else None
            request = Request(api, path, headers, body)
            if api is None:
                server._record(request)
                return self._json(404, {"type": "error", "error": {
                    "type": "not_found_error", "message": f"no {self.command} {path} here"}})
            if path.endswith("/count_tokens"):
                server._record(request)
                return self._json(200, {"input_tokens": 1000})
            turn = server._answer(request)
            try:
                if isinstance(turn, Hang):
                    server._closing.wait(turn.seconds)
                    self.close_connection = True  # no answer: the connection just ends
                elif api == ANTHROPIC:
                    self._anthropic(turn, body, request.resets_at)
                elif api == GEMINI:
                    self._gemini(turn)
                elif api == CHAT:
                    self._chat(turn, body)
                else:
                    self._openai(turn, body, request.resets_at)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the program was ended mid-answer

        def _json(self, status: int, document: Any,
                  headers: dict[str, str] | None = None) -> None:
            payload = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _stream(self, events: list[bytes], headers: dict[str, str] | None = None) -> None:
            """Server-sent events, the connection closed after the last."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Connection", "close")
            self.close_connection = True
            self.end_headers()
            self.wfile.write(b"".join(events))
            self.wfile.flush()

        # --- Anthropic Messages --------------------------------------------------------------

        def _anthropic(self, turn: Turn, body: Any, resets: int | None) -> None:
            request_id = server._id("req")
            if isinstance(turn, Fail):
                kind, message = _ANTHROPIC_ERRORS.get(turn.status, ("api_error", "Error"))
                return self._json(turn.status, {
                    "type": "error", "error": {"type": kind, "message": message},
                    "request_id": request_id}, {"request-id": request_id})
            if isinstance(turn, Limit):
                return self._json(429, {
                    "type": "error", "error": {"type": "rate_limit_error",
                                               "message": "Usage limit reached"},
                    "request_id": request_id},
                    {"request-id": request_id, **_unified_headers(True, resets)})
            assert isinstance(turn, Say | Shell)
            model = body.get("model", "claude") if isinstance(body, dict) else "claude"
            if isinstance(turn, Shell):
                blocks: list[dict[str, Any]] = [
                    {"type": "text", "text": turn.say},
                    {"type": "tool_use", "id": server._id("toolu"), "name": "Bash",
                     "input": {"command": turn.command, "description": "Run the task's command"}}]
                stop = "tool_use"
            else:
                blocks, stop = [{"type": "text", "text": turn.text}], "end_turn"
            usage = {"input_tokens": turn.usage.input, "output_tokens": 1,
                     "cache_creation_input_tokens": turn.usage.cache_write,
                     "cache_read_input_tokens": turn.usage.cache_read}
            message = {"id": server._id("msg"), "type": "message", "role": "assistant",
                       "model": model, "content": [], "stop_reason": None,
                       "stop_sequence": None, "usage": usage}
            headers = {"request-id": request_id, **_unified_headers(False, None)}
            if not (isinstance(body, dict) and body.get("stream") is True):
                return self._json(200, {**message, "content": blocks, "stop_reason": stop,
                                        "usage": {**usage, "output_tokens": turn.usage.output}},
                                  headers)
            events = [_sse("message_start", {"type": "message_start", "message": message})]
            for index, block in enumerate(blocks):
                if block["type"] == "text":
                    start, delta = {"type": "text", "text": ""}, {"type": "text_delta",
                                                                  "text": block["text"]}
                else:
                    start = {**block, "input": {}}
                    delta = {"type": "input_json_delta",
                             "partial_json": json.dumps(block["input"])}
                events += [_sse("content_block_start", {"type": "content_block_start",
                                                        "index": index, "content_block": start}),
                           _sse("content_block_delta", {"type": "content_block_delta",
                                                        "index": index, "delta": delta}),
                           _sse("content_block_stop", {"type": "content_block_stop",
                                                       "index": index})]
            events += [_sse("message_delta", {
                "type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": turn.usage.output}}),
                _sse("message_stop", {"type": "message_stop"})]
            self._stream(events, headers)

        # --- OpenAI Responses ----------------------------------------------------------------

        def _openai(self, turn: Turn, body: Any, resets: int | None) -> None:
            if isinstance(turn, Fail):
                kind, code, text = _OPENAI_ERRORS.get(turn.status,
                                                      ("server_error", None, "Error."))
                return self._json(turn.status, {"error": {"message": text, "type": kind,
                                                          "param": None, "code": code}})
            if isinstance(turn, Limit):
                error: dict[str, Any] = {"type": "usage_limit_reached",
                                         "message": "The usage limit has been reached",
                                         "plan_type": "plus"}
                if resets is not None:
                    error.update(resets_at=resets,
                                 resets_in_seconds=max(0, int(resets - time.time())))
                return self._json(429, {"error": error})
            assert isinstance(turn, Say | Shell)
            model = body.get("model", "gpt") if isinstance(body, dict) else "gpt"
            if isinstance(turn, Shell):
                item: dict[str, Any] = {
                    "type": "function_call", "id": server._id("fc"),
                    "call_id": server._id("call"), "name": "exec_command",
                    "arguments": json.dumps({"cmd": turn.command}), "status": "completed"}
                pending = {**item, "status": "in_progress", "arguments": ""}
                text_events: list[bytes] = []
            else:
                item = {"type": "message", "id": server._id("msg"), "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": turn.text,
                                     "annotations": []}]}
                pending = {**item, "status": "in_progress", "content": []}
                where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
                text_events = [
                    _sse("response.content_part.added", {
                        "type": "response.content_part.added", **where,
                        "part": {"type": "output_text", "text": "", "annotations": []}}),
                    _sse("response.output_text.delta", {
                        "type": "response.output_text.delta", **where, "delta": turn.text}),
                    _sse("response.output_text.done", {
                        "type": "response.output_text.done", **where, "text": turn.text})]
            usage = turn.usage
            response = {"id": server._id("resp"), "object": "response",
                        "created_at": int(time.time()), "model": model, "output": []}
            self._stream([
                _sse("response.created", {"type": "response.created",
                                          "response": {**response, "status": "in_progress"}}),
                _sse("response.output_item.added", {"type": "response.output_item.added",
                                                    "output_index": 0, "item": pending}),
                *text_events,
                _sse("response.output_item.done", {"type": "response.output_item.done",
                                                   "output_index": 0, "item": item}),
                _sse("response.completed", {"type": "response.completed", "response": {
                    **response, "status": "completed", "output": [item],
                    "usage": {"input_tokens": usage.input + usage.cache_read,
                              "input_tokens_details": {"cached_tokens": usage.cache_read},
                              "output_tokens": usage.output,
                              "output_tokens_details": {"reasoning_tokens": 0},
                              "total_tokens": usage.input + usage.cache_read + usage.output}}})])

        # --- Gemini streamGenerateContent -------------------------------------------------

        def _gemini(self, turn: Turn) -> None:
            if isinstance(turn, Fail | Limit):
                status = 429 if isinstance(turn, Limit) else turn.status
                return self._json(status, {"error": _GEMINI_ERRORS.get(
                    status, {"code": status, "message": "Internal error encountered.",
                             "status": "INTERNAL"})})
            assert isinstance(turn, Say | Shell)
            if isinstance(turn, Shell):
                parts: list[dict[str, Any]] = [
                    {"text": turn.say},
                    {"functionCall": {"name": "run_shell_command",
                                      "args": {"command": turn.command,
                                               "description": "Run the task's command"}}}]
            else:
                parts = [{"text": turn.text}]
            answer = _gemini_answer("", turn.usage)
            answer["candidates"][0]["content"]["parts"] = parts
            self._stream([b"data: " + json.dumps(answer).encode() + b"\r\n\r\n"])

        # --- OpenAI Chat Completions --------------------------------------------------------

        def _chat_side(self) -> None:
            chunk = {"id": "chatcmpl-side", "object": "chat.completion.chunk",
                     "created": int(time.time()), "model": "gpt", "choices": [
                         {"index": 0, "delta": {"role": "assistant", "content": "A title"},
                          "finish_reason": "stop"}]}
            self._stream([b"data: " + json.dumps(chunk).encode() + b"\n\n", b"data: [DONE]\n\n"])

        def _chat(self, turn: Turn, body: Any) -> None:
            if isinstance(turn, Fail | Limit):
                status = 429 if isinstance(turn, Limit) else turn.status
                kind, code, text = _OPENAI_ERRORS.get(status, ("server_error", None, "Error."))
                if status == 429:  # a rate limit that lifts (not a used-up quota)
                    kind, code = "requests", "rate_limit_exceeded"
                    text = ("Rate limit reached for requests per min. Please try again in "
                            "1s.")
                # come back at once: a program that honours it retries without waiting
                return self._json(status, {"error": {"message": text, "type": kind,
                                                     "param": None, "code": code}},
                                  {"retry-after-ms": "10", "retry-after": "0"})
            assert isinstance(turn, Say | Shell)
            model = body.get("model", "gpt") if isinstance(body, dict) else "gpt"
            chunk = {"id": server._id("chatcmpl"), "object": "chat.completion.chunk",
                     "created": int(time.time()), "model": model}
            if isinstance(turn, Shell):
                # the program's own shell tool: Qwen Code's, or Copilot CLI's and OpenCode's
                offered = [tool.get("function", {}).get("name") for tool in
                           (body.get("tools") or [] if isinstance(body, dict) else [])]
                name = "run_shell_command" if "run_shell_command" in offered else "bash"
                delta: dict[str, Any] = {"role": "assistant", "content": turn.say,
                                         "tool_calls": [{
                                             "index": 0, "id": server._id("call"),
                                             "type": "function", "function": {
                                                 "name": name, "arguments": json.dumps(
                                                     {"command": turn.command,
                                                      "description": "Run the task's command"})}}]}
                finish = "tool_calls"
            else:
                delta, finish = {"role": "assistant", "content": turn.text}, "stop"
            usage = turn.usage
            events = [
                {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                 "usage": {"prompt_tokens": usage.input + usage.cache_read,
                           "completion_tokens": usage.output,
                           "total_tokens": usage.input + usage.cache_read + usage.output,
                           "prompt_tokens_details": {"cached_tokens": usage.cache_read}}}]
            self._stream([*(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events),
                          b"data: [DONE]\n\n"])

    return Handler


def _chat_completion(text: str, usage: Usage) -> dict[str, Any]:
    """An OpenAI ``chat.completion`` saying ``text``."""
    return {"id": "chatcmpl-side", "object": "chat.completion", "created": int(time.time()),
            "model": "gpt", "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": usage.input, "completion_tokens": usage.output,
                      "total_tokens": usage.input + usage.output}}


#: Gemini's error for each status a script uses: a 429 is the per-day free-tier
#: quota, which Gemini CLI does not retry.
_GEMINI_ERRORS = {
    401: {"code": 401, "message": "Request had invalid authentication credentials. Expected "
                                  "OAuth 2 access token, login cookie or other valid "
                                  "authentication credential.", "status": "UNAUTHENTICATED"},
    429: {"code": 429, "message": "You exceeded your current quota, please check your plan "
                                  "and billing details.", "status": "RESOURCE_EXHAUSTED",
          "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                       "violations": [{"quotaMetric": "generativelanguage.googleapis.com/"
                                                      "generate_content_free_tier_requests",
                                       "quotaId": "GenerateRequestsPerDayPerProjectPerModel"
                                                  "-FreeTier",
                                       "quotaValue": "250"}]}]},
}


def _gemini_answer(text: str, usage: Usage) -> dict[str, Any]:
    """A Gemini ``GenerateContentResponse`` saying ``text``."""
    return {"candidates": [{"content": {"parts": [{"text": text}], "role": "model"},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": usage.input + usage.cache_read,
                              "candidatesTokenCount": usage.output,
                              "cachedContentTokenCount": usage.cache_read,
                              "totalTokenCount": usage.input + usage.cache_read + usage.output},
            "modelVersion": "gemini-forge-test"}


def _unified_headers(rejected: bool, resets_at: int | None) -> dict[str, str]:
    """Anthropic's unified rate-limit headers, as a subscription's answers carry them:
    the five-hour window allowed, or rejected until ``resets_at``, with no overage
    (extra usage) to fall back on."""
    if not rejected:
        later = str(int(time.time()) + 5 * 3600)
        return {"anthropic-ratelimit-unified-status": "allowed",
                "anthropic-ratelimit-unified-reset": later,
                "anthropic-ratelimit-unified-5h-status": "allowed",
                "anthropic-ratelimit-unified-5h-utilization": "0.1",
                "anthropic-ratelimit-unified-5h-reset": later,
                "anthropic-ratelimit-unified-representative-claim": "five_hour"}
    resets = {} if resets_at is None else {
        "anthropic-ratelimit-unified-reset": str(resets_at),
        "anthropic-ratelimit-unified-5h-reset": str(resets_at)}
    return {"anthropic-ratelimit-unified-status": "rejected", **resets,
            "anthropic-ratelimit-unified-5h-status": "rejected",
            "anthropic-ratelimit-unified-5h-utilization": "1.0",
            "anthropic-ratelimit-unified-representative-claim": "five_hour",
            "anthropic-ratelimit-unified-overage-status": "rejected",
            "anthropic-ratelimit-unified-overage-disabled-reason": "out_of_credits",
            "x-should-retry": "false"}
