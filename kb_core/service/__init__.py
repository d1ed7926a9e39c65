"""The answer service every front end uses: questions and follow-ups in one queue, what may be shown, kb's words.

``kb ask``, ``kb chat``, ``kb serve`` and ``kb mcp`` (and an application of your own) run questions
through :class:`AnswerService` and say answers with :mod:`kb_core.service.words` and
:mod:`kb_core.service.markdown`; a server that knows who asks applies :mod:`kb_core.service.people`;
docs/python-api.md describes each name.
"""

from kb_core.service import markdown, people, words
from kb_core.service.answering import AnswerService
from kb_core.service.gate import GenerationBusy, GenerationGate
from kb_core.service.handles import CachingEmbedder, HandlePool, Handles, share_embedder
from kb_core.service.showing import Showing, cut_paths
from kb_core.service.threads_in_use import ThreadInUse, ThreadsInUse

__all__ = [
    "AnswerService",
    "CachingEmbedder",
    "GenerationBusy",
    "GenerationGate",
    "HandlePool",
    "Handles",
    "Showing",
    "ThreadInUse",
    "ThreadsInUse",
    "cut_paths",
    "markdown",
    "people",
    "share_embedder",
    "words",
]
