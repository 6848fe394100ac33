"""The kit's scripted model over HTTP: Anthropic Messages and OpenAI Chat Completions.

An implementation that calls its model over HTTP is pointed at this server instead of a
provider; it plays the kit's model (:func:`lernie_stateful.conform.kit_model.decide`, the
directive language of docs/models.md) on the conversation each request carries. Nothing
here decides what the model does: a request is translated into the neutral
:class:`~lernie_stateful.conform.kit_model.Turn` list, and the decision back into the API's
answer (docs/model-server.md).

- ``POST …/messages``: Anthropic Messages, a JSON answer or, with ``"stream": true``, the
  server-sent events ``message_start``, ``ping``, per content block ``content_block_start``,
  ``content_block_delta`` (``text_delta`` or ``input_json_delta``) and ``content_block_stop``,
  then ``message_delta`` (``stop_reason``, ``usage``) and ``message_stop``.
- ``POST …/chat/completions``: OpenAI Chat Completions, a JSON answer or, with
  ``"stream": true``, ``chat.completion.chunk`` objects (``tool_calls`` deltas, then a
  ``finish_reason``; a usage chunk when ``stream_options.include_usage``) and ``[DONE]``.
- ``GET …/models``: one model, ``kit``.

Tool calls go out under the names and input shapes of the tool map (an adapter file's
``[tools]``; the reference's by default). ``@fail <status> [<n>]`` in a prompt fails the
first n calls for that prompt with the status (429 ``rate_limit_error``, 500 ``api_error``,
529 ``overloaded_error``, ...), counted per conversation. Every request is recorded
(:class:`ServedRequest`). The server binds 127.0.0.1 only and stops by itself after
``idle`` seconds without a request or ``lifetime`` seconds in all.

Which agent a request is for: the reference's provider adapters name the agent in their
default system prompt (``You are agent <id>``); that id is the request's ``agent`` when
present. Otherwise (upstream's system prompt is the role's soul, the same for every agent)
the key is the conversation itself: ``conv-`` and a digest of its first delivered message,
which holds the agent's first prompt and its frontmatter. Decisions need no key at all
(they read only the conversation); the key groups the records and the ``@fail`` counters.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from lernie_stateful.conform.adapter import Adapter, parse_tools
from lernie_stateful.conform.kit_model import DEFAULT_TOOLS, Decision, ToolSpec, Turn, decide

APIS = ("anthropic", "openai", "both")
HOST = "127.0.0.1"
DEFAULT_LIFETIME_S = 3600.0
DEFAULT_IDLE_S = 600.0
_CHUNK = 16  # characters per streamed delta, so a client must put deltas together
_AGENT_ID = re.compile(r"\bagent (\d{8}T\d{6}Z-[0-9a-f]{8}(?:-\d{8}T\d{6}Z-[0-9a-f]{8})*)\b")
_FRONTMATTER_AHEAD = re.compile(r"\n\n(?=---\n(?:[A-Za-z_][\w-]*:[^\n]*\n)+---\n)")

_ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error",
                     403: "permission_error", 404: "not_found_error",
                     413: "request_too_large", 429: "rate_limit_error",
                     500: "api_error", 529: "overloaded_error"}
_OPENAI_ERRORS = {400: ("invalid_request_error", None), 401: ("invalid_request_error",
                                                              "invalid_api_key"),
                  404: ("invalid_request_error", "model_not_found"),
                  429: ("requests", "rate_limit_exceeded"), 500: ("server_error", None),
                  503: ("server_error", "overloaded"), 529: ("server_error", "overloaded")}


@dataclass(frozen=True)
class ServedRequest:
    """One request the server answered, as the kit's checks read it."""

    seq: int
    agent: str
    """The agent id the system prompt names, else ``conv-<digest of the first message>``."""
    api: str
    """``anthropic`` or ``openai`` (``-`` for a request to no known endpoint)."""
    path: str
    stream: bool
    tools: tuple[str, ...]
    """The names of the tools the request offered, in its order."""
    messages: tuple[Any, ...]
    """The request's ``messages`` as sent (JSON values)."""
    system: str | None
    status: int
    """The HTTP status answered (200, a ``@fail`` status, 4xx for a bad request), or 0 when
    a stop cut an ``@sleep`` short and nothing was answered."""
    reply: Mapping[str, Any] | None = None
    """What the model did: ``{"type": "text", "text"}`` or ``{"type": "tool_use", "id",
    "name", "input"}`` (the implementation's name and input); None for an error."""

    def as_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "agent": self.agent, "api": self.api, "path": self.path,
                "stream": self.stream, "tools": list(self.tools),
                "messages": list(self.messages), "system": self.system,
                "status": self.status, "reply": dict(self.reply) if self.reply else None}


