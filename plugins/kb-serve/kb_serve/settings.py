"""What `kb serve` is told: where to listen, who may call it, and the limits it enforces."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from kb_core import LIMITS, KbError
from kb_core.bounds import FILE_BYTES, PORT, QUERY_CACHE, QUEUE, WAIT_S, WORKERS, Bound
from kb_serve.errors import ApiError
from kb_serve.guards import parse_authority

__all__ = ["DEFAULT_MAX_FILE_BYTES", "ApiError", "ServeSettings", "is_loopback"]

#: Default bytes of one uploaded file (the default of a whole upload request is ``LIMITS.upload_bytes``).
DEFAULT_MAX_FILE_BYTES = 20_000_000


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1) or ``localhost``."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


def _within(bound: Bound, flag: str) -> Callable[[object, attrs.Attribute[Any], Any], None]:
    """An attrs validator: ``bound.check`` naming the value as ``kb serve``'s option ``flag``."""

    def check(_instance: object, _attribute: attrs.Attribute[Any], value: Any) -> None:
        bound.check(value, flag)

    return check


def _names(values: Iterable[str]) -> tuple[str, ...]:
    return (values,) if isinstance(values, str) else tuple(values)


@attrs.frozen
class ServeSettings:
    """The server's settings (command-line options of `kb serve`), each number within its
    :mod:`kb_core.bounds` bound (the one its option's type takes), or a one-line KbError naming it.

    ``token``: the bearer token every request must carry (required off loopback).
    ``readers``: knowledge-base handles kept open for searches and listings (one per concurrent search).
    ``ask_queue``: questions allowed to wait for the language model while one is generating; one more is a 503.
    ``ask_wait_s``: the longest a question waits for the model before a 503.
    ``search_timeout_s``: the longest a search or listing may take before a 504.
    ``query_cache``: query vectors kept for repeated searches and questions (0: none).
    ``allow_hosts``: host names (``NAME`` or ``NAME:PORT``) the server answers to besides its own
    address and the loopback names (a name a reverse proxy or the LAN uses for it).
    """

    host: str = "127.0.0.1"
    port: int = attrs.field(default=8765, validator=_within(PORT, "--port"))
    token: str | None = None
    max_file_bytes: int = attrs.field(default=DEFAULT_MAX_FILE_BYTES, validator=_within(FILE_BYTES, "--max-file-bytes"))
    max_upload_bytes: int = attrs.field(
        default=LIMITS.upload_bytes, validator=_within(FILE_BYTES, "--max-upload-bytes")
    )
    readers: int = attrs.field(default=4, validator=_within(WORKERS, "--readers"))
    ask_queue: int = attrs.field(default=4, validator=_within(QUEUE, "--ask-queue"))
    ask_wait_s: float = attrs.field(default=300.0, validator=_within(WAIT_S, "--ask-wait"))
    search_timeout_s: float = attrs.field(default=30.0, validator=_within(WAIT_S, "--search-timeout"))
    query_cache: int = attrs.field(default=2048, validator=_within(QUERY_CACHE, "--query-cache"))
    allow_hosts: tuple[str, ...] = attrs.field(default=(), converter=_names)

    def check(self) -> None:
        """Refuse settings that would expose the knowledge base without a token, and malformed --allow-host."""
        for name in self.allow_hosts:
            if parse_authority(name.strip()) is None:
                raise KbError(
                    f"--allow-host {name[:80]!r} is not a host name",
                    hint="give a name or address, optionally with a port: --allow-host kb.lan or kb.lan:8765",
                )
        if self.token is not None and not self.token.strip():
            raise KbError("the bearer token is empty", hint="pass a long random --token or unset KB_SERVE_TOKEN")
        if not is_loopback(self.host) and not self.token:
            raise KbError(
                f"binding {self.host} exposes the knowledge base to the network, so a bearer token is required",
                hint="pass --token TOKEN or set KB_SERVE_TOKEN, or bind 127.0.0.1",
            )
