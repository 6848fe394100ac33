"""A loopback HTTP server that speaks a provider's JSON, for the adapter tests.

Started by a test on 127.0.0.1 (a free port), served by a thread, bounded: it
answers at most ``max_requests`` requests (later ones get a 500 that fails the
test's assertions) and a scripted delay ends as soon as the server is closed, so
no test can leave it behind. Every request is recorded with its path, headers
and JSON body, next to the answer it got.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from lernie_stateful.conform.model_server import QuietServer


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, object]
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, object]
    answer: Answer


Responder = Callable[[dict[str, object], int], Answer]
"""The answer to a request body; the int is how many requests came before it."""


class Stub:
    def __init__(self, respond: Responder, max_requests: int) -> None:
        self.respond = respond
        self.max_requests = max_requests
        self.seen: list[Seen] = []
        self.closing = threading.Event()
        self.arrived = threading.Event()
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with stub._lock:
                    count = len(stub.seen)
                    if count >= stub.max_requests:
                        answer = Answer(500, {"error": {"type": "stub", "message": "budget"}})
                    else:
                        answer = stub.respond(body, count)
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    stub.seen.append(Seen(self.path, headers, body, answer))
                stub.arrived.set()
                if answer.delay_s and stub.closing.wait(answer.delay_s):
                    return
                data = json.dumps(answer.body).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in answer.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

        self.server = QuietServer(("127.0.0.1", 0), Handler)  # a killed client prints nothing
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,))
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@contextmanager
def serving(respond: Responder, max_requests: int = 40) -> Iterator[Stub]:
    stub = Stub(respond, max_requests)
    try:
        yield stub
    finally:
        stub.close()