class RequestError(Exception):
    """A request the server cannot read: answered with 400 and this text."""


# ------------------------------------------------------------------ requests to turns


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content] if content else []
    if not isinstance(content, list):
        return []
    return [str(b["text"]) for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]


def split_delivered(text: str) -> list[str]:
    """A run of delivered messages joined by blank lines (one OpenAI ``user`` message) back
    into messages: a cut before every blank line followed by a frontmatter block."""
    return _FRONTMATTER_AHEAD.split(text)


def turns_of_anthropic(messages: Sequence[object]) -> list[Turn]:
    out: list[Turn] = []
    for m in messages:
        if not isinstance(m, dict):
            raise RequestError("every message must be an object")
        content = m.get("content")
        if m.get("role") == "assistant":
            calls = sum(1 for b in content if isinstance(b, dict)
                        and b.get("type") == "tool_use") if isinstance(content, list) else 0
            out.append(Turn("assistant", calls=calls))
        elif m.get("role") == "user":
            out.append(Turn("user", tuple(_texts(content))))
        else:
            raise RequestError(f"unknown role {m.get('role')!r}")
    return out


def turns_of_openai(messages: Sequence[object]) -> list[Turn]:
    out: list[Turn] = []
    for m in messages:
        if not isinstance(m, dict):
            raise RequestError("every message must be an object")
        role = m.get("role")
        if role in ("system", "developer"):
            continue
        if role == "user":
            out.append(Turn("user", tuple(t for text in _texts(m.get("content"))
                                          for t in split_delivered(text))))
        elif role == "assistant":
            calls = m.get("tool_calls")
            out.append(Turn("assistant", calls=len(calls) if isinstance(calls, list) else 0))
        elif role in ("tool", "function"):
            out.append(Turn("tool"))
        else:
            raise RequestError(f"unknown role {role!r}")
    return out


def agent_of(system: str | None, turns: Sequence[Turn]) -> str:
    """The agent id the system prompt names, else the conversation's key (module docstring)."""
    found = _AGENT_ID.search(system or "")
    if found:
        return found.group(1)
    first = next((t.texts[0] for t in turns if t.role == "user" and t.texts), "")
    return "conv-" + hashlib.sha256(first.encode()).hexdigest()[:12]


def _system_text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_texts(value))
    return None


def _tool_names(tools: object, api: str) -> tuple[str, ...]:
    names: list[str] = []
    for t in tools if isinstance(tools, list) else []:
        if not isinstance(t, dict):
            continue
        if api == "openai" and isinstance(t.get("function"), dict):
            t = t["function"]
        if isinstance(t.get("name"), str):
            names.append(t["name"])
    return tuple(names)


# ------------------------------------------------------------------ the server


@dataclass
class _State:
    api: str
    tools: Mapping[str, ToolSpec]
    record: Path | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    served: list[ServedRequest] = field(default_factory=list)
    failed: dict[tuple[str, str], int] = field(default_factory=dict)
    stopping: threading.Event = field(default_factory=threading.Event)
    last: float = field(default_factory=time.monotonic)
    active: int = 0
    count: int = 0


