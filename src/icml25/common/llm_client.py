"""An OpenAI-compatible chat client (standard library only), shared by the agent benchmarks (re_bench, cve_bench).

The papers of those rows evaluate language-model agents; none runs offline, so their harnesses take any callable
``generate(messages) -> str``. This module makes that callable real for a user who has a model behind an
OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM...):

* :class:`ChatConfig` holds the endpoint (``base_url``), the ``model``, the name of the environment variable that
  holds the key (the key itself is never stored in a config, a log or an error message), the per-request timeout
  and the retry policy;
* :class:`ChatClient` sends one request per :meth:`ChatClient.complete` call: ``POST {base_url}/chat/completions``
  with ``{"model", "messages"}`` (plus ``temperature`` / ``max_tokens`` when set) and ``Authorization: Bearer KEY``
  when a key is set. Connection errors, timeouts and HTTP 408/409/425/429/5xx are retried up to ``max_retries``
  times with exponential backoff (a server's ``Retry-After`` is honoured, capped at ``max_backoff_s``); any other
  HTTP error, or an answer without ``choices[0].message.content``, raises :class:`ChatError` at once;
* :meth:`ChatClient.session` returns the callable an agent uses for one task, with the task's budget: at most
  ``max_calls`` requests, ``max_total_tokens`` tokens (as the server reports them) and ``max_seconds`` of wall
  time; a call beyond it raises :class:`ChatBudgetExhausted` before anything is sent.

An experiment config that offers a language-model agent declares the fields ``agent`` (one of :data:`AGENTS`),
``base_url``, ``model``, ``api_key_env``, ``llm_timeout_s`` and ``llm_max_retries``; :func:`check_agent_settings`
is its validation (``agent=openai`` without a base URL or a model is a one-line :class:`ConfigError`) and
:func:`chat_config` turns it into a :class:`ChatConfig`.

``chat_config_from_env()`` reads ``OPENAI_BASE_URL`` and ``OPENAI_MODEL`` (and the key from ``OPENAI_API_KEY``).
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from icml25.common.checks import ConfigError

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses worth another try (rate limits, overload, gateway errors)."""
ROLES = ("system", "user", "assistant")


class ChatError(RuntimeError):
    """A request that failed for good (after its retries, or at once for a non-retryable answer)."""


class ChatBudgetExhausted(RuntimeError):
    """The task's budget (calls, tokens or wall time) is spent; nothing was sent."""


@dataclass(frozen=True)
class ChatConfig:
    """Where and how to reach an OpenAI-compatible chat endpoint."""

    base_url: str
    """Endpoint root, e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1``; requests go to
    ``{base_url}/chat/completions``."""
    model: str
    """Model name passed in every request."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the key (read at each request; unset or empty sends no Authorization)."""
    timeout_s: float = 120.0
    """Timeout of one HTTP request (connect and each read)."""
    max_retries: int = 3
    """Further tries after a retryable failure (0: one try only)."""
    backoff_s: float = 1.0
    """Wait before the first retry; doubled at each further retry."""
    max_backoff_s: float = 30.0
    """Cap of one wait (also caps a server's ``Retry-After``)."""
    temperature: float | None = None
    """Sampling temperature; ``None`` leaves it to the server."""
    max_tokens: int | None = None
    """Cap of the reply's tokens; ``None`` leaves it to the server."""

    def __post_init__(self) -> None:
        where = "ChatConfig"
        parts = urlsplit(self.base_url) if isinstance(self.base_url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{where}.base_url must be an http(s) URL such as http://127.0.0.1:8000/v1, "
                             f"got {self.base_url!r}")
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError(f"{where}.model must name the model, got {self.model!r}")
        if not isinstance(self.api_key_env, str) or not self.api_key_env:
            raise ValueError(f"{where}.api_key_env must name an environment variable, got {self.api_key_env!r}")
        for name in ("timeout_s", "backoff_s", "max_backoff_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{where}.{name} must be a finite number >= 0, got {v!r}")
        if not self.timeout_s > 0:
            raise ValueError(f"{where}.timeout_s must be > 0, got {self.timeout_s!r}")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ValueError(f"{where}.max_retries must be an integer >= 0, got {self.max_retries!r}")
        if self.temperature is not None and not (0 <= self.temperature <= 2):
            raise ValueError(f"{where}.temperature must be in [0, 2] or None, got {self.temperature!r}")
        if self.max_tokens is not None and (isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int)
                                            or self.max_tokens < 1):
            raise ValueError(f"{where}.max_tokens must be a positive integer or None, got {self.max_tokens!r}")

    @property
    def url(self) -> str:
        """The request URL."""
        return self.base_url.rstrip("/") + "/chat/completions"


