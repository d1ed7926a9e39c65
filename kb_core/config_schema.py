"""The schema of the configuration: every key's type and allowed values, checked whenever it loads.

:data:`RULES` gives each dotted key of :class:`kb_core.config.Config` a :class:`Rule` (its kind and
range or choices); :data:`ORDERS` relates two keys (``ingest.chunk_target_tokens <=
ingest.chunk_max_tokens``). :func:`check` refuses the first bad value with one line naming the key,
the value, what is allowed and where it was set:

>>> check({"search": {"fanout": 2_000_000_000}}, {"search.fanout": "env:KB_SEARCH__FANOUT"})
Traceback (most recent call last):
    ...
kb_core.errors.ConfigError: invalid configuration: search.fanout = 2000000000 (env:KB_SEARCH__FANOUT) is not \
a whole number from 1 to 1,000
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs

from kb_core.bounds import FILE_BYTES, SEED, TEMPERATURE, Bound, K, shown, spelt
from kb_core.bounds import THREADS as THREAD_COUNT
from kb_core.bounds import TIMEOUT_S as TIMEOUT_SECONDS
from kb_core.errors import ConfigError
from kb_core.ingest.ignores import ignore_line_problem
from kb_core.types import SEARCH_MODES, STANDALONE_METHODS

#: ``[rag] prompt_template_version``: ``auto`` (the default template in the question's language) or a
#: template's version, the keys of ``kb_core.answers.prompts.TEMPLATES`` (tests/test_import_graph.py ties them).
#: Here, not in ``answers/``, so that the configuration imports no wing above it.
AUTO = "auto"
TEMPLATE_VERSIONS = (
    *("rag-v1", "rag-v1-en"),
    *("rag-v2", "rag-v2-ko", "rag-v2-zh"),
    *("rag-v3", "rag-v3-ko", "rag-v3-zh"),
    *("rag-v4", "rag-v4-ko", "rag-v4-zh"),
    "rag-v5",
)
#: ``[rag] unsupported_claims``: refuse an answer with a claim nothing packed supports, or drop the claim.
UNSUPPORTED_POLICIES = ("refuse", "drop")
#: The fewest tokens a chunk may have (``kb_core.ingest.chunker.ChunkLimits``), and the most a chunk may be set to.
MIN_CHUNK_TOKENS, MAX_CHUNK_TOKENS = 8, 8192
#: The largest context window (and so token budget) a setting may name: 2^20 tokens.
MAX_CONTEXT_TOKENS = 1_048_576

Kind = Literal["whole", "number", "flag", "text", "path", "texts", "gates", "tables"]


@attrs.frozen
class Rule:
    """What one key accepts: a ``kind`` and, by kind, a range (``low``..``high``) or ``choices``.

    ``whole`` an integer; ``number`` an integer or a finite float; ``flag`` true or false; ``text`` a
    string (``choices`` when given, not empty when ``nonempty``); ``path`` a string without NUL
    characters; ``texts`` a list of strings; ``gates`` a table of search mode = number in
    ``low``..``high``; ``tables`` free-form tables (``[backends.NAME]``). ``optional``: may be unset.
    """

    kind: Kind
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    nonempty: bool = False
    optional: bool = False
    note: str = ""  # what a special value means ("0 = off"), said after what is allowed
    item_problem: Callable[[str], str] | None = None  # of ``texts``: why one item is not usable ('' when it is)

    @property
    def allowed(self) -> str:
        """What the key accepts, as the end of "… is not <allowed>"."""
        if self.kind in ("whole", "number"):
            what = "a whole number" if self.kind == "whole" else "a number"
            text = f"{what} from {_number(self.low)} to {_number(self.high)}"
        elif self.kind == "flag":
            text = "true or false"
        elif self.kind == "text":
            text = "non-empty text" if self.nonempty else "text"
            text = f"one of: {', '.join(self.choices)}" if self.choices else text
        elif self.kind == "path":
            text = "a path (text)"
        elif self.kind == "texts":
            text = "a list of non-empty names" if self.nonempty else "a list of text"
        elif self.kind == "gates":
            text = f"a table of {', '.join(SEARCH_MODES)} = a number from {_number(self.low)} to {_number(self.high)}"
        else:
            text = "a table of tables"
        text = f"{text}, or unset" if self.optional else text
        return f"{text} ({self.note})" if self.note else text

    def fault(self, value: Any) -> tuple[str, Any, str] | None:
        """None when ``value`` is allowed, else (the key's suffix at fault, its value, what is allowed there)."""
        if value is None and self.optional:
            return None
        if self.kind == "gates":
            return self._gates_fault(value)
        if self.kind == "tables":
            if not isinstance(value, dict):
                return "", _Hidden(type(value).__name__), self.allowed
            bad = next((name for name, table in value.items() if not isinstance(table, dict)), None)
            return None if bad is None else (_part(bad), _Hidden(type(value[bad]).__name__), "a table")
        if not self._accepts(value):
            return "", value, self.allowed
        if self.kind == "texts" and self.item_problem is not None:
            for index, item in enumerate(value):
                problem = self.item_problem(item)
                if problem:
                    return f"[{index}]", item, f"a usable pattern: {problem}"
        return None

    def _accepts(self, value: Any) -> bool:
        if self.kind in ("whole", "number"):
            return _in_range(value, self.low, self.high, whole=self.kind == "whole")
        if self.kind == "flag":
            return isinstance(value, bool)
        if self.kind == "texts":
            return isinstance(value, list) and all(isinstance(v, str) and (v or not self.nonempty) for v in value)
        if not isinstance(value, str):
            return False
        if self.kind == "path":
            return "\x00" not in value
        return (not self.choices or value in self.choices) and (bool(value) or not self.nonempty)

    def _gates_fault(self, value: Any) -> tuple[str, Any, str] | None:
        if not isinstance(value, dict):
            return "", value, self.allowed
        for mode, gate in value.items():
            if mode not in SEARCH_MODES:
                return _part(mode), gate, f"a gate of a search mode ({', '.join(SEARCH_MODES)})"
            if not _in_range(gate, self.low, self.high):
                return _part(mode), gate, f"a number from {_number(self.low)} to {_number(self.high)}"
        return None


def whole(low: int, high: int, note: str = "") -> Rule:
    """An integer from ``low`` to ``high``."""
    return Rule("whole", low, high, note=note)


def number(low: float, high: float, *, optional: bool = False, note: str = "") -> Rule:
    """A finite number from ``low`` to ``high`` (an integer too)."""
    return Rule("number", low, high, optional=optional, note=note)


def text(choices: tuple[str, ...] = (), *, nonempty: bool = False) -> Rule:
    """A string: one of ``choices`` when given."""
    return Rule("text", choices=tuple(choices), nonempty=nonempty)


def bounded(bound: Bound) -> Rule:
    """The rule of a key whose range is a shared :class:`kb_core.bounds.Bound` (the CLI's and HTTP's too)."""
    return Rule(bound.kind, bound.low, bound.high, note=bound.note)


FLAG, PATH = Rule("flag"), Rule("path")
SHARE = number(0, 1)
TIMEOUT = bounded(TIMEOUT_SECONDS)
THREADS = bounded(THREAD_COUNT)

#: Every key of the configuration, dotted, with what it accepts.
RULES: dict[str, Rule] = {
    "kb_dir": PATH,
    "ingest.max_file_bytes": bounded(FILE_BYTES),
    "ingest.chunk_target_tokens": whole(MIN_CHUNK_TOKENS, MAX_CHUNK_TOKENS),
    "ingest.chunk_max_tokens": whole(MIN_CHUNK_TOKENS, MAX_CHUNK_TOKENS),
    "ingest.chunk_overlap_tokens": whole(0, MAX_CHUNK_TOKENS - 1),
    "ingest.ignore": Rule("texts", item_problem=ignore_line_problem),
    "ingest.batch_documents": whole(1, 100_000),
    "ingest.follow_symlinks": FLAG,
    "ingest.ocr": text(nonempty=True),
    "models.embedding.name": text(nonempty=True),
    "models.embedding.path": PATH,
    "models.embedding.threads": THREADS,
    "models.embedding.batch_size": whole(1, 4096),
    "models.llm.backend": text(nonempty=True),
    "models.llm.model": PATH,
    "models.llm.temperature": bounded(TEMPERATURE),
    "models.llm.seed": bounded(SEED),
    "models.llm.context_tokens": whole(256, MAX_CONTEXT_TOKENS),
    "models.llm.max_tokens": whole(1, 65_536),
    "models.llm.threads": THREADS,
    "models.llm.connect_timeout_s": TIMEOUT,
    "models.llm.read_timeout_s": TIMEOUT,
    "models.llm.total_timeout_s": TIMEOUT,
    "search.default_k": bounded(K),
    "search.mode": text(SEARCH_MODES),
    "search.rrf_k": whole(0, 10_000),
    "search.fanout": bounded(K),  # hits asked of each fused retriever: bounded like k
    "rag.score_gate": number(0, 1, optional=True),
    "rag.score_gates": Rule("gates", 0, 1),
    "rag.max_context_tokens": whole(64, MAX_CONTEXT_TOKENS),
    "rag.prompt_template_version": text((AUTO, *TEMPLATE_VERSIONS)),
    "rag.constrained": FLAG,
    "rag.max_chunks": bounded(K),
    "rag.min_relative_score": SHARE,
    "rag.answer_check": number(0, 1, note="0 = off"),
    "rag.verdict_no_share": SHARE,
    "rag.verdict_confidence": SHARE,
    "rag.unsupported_claims": text(UNSUPPORTED_POLICIES),
    "rag.computations": FLAG,
    "conversations.standalone": text(STANDALONE_METHODS),
    "conversations.history_tokens": whole(0, MAX_CONTEXT_TOKENS, note="0 = none"),
    "indexes.enabled": Rule("texts", nonempty=True),
    "store.backend": text(nonempty=True),
    "backends": Rule("tables"),  # each plugin checks its own [backends.NAME] table
}


@attrs.frozen
class Order:
    """``smaller`` must be below ``larger`` (``strict``) or at most it."""

    smaller: str
    larger: str
    strict: bool

    def holds(self, small: float, large: float) -> bool:
        """Whether the two values keep the order."""
        return small < large if self.strict else small <= large

    @property
    def allowed(self) -> str:
        """The relation, as in "… is not below <the larger key>"."""
        return "below" if self.strict else "at most"


#: The rules between two keys (checked once both are valid on their own).
ORDERS: tuple[Order, ...] = (
    Order("ingest.chunk_overlap_tokens", "ingest.chunk_target_tokens", strict=True),
    Order("ingest.chunk_target_tokens", "ingest.chunk_max_tokens", strict=False),
    Order("models.llm.max_tokens", "models.llm.context_tokens", strict=True),
)


def check(
    data: Mapping[str, Any],
    sources: Mapping[str, str],
    defaults: Mapping[str, Any] | None = None,
    fallback: str = "default",
) -> None:
    """Raise a one-line ConfigError for the first value of ``data`` (the raw nested tables) :data:`RULES` refuses.

    ``sources`` says where each dotted key was set (``fallback`` when it does not); ``defaults`` (dotted)
    are named in the message. A key absent from ``data`` takes its default and is not checked.
    """
    defaults = defaults or {}

    def source(key: str) -> str:
        return next((sources[k] for k in _prefixes(key.split("[")[0]) if k in sources), fallback)

    def refuse(key: str, value: Any, allowed: str, hint: str = "") -> ConfigError:
        if not hint and defaults.get(key) not in (None, ""):
            hint = f"remove it for the default, {_shown(defaults[key])}"
        return ConfigError(
            f"invalid configuration: {key} = {_shown(value)} ({source(key)}) is not {allowed}", hint=hint
        )

    values = dict(defaults)
    for key, rule in RULES.items():
        node: Any = data
        *parents, leaf = key.split(".")
        for depth, part in enumerate(parents):
            node = node.get(part, {})
            if not isinstance(node, dict):
                raise refuse(".".join(parents[: depth + 1]), _Hidden(type(node).__name__), "a table of settings")
        if leaf not in node:
            continue
        fault = rule.fault(node[leaf])
        if fault is not None:
            suffix, value, allowed = fault
            raise refuse(key + suffix, value, allowed)
        values[key] = node[leaf]
    for order in ORDERS:
        small, large = values.get(order.smaller), values.get(order.larger)
        if small is not None and large is not None and not order.holds(small, large):
            larger = f"{order.larger} = {_shown(large)} ({source(order.larger)})"
            raise refuse(order.smaller, small, f"{order.allowed} {larger}", hint="change one of the two")


def text_keys() -> frozenset[str]:
    """The keys whose value is text (an environment variable's text is taken as it is for them)."""
    return frozenset(key for key, rule in RULES.items() if rule.kind in ("text", "path"))


def _part(name: str) -> str:
    """``.name``, the part of a dotted key a table's own key adds (quoted and cut unless a plain name)."""
    return f".{name}" if re.fullmatch(r"[A-Za-z0-9_-]{1,40}", name) else f".{_shown(name)}"


def _prefixes(key: str) -> list[str]:
    """``a.b.c``, ``a.b``, ``a``: where a source may be recorded for ``key``, most precise first."""
    parts = key.split(".")
    return [".".join(parts[:n]) for n in range(len(parts), 0, -1)]


def _in_range(value: Any, low: float | None, high: float | None, *, whole: bool = False) -> bool:
    """Whether ``value`` is a number of the kind within ``low``..``high`` (None: unbounded), as a Bound says."""
    bounds = (-math.inf if low is None else low, math.inf if high is None else high)
    return Bound("", "whole" if whole else "number", *bounds).holds(value)


def _number(value: float | None) -> str:
    return "any" if value is None else spelt(value)


@attrs.frozen
class _Hidden:
    """A value not shown in a message (a free-form table's may hold a secret): only its kind."""

    kind: str

    def __repr__(self) -> str:
        return f"<{self.kind}>"


def _shown(value: Any) -> str:
    """``value`` as a setting is written, cut (:func:`kb_core.bounds.shown`)."""
    return shown(value)
