"""The completer contract: one suite, run against every provider of ``complete``.

:class:`CompleterContract` states what :class:`engram.agents.completion.Completer` promises;
each ``Test*`` subclass provides the ``completer`` fixture: the offline provider, and the
http provider against a real OpenAI-compatible server on 127.0.0.1 (``completion_stub``).
Then the http provider's failures, over the same real server: 429 and 5xx retried with
backoff (``Retry-After`` honoured, capped), 4xx permanent, timeouts and refused connections,
answers that are not JSON or not of the schema, and the key never shown. Last, the routing
file's fail-soft reading.
"""

from __future__ import annotations

import json
import logging
import socket
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from completion_stub import Reply, StubServer, chat, stub_server

from engram.agents.completion import (
    Completer,
    CompletionConfigError,
    CompletionConfigWarning,
    CompletionFormatError,
    CompletionRejectedError,
    CompletionUnavailableError,
    HttpCompleter,
    HttpRoute,
    OfflineCompleter,
    OfflineRoute,
    completer_for,
    load_completion_routing,
)

KEY_ENV = "ENGRAM_TEST_COMPLETION_KEY"
SECRET = "sk-test-completion-0123456789-do-not-leak"


class Echo(msgspec.Struct, frozen=True):
    """The contract's schema: facts about the prompt any provider can compute."""

    words: int
    upper: str


class Unknown(msgspec.Struct, frozen=True):
    """A schema the offline provider has no answer for."""

    x: int


def echo(system: str, prompt: str) -> Echo:
    return Echo(words=len(prompt.split()), upper=prompt.upper())


def echo_body(body: Any) -> dict[str, Any]:
    prompt = body["messages"][1]["content"]
    return msgspec.structs.asdict(echo("", prompt))


class CompleterContract:
    """What every completer promises; subclasses provide the ``completer`` fixture."""

    def test_answers_an_instance_of_the_schema(self, completer: Completer) -> None:
        answer = completer.complete("count the words", "three little words", Echo)
        assert answer == Echo(words=3, upper="THREE LITTLE WORDS")

    def test_unicode_prompts_round_trip(self, completer: Completer) -> None:
        answer = completer.complete("", "café — ✓ 記憶 😀", Echo)
        assert answer.upper == "CAFÉ — ✓ 記憶 😀"

    def test_the_same_request_gives_the_same_answer(self, completer: Completer) -> None:
        first = completer.complete("s", "a b c", Echo)
        assert completer.complete("s", "a b c", Echo) == first

    def test_fingerprint_names_the_provider(self, completer: Completer) -> None:
        fingerprint = completer.fingerprint
        assert isinstance(fingerprint, str)
        assert fingerprint.split(":")[0] in ("offline", "http")
        assert completer.fingerprint == fingerprint

    @pytest.mark.parametrize(("system", "prompt"), [(None, "p"), ("s", b"bytes"), ("s", 3)])
    def test_rejects_anything_but_str(self, completer: Completer, system: Any, prompt: Any) -> None:
        with pytest.raises(TypeError, match="must be str"):
            completer.complete(system, prompt, Echo)


class TestOfflineCompleter(CompleterContract):
    @pytest.fixture
    def completer(self) -> Completer:
        return OfflineCompleter({Echo: echo})

    def test_a_schema_without_an_answer_is_unavailable(self, completer: Completer) -> None:
        with pytest.raises(CompletionUnavailableError, match="no answer for Unknown"):
            completer.complete("s", "p", Unknown)


class TestHttpCompleter(CompleterContract):
    @pytest.fixture(scope="class")
    @classmethod
    def completer(cls) -> Iterator[Completer]:
        with stub_server(echo_body) as server:
            yield HttpCompleter(base_url=server.base_url, model="stub-chat", timeout=5.0)


# -- the http provider's failures, over a real server ------------------------------------------


@pytest.fixture
def server() -> Iterator[StubServer]:
    with stub_server(echo_body) as running:
        yield running


@pytest.fixture
def sleeps() -> list[float]:
    return []


def client(url: str, sleeps: list[float], **options: Any) -> HttpCompleter:
    settings: dict[str, Any] = {
        "base_url": url,
        "model": "stub-chat",
        "timeout": 2.0,
        "backoff": 0.25,
        "max_retry_after": 5.0,
        "sleep": sleeps.append,
        **options,
    }
    return HttpCompleter(**settings)


def test_the_request_is_a_json_mode_chat_completion(
    server: StubServer, sleeps: list[float]
) -> None:
    client(server.base_url, sleeps).complete("be brief", "one two", Echo)
    (seen,) = server.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.body["model"] == "stub-chat"
    assert seen.body["response_format"] == {"type": "json_object"}
    assert seen.body["temperature"] == 0
    system, user = seen.body["messages"]
    assert system["role"] == "system"
    assert system["content"].startswith("be brief")
    assert '"words"' in system["content"]  # the schema is described to the model
    assert user == {"role": "user", "content": "one two"}
    assert "authorization" not in seen.headers


