"""What the provider adapters share (R-STEP-8): SDK loading, keys, retries, stops, errors.

A provider adapter (``anthropic``, ``openai``) turns a :class:`ModelRequest` into
one HTTP request through the provider's official SDK and the answer back into
content blocks. The SDK is an optional extra, imported only when the adapter is
selected, never on the ``lernie message`` path. Everything that can be checked
without the network (the extra, the key, the settings, the system prompt) is
checked when the adapter is built, before any call.

One call here is a loop of attempts. The SDK's own retries are off, so each
retry is ours: rate limits, overload and server errors (408, 429, 5xx, 529) and
broken connections wait with exponential backoff and jitter and try again, up
to ``max_retries`` times, each retry one line on stderr (the driver log). Any
other failure is one :class:`ModelError` line naming the provider's error type,
the HTTP status and the request id. Each attempt runs on a worker thread while
the caller's thread watches the stop flag, so a stop during a slow answer
returns at once (``None``: the hop discards the call and commits nothing).
The API key is never part of a line this module writes: every text that leaves
it goes through :meth:`Secret.scrub`.
"""

from __future__ import annotations

import importlib
import json
import random
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

from lernie_ref.adapters.protocol import ModelReply, ModelRequest, StopCheck
from lernie_ref.core.errors import ConfigError, ModelError
from lernie_ref.substrate.config import ProviderSettings

T = TypeVar("T")

BACKOFF_CAP_S = 60.0
"""No single wait between attempts is longer than this (nor than a larger ``retry_backoff``)."""
RETRYABLE_STATUS = frozenset({408, 429, 529})
_POLL_S = 0.05

DEFAULT_SYSTEM = """\
You are agent {agent} in a lernie workspace: a tree of agents that talk by
depositing messages into each other's inboxes. Every message you receive starts
with a frontmatter block naming its sender (`from:`); a reply from an agent
you dispatched or wrote to also carries its `epitaph:`. Use the `message` tool
to write to another agent (by id or name) and the `dispatch` tool to start a
child agent with a goal. Your worktree (your current directory when you start)
is yours to work in with the other tools you are offered (read_file, cd,
apply_patch, and bash when the operator enabled it); what they change is
committed with each step, so never run git commit or git checkout yourself.
When you answer without calling a tool, your text is
your final response and goes back to whoever asked you."""


def import_sdk(provider: str) -> ModuleType:
    """The provider's SDK module, or the error that says which extra to install."""
    try:
        return importlib.import_module(provider)
    except ImportError:
        raise ConfigError(
            f"model `{provider}` needs the {provider} SDK, an optional extra: "
            f"pip install 'lernie_ref[{provider}]'"
        ) from None


class Secret:
    """An API key: usable by the adapter, removed from every line it writes."""

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def scrub(self, text: str) -> str:
        return text.replace(self._value, "[key]") if self._value else text

    def __repr__(self) -> str:
        return "Secret([key])"


def api_key(provider: str, env: Mapping[str, str], var: str) -> Secret:
    """The key from ``var`` (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``); missing is an error."""
    value = env.get(var, "")
    if not value:
        raise ConfigError(f"model `{provider}` needs an API key: set {var}")
    return Secret(value)


def system_prompt(settings: ProviderSettings, root: Path | None, provider: str) -> str | None:
    """The configured system prompt (``system`` or ``system_file``), ``None`` for the default.

    ``system_file`` is read now, so a missing file is an error before any call.
    """
    if settings.system:
        return settings.system
    if settings.system_file:
        path = Path(settings.system_file)
        if not path.is_absolute() and root is not None:
            path = root / path
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"[{provider}] system_file {str(path)!r}: {exc}") from None
    return None


def default_system(request: ModelRequest) -> str:
    return DEFAULT_SYSTEM.format(agent=request.agent_id)


@dataclass(frozen=True)
class Failure:
    """One SDK exception, classified: retry it or fail the hop with ``line``."""

    retryable: bool
    line: str
    retry_after: float | None = None


