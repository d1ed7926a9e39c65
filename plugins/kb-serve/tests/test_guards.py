"""The Host and Origin checks, the JSON content type and error texts, property-based over untrusted values."""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb_core import KbError
from kb_serve.errors import MAX_TEXT_CHARS, public_text
from kb_serve.guards import Authority, HostPolicy, RequestGuard, is_json_media_type, parse_authority, parse_origin
from kb_serve.settings import ServeSettings

PORT = 8765
#: Host forms and what they name (None: nothing the server answers to).
CANONICAL: dict[str, str | None] = {
    "localhost": "localhost",
    "LocalHost": "localhost",
    "127.0.0.1": "127.0.0.1",
    "[::1]": "[::1]",
    "[0:0:0:0:0:0:0:1]": "[::1]",
    "kb.lan": "kb.lan",
    "attacker.example": None,
    "localhost.": None,
    "127.0.0.1.nip.io": None,
    "evil.localhost": None,
    "localhost@attacker.example": None,
    "[::1": None,
    "::1": None,
    "a b": None,
    "": None,
    "127.0.0.2": None,
}
ALLOWED = {"localhost", "127.0.0.1", "[::1]"}
PARAMS = ["charset=utf-8", 'charset="UTF-8"', "charset=latin-1", "x=1", "", "charset"]
SCHEMES = ["http", "https", "HTTP", "ftp", "null"]
latin1 = st.text(st.characters(codec="latin-1"), max_size=40)
ports = st.sampled_from([None, PORT, PORT + 1, 80, 0, 65536]) | st.integers(-5, 70000)
host_forms = st.sampled_from(sorted(CANONICAL))
host_values = st.builds(lambda h, p: h if p is None else f"{h}:{p}", host_forms, ports) | latin1
names = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,12}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,12}[a-z0-9])?){0,3}", fullmatch=True)


@settings(max_examples=500, deadline=None)
@given(host_values)
def test_any_host_value_is_one_exact_authority_or_none(value: str) -> None:
    authority = parse_authority(value)
    if authority is None:
        return
    assert parse_authority(str(authority)) == authority  # what is compared is what was read
    assert authority.host == authority.host.lower() and not set(authority.host) & set(" @/\\?#%\t\r\n")
    assert authority.port is None or 0 < authority.port < 65536
    if not authority.host.startswith("["):
        assert str(authority) == value.lower()


@given(names, st.integers(1, 65535), st.booleans())
def test_host_names_and_addresses_parse_to_themselves(name: str, port: int, upper: bool) -> None:
    assert parse_authority(f"{name.upper() if upper else name}:{port}") == Authority(name, port)
    assert parse_authority(name) == Authority(name)


@given(st.ip_addresses(v=6), st.integers(1, 65535))
def test_ipv6_hosts_are_compared_in_one_form(address: ipaddress.IPv6Address, port: int) -> None:
    assert parse_authority(f"[{address.exploded}]:{port}") == Authority(f"[{address.compressed}]", port)


@settings(max_examples=500, deadline=None)
@given(host_values, st.sampled_from([PORT, 80, 443]))
def test_only_the_servers_own_names_with_its_port_are_allowed(value: str, default_port: int) -> None:
    policy = HostPolicy.build("127.0.0.1", ())
    authority = parse_authority(value)
    if authority is not None and policy.allows(authority, default_port, ("127.0.0.1", PORT)):
        assert authority.host in ALLOWED and (authority.port or default_port) == PORT


def test_allow_host_with_and_without_a_port() -> None:
    policy = HostPolicy.build("0.0.0.0", ("kb.lan", "Proxy.Example:8443", "[::1]:9"))
    server = ("192.168.1.5", PORT)
    allowed = ["kb.lan", "kb.lan:1", "proxy.example:8443", "0.0.0.0:8765", "192.168.1.5:8765", "[::1]:9"]
    for value in allowed:
        assert policy.allows(parse_authority(value) or Authority(""), 80, server), value
    for value in ["proxy.example", "proxy.example:8765", "192.168.1.5:80", "kb.lan.evil", "192.168.1.6:8765"]:
        assert not policy.allows(parse_authority(value) or Authority(""), 80, server), value


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["http", "https", "HTTP", "ftp", "file", "", "javascript"]), host_values | latin1)
def test_an_origin_is_an_http_scheme_and_an_exact_authority_or_none(scheme: str, rest: str) -> None:
    for value in (f"{scheme}://{rest}", rest, "null"):
        parsed = parse_origin(value)
        if parsed is not None:
            assert parsed[0] in ("http", "https") and value.lower().startswith(parsed[0] + "://")
            assert parsed[1] == parse_authority(value.split("://", 1)[1])


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["application/json", "Application/JSON", "text/plain", "application/jsonx", ""])
    | st.text(st.characters(exclude_characters=";"), max_size=30),
    st.lists(st.sampled_from(PARAMS), max_size=2),
)
def test_only_application_json_in_utf_8_is_json(media: str, params: list[str]) -> None:
    value = "; ".join([media, *params])
    if is_json_media_type(value):
        assert media.strip().lower() == "application/json"
        assert all(p.replace('"', "").lower() in ("charset=utf-8", "") for p in params)
    if media.lower() in ("application/json",) and all(p.lower().startswith("charset=") for p in params):
        assert is_json_media_type(value) == all(p.replace('"', "").lower() == "charset=utf-8" for p in params)
    assert not is_json_media_type(None)