class ModelServer:
    """The scripted model server, run on a thread of this process.

    ``ModelServer(api="anthropic").start()`` or ``with ModelServer() as server:``. ``port=0``
    takes a free port. ``base_url`` is ``http://127.0.0.1:<port>`` (an Anthropic client's
    base URL; an OpenAI client's is ``openai_url``, the same with ``/v1``). ``requests``
    lists what was served so far. It stops on :meth:`stop`, when leaving the ``with``, after
    ``idle`` seconds without a request, or ``lifetime`` seconds after it started.
    """

    def __init__(self, api: str = "both", tools: Mapping[str, ToolSpec] | None = None,
                 port: int = 0, *, record: Path | None = None,
                 lifetime: float = DEFAULT_LIFETIME_S, idle: float = DEFAULT_IDLE_S) -> None:
        if api not in APIS:
            raise ValueError(f"api must be one of {', '.join(APIS)}, not {api!r}")
        self._state = _State(api, {**DEFAULT_TOOLS, **(tools or {})}, record)
        self._lifetime = lifetime
        self._idle = idle
        self._httpd = _HTTPServer((HOST, port), _Handler)
        self._httpd.state = self._state
        self._threads: list[threading.Thread] = []
        self._stopped = threading.Event()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def anthropic_url(self) -> str:
        return self.base_url

    @property
    def openai_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def requests(self) -> list[ServedRequest]:
        with self._state.lock:
            return list(self._state.served)

    @property
    def busy(self) -> bool:
        """A request is being answered (or sleeping under ``@sleep``) right now."""
        with self._state.lock:
            return self._state.active > 0

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def start(self) -> ModelServer:
        serve = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                 name="kit-model-server", daemon=True)
        watch = threading.Thread(target=self._watch, name="kit-model-server-watch", daemon=True)
        self._threads = [serve, watch]
        self._started = time.monotonic()
        with self._state.lock:
            self._state.last = self._started
        for t in self._threads:
            t.start()
        return self

    def _watch(self) -> None:
        while not self._state.stopping.wait(0.2):
            now = time.monotonic()
            with self._state.lock:
                idle = not self._state.active and now - self._state.last > self._idle
            if idle or now - self._started > self._lifetime:
                self._shutdown()
                return

    def _shutdown(self) -> None:
        self._state.stopping.set()
        with self._state.lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def stop(self) -> None:
        """Stop serving (idempotent); a request sleeping under ``@sleep`` is cut short."""
        self._shutdown()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=5)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server has stopped; True when it has."""
        return self._stopped.wait(timeout)

    def __enter__(self) -> ModelServer:
        return self if self._threads else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(api: str = "both", tools: Mapping[str, ToolSpec] | None = None, port: int = 0,
          **options: Any) -> ModelServer:
    """A started :class:`ModelServer` (stop it, or use it as a context manager)."""
    return ModelServer(api, tools, port, **options).start()


class QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that says nothing of a client gone in the middle of a request
    (the kit kills the implementations it runs, and a killed driver's connection is reset):
    that is not the server's failure. Any other error is reported as usual."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class _HTTPServer(QuietServer):
    state: _State


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "lernie-kit-model"
    timeout = 30.0
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -------------------------------------------------------------- plumbing

    def _send_json(self, status: int, value: object, headers: Mapping[str, str]) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self, headers: Mapping[str, str]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, name: str | None, value: object) -> None:
        text = json.dumps(value) if not isinstance(value, str) else value
        head = f"event: {name}\n" if name else ""
        self._chunk(f"{head}data: {text}\n\n".encode())

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _record(self, served: ServedRequest) -> None:
        state = self.server.state
        with state.lock:
            state.served.append(served)
            if state.record is not None:
                with state.record.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(served.as_json()) + "\n")

    def _seq(self) -> int:
        """The next request number (1, 2, …), unique among concurrent requests."""
        with self.server.state.lock:
            self.server.state.count += 1
            return self.server.state.count

    # -------------------------------------------------------------- routes

    def _closing(self) -> bool:
        """A request on a connection kept alive past :meth:`ModelServer.stop` closes it
        unanswered."""
        if self.server.state.stopping.is_set():
            self.close_connection = True
            return True
        return False

    def do_GET(self) -> None:
        if self._closing():
            return
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": "kit", "object": "model", "type": "model", "display_name": "kit",
                 "created": 0, "created_at": "1970-01-01T00:00:00Z", "owned_by": "kit"}]}, {})
        else:
            self._send_json(404, {"error": {"type": "not_found_error",
                                            "message": f"no such endpoint: {path}"}}, {})

    def do_POST(self) -> None:
        if self._closing():
            return
        state = self.server.state
        with state.lock:
            state.active += 1
            state.last = time.monotonic()
        try:
            self._post()
        finally:
            with state.lock:
                state.active -= 1
                state.last = time.monotonic()

    def _post(self) -> None:
        state = self.server.state
        path = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path.endswith("/messages") and state.api in ("anthropic", "both"):
            api = "anthropic"
        elif path.endswith("/chat/completions") and state.api in ("openai", "both"):
            api = "openai"
        else:
            self._record(ServedRequest(self._seq(), "-", "-", path, False, (), (), None, 404))
            self._send_json(404, {"type": "error", "error": {
                "type": "not_found_error", "message": f"no such endpoint: {path}"}}, {})
            return
        seq = self._seq()
        try:
            body = json.loads(raw or b"null")
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise RequestError("the body must be a JSON object with a messages array")
            messages = body["messages"]
            if api == "anthropic":
                system = _system_text(body.get("system"))
                turns = turns_of_anthropic(messages)
            else:
                system = next((_system_text(m.get("content")) for m in messages
                               if isinstance(m, dict) and m.get("role") in ("system",
                                                                           "developer")), None)
                turns = turns_of_openai(messages)
        except (ValueError, RequestError) as exc:
            self._record(ServedRequest(seq, "-", api, path, False, (), (), None, 400))
            self._error(api, seq, 400, f"cannot read the request: {exc}")
            return
        stream = body.get("stream") is True
        agent = agent_of(system, turns)
        served = ServedRequest(seq, agent, api, path, stream,
                               _tool_names(body.get("tools"), api), tuple(messages), system, 0)
        decision = decide(turns)
        if decision.fail is not None and decision.prompt is not None:
            status, count = decision.fail
            key = (agent_of(None, turns), decision.prompt)
            with state.lock:
                spent = state.failed.get(key, 0)
                if spent < count:
                    state.failed[key] = spent + 1
                    failing = True
                else:
                    failing = False
            if failing:
                self._record(_with(served, status=status))
                self._error(api, seq, status, f"the script asks for failure {spent + 1} of "
                                              f"{count} with HTTP {status}")
                return
        if decision.sleep and state.stopping.wait(decision.sleep):
            self._record(served)  # status 0: cut short by the stop, no answer
            self.close_connection = True
            return
        reply = self._reply(decision)
        self._record(_with(served, status=200, reply=reply))
        model = str(body.get("model") or "kit")
        if api == "anthropic":
            self._anthropic(reply, seq, model, messages, stream)
        else:
            include = isinstance(body.get("stream_options"), dict) and \
                body["stream_options"].get("include_usage") is True
            self._openai(reply, seq, model, messages, stream, include)

    def _reply(self, decision: Decision) -> dict[str, Any] | None:
        if decision.call is None:
            return {"type": "text", "text": decision.text} if decision.text else None
        spec = self.server.state.tools.get(decision.call.name) or ToolSpec(
            decision.call.name, {k: "{" + k + "}" for k in decision.call.input})
        name, args = spec.apply(decision.call)
        return {"type": "tool_use", "id": decision.call.id, "name": name,
                "input": args}

    def _error(self, api: str, seq: int, status: int, message: str) -> None:
        if api == "anthropic":
            kind = _ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500
                                         else "invalid_request_error")
            self._send_json(status, {"type": "error", "error": {"type": kind,
                                                                "message": message}},
                            {"request-id": f"req_kit_{seq}"})
        else:
            kind, code = _OPENAI_ERRORS.get(status, ("server_error" if status >= 500
                                                     else "invalid_request_error", None))
            self._send_json(status, {"error": {"message": message, "type": kind,
                                               "param": None, "code": code}},
                            {"x-request-id": f"req_kit_{seq}"})

    # -------------------------------------------------------------- Anthropic Messages

    def _anthropic(self, reply: Mapping[str, Any] | None, seq: int, model: str,
                   messages: Sequence[object], stream: bool) -> None:
        usage = {"input_tokens": _tokens(messages), "output_tokens": _tokens(reply)}
        stop = "tool_use" if reply and reply["type"] == "tool_use" else "end_turn"
        headers = {"request-id": f"req_kit_{seq}"}
        content = [dict(reply)] if reply else []
        message = {"id": f"msg_kit_{seq}", "type": "message", "role": "assistant",
                   "model": model, "content": content, "stop_reason": stop,
                   "stop_sequence": None, "usage": usage}
        if not stream:
            self._send_json(200, message, headers)
            return
        self._start_stream(headers)
        self._event("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None,
            "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1}}})
        self._event("ping", {"type": "ping"})
        if reply is not None:
            if reply["type"] == "text":
                start: dict[str, Any] = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": part}
                          for part in _pieces(str(reply["text"]))]
            else:
                start = {"type": "tool_use", "id": reply["id"], "name": reply["name"],
                         "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": part}
                          for part in _pieces(json.dumps(reply["input"]))]
            self._event("content_block_start", {"type": "content_block_start", "index": 0,
                                                "content_block": start})
            for delta in deltas:
                self._event("content_block_delta", {"type": "content_block_delta",
                                                    "index": 0, "delta": delta})
            self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
        self._event("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": usage["output_tokens"]}})
        self._event("message_stop", {"type": "message_stop"})
        self._end_stream()

    # -------------------------------------------------------------- OpenAI Chat Completions

    def _openai(self, reply: Mapping[str, Any] | None, seq: int, model: str,
                messages: Sequence[object], stream: bool, include_usage: bool) -> None:
        prompt, completion = _tokens(messages), _tokens(reply)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                 "total_tokens": prompt + completion}
        finish = "tool_calls" if reply and reply["type"] == "tool_use" else "stop"
        headers = {"x-request-id": f"req_kit_{seq}"}
        cid = f"chatcmpl-kit-{seq}"
        call = None
        if reply is not None and reply["type"] == "tool_use":
            call = {"id": reply["id"], "type": "function",
                    "function": {"name": reply["name"], "arguments": json.dumps(reply["input"])}}
        text = str(reply["text"]) if reply and reply["type"] == "text" else None
        if not stream:
            message: dict[str, Any] = {"role": "assistant", "content": text or
                                       ("" if call is None else None), "refusal": None}
            if call is not None:
                message["tool_calls"] = [call]
            self._send_json(200, {"id": cid, "object": "chat.completion", "created": 0,
                                  "model": model, "choices": [{
                                      "index": 0, "message": message, "logprobs": None,
                                      "finish_reason": finish}], "usage": usage}, headers)
            return
        self._start_stream(headers)

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> None:
            self._event(None, {"id": cid, "object": "chat.completion.chunk", "created": 0,
                               "model": model, "choices": [{
                                   "index": 0, "delta": delta, "logprobs": None,
                                   "finish_reason": finish_reason}]})

        chunk({"role": "assistant", "content": ""})
        if text:
            for part in _pieces(text):
                chunk({"content": part})
        if call is not None:
            chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                   "function": {"name": call["function"]["name"],
                                                "arguments": ""}}]})
            for part in _pieces(call["function"]["arguments"]):
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
        chunk({}, finish)
        if include_usage:
            self._event(None, {"id": cid, "object": "chat.completion.chunk", "created": 0,
                               "model": model, "choices": [], "usage": usage})
        self._event(None, "[DONE]")
        self._end_stream()


def _with(served: ServedRequest, **changes: Any) -> ServedRequest:
    return replace(served, **changes)


def _pieces(text: str) -> list[str]:
    return [text[i:i + _CHUNK] for i in range(0, len(text), _CHUNK)] or [""]


def _tokens(value: object) -> int:
    """A deterministic stand-in for a token count: a quarter of the JSON's length."""
    return max(1, len(json.dumps(value)) // 4) if value is not None else 0


# ------------------------------------------------------------------ the kit's use


@contextlib.contextmanager
def served(adapter: Adapter, record: Path | None = None) -> Iterator[Adapter]:
    """For one case or program: ``adapter`` as it is when it has no ``[model_server]``;
    otherwise a server of its API and tool map runs while the block runs, and the adapter
    yielded fills ``{model_url}`` and ``{model_port}`` with it. On leaving, the server stops
    and (with ``record``) the requests it served are written there, one JSON object a line."""
    if adapter.server_api is None:
        yield adapter
        return
    server = ModelServer(adapter.server_api, adapter.tools).start()
    try:
        yield replace(adapter, served={"model_url": server.base_url,
                                       "model_port": str(server.port)})
    finally:
        server.stop()
        if record is not None:
            record.write_text("".join(json.dumps(r.as_json()) + "\n" for r in server.requests),
                              encoding="utf-8")


# ------------------------------------------------------------------ the command line


def _load_tools(path: Path) -> Mapping[str, ToolSpec]:
    import tomllib

    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return parse_tools(data.get("tools", {}), str(path))


def build_parser(prog: str = "lernie-check serve-model") -> argparse.ArgumentParser:
    from lernie_spec import cliopts

    parser = cliopts.parser(
        prog,
        "Serve the conformance kit's scripted model over HTTP on 127.0.0.1: "
                    "Anthropic Messages (POST /v1/messages) and OpenAI Chat Completions "
                    "(POST /v1/chat/completions), streamed or not. The model plays the "
                    "directives of the conversation it is sent (docs/model-server.md). "
                    "Prints the base URL on stdout, then serves until interrupted, idle "
                    "or past its lifetime.")
    parser.add_argument("--port", type=int, default=0,
                        help="the port to bind on 127.0.0.1 (default 0: a free one)")
    parser.add_argument("--api", choices=APIS, default="both",
                        help="which API to answer (default both); the other gets 404")
    parser.add_argument("--tools-map", type=Path, metavar="FILE",
                        help="a TOML file (an adapter file) whose [tools] table names the "
                        "implementation's tools and their inputs (default: the reference's)")
    parser.add_argument("--record", type=Path, metavar="FILE",
                        help="append every request served to FILE, one JSON object a line")
    parser.add_argument("--lifetime", type=float, default=DEFAULT_LIFETIME_S, metavar="S",
                        help=f"stop after S seconds in all (default {DEFAULT_LIFETIME_S:.0f})")
    parser.add_argument("--idle", type=float, default=DEFAULT_IDLE_S, metavar="S",
                        help="stop after S seconds without a request "
                        f"(default {DEFAULT_IDLE_S:.0f})")
    cliopts.add_common(parser)
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    try:
        tools = _load_tools(args.tools_map) if args.tools_map else None
        server = ModelServer(args.api, tools, args.port, record=args.record,
                             lifetime=args.lifetime, idle=args.idle)
    except Exception as exc:  # one line for a bad map, a taken port, an unreadable file
        print(f"lernie-check serve-model: {exc}", file=sys.stderr)
        return 1
    previous = {s: signal.signal(s, lambda *_: server._shutdown())
                for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.start()
        if args.json:
            import json

            print(json.dumps({"base_url": server.base_url}), flush=True)
        else:
            print(server.base_url, flush=True)
        while not server.wait(0.5):
            pass
    finally:
        server.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