def test_429_then_200_succeeds_after_one_retry(server: StubServer, sleeps: list[float]) -> None:
    server.script.append(Reply(429, {"error": "slow down"}))
    assert client(server.base_url, sleeps).complete("", "a", Echo) == Echo(1, "A")
    assert len(server.requests) == 2
    assert sleeps == [0.25]


def test_retry_after_is_honoured_but_capped(server: StubServer, sleeps: list[float]) -> None:
    server.script += [
        Reply(429, {}, {"Retry-After": "1.5"}),
        Reply(503, {}, {"Retry-After": "3600"}),
    ]
    client(server.base_url, sleeps).complete("", "a", Echo)
    assert sleeps == [1.5, 5.0]


def test_three_5xx_are_unavailable_after_two_retries(
    server: StubServer, sleeps: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script += [Reply(500, {"error": "down"}) for _ in range(3)] + [Reply(200, chat("{}"))]
    with pytest.raises(CompletionUnavailableError, match="after 3 attempts: HTTP 500"):
        client(server.base_url, sleeps).complete("", "doomed", Echo)
    assert len(server.requests) == 3
    assert sleeps == [0.25, 0.5]  # exponential backoff
    assert caplog.text.count("retry") == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 301])
def test_other_non_2xx_are_rejected_at_once(
    server: StubServer, sleeps: list[float], status: int
) -> None:
    server.script.append(
        Reply(
            status, {"error": {"message": "bad request body"}}, {"Location": "http://127.0.0.1:9/"}
        )
    )
    with pytest.raises(CompletionRejectedError, match=f"HTTP {status}"):
        client(server.base_url, sleeps).complete("", "once", Echo)
    assert len(server.requests) == 1
    assert sleeps == []


def test_a_timeout_is_retried(server: StubServer, sleeps: list[float]) -> None:
    server.script.append(Reply(200, chat('{"words": 1, "upper": "A"}'), delay=0.6))
    assert client(server.base_url, sleeps, timeout=0.2).complete("", "a", Echo) == Echo(1, "A")
    assert len(server.requests) == 2


def test_timeouts_every_time_are_unavailable(server: StubServer, sleeps: list[float]) -> None:
    server.script += [Reply(200, chat("{}"), delay=0.4) for _ in range(3)]
    with pytest.raises(CompletionUnavailableError, match="after 3 attempts: network error"):
        client(server.base_url, sleeps, timeout=0.1).complete("", "slow", Echo)
    assert len(server.requests) == 3


def test_a_refused_connection_is_unavailable(sleeps: list[float]) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(CompletionUnavailableError, match="network error"):
        client(f"http://127.0.0.1:{port}/v1", sleeps).complete("", "nobody home", Echo)
    assert sleeps == [0.25, 0.5]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"<html>gateway</html>", "not a chat completion"),
        ({"choices": []}, "not a chat completion"),
        ({"choices": [{"message": {"content": None}}]}, "content is not a string"),
        (chat("Sure! Here is your JSON: {"), "is not JSON"),
        (chat('{"words": "three", "upper": "A"}'), "does not fit Echo"),
        (chat('{"upper": "A"}'), "does not fit Echo"),
        (chat("[1, 2]"), "does not fit Echo"),
    ],
)
def test_malformed_answers_are_format_errors(
    server: StubServer, sleeps: list[float], body: Any, needle: str
) -> None:
    server.script.append(Reply(200, body))
    with pytest.raises(CompletionFormatError, match=needle):
        client(server.base_url, sleeps).complete("", "a", Echo)
    assert len(server.requests) == 1  # a malformed answer is not retried


def test_a_fenced_json_answer_is_accepted(server: StubServer, sleeps: list[float]) -> None:
    server.script.append(Reply(200, chat('```json\n{"words": 2, "upper": "X Y"}\n```')))
    assert client(server.base_url, sleeps).complete("", "x y", Echo) == Echo(2, "X Y")


