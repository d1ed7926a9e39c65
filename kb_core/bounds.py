"""Every numeric bound of a value a person or a request gives kb, declared once.

The CLI (:func:`kb_core.cli.options.bounded`), the configuration (:mod:`kb_core.config_schema`),
``kb serve``'s options and HTTP parameters, ``kb mcp`` and ``/v1`` take their ranges from here, so they
cannot disagree: a temperature is 0 to 2 everywhere. A value out of its bound is one line naming the
value and what is allowed:

>>> TEMPERATURE.check(3.0)
Traceback (most recent call last):
    ...
kb_core.errors.KbError: temperature = 3.0 is not a number from 0 to 2
>>> SEED.check(-1, "--seed")
Traceback (most recent call last):
    ...
kb_core.errors.KbError: --seed = -1 is not a whole number from 0 to 4,294,967,295
"""

from __future__ import annotations

import math
from typing import Any, Literal

import attrs

from kb_core.errors import KbError

__all__ = [
    "CELL",
    "CHAPTER",
    "FILE_BYTES",
    "FILE_TAKES",
    "LINE",
    "LIST_LIMIT",
    "MESSAGE_BYTES",
    "PAGE",
    "PORT",
    "QUERY_CACHE",
    "QUEUE",
    "ROW_CELLS",
    "SEED",
    "SLIDE",
    "TEMPERATURE",
    "THREADS",
    "TIMEOUT_S",
    "WAIT_S",
    "WORKERS",
    "Bound",
    "digits_value",
    "K",
    "number",
    "whole",
]

MAX_SHOWN_CHARS = 40  # of a bad value in a message


@attrs.frozen
class Bound:
    """A number ``low``..``high``: ``whole`` an integer, else an integer or a finite float (NaN and infinity
    are never in a bound). ``name`` says what it is in a message; ``note`` what a special value means."""

    name: str
    kind: Literal["whole", "number"]
    low: float
    high: float
    note: str = ""

    @property
    def allowed(self) -> str:
        """What the bound accepts, as the end of "… is not <allowed>"."""
        what = "a whole number" if self.kind == "whole" else "a number"
        text = f"{what} from {spelt(self.low)} to {spelt(self.high)}"
        return f"{text} ({self.note})" if self.note else text

    def holds(self, value: Any) -> bool:
        """Whether ``value`` (any Python value: a bool, a string or a huge integer is not out of reach) is in it."""
        whole = self.kind == "whole"
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        return self.low <= value <= self.high

    def check(self, value: Any, name: str = "") -> Any:
        """``value`` when it :meth:`holds`, else a one-line KbError naming it (as ``name``, default the bound's)."""
        if not self.holds(value):
            raise KbError(f"{name or self.name} = {shown(value)} is not {self.allowed}")
        return value


def whole(name: str, low: int, high: int, note: str = "") -> Bound:
    """An integer bound."""
    return Bound(name, "whole", low, high, note)


def number(name: str, low: float, high: float, note: str = "") -> Bound:
    """A finite-number bound."""
    return Bound(name, "number", low, high, note)


def digits_value(text: str, most: int = 18) -> int | None:
    """The whole number ``text`` writes in plain ASCII digits, or None: not such digits (``'²'`` is a digit
    to ``str.isdigit`` but no number to ``int``), or more than ``most`` of them (``int`` refuses past 4,300,
    and a header or an attribute with 19 digits is past any bound already)."""
    if not (text.isascii() and text.isdigit()) or len(text) > most:
        return None
    return int(text)


def spelt(value: float) -> str:
    """``value`` as a bound is written: ``4,294,967,295``, ``0.5``."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def shown(value: Any) -> str:
    """``value`` as written, cut to :data:`MAX_SHOWN_CHARS` characters (a 5,000-digit integer is not spelt
    out: Python refuses to, past 4,300 digits)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int) and abs(value) >= 10**MAX_SHOWN_CHARS:
        text = f"{'-' if value < 0 else ''}a number of more than {MAX_SHOWN_CHARS} digits"
    else:
        text = repr(value)
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 1] + "…"


