"""icml25.common.llm_client against a scripted OpenAI-compatible stub on 127.0.0.1 (no other network).

Defining elements of the client, each with the test that fails when it is removed or altered:

1. the request: ``POST {base_url}/chat/completions`` with ``model`` and ``messages`` (and the optional sampling
   fields), ``Authorization: Bearer`` from the named environment variable -> ``test_request_format_and_reply``;
2. retries of connection errors, timeouts and 408/409/425/429/5xx with doubling backoff and ``Retry-After``, at most
   ``max_retries`` -> ``test_retries_then_success``, ``test_retries_exhausted``;
3. no retry of other HTTP errors; the key never appears in an error -> ``test_client_error_is_not_retried``;
4. the per-request timeout -> ``test_timeout_is_retried_then_fails``;
5. the per-task budget (calls, tokens, seconds), refused before anything is sent ->
   ``test_session_budget_is_enforced_before_sending``.
"""

from __future__ import annotations

import pytest

from icml25.common.checks import ConfigError
from icml25.common.llm_client import (
    ChatBudgetExhausted,
    ChatClient,
    ChatConfig,
    ChatError,
    StubChatServer,
    chat_config,
    chat_config_from_env,
    check_agent_settings,
    check_messages,
)

MSG = [{"role": "user", "content": "hi"}]


def _client(server, sleeps=None, **kw):
    return ChatClient(ChatConfig(server.base_url, "stub-model", api_key_env="ICML25_TEST_KEY", **kw),
                      sleep=(sleeps.append if sleeps is not None else lambda s: None))


def test_request_format_and_reply(monkeypatch):
    monkeypatch.setenv("ICML25_TEST_KEY", "sk-secret")
    with StubChatServer(lambda req, n: f"echo {req['messages'][-1]['content']}") as srv:
        client = _client(srv, temperature=0.0, max_tokens=64)
        reply = client.complete(MSG + [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}])
    assert reply.text == "echo b" and reply.total_tokens == 15
    path, headers, body = srv.requests[0]
    import json
    payload = json.loads(body)
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-secret" and headers["Content-Type"] == "application/json"
    assert payload == {"model": "stub-model", "messages": MSG + [{"role": "assistant", "content": "a"},
                                                                   {"role": "user", "content": "b"}],
                       "temperature": 0.0, "max_tokens": 64}
    assert client.stats.calls == 1 and client.stats.attempts == 1 and client.stats.tokens == 15


def test_no_key_sends_no_authorization(monkeypatch):
    monkeypatch.delenv("ICML25_TEST_KEY", raising=False)
    with StubChatServer(lambda req, n: "ok") as srv:
        assert _client(srv).complete(MSG).text == "ok"
    assert "Authorization" not in srv.requests[0][1]
    assert "temperature" not in srv.requests[0][2].decode()  # optional fields are left to the server


def test_retries_then_success():
    answers = [(503, {"error": {"message": "overloaded"}}, {}), (429, {"error": "slow down"}, {"Retry-After": "7"}),
               (502, {}, {}), "finally"]
    sleeps: list[float] = []
    with StubChatServer(lambda req, n: answers[n]) as srv:
        client = _client(srv, sleeps, backoff_s=0.5, max_backoff_s=5.0)
        assert client.complete(MSG).text == "finally"
    # doubling backoff from 0.5 s; the 429's Retry-After (7 s) is capped at max_backoff_s
    assert sleeps == [0.5, 5.0, 2.0]
    assert len(srv.requests) == 4 and client.stats.retries == 3 and client.stats.calls == 1


def test_retries_exhausted():
    with StubChatServer(lambda req, n: (500, {"error": {"message": "boom"}}, {})) as srv:
        client = _client(srv, max_retries=2)
        with pytest.raises(ChatError, match="HTTP 500.*boom"):
            client.complete(MSG)
    assert len(srv.requests) == 3 and client.stats.failures == 1


def test_client_error_is_not_retried(monkeypatch):
    monkeypatch.setenv("ICML25_TEST_KEY", "sk-secret")
    with StubChatServer(lambda req, n: (401, {"error": {"message": "bad key"}}, {})) as srv:
        client = _client(srv, max_retries=5)
        with pytest.raises(ChatError, match="HTTP 401") as err:
            client.complete(MSG)
    assert len(srv.requests) == 1 and "sk-secret" not in str(err.value)


