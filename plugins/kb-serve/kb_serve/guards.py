"""Who may call the API from a browser: the Host allow-list and the same-origin check on writes.

* **Host**: every request must name, in its ``Host`` header, an address the server answers to
  (the address it listens on, ``localhost``, ``127.0.0.1``, ``[::1]``, with its port, or a host
  given with ``--allow-host``); otherwise 421. This stops DNS rebinding: a web page whose name
  was made to resolve to 127.0.0.1 still sends its own name as the Host.
* **Origin**: a state-changing request (anything but GET, HEAD, OPTIONS) that carries an
  ``Origin`` must come from an allowed ``http(s)://host:port``, and one marked
  ``Sec-Fetch-Site: cross-site`` is refused; otherwise 403. This stops a page on another site
  from posting forms or fetches that plant or delete notes. Requests without ``Origin`` (curl,
  scripts) pass; a page served by kb serve itself is same-origin and passes.
* **UTF-8**: a path or query string whose %-escapes (or raw bytes) are not UTF-8 (``/documents/%FF``,
  ``?q=%ED%A0%80``, an escaped surrogate) is a 400 for every route, before any route decodes it (Starlette
  would make each bad byte U+FFFD and look up, or search for, another text).

The parsers take untrusted header values and answer None for anything that is not exactly a host.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import unquote_to_bytes

import attrs
from starlette.types import ASGIApp, Receive, Scope, Send

from kb_serve.errors import ApiError, error_response

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-._")
MAX_HOST_CHARS = 255


@attrs.frozen
class Authority:
    """A host (lower case; an IPv6 address in brackets, compressed) and its port (None: not given)."""

    host: str
    port: int | None = None

    def __str__(self) -> str:
        return self.host if self.port is None else f"{self.host}:{self.port}"


def _port(text: str) -> int | None:
    if not (text.isascii() and text.isdigit()) or len(text) > 5 or text != str(int(text)):
        return None  # (no sign, no leading zero: one spelling per port)
    port = int(text)
    return port if 0 < port < 65536 else None


def normal_host(host: str) -> str | None:
    """``host`` (a name or an IP address, IPv6 with or without brackets) in the form the allow-list compares."""
    host = host.lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" not in host:
        if not host or len(host) > MAX_HOST_CHARS or not set(host) <= _NAME_CHARS:
            return None
        return host
    try:
        return f"[{ipaddress.IPv6Address(host).compressed}]"
    except ValueError:  # zone ids, junk
        return None


def parse_authority(value: str) -> Authority | None:
    """``host[:port]`` from a Host header, an Origin or ``--allow-host``; None when it is not exactly one."""
    if not value or len(value) > MAX_HOST_CHARS + 8 or not value.isascii():
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host_part, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_part = rest[1:] if rest else None
    else:
        host_part, colon, port_part_text = value.partition(":")
        port_part = port_part_text if colon else None
    host = normal_host(host_part)
    if host is None:
        return None
    if port_part is None:
        return Authority(host)
    port = _port(port_part)
    return None if port is None else Authority(host, port)


def parse_origin(value: str) -> tuple[str, Authority] | None:
    """(scheme, authority) of an ``Origin`` header (``http(s)://host[:port]``); None for "null" and anything else."""
    scheme, sep, rest = value.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        return None
    authority = parse_authority(rest)
    return None if authority is None else (scheme, authority)


def is_json_media_type(value: str | None) -> bool:
    """Whether a Content-Type is ``application/json``, optionally with ``charset=utf-8`` (nothing else)."""
    if value is None:
        return False
    media, *params = (part.strip().lower() for part in value.split(";"))
    if media != "application/json":
        return False
    for param in params:
        name, _, given = param.partition("=")
        if name.strip() != "charset" or given.strip().strip('"') not in ("utf-8", "utf8"):
            return False
    return True


@attrs.frozen
class HostPolicy:
    """The hosts the server answers to.

    ``names``: hosts allowed with the server's own port (loopback names and the listening address).
    ``extra``: hosts from ``--allow-host``; one given with a port allows only that port, one without any port.
    """

    names: frozenset[str]
    extra: tuple[Authority, ...] = ()

    @classmethod
    def build(cls, listen_host: str, allow_hosts: Iterable[str]) -> HostPolicy:
        """The policy of a server listening on ``listen_host`` with ``--allow-host`` values ``allow_hosts``."""
        names = {name for name in (*LOOPBACK_NAMES, normal_host(listen_host.strip())) if name}
        extra = tuple(a for a in (parse_authority(h.strip()) for h in allow_hosts) if a is not None)
        return cls(frozenset(names), extra)

    def allows(self, authority: Authority, default_port: int, server: tuple[str, int]) -> bool:
        """Whether ``authority`` (its port defaulting to ``default_port``) names this server.

        ``server``: the local address and port the request came in on (the address is allowed too,
        as an IP address cannot be rebound).
        """
        port = default_port if authority.port is None else authority.port
        server_host, server_port = server
        if port == server_port and authority.host in (self.names | {normal_host(server_host) or ""}):
            return True
        return any(a.host == authority.host and a.port in (None, port) for a in self.extra)


class RequestGuard:
    """Pure ASGI middleware: the Host allow-list on every request, the same-origin check on writes."""

    def __init__(self, app: ASGIApp, policy: HostPolicy, port: int) -> None:
        self.app = app
        self.policy = policy
        self.port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            refusal = self.refusal(scope)
            if refusal is not None:
                await error_response(refusal.status, refusal.message, refusal.hint)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> ApiError | None:
        """Why the request is refused, or None."""
        headers: dict[bytes, list[bytes]] = {}
        for name, value in scope.get("headers") or []:
            headers.setdefault(name.lower(), []).append(value)
        server = scope.get("server") or ("", self.port)
        server = (str(server[0]), int(server[1]) if server[1] is not None else self.port)
        hosts = headers.get(b"host", [])
        if len(hosts) != 1:
            return ApiError(400, "the request must carry exactly one Host header", hint="send Host: 127.0.0.1:PORT")
        raw_host = hosts[0].decode("latin-1")
        host = parse_authority(raw_host)
        default = DEFAULT_PORTS.get(scope.get("scheme", "http"), 80)
        if host is None or not self.policy.allows(host, default, server):
            return ApiError(
                421,
                f"this server does not answer to the host {raw_host[:80]!r}",
                hint="use the address kb serve printed, or start it with --allow-host NAME",
            )
        target = undecodable_target(scope)
        if target is not None:
            return target
        if scope.get("method", "GET") in SAFE_METHODS:
            return None
        if any(v.strip().lower() == b"cross-site" for v in headers.get(b"sec-fetch-site", [])):
            return ApiError(403, "a cross-site request may not change the knowledge base", hint=_ORIGIN_HINT)
        origins = headers.get(b"origin", [])
        if not origins:
            return None
        raw_origin = origins[0].decode("latin-1")
        origin = parse_origin(raw_origin) if len(origins) == 1 else None
        if origin is None or not self.policy.allows(origin[1], DEFAULT_PORTS[origin[0]], server):
            message = f"requests from the origin {raw_origin[:80]!r} may not change the knowledge base"
            return ApiError(403, message, hint=_ORIGIN_HINT)
        return None


_ORIGIN_HINT = "call the API from a page kb serve itself serves, or from a script (no Origin header)"
UTF8_HINT = "%-escape UTF-8 bytes only (a path or parameter of any text is its UTF-8, each byte as %XX)"


def utf8_error(raw: bytes, what: str) -> ApiError | None:
    """A 400 naming the first %-escape (or byte) of ``raw`` (a path or query string as sent) that is not part of
    UTF-8 text once unescaped, or None when it decodes."""
    data = unquote_to_bytes(raw)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : max(exc.end, exc.start + 1)]
        escaped = "".join(f"%{byte:02X}" for byte in bad[:4])
        return ApiError(400, f"the request's {what} holds {escaped}, which is not UTF-8 text", hint=UTF8_HINT)
    return None


def undecodable_target(scope: Scope) -> ApiError | None:
    """The 400 of a request whose path or query string is not UTF-8 once %-unescaped, or None."""
    raw_path = scope.get("raw_path")
    if isinstance(raw_path, bytes | bytearray):
        refusal = utf8_error(bytes(raw_path).partition(b"?")[0], "path")
        if refusal is not None:
            return refusal
    query = scope.get("query_string") or b""
    return utf8_error(bytes(query).replace(b"+", b" "), "query string") if query else None