def _header(exc: BaseException, name: str) -> str | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get(name)
    return value if isinstance(value, str) else None


def _api_message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) else str(exc)


def _api_type(exc: BaseException) -> str | None:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("type"), str):
            return str(inner["type"])
    return None


def classify(provider: str, sdk: ModuleType, exc: BaseException) -> Failure:
    """R-STEP-8: which SDK failures are retried, and the one line for each."""
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    if isinstance(status, int) and isinstance(exc, sdk.APIStatusError):
        request_id = getattr(exc, "request_id", None) or "none"
        api_type = _api_type(exc)
        where = f"HTTP {status}" + (f" {api_type}" if api_type else "")
        line = f"{provider} {kind} ({where}, request id {request_id}): {_api_message(exc)}"
        retry_after: float | None = None
        raw = _header(exc, "retry-after")
        if raw is not None:
            try:
                retry_after = max(0.0, float(raw))
            except ValueError:
                retry_after = None
        retryable = status in RETRYABLE_STATUS or status >= 500
        return Failure(retryable, _one_line(line), retry_after)
    if isinstance(exc, sdk.APIConnectionError):
        return Failure(True, _one_line(f"{provider} {kind}: {_api_message(exc)}"))
    return Failure(False, _one_line(f"{provider} {kind}: {exc}"))


def _one_line(text: str) -> str:
    return " ".join(text.split())


class _Attempt(Generic[T]):
    """One attempt on a worker thread; the caller waits for it or walks away on a stop."""

    def __init__(self, attempt: Callable[[], T]) -> None:
        self._attempt = attempt
        self._done = threading.Event()
        self.value: T | None = None
        self.error: BaseException | None = None
        thread = threading.Thread(target=self._run, daemon=True, name="model-call")
        thread.start()

    def _run(self) -> None:
        try:
            self.value = self._attempt()
        except BaseException as exc:  # handed to the caller's thread
            self.error = exc
        finally:
            self._done.set()

    def wait(self, should_stop: StopCheck) -> bool:
        """True when the attempt finished; False when a stop came first."""
        while not self._done.wait(_POLL_S):
            if should_stop():
                return False
        return True


@dataclass
class Retrier:
    """The retry loop of R-STEP-8, with its clock, randomness and log injected."""

    provider: str
    sdk: ModuleType
    settings: ProviderSettings
    secret: Secret
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random

    def delay(self, retry: int, retry_after: float | None) -> float:
        """Seconds before retry number ``retry`` (1-based): doubled each time, half jittered."""
        cap = max(BACKOFF_CAP_S, self.settings.retry_backoff)
        base = min(cap, self.settings.retry_backoff * 2.0 ** (retry - 1))
        wait = base / 2 + base / 2 * self.jitter()
        if retry_after is not None:
            wait = max(wait, min(retry_after, cap))
        return wait

    def _pause(self, seconds: float, should_stop: StopCheck) -> bool:
        """Wait ``seconds`` unless a stop comes; True when it did."""
        deadline = time.monotonic() + seconds
        while not should_stop():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sleep(min(left, _POLL_S))
        return True

    def run(self, attempt: Callable[[], T], should_stop: StopCheck) -> T | None:
        """``attempt()`` until it succeeds (its value), a stop (``None``) or a final failure."""
        retry = 0
        while True:
            if should_stop():
                return None
            call = _Attempt(attempt)
            if not call.wait(should_stop):
                return None
            if call.error is None:
                return call.value
            failure = classify(self.provider, self.sdk, call.error)
            line = self.secret.scrub(failure.line)
            if not failure.retryable or retry >= self.settings.max_retries:
                if failure.retryable:
                    line += f" (gave up after {retry} retries)"
                raise ModelError(line)
            retry += 1
            wait = self.delay(retry, failure.retry_after)
            self.log(f"lernie: {line}; retry {retry}/{self.settings.max_retries} in {wait:.2f} s")
            if self._pause(wait, should_stop):
                return None