def test_malformed_answer_is_an_error():
    with StubChatServer(lambda req, n: (200, {"choices": []}, {})) as srv:
        with pytest.raises(ChatError, match="choices"):
            _client(srv).complete(MSG)


def test_timeout_is_retried_then_fails():
    # the stub answers nothing for 30 s; the client waits 0.2 s per request: two requests, then ChatError, long
    # before the stub would have answered (the bound of 10 s is far from both 0.4 s and 30 s)
    import time

    with StubChatServer(lambda req, n: 30.0) as srv:
        client = _client(srv, timeout_s=0.2, max_retries=1)
        t0 = time.monotonic()
        with pytest.raises(ChatError, match="no answer"):
            client.complete(MSG)
        assert time.monotonic() - t0 < 10.0
    assert len(srv.requests) == 2 and client.stats.retries == 1


def test_unreachable_endpoint_is_an_error():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    client = ChatClient(ChatConfig(f"http://127.0.0.1:{port}/v1", "m", max_retries=1), sleep=lambda s: None)
    with pytest.raises(ChatError, match="no answer"):
        client.complete(MSG)
    assert client.stats.attempts == 2


def test_session_budget_is_enforced_before_sending():
    with StubChatServer(lambda req, n: "ok") as srv:
        client = _client(srv)
        calls = client.session(max_calls=2)
        assert calls(MSG) == "ok" and calls(MSG) == "ok"
        with pytest.raises(ChatBudgetExhausted, match="2 model calls"):
            calls(MSG)
        assert len(srv.requests) == 2
        tokens = client.session(max_calls=10, max_total_tokens=20)  # the stub reports 15 tokens per answer
        tokens(MSG), tokens(MSG)
        with pytest.raises(ChatBudgetExhausted, match="20 tokens"):
            tokens(MSG)
        assert len(srv.requests) == 4 and tokens.stats.tokens == 30
        fresh = client.session(max_calls=1)  # a new task has its own budget
        assert fresh(MSG) == "ok"
    timed = client.session(max_calls=5, max_seconds=1e-9)
    with pytest.raises(ChatBudgetExhausted, match="s are spent"):
        timed(MSG)


def test_config_and_agent_settings(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_MODEL", "m1")
    assert chat_config_from_env().url == "http://127.0.0.1:9/v1/chat/completions"
    assert chat_config_from_env(model="m2").model == "m2"

    class Cfg:
        agent, base_url, model, api_key_env, llm_timeout_s, llm_max_retries = "openai", "", "", "K", 5.0, 1

    with pytest.raises(ConfigError, match=r"agent=openai needs --set base_url=\.\.\. and --set model=\.\.\."):
        check_agent_settings(Cfg())
    Cfg.base_url, Cfg.model = "http://127.0.0.1:1/v1", "m"
    check_agent_settings(Cfg())
    assert chat_config(Cfg()).timeout_s == 5.0
    Cfg.base_url = "file:///etc/passwd"
    with pytest.raises(ConfigError, match="http"):
        check_agent_settings(Cfg())
    Cfg.agent = "claude"
    with pytest.raises(ConfigError, match="agent must be one of"):
        check_agent_settings(Cfg())


@pytest.mark.parametrize("kw, match", [
    ({"base_url": "127.0.0.1:8000"}, "base_url"), ({"model": " "}, "model"), ({"timeout_s": 0}, "timeout_s"),
    ({"max_retries": -1}, "max_retries"), ({"backoff_s": float("nan")}, "backoff_s"),
    ({"temperature": 3.0}, "temperature"), ({"max_tokens": 0}, "max_tokens"), ({"api_key_env": ""}, "api_key_env"),
])
def test_bad_config(kw, match):
    with pytest.raises(ValueError, match=match):
        ChatConfig(**{"base_url": "http://127.0.0.1:1/v1", "model": "m", **kw})


def test_bad_messages_and_sessions():
    for bad in ("hi", [], [{"role": "tool", "content": "x"}], [{"role": "user", "content": 3}]):
        with pytest.raises(ValueError, match="messages"):
            check_messages(bad)
    client = ChatClient(ChatConfig("http://127.0.0.1:1/v1", "m"))
    with pytest.raises(ValueError, match="max_calls"):
        client.session(0)
    with pytest.raises(TypeError, match="ChatConfig"):
        ChatClient({"base_url": "x"})
