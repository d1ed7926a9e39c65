"""The model's stream, run on the calling thread: special tokens removed, tokens passed on as they come."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

from kb_core.answers.citations import SpecialTokenFilter
from kb_core.errors import Cancelled
from kb_core.extend.contracts import LanguageModel
from kb_core.types import Done, GenerateRequest, Token

log = logging.getLogger(__name__)

#: Receives the answer's text as it is generated.
TokenCallback = Callable[[str], None]
#: A chat role's name left alone on the first line once its special tokens are removed.
_ROLE_LINE = re.compile(r"^\s*(?:assistant|user|system)\s*\n")


def elapsed_ms(since: float) -> float:
    """Milliseconds since the ``time.perf_counter()`` reading ``since``."""
    return round((time.perf_counter() - since) * 1000, 3)


def stream_answer(
    llm: LanguageModel, request: GenerateRequest, on_token: TokenCallback | None, started: float
) -> tuple[str, Done, float | None, float]:
    """Run the model's stream on this thread: (answer text, Done, time to first token, generation ms).

    ``on_token`` receives the text as it comes; one that fails is dropped and generation goes on,
    but one that raises :class:`~kb_core.errors.Cancelled` stops it: the model's stream is closed
    and the exception propagates. The time to first token is counted from ``started``.
    """
    began = time.perf_counter()
    cleaner = SpecialTokenFilter()
    pieces: list[str] = []
    first_token_ms: float | None = None
    done: Done | None = None
    sink = on_token

    def show(text: str) -> None:
        nonlocal sink
        pieces.append(text)
        if sink is not None and text:
            try:
                sink(text)
            except Cancelled:
                raise
            except Exception as exc:  # a closed terminal or a cancelled caller: keep generating
                log.info("token callback failed (%s); generation continues", exc)
                sink = None

    stream = llm.generate_stream(request)
    try:
        for event in stream:
            if isinstance(event, Token):
                if first_token_ms is None:
                    first_token_ms = elapsed_ms(started)
                show(cleaner.feed(event.text))
            elif isinstance(event, Done):
                done = event
                break
    finally:
        close = getattr(stream, "close", None)
        if close is not None:  # a generator: stop the model now, not when it is collected
            close()
    show(cleaner.flush())
    if done is None:
        done = Done("error", error="the model's stream ended without a Done event")
    return _ROLE_LINE.sub("", "".join(pieces)).strip(), done, first_token_ms, elapsed_ms(began)
