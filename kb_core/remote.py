"""Deprecated: moved to :mod:`kb_core.plugin.remote`; this module goes in kb-core 0.3.

Importing it warns (``DeprecationWarning``) and gives the same objects as ``kb_core.plugin.remote``.
"""

import warnings

from kb_core.plugin.remote import (
    MAX_BODY_BYTES,
    TIMEOUT_KEYS,
    ApiError,
    ConnectionLost,
    MalformedResponse,
    RemoteServer,
    ServerTimeout,
    ServerUnreachable,
    Timeouts,
    chat_messages,
    count_field,
    error_body_text,
    first_or_done,
    no_answer,
    one_line,
    preview,
    unreachable_reason,
    upper_bound_tokens,
)

warnings.warn(
    "kb_core.remote moved to kb_core.plugin.remote; the old module goes in kb-core 0.3",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "MAX_BODY_BYTES",
    "TIMEOUT_KEYS",
    "ApiError",
    "ConnectionLost",
    "MalformedResponse",
    "RemoteServer",
    "ServerTimeout",
    "ServerUnreachable",
    "Timeouts",
    "chat_messages",
    "count_field",
    "error_body_text",
    "first_or_done",
    "no_answer",
    "one_line",
    "preview",
    "unreachable_reason",
    "upper_bound_tokens",
]
