"""Conversations: follow-up questions in threads, each made standalone before it is searched.

:func:`ask_in_thread` asks in a stored thread (``kb ask --continue``, ``kb chat``, the HTTP API,
MCP); :func:`ask_following` asks after given turns (``kb eval conversations``);
:func:`standalone` makes a follow-up searchable on its own.
"""

from kb_core.conversations.converse import Turn, ask_following, ask_in_thread, history_block
from kb_core.conversations.standalone import METHODS, EarlierTurn, Standalone, StandaloneMethod, standalone

__all__ = [
    "METHODS",
    "EarlierTurn",
    "Standalone",
    "StandaloneMethod",
    "Turn",
    "ask_following",
    "ask_in_thread",
    "history_block",
    "standalone",
]