def chat_config_from_env(**overrides: object) -> ChatConfig:
    """A :class:`ChatConfig` from ``OPENAI_BASE_URL`` and ``OPENAI_MODEL`` (keywords override them)."""
    values = {"base_url": os.environ.get("OPENAI_BASE_URL", ""), "model": os.environ.get("OPENAI_MODEL", "")}
    values.update(overrides)
    return ChatConfig(**values)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ChatReply:
    """One answer: its text and the token counts the server reported (0 when it reported none)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class ChatStats:
    """Counters of a client or a session."""

    calls: int = 0
    """Answers received."""
    attempts: int = 0
    """HTTP requests sent (calls plus retried ones)."""
    retries: int = 0
    failures: int = 0
    """Calls that raised :class:`ChatError`."""
    tokens: int = 0


def check_messages(messages: Sequence[dict]) -> list[dict[str, str]]:
    """``messages`` as a list of ``{"role", "content"}`` dicts; ValueError for anything else."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise ValueError("messages must be a non-empty list of {'role': ..., 'content': ...} dicts")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
            raise ValueError(f"messages[{i}] must be a dict with role in {ROLES} and string content, got {m!r}")
        out.append({"role": m["role"], "content": m["content"]})
    return out


def _error_text(body: bytes) -> str:
    try:
        payload = json.loads(body)
        err = payload.get("error", payload) if isinstance(payload, dict) else payload
        text = err.get("message", err) if isinstance(err, dict) else err
    except (ValueError, AttributeError):
        text = body.decode(errors="replace")
    return str(text)[:300]