#: The most hits one search or question may ask for: a ``k`` of two billion made Tantivy ask for 32 GB.
K = whole("k", 1, 1000)
#: Sampling temperature (OpenAI's range; beyond 2 no model samples anything but noise).
TEMPERATURE = number("temperature", 0, 2)
#: Sampling seed: llama.cpp takes an unsigned 32-bit integer.
SEED = whole("seed", 0, 2**32 - 1)
#: How many stored answers, threads or conversations a listing may ask for.
LIST_LIMIT = whole("limit", 1, 1_000_000)
#: A line number in a citation (``#L12-L34``): far above any document kb stores (files are at most 4 GB).
LINE = whole("line", 1, 1_000_000_000)
#: A page number in a citation (``#page=3``) or a page image's URL.
PAGE = whole("page", 1, 1_000_000)
#: A slide, chapter or notebook cell in a citation (``#slide=7&``, ``#chapter=3&``, ``#cell=12&``): as a page.
SLIDE = whole("slide", 1, 1_000_000)
CHAPTER = whole("chapter", 1, 1_000_000)
CELL = whole("cell", 1, 1_000_000)
#: Seconds into a recording in a citation's moment (``#t=00:12:03,00:12:41``): 30 days, far past any recording.
MOMENT_S = number("seconds into a recording", 0, 2_592_000)
#: A coordinate of a region's box in a citation (``xywh=72,140,300,40``), in the page's units (points, pixels).
BOX = whole("xywh", 0, 1_000_000_000)
#: A timeout in seconds (0 = no limit): a day at most.
TIMEOUT_S = number("timeout", 0, 86_400, note="0 = no limit")
#: A wait in seconds that must end (kb serve's --ask-wait, --search-timeout): above 0, a day at most.
WAIT_S = number("wait", 0.001, 86_400)
#: Threads of a model or a pool of handles (0 = automatic).
THREADS = whole("threads", 0, 1024, note="0 = automatic")
#: Knowledge-base handles kb serve keeps open for reads, or questions it queues: each costs memory up front.
WORKERS = whole("workers", 1, 256)
#: A TCP port.
PORT = whole("port", 0, 65_535)
#: Questions ``kb serve`` lets wait for the language model while one is generated (0 = none wait).
QUEUE = whole("queue", 0, 256, note="0 = none wait")
#: Times one file of a shared ingest queue may be taken by a worker that then stops (crashes, is killed) before
#: finishing it; the next taker sets the file aside until it changes or ``kb ingest --retry-failed``.
FILE_TAKES = whole("takes of a file", 1, 3)
#: Seconds a feed follower (:mod:`kb_core.ingest.follow`) waits after a failure, or after a round that applied
#: nothing while its indexes stay behind: the low bound first, doubled each time to the high one, until it moves.
FOLLOW_BACKOFF_S = number("feed follower's back-off", 0.5, 30)
#: Bytes of one file, or of one upload request (kb serve's --max-file-bytes, --max-upload-bytes): 4 GB at most.
FILE_BYTES = whole("bytes", 1, 4_000_000_000)
#: Cells of one table row a parser keeps (a wider row is cut, with a warning).
ROW_CELLS = whole("cells of a table row", 1, 1000)
#: Bytes of one mail message kb reads (an mbox's message, an ``.eml`` file), its attachments included: a mail
#: system's 25 MB attachment limit is about 34 MB once encoded. A larger message is reported and skipped.
MESSAGE_BYTES = whole("bytes of a mail message", 1, 64_000_000)
#: Query vectors ``kb serve`` keeps for repeated searches (each a few kilobytes; 0 = none).
QUERY_CACHE = whole("cached queries", 0, 100_000, note="0 = none")
#: Rules one ignore list may hold (a folder's ``.kbignore``, ``[ingest] ignore``): each is tried on every file.
IGNORE_RULES = whole("ignore rules", 0, 1000)
#: Bytes of a folder's ``.kbignore`` that ingest reads (a thousand rules of a thousand characters).
IGNORE_FILE_BYTES = whole(".kbignore bytes", 0, 1_000_000)
#: Wildcards (runs of '*') in one ignore rule: each more multiplies the time a long name may take to match.
IGNORE_WILDCARDS = whole("wildcards in an ignore rule", 0, 3)
#: A computation the model writes (kb_core.answers.computation): its tokens, its nesting (brackets, functions and
#: signs) and its characters; reports write no number of more digits than NUMBER_DIGITS.
COMPUTATION_TOKENS = whole("tokens in a computation", 1, 200)
COMPUTATION_NESTING = whole("nesting of a computation", 0, 20)
COMPUTATION_CHARS = whole("characters of a computation", 1, 2000)
NUMBER_DIGITS = whole("digits of a number", 1, 30)
