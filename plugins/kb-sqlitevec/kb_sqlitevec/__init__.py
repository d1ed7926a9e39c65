"""kb-sqlitevec: the vector index and retriever of kb, on sqlite-vec.

Registers the index ``sqlitevec`` (mode ``vector``). See :mod:`kb_sqlitevec.index` for the
storage layout, the embedding cache and the score mapping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_core import KbError
from kb_core.plugin import IndexContext, RegisterIndex, hookimpl
from kb_core.plugin.options import RegisterOptions
from kb_sqlitevec.options import OPTIONS

if TYPE_CHECKING:
    from kb_sqlitevec.index import SqliteVecIndex

__all__ = ["make_index", "register_indexes", "register_options"]


def make_index(ctx: IndexContext) -> SqliteVecIndex:
    """The sqlitevec index of a knowledge base (needs the configured embedder).

    The engine (numpy, sqlite-vec, usearch) is imported here, not at registration, to keep `kb` start-up fast.
    """
    from kb_sqlitevec.ann import AnnOptions
    from kb_sqlitevec.index import SqliteVecIndex

    if ctx.embedder is None:
        raise KbError("the sqlitevec index needs an embedder", hint="set [models.embedding] name in the config")
    options = AnnOptions.from_config(ctx.config.backend_options("sqlitevec"))
    return SqliteVecIndex(
        ctx.directory,
        ctx.embedder,
        ctx.store,
        name=ctx.name,
        batch_size=ctx.config.models.embedding.batch_size,
        options=options,
    )


@hookimpl
def register_indexes(register: RegisterIndex) -> None:
    """The vector index ``sqlitevec``."""
    register("sqlitevec", make_index, mode="vector")


@hookimpl
def register_options(register: RegisterOptions) -> None:
    """The options of ``[backends.sqlitevec]`` (the HNSW graph's), checked by kb at start."""
    register("sqlitevec", OPTIONS)