class ChatClient:
    """Sends chat requests to an OpenAI-compatible endpoint (see the module docstring)."""

    def __init__(self, config: ChatConfig, *, sleep: Callable[[float], None] = time.sleep) -> None:
        if not isinstance(config, ChatConfig):
            raise TypeError(f"config must be a ChatConfig, got {type(config).__name__}")
        self.config, self._sleep = config, sleep
        self.stats = ChatStats()

    def _request(self, body: bytes, timeout_s: float) -> tuple[int, bytes, str | None]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.config.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(self.config.url, data=body, headers=headers, method="POST")
        try:
            # the user's own endpoint only (--set agent=openai base_url=...); tests use a stub on 127.0.0.1
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310  # offline-ok
                return resp.status, resp.read(), None
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), exc.headers.get("Retry-After") if exc.headers else None

    def _wait(self, retry: int, retry_after: str | None) -> None:
        wait = self.config.backoff_s * 2 ** retry
        if retry_after is not None:
            try:
                wait = max(0.0, float(retry_after))
            except ValueError:
                pass
        self._sleep(min(wait, self.config.max_backoff_s))

    def complete(self, messages: Sequence[dict], timeout_s: float | None = None) -> ChatReply:
        """One chat completion (with retries); ``timeout_s`` caps this call's per-request timeout."""
        cfg = self.config
        payload: dict[str, object] = {"model": cfg.model, "messages": check_messages(messages)}
        if cfg.temperature is not None:
            payload["temperature"] = cfg.temperature
        if cfg.max_tokens is not None:
            payload["max_tokens"] = cfg.max_tokens
        body = json.dumps(payload).encode()
        timeout = cfg.timeout_s if timeout_s is None else max(1e-3, min(cfg.timeout_s, timeout_s))
        last = ""
        for attempt in range(cfg.max_retries + 1):
            if attempt:
                self.stats.retries += 1
            self.stats.attempts += 1
            retry_after = None
            try:
                status, raw, retry_after = self._request(body, timeout)
            except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError) as exc:
                reason = getattr(exc, "reason", exc)
                last = f"no answer from {cfg.url}: {type(reason).__name__}: {reason}"
            else:
                if status == 200:
                    return self._parse(raw)
                last = f"HTTP {status} from {cfg.url}: {_error_text(raw)}"
                if status not in RETRY_STATUSES:
                    break
            if attempt < cfg.max_retries:
                self._wait(attempt, retry_after)
        self.stats.failures += 1
        raise ChatError(last)

    def _parse(self, raw: bytes) -> ChatReply:
        try:
            payload = json.loads(raw)
            text = payload["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            self.stats.failures += 1
            raise ChatError(f"answer from {self.config.url} has no choices[0].message.content: "
                            f"{raw[:200].decode(errors='replace')!r}") from None
        usage = payload.get("usage") or {}
        reply = ChatReply(text if isinstance(text, str) else "", int(usage.get("prompt_tokens") or 0),
                          int(usage.get("completion_tokens") or 0))
        self.stats.calls += 1
        self.stats.tokens += reply.total_tokens
        return reply

    def session(self, max_calls: int, max_total_tokens: int | None = None,
                max_seconds: float | None = None) -> ChatSession:
        """The ``generate(messages) -> str`` callable of one task, with the task's budget."""
        return ChatSession(self, max_calls, max_total_tokens, max_seconds)


@dataclass
class ChatSession:
    """One task's access to a :class:`ChatClient`: ``session(messages) -> str`` within the task's budget."""

    client: ChatClient
    max_calls: int
    max_total_tokens: int | None = None
    max_seconds: float | None = None
    stats: ChatStats = field(default_factory=ChatStats)

    def __post_init__(self) -> None:
        if isinstance(self.max_calls, bool) or not isinstance(self.max_calls, int) or self.max_calls < 1:
            raise ValueError(f"max_calls must be a positive integer, got {self.max_calls!r}")
        if self.max_total_tokens is not None and self.max_total_tokens < 1:
            raise ValueError(f"max_total_tokens must be positive or None, got {self.max_total_tokens!r}")
        if self.max_seconds is not None and not (math.isfinite(self.max_seconds) and self.max_seconds > 0):
            raise ValueError(f"max_seconds must be a positive finite number or None, got {self.max_seconds!r}")
        self._deadline = None if self.max_seconds is None else time.monotonic() + self.max_seconds

    def remaining_s(self) -> float:
        """Seconds left of the task's wall-time budget (inf without one)."""
        return math.inf if self._deadline is None else self._deadline - time.monotonic()

    def __call__(self, messages: Sequence[dict]) -> str:
        if self.stats.calls >= self.max_calls:
            raise ChatBudgetExhausted(f"the task's {self.max_calls} model calls are spent")
        if self.max_total_tokens is not None and self.stats.tokens >= self.max_total_tokens:
            raise ChatBudgetExhausted(f"the task's {self.max_total_tokens} tokens are spent")
        left = self.remaining_s()
        if left <= 0:
            raise ChatBudgetExhausted(f"the task's {self.max_seconds:g} s are spent")
        before = (self.client.stats.attempts, self.client.stats.retries)
        try:
            reply = self.client.complete(messages, timeout_s=None if math.isinf(left) else left)
        except ChatError:
            self.stats.failures += 1
            raise
        finally:
            self.stats.attempts += self.client.stats.attempts - before[0]
            self.stats.retries += self.client.stats.retries - before[1]
        self.stats.calls += 1
        self.stats.tokens += reply.total_tokens
        return reply.text


AGENTS = ("scripted", "openai")
"""Agents an experiment config may name: ``scripted`` (no language model) or ``openai`` (an endpoint)."""


def chat_config(cfg: object) -> ChatConfig:
    """The :class:`ChatConfig` of an experiment config's agent fields (see the module docstring)."""
    return ChatConfig(base_url=cfg.base_url, model=cfg.model, api_key_env=cfg.api_key_env,  # type: ignore[attr-defined]
                      timeout_s=cfg.llm_timeout_s, max_retries=cfg.llm_max_retries)  # type: ignore[attr-defined]


def check_agent_settings(cfg: object) -> None:
    """One-line :class:`ConfigError` unless an ``agent=openai`` config names a usable endpoint and model."""
    name = type(cfg).__name__
    agent = getattr(cfg, "agent", None)
    if agent not in AGENTS:
        raise ConfigError(f"{name}.agent must be one of {AGENTS}, got {agent!r}")
    if agent != "openai":
        return
    missing = [f for f in ("base_url", "model") if not str(getattr(cfg, f, "") or "").strip()]
    if missing:
        raise ConfigError(f"{name}: agent=openai needs " + " and ".join(f"--set {f}=..." for f in missing)
                          + " (an OpenAI-compatible endpoint such as http://127.0.0.1:8000/v1 and its model; the "
                          f"key is read from ${getattr(cfg, 'api_key_env', 'OPENAI_API_KEY')})")
    try:
        chat_config(cfg)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


class StubChatServer:
    """A scripted OpenAI-compatible endpoint on 127.0.0.1 (for tests and dry runs of an agent harness).

    ``respond(request, n)`` gets the n-th (0-based) request's JSON body and returns the reply text, or a
    ``(status, payload, headers)`` triple for any other answer (an error, a rate limit with ``Retry-After``...),
    or a number: seconds to sleep before answering nothing (a hung server). ``requests`` keeps every
    ``(path, headers, body)``. Used as a context manager; ``base_url`` is ``http://127.0.0.1:PORT/v1``.
    """

    def __init__(self, respond: Callable[[dict, int], object]) -> None:
        import http.server
        import threading

        self.respond, self.requests = respond, []
        self._lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with outer._lock:
                    n = len(outer.requests)
                    outer.requests.append((self.path, dict(self.headers), body))
                try:
                    request = json.loads(body)
                except ValueError:
                    request = {}
                answer = outer.respond(request, n) if self.path.endswith("/chat/completions") else (404, {}, {})
                if isinstance(answer, (int, float)) and not isinstance(answer, bool):
                    time.sleep(float(answer))
                    return
                if isinstance(answer, str):
                    answer = (200, {"id": f"stub-{n}", "object": "chat.completion", "model": request.get("model"),
                                    "choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": answer}}],
                                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}, {})
                status, payload, headers = answer
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (its timeout)
                    pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> StubChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
