"""kb_core.plugin.remote: the messages every HTTP language-model backend gives, and the reasons it finds."""

from __future__ import annotations

import http.client
import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest

from kb_core.config import Config
from kb_core.errors import KbError, ModelUnavailableError
from kb_core.plugin import remote
from kb_core.plugin.remote import (
    ApiError,
    ConnectionLost,
    RemoteServer,
    ServerTimeout,
    ServerUnreachable,
    Timeouts,
    chat_messages,
    count_field,
    error_body_text,
    first_or_done,
    one_line,
    unreachable_reason,
    upper_bound_tokens,
)
from kb_core.types import Done, GenerateRequest

ACME = RemoteServer(
    backend="acme",
    name="the Acme server",
    speaker="Acme",
    url_env="KB_ACME_URL",
    start="start it with 'acme serve'",
    expected="an Acme server",
)
URL = "http://127.0.0.1:9999"


class AcmeMalformed(remote.MalformedResponse):
    server = ACME


def test_every_message_names_the_server_and_the_setting_to_change() -> None:
    assert str(ServerUnreachable(ACME, URL, "connection refused")) == (
        "cannot reach the Acme server at http://127.0.0.1:9999: connection refused"
        " (start it with 'acme serve', or set KB_ACME_URL or [backends.acme] url to where it runs)"
    )
    assert str(ApiError(ACME, URL, "/gen", 500, "out of memory")) == (
        "Acme at http://127.0.0.1:9999 refused /gen (HTTP 500): out of memory"
    )
    assert str(ConnectionLost(ACME, URL, "/gen", "the server closed it mid-answer")) == (
        "the connection to Acme at http://127.0.0.1:9999 broke during /gen: the server closed it mid-answer"
        " (check the Acme server's log (the model may have crashed or run out of memory))"
    )
    assert str(AcmeMalformed("line 2 is not JSON")) == (
        "the Acme server sent a malformed response: line 2 is not JSON"
        " (check that [backends.acme] url (or KB_ACME_URL) points at an Acme server)"
    )
    assert ACME.reported("boom") == "Acme reported an error mid-stream: boom"
    assert str(ACME.no_grammar()).startswith("the acme backend cannot constrain output with a grammar")
    assert isinstance(ServerUnreachable(ACME, URL, "x"), ModelUnavailableError)


@pytest.mark.parametrize(
    ("which", "doing", "advice"),
    [
        ("connect", "connecting to Acme at http://127.0.0.1:9999", "check that the server runs at that URL, or"),
        ("read", "Acme at http://127.0.0.1:9999 sent nothing on /gen", "if the model is just slow,"),
        ("total", "Acme at http://127.0.0.1:9999 did not finish /gen", "if the model is just slow,"),
    ],
)
def test_a_timeout_names_its_limit_value_and_key(which: str, doing: str, advice: str) -> None:
    error = ServerTimeout(ACME, which, 2.5, URL, "/gen")
    key = f"{which}_timeout_s"
    assert error.which == which
    assert str(error) == (
        f"{which} timeout: {doing} within 2.5 s ({advice} raise [models.llm] {key} (env KB_MODELS__LLM__{key.upper()}))"
    )


def test_the_url_comes_from_the_environment_then_the_table_then_the_default() -> None:
    assert ACME.configured_url({"url": "a:1"}, {"KB_ACME_URL": "b:2"}, "c:3") == "b:2"
    assert ACME.configured_url({"url": "a:1"}, {}, "c:3") == "a:1"
    assert ACME.configured_url({}, {}, "c:3") == "c:3"


def test_timeouts_come_from_the_llm_section_and_zero_total_means_no_deadline() -> None:
    llm = Config().models.llm
    llm.connect_timeout_s, llm.read_timeout_s, llm.total_timeout_s = 1, 2, 0
    assert Timeouts.of(llm) == Timeouts(1, 2, 0)
    assert Timeouts.of(llm).deadline() is None
    assert Timeouts(1, 2, 3).deadline() is not None


# -- why a connection could not be opened -------------------------------------------------------


