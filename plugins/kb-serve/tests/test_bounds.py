"""Every number ``kb serve`` takes has its range from ``kb_core.bounds``: its options, its settings, its HTTP
parameters and bodies, ``/v1`` and the OpenAPI document, so that none of them can disagree.

Reproductions (issue 42): ``kb serve --search-timeout nan`` started, then every request was a 500
("deadline must not be NaN"); ``--ask-wait nan`` made every ``/ask`` and ``/v1`` a 500; ``--readers
18446744073709551616`` never listened and grew by 45 MB/s; ``/v1`` took a temperature up to 100 while the
configuration allows 0 to 2.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import click
import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from kb_core import KbError
from kb_core.bounds import FILE_BYTES, LIST_LIMIT, PORT, QUERY_CACHE, QUEUE, SEED, TEMPERATURE, WAIT_S, WORKERS, K
from kb_core.commands import Bounded, Session
from kb_serve.asking import ask_options
from kb_serve.command import serve_command
from kb_serve.errors import OpenAIError
from kb_serve.openai_api import chat_request
from kb_serve.openapi import document, own_schema
from kb_serve.settings import ServeSettings

#: Each numeric option of ``kb serve``, its bound and its ServeSettings field.
OPTIONS = {
    "--port": (PORT, "port"),
    "--max-file-bytes": (FILE_BYTES, "max_file_bytes"),
    "--max-upload-bytes": (FILE_BYTES, "max_upload_bytes"),
    "--readers": (WORKERS, "readers"),
    "--ask-queue": (QUEUE, "ask_queue"),
    "--ask-wait": (WAIT_S, "ask_wait_s"),
    "--search-timeout": (WAIT_S, "search_timeout_s"),
    "--query-cache": (QUERY_CACHE, "query_cache"),
}
NUMERIC_TYPES = (click.types.IntParamType, click.types.FloatParamType)
CHAT = {"model": "kb", "messages": [{"role": "user", "content": "When does Heliograph stow the panels?"}]}


def test_every_numeric_option_of_kb_serve_takes_its_bound() -> None:
    numeric = {
        f"--{p.name.replace('_', '-')}": p.type
        for p in serve_command.params
        if isinstance(p, click.Option) and isinstance(p.type, (*NUMERIC_TYPES, Bounded))
    }
    assert set(numeric) == set(OPTIONS)
    for flag, kind in numeric.items():
        assert isinstance(kind, Bounded) and kind.bound is OPTIONS[flag][0], flag


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--search-timeout", "nan"),  # the reproduction: started, then every request was a 500
        ("--ask-wait", "nan"),
        ("--ask-wait", "inf"),
        ("--ask-wait", "1e400"),
        ("--search-timeout", "0"),
        ("--readers", "18446744073709551616"),  # the reproduction: never listened, grew by 45 MB/s
        ("--readers", "0"),
        ("--ask-queue", "-1"),
        ("--query-cache", "99999999999"),
        ("--max-upload-bytes", "0"),
        ("--max-file-bytes", "1" + "0" * 5000),
        ("--port", "65536"),
    ],
)
def test_an_option_out_of_its_bound_is_one_line_and_exit_2_before_anything_opens(
    tmp_path: Path, flag: str, value: str
) -> None:
    result = CliRunner().invoke(serve_command, [flag, value], obj=Session(None, str(tmp_path / "kb"), None))
    assert result.exit_code == 2, result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and f"'{flag}'" in error[0], result.output
    assert f"is not {OPTIONS[flag][0].allowed}" in error[0]  # what is allowed
    assert value[:20] in error[0]  # the value
    assert not (tmp_path / "kb").exists()


@pytest.mark.parametrize("flag", sorted(OPTIONS))
def test_settings_refuse_what_the_option_refuses(flag: str) -> None:
    bound, field = OPTIONS[flag]
    for bad in (math.nan, math.inf, bound.low - 1, bound.high + 1, 2**64):
        with pytest.raises(KbError, match=f"^{flag} = .* is not {re.escape(bound.allowed)}"):
            ServeSettings(**cast(Any, {field: bad}))
    ServeSettings(**cast(Any, {field: int(bound.high)}))  # the bound itself is fine


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70)))
def test_ask_and_v1_take_temperature_and_seed_within_the_same_bounds(value: float) -> None:
    for name, bound in (("temperature", TEMPERATURE), ("seed", SEED)):
        held = bound.holds(int(value) if bound.kind == "whole" and float(value).is_integer() else value)
        body = {"question": "x", name: value}
        try:
            _, options = ask_options(body)
            assert held and getattr(options, name) == value
        except KbError as exc:
            assert not held and f"is not {bound.allowed}" in exc.message
        try:
            chat = chat_request({**CHAT, name: value}, None, [])
            assert held and getattr(chat.options, name) == value
        except OpenAIError as exc:
            assert not held and exc.status == 400 and exc.param == name and bound.allowed in exc.message


def test_v1_refuses_a_temperature_above_2_as_the_configuration_does() -> None:
    with pytest.raises(OpenAIError, match="temperature = 3 is not a number from 0 to 2"):
        chat_request({**CHAT, "temperature": 3}, None, [])  # /v1 took up to 100
    with pytest.raises(KbError, match="temperature = 100 is not a number from 0 to 2"):
        ask_options({"question": "x", "temperature": 100})


def test_the_openapi_document_states_the_bounds_the_server_enforces() -> None:
    doc = document()
    schemas = doc["components"]["schemas"]
    ask = schemas["ask_request"]["properties"]
    chat = schemas["openai_chat_request"]["properties"]
    for bound, stated in (
        (TEMPERATURE, ask["temperature"]),
        (SEED, ask["seed"]),
        (K, ask["k"]),
        (TEMPERATURE, chat["temperature"]),
        (SEED, chat["seed"]),
    ):
        assert (stated["minimum"], stated["maximum"]) == (bound.low, bound.high)
    assert own_schema("openai_chat_request")["properties"]["temperature"]["maximum"] == TEMPERATURE.high
    paths = doc["paths"]
    for path in ("/answers", "/threads"):
        (limit,) = [p for p in paths[path]["get"]["parameters"] if p["name"] == "limit"]
        assert (limit["schema"]["minimum"], limit["schema"]["maximum"]) == (LIST_LIMIT.low, LIST_LIMIT.high)
    (k,) = [p for p in paths["/search"]["get"]["parameters"] if p["name"] == "k"]
    assert (k["schema"]["minimum"], k["schema"]["maximum"]) == (K.low, K.high)
    jsonschema.Draft202012Validator.check_schema(schemas["openai_chat_request"])


def test_query_numbers_are_refused_with_the_bound(start_server: Callable[..., Any]) -> None:
    server = start_server()
    with server.client() as http:
        for path, params, bound in [
            ("/search", {"q": "wind", "k": "1001"}, K),
            ("/search", {"q": "wind", "k": "0"}, K),
            ("/answers", {"limit": "0"}, LIST_LIMIT),
            ("/answers", {"limit": "18446744073709551616"}, LIST_LIMIT),
            ("/threads", {"limit": "9223372036854775808"}, LIST_LIMIT),
            ("/threads", {"limit": "1e3"}, LIST_LIMIT),
            ("/threads", {"limit": "9" * 100}, LIST_LIMIT),
        ]:
            reply = http.get(path, params=params)
            assert reply.status_code == 400, (path, params, reply.text)
            line = reply.json()["error"]
            assert line.startswith(next(iter(params.keys() - {"q"})) + " = ") and bound.allowed in line, line
        assert http.get("/threads", params={"limit": str(int(LIST_LIMIT.high))}).status_code == 200