def check_json(provider: str, request_id: str | None, value: object) -> dict[str, object]:
    """The response body as an object, or the hop's one-line error."""
    if not isinstance(value, dict):
        raise ModelError(
            f"{provider} reply (request id {request_id or 'none'}) is not a JSON object"
        )
    return {str(k): v for k, v in value.items()}


def invalid(provider: str, request_id: str | None, what: str) -> ModelError:
    """R-STEP-8: an answer that is not valid for the protocol fails the hop."""
    return ModelError(f"{provider} reply (request id {request_id or 'none'}): {what}")


def read_usage(raw: object, keys: Mapping[str, str]) -> dict[str, int] | None:
    """The token counts of a reply's usage object: for each provider field in ``keys``
    that holds a whole number (not a boolean), ``{lernie's name: value}``; None when
    there is none (R-STATUS-4)."""
    usage: dict[str, int] = {}
    if isinstance(raw, dict):
        for theirs, ours in keys.items():
            value = raw.get(theirs)
            if isinstance(value, int) and not isinstance(value, bool):
                usage[ours] = value
    return usage or None


def used_tool_ids(request: ModelRequest) -> set[str]:
    from lernie_ref.core.entry import tool_use_ids

    return {i for e in request.entries if e.role == "assistant" for i in tool_use_ids(e.blocks())}


class ProviderModel:
    """What both provider adapters share: building one checks the extra, the key and the
    settings; a call sends one request through the :class:`Retrier` and reads its JSON.

    A subclass names its provider (``PROVIDER``, ``KEY_VAR``, ``BASE_URL_VAR``), its SDK
    client class (``CLIENT``) and request-id header (``REQUEST_ID_HEADER``), and supplies
    the request body, the SDK call and the reading of the answer.
    """

    PROVIDER: str
    KEY_VAR: str
    BASE_URL_VAR: str
    CLIENT: str
    REQUEST_ID_HEADER: str

    def __init__(
        self,
        settings: ProviderSettings,
        env: Mapping[str, str],
        root: Path | None = None,
        *,
        log: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] | None = None,
        jitter: Callable[[], float] | None = None,
    ) -> None:
        sdk = import_sdk(self.PROVIDER)
        self._secret = api_key(self.PROVIDER, env, self.KEY_VAR)
        self._settings = settings
        self._system = system_prompt(settings, root, self.PROVIDER)
        self._client: Any = getattr(sdk, self.CLIENT)(
            api_key=self._secret.reveal(),
            base_url=env.get(self.BASE_URL_VAR) or None,
            max_retries=0,
            timeout=settings.timeout,
        )
        self._retrier = Retrier(self.PROVIDER, sdk, settings, self._secret)
        if log is not None:
            self._retrier.log = log
        if sleep is not None:
            self._retrier.sleep = sleep
        if jitter is not None:
            self._retrier.jitter = jitter

    @property
    def model_id(self) -> str:
        return self.PROVIDER

    def request_body(self, request: ModelRequest) -> dict[str, object]:
        raise NotImplementedError

    def create(self, body: dict[str, object]) -> Any:
        """The SDK call that returns the raw HTTP response for ``body``."""
        raise NotImplementedError

    def parse(self, answer: object, request_id: str | None, used: set[str]) -> ModelReply:
        raise NotImplementedError

    def call(self, request: ModelRequest, should_stop: StopCheck) -> ModelReply:
        body = self.request_body(request)

        def attempt() -> tuple[str | None, str]:
            raw = self.create(body)
            return raw.headers.get(self.REQUEST_ID_HEADER), raw.http_response.text

        answer = self._retrier.run(attempt, should_stop)
        if answer is None:
            return ModelReply([])
        request_id, text = answer
        try:
            parsed: object = json.loads(text)
        except json.JSONDecodeError:
            raise invalid(self.PROVIDER, request_id, "the answer is not JSON") from None
        return self.parse(parsed, request_id, used_tool_ids(request))
