"""kb-qdrant: a vector index and retriever of kb on Qdrant (a server or cluster, or local mode).

Registers the index ``qdrant`` (mode ``vector``): add it to ``[indexes] enabled``. Settings live in
``[backends.qdrant]`` (see :mod:`kb_qdrant.settings`); storage and scores in :mod:`kb_qdrant.index`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kb_core import KbError
from kb_core.plugin import IndexContext, RegisterIndex, hookimpl
from kb_core.plugin.options import RegisterOptions
from kb_qdrant.settings import OPTIONS, QdrantSettings

if TYPE_CHECKING:
    from kb_qdrant.index import QdrantIndex

__all__ = ["QdrantSettings", "make_index", "register_indexes", "register_options"]


def make_index(ctx: IndexContext) -> QdrantIndex:
    """The qdrant index of a knowledge base (needs the configured embedder).

    qdrant-client is imported here, not at registration, to keep `kb` start-up fast.
    """
    from kb_qdrant.index import QdrantIndex

    if ctx.embedder is None:
        raise KbError("the qdrant index needs an embedder", hint="set [models.embedding] name in the config")
    settings = QdrantSettings.resolve(ctx.directory, ctx.config.backend_options("qdrant"), os.environ)
    return QdrantIndex(
        settings, ctx.embedder, ctx.store, name=ctx.name, batch_size=ctx.config.models.embedding.batch_size
    )


@hookimpl
def register_indexes(register: RegisterIndex) -> None:
    """The vector index ``qdrant``."""
    register("qdrant", make_index, mode="vector")


@hookimpl
def register_options(register: RegisterOptions) -> None:
    """The options of ``[backends.qdrant]``, checked by kb at start."""
    register("qdrant", OPTIONS)
