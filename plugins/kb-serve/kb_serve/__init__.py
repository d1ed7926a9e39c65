"""kb-serve: ``kb serve``, an HTTP API over a knowledge base (Starlette on uvicorn).

Endpoints: ``POST /documents`` (multipart upload, ingested), ``DELETE /documents/{path}``,
``GET /documents``, ``GET /search``, ``POST /ask`` (``answer.v1``; ``?stream=1`` or
``/ask/stream`` for Server-Sent Events), ``/threads`` (follow-up questions: ``POST /threads``,
``POST /threads/{id}/ask``, ``GET /threads``, ``GET``/``DELETE /threads/{id}``), ``GET /health``,
``GET /openapi.json``. Bodies are the JSON of the CLI's ``--json``; errors are ``{"error", "hint"}``.
Build the app in-process with :func:`create_app`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kb_core.plugin import RegisterCommand, hookimpl
from kb_serve.settings import ServeSettings

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["ServeSettings", "create_app", "register_commands"]


def create_app(*args: Any, **kwargs: Any) -> Starlette:
    """The ASGI app (see :func:`kb_serve.app.create_app`); imported on call, so loading the plugin stays cheap."""
    from kb_serve.app import create_app as make

    return make(*args, **kwargs)


@hookimpl
def register_commands(register: RegisterCommand) -> None:
    """Register ``kb serve`` and ``kb access`` (its people, groups and grants)."""
    from kb_serve.access_command import access_command
    from kb_serve.command import serve_command

    register("serve", serve_command)
    register("access", access_command)