def test_the_key_is_sent_but_never_shown(
    server: StubServer,
    sleeps: list[float],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(KEY_ENV, SECRET)
    completer = client(server.base_url, sleeps, api_key_env=KEY_ENV)
    completer.complete("", "a", Echo)
    assert server.requests[-1].headers["authorization"] == f"Bearer {SECRET}"
    # A server that echoes the key back in an error, then in a malformed answer.
    server.script += [Reply(500, {"error": f"bad key {SECRET}"})] * 3
    with pytest.raises(CompletionUnavailableError) as down:
        completer.complete("", "a", Echo)
    server.script.append(Reply(400, {"error": f"bad key {SECRET}"}))
    with pytest.raises(CompletionRejectedError) as rejected:
        completer.complete("", "a", Echo)
    server.script.append(Reply(200, f"not json {SECRET}".encode()))
    with pytest.raises(CompletionFormatError) as malformed:
        completer.complete("", "a", Echo)
    for shown in (
        str(down.value),
        str(rejected.value),
        str(malformed.value),
        repr(completer),
        completer.fingerprint,
        caplog.text,
    ):
        assert SECRET not in shown
    assert "[redacted]" in str(rejected.value)


def test_a_missing_key_variable_is_unavailable_and_named(
    server: StubServer, sleeps: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(CompletionUnavailableError, match=f"{KEY_ENV} .*not set"):
        client(server.base_url, sleeps, api_key_env=KEY_ENV).complete("", "a", Echo)
    assert server.requests == []


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"base_url": "ftp://x"}, "base_url"),
        ({"base_url": "http://"}, "base_url"),
        ({"base_url": "http://user:pw@h:99999/v1"}, "base_url"),
        ({"model": ""}, "model"),
        ({"api_key_env": "not a name"}, "api_key_env"),
        ({"timeout": 0}, "timeout"),
        ({"backoff": -1}, "backoff"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
def test_malformed_options_are_config_errors(options: dict[str, Any], needle: str) -> None:
    settings = {"base_url": "http://127.0.0.1:1/v1", "model": "m", **options}
    with pytest.raises(CompletionConfigError, match=needle) as caught:
        HttpCompleter(**settings)
    assert "pw" not in str(caught.value)


# -- the routing file, fail-soft ----------------------------------------------------------------


HTTP_ROUTE = "[complete.learn]\nprovider = 'http'\nbase_url = 'http://h/v1'\nmodel = 'm'\n"


def routing_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "routing.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_complete_tables_route_each_use(tmp_path: Path, server: StubServer) -> None:
    path = routing_file(
        tmp_path,
        f"""
[embedding.default]
provider = "hash"

[complete.learn]
provider = "http"
base_url = "{server.base_url}"
model = "stub-chat"
api_key_env = "{KEY_ENV}"
timeout = 5
""",
    )
    routing = load_completion_routing(path)
    assert isinstance(routing.route("learn"), HttpRoute)
    assert isinstance(routing.route("reflect"), OfflineRoute)  # the default's route
    learn = completer_for("learn", routing)
    assert isinstance(learn, HttpCompleter)
    assert learn.fingerprint == "http:stub-chat"
    assert isinstance(completer_for("importance", routing), OfflineCompleter)


def test_a_file_without_complete_tables_routes_offline_silently(tmp_path: Path) -> None:
    path = routing_file(tmp_path, '[embedding.default]\nprovider = "hash"\n')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        routing = load_completion_routing(path)
    assert isinstance(routing.route("learn"), OfflineRoute)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (None, "cannot be read"),
        ("[complete.learn\n", "not valid TOML"),
        ('complete = "http"\n', "must be a table"),
        ("[complete]\nlearn = 3\n", "must be a table"),
        ("[complete.learn]\nmodel = 'm'\n", "needs provider"),
        ("[complete.learn]\nprovider = 'gpt'\n", "complete.learn"),
        ("[complete.learn]\nprovider = 'http'\nmodel = 'm'\n", "base_url"),
        (
            HTTP_ROUTE + "key = 'x'\n",
            "key",
        ),
        (
            HTTP_ROUTE + "timeout = 0\n",
            "timeout",
        ),
        ("[complete.learn]\nprovider = 'http'\nbase_url = 'ftp://h'\nmodel = 'm'\n", "base_url"),
        ("[complete.learn]\nprovider = 'offline'\nmodel = 'm'\n", "model"),
    ],
)
def test_a_missing_or_invalid_file_falls_back_to_offline_with_a_warning(
    tmp_path: Path, text: str | None, needle: str
) -> None:
    path = tmp_path / "routing.toml" if text is None else routing_file(tmp_path, text)
    with pytest.warns(CompletionConfigWarning, match=needle) as caught:
        routing = load_completion_routing(path)
    assert str(path) in str(caught[0].message)
    assert routing.source is None
    assert isinstance(completer_for("learn", routing), OfflineCompleter)


def test_the_key_is_never_in_the_routing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    path = routing_file(
        tmp_path,
        HTTP_ROUTE + f"api_key_env = '{KEY_ENV}'\n",
    )
    routing = load_completion_routing(path)
    assert SECRET not in repr(routing)
    assert SECRET not in json.dumps(msgspec.to_builtins(routing))


def test_a_use_must_be_named() -> None:
    with pytest.raises(CompletionConfigError, match="use must be a non-empty str"):
        completer_for("")