def _guarded(method: str, headers: list[tuple[bytes, bytes]]) -> tuple[bool, int | None]:
    """(whether the app behind the guard was called, the status the guard sent)."""
    called: list[bool] = []
    sent: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        called.append(True)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            sent.append(message["status"])

    scope = {"type": "http", "method": method, "headers": headers, "server": ("127.0.0.1", PORT), "scheme": "http"}
    guard = RequestGuard(app, HostPolicy.build("127.0.0.1", ("kb.lan",)), PORT)
    asyncio.run(guard(scope, receive, send))
    return bool(called), (sent[0] if sent else None)


def _names_server(form: str, port: int | None, default: int) -> bool:
    canonical = CANONICAL.get(form)
    return canonical == "kb.lan" or (canonical in ALLOWED and (port or default) == PORT)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE", "PROPFIND"]),
    st.lists(st.tuples(host_forms, st.sampled_from([None, PORT, PORT + 1])), min_size=0, max_size=2),
    st.none() | st.tuples(st.sampled_from(SCHEMES), host_forms, st.sampled_from([None, PORT, 443])),
    st.sampled_from([None, "cross-site", "same-origin", "same-site", "none", "CROSS-SITE"]),
)
def test_the_guard_passes_exactly_the_requests_the_policy_allows(
    method: str, hosts: list[tuple[str, int | None]], origin: tuple[str, str, int | None] | None, site: str | None
) -> None:
    headers = [(b"host", (h if p is None else f"{h}:{p}").encode()) for h, p in hosts]
    if origin is not None:
        scheme, form, port = origin
        value = "null" if scheme == "null" else f"{scheme}://{form}" + ("" if port is None else f":{port}")
        headers.append((b"origin", value.encode()))
    if site is not None:
        headers.append((b"sec-fetch-site", site.encode()))
    called, status = _guarded(method, headers)

    host_ok = len(hosts) == 1 and _names_server(*hosts[0], 80)
    write = method not in ("GET", "HEAD", "OPTIONS")
    origin_ok = origin is None or (
        origin[0].lower() in ("http", "https")
        and _names_server(origin[1], origin[2], 443 if origin[0].lower() == "https" else 80)
    )
    expected = host_ok and (not write or (origin_ok and (site or "").lower() != "cross-site"))
    assert called == expected
    if not expected:
        assert status == (400 if len(hosts) != 1 else 421 if not host_ok else 403)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=600), st.lists(st.from_regex(r"[A-Za-z0-9_.-]{1,12}", fullmatch=True), min_size=2, max_size=5))
def test_error_texts_are_one_short_line_without_local_folders(text: str, parts: list[str]) -> None:
    path = "/" + "/".join(parts)
    shown = public_text(f"{text} cannot open {path}: denied")
    assert "\n" not in shown and "\r" not in shown and len(shown) <= MAX_TEXT_CHARS
    if len(shown) < MAX_TEXT_CHARS:
        assert "/".join(parts[:-1]) + "/" not in shown.split(" cannot open ")[-1]
        assert shown.endswith(f"…/{parts[-1]}: denied")


@pytest.mark.parametrize("name", ["a b", "", "kb.lan:port", "http://kb.lan", "kb.lan/x", "[::1", "kb.lan:70000"])
def test_a_malformed_allow_host_is_refused(name: str) -> None:
    with pytest.raises(KbError, match="is not a host name"):
        ServeSettings(allow_hosts=(name,)).check()


def test_allow_host_values_are_kept() -> None:
    assert ServeSettings(allow_hosts="kb.lan").allow_hosts == ("kb.lan",)
    ServeSettings(allow_hosts=["kb.lan", "kb.lan:8080", "[::1]:9", "10.0.0.7"]).check()
