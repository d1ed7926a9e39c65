"""kb-tantivy: the lexical index of kb, on Tantivy.

Registers the index ``tantivy`` (mode ``lexical``): BM25 over chunk text, with English stemming,
Korean/Chinese/Japanese character bigrams, heading and title boosts, and scores mapped to [0, 1]
by query evidence coverage (see :mod:`kb_tantivy.scoring`).
"""

from __future__ import annotations

from kb_core.plugin import IndexContext, RegisterIndex, hookimpl
from kb_core.plugin.options import RegisterOptions
from kb_tantivy.index import FINGERPRINT, TantivyIndex
from kb_tantivy.options import OPTIONS

__all__ = ["FINGERPRINT", "TantivyIndex", "make_index", "register_indexes", "register_options"]


def make_index(ctx: IndexContext) -> TantivyIndex:
    """The factory registered as ``tantivy``: an index kept in ``ctx.directory``."""
    return TantivyIndex(ctx)


@hookimpl
def register_indexes(register: RegisterIndex) -> None:
    """Register the Tantivy lexical index."""
    register("tantivy", make_index, mode="lexical")


@hookimpl
def register_options(register: RegisterOptions) -> None:
    """The options of ``[backends.tantivy]`` (boosts, the writer's wait), checked by kb at start."""
    register("tantivy", OPTIONS)
