"""Opening a Qdrant client (server or local mode) and turning its failures into one-line KbErrors."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kb_core import KbError, ModelUnavailableError
from kb_qdrant.settings import KEY_ENV, URL_ENV, QdrantSettings

NO_LIMIT_S = 86_400  # what timeout_s = 0 (no limit) asks of the client, which takes whole seconds


class QdrantUnavailable(ModelUnavailableError):
    """The Qdrant server cannot be reached, refuses the key, or the local folder is in use."""


def open_client(settings: QdrantSettings) -> Any:
    """A ``QdrantClient`` for the settings. Local mode locks its folder for this process."""
    from qdrant_client import QdrantClient

    if settings.url:
        return QdrantClient(
            url=settings.url,
            api_key=settings.api_key or None,
            timeout=math.ceil(settings.timeout_s) if settings.timeout_s > 0 else NO_LIMIT_S,
            check_compatibility=False,  # no request at construction: kb only talks to the server when it must
        )
    assert settings.path is not None
    try:
        settings.path.mkdir(parents=True, exist_ok=True)
        return QdrantClient(path=str(settings.path))
    except RuntimeError as exc:
        if "already accessed" in str(exc):
            raise QdrantUnavailable(
                f"the local Qdrant index at {settings.path} is open in another kb process",
                hint="wait for it to finish (local mode allows one process at a time), or use a Qdrant server: "
                "set [backends.qdrant] url",
            ) from None
        raise
    except OSError as exc:
        raise KbError(f"cannot open the local Qdrant index at {settings.path}: {exc.strerror or exc}") from None


@contextmanager
def translated(settings: QdrantSettings, doing: str) -> Iterator[None]:
    """Run a client call; a transport or HTTP failure becomes one line naming the server and what to do."""
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    try:
        yield
    except UnexpectedResponse as exc:
        status = exc.status_code
        if status in (401, 403):
            raise QdrantUnavailable(
                f"the Qdrant server at {settings.url} refused the API key (HTTP {status}) while {doing}",
                hint=f"set the key in {KEY_ENV} (or the variable [backends.qdrant] api_key_env names)",
            ) from None
        detail = " ".join(exc.content.decode("utf-8", "replace").split())[:200] if exc.content else ""
        raise KbError(f"the Qdrant server at {settings.url} answered HTTP {status} while {doing}: {detail}") from None
    except ResponseHandlingException as exc:
        reason = " ".join(str(exc.source if hasattr(exc, "source") else exc).split())[:200]
        raise QdrantUnavailable(
            f"cannot reach the Qdrant server at {settings.url} while {doing}: {reason}",
            hint=f"start it, or set [backends.qdrant] url (or {URL_ENV}) to where it runs",
        ) from None