@pytest.fixture
def plain_tcp_port() -> Iterator[int]:
    """A server that answers anything with a line of plain HTTP, so a TLS handshake with it fails."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.recv(4096)
            self.request.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def connect_error(conn: http.client.HTTPConnection) -> OSError:
    try:
        conn.connect()
    except OSError as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError("the connection was opened")


def test_a_refused_connection() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        closed_port = int(listener.getsockname()[1])  # closed again when the block ends
    error = connect_error(http.client.HTTPConnection("127.0.0.1", closed_port, timeout=5))
    assert unreachable_reason(error, "127.0.0.1") == "connection refused"


def test_an_unknown_host_is_named() -> None:
    error = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert unreachable_reason(error, "nowhere.invalid") == "cannot resolve host 'nowhere.invalid'"


def test_a_failed_tls_handshake_gives_the_tls_library_s_words(plain_tcp_port: int) -> None:
    error = connect_error(http.client.HTTPSConnection("127.0.0.1", plain_tcp_port, timeout=5))
    reason = unreachable_reason(error, "127.0.0.1")
    assert reason.startswith("[SSL") and "\n" not in reason


def test_other_system_errors_give_their_words_without_the_number() -> None:
    assert unreachable_reason(OSError(101, "Network is unreachable"), "h") == "Network is unreachable"


class Wrapper(Exception):
    """Like httpx.ConnectError: holds the OSError as an argument, its cause or its context."""


def test_the_cause_is_found_inside_wrappers() -> None:
    inner = ConnectionRefusedError(111, "Connection refused")
    assert unreachable_reason(Wrapper(inner), "h") == "connection refused"
    try:
        try:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        except OSError as exc:
            raise Wrapper("failed") from exc
    except Wrapper as wrapped:
        assert unreachable_reason(wrapped, "h") == "cannot resolve host 'h'"


def test_a_wrapper_without_a_cause_is_judged_by_its_words() -> None:
    assert unreachable_reason(Wrapper("[Errno 111] Connection refused"), "h") == "connection refused"
    assert unreachable_reason(Wrapper("[Errno -2] Name or service not known"), "h") == "cannot resolve host 'h'"
    assert unreachable_reason(Wrapper("odd"), "h") == "odd"
    assert unreachable_reason(Wrapper(), "h") == "Wrapper"


# -- streams and answers -------------------------------------------------------------------------


def test_first_or_done_raises_before_generation_and_closes_the_stream_after() -> None:
    assert first_or_done(lambda: b"line") == b"line"

    def fail(error: KbError) -> None:
        raise error

    with pytest.raises(ApiError):
        first_or_done(lambda: fail(ApiError(ACME, URL, "/gen", 500, "no")))
    with pytest.raises(ServerUnreachable):
        first_or_done(lambda: fail(ServerUnreachable(ACME, URL, "connection refused")))
    timeout = ServerTimeout(ACME, "read", 1, URL, "/gen")
    assert first_or_done(lambda: fail(timeout)) == Done(finish_reason="error", error=str(timeout))


def test_error_bodies_are_one_line() -> None:
    def pick(value: object) -> str | None:
        return value.get("error") if isinstance(value, dict) else None

    assert error_body_text(b'{"error": "model not found"}', pick) == "model not found"
    assert error_body_text(b"Internal\n  Server Error", pick) == "Internal Server Error"
    assert error_body_text(b"", pick) == "(empty body)"
    assert error_body_text(b"\xff" * 500, pick).endswith("...")
    assert one_line("a\n\tb", limit=10) == "a b" and len(one_line("x " * 400)) == 300


def test_counts_are_counts() -> None:
    assert count_field({"n": 3}, "n", "line 1", AcmeMalformed) == 3
    assert count_field({}, "n", "line 1", AcmeMalformed) is None
    for bad in (True, -1, "3", 2.0):
        with pytest.raises(AcmeMalformed, match=r"line 1 has n=.*, not a count"):
            count_field({"n": bad}, "n", "line 1", AcmeMalformed)


def test_chat_messages_put_the_examples_between_system_and_question() -> None:
    request = GenerateRequest(system="S", user="Q", examples=(("a", "b"),))
    assert chat_messages(request) == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "Q"},
    ]
    assert chat_messages(GenerateRequest(system="", user="Q")) == [{"role": "user", "content": "Q"}]


@pytest.mark.parametrize("text", ["", "hello", "héllo 세계", "🙂" * 10])
def test_the_upper_bound_is_bytes_plus_two(text: str) -> None:
    assert upper_bound_tokens(text) == len(text.encode("utf-8")) + 2
