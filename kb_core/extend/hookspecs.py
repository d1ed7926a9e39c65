"""The extension surface of kb: eight hooks, each receiving a typed ``register`` callable.

A plugin is a module with functions marked ``@hookimpl`` and named like the specs below (both
``hookimpl`` and the ``Register*`` protocols are public as :mod:`kb_core.plugin`'s); it is found
through the entry-point group ``kb``. Registering is cheap: a factory is
only called when the thing it makes is chosen (by configuration or a command-line flag), with a
:class:`~kb_core.extend.contracts.FactoryContext` (an index: an ``IndexContext``)::

    from kb_core.plugin import hookimpl

    @hookimpl
    def register_language_models(register):
        register("echo", lambda ctx: EchoModel(ctx.config))

A hook implementation with a name that is not below, a registration without its required
details (``extensions`` for a parser, ``mode`` for an index) or with details kb does not know
stop kb with one line naming the plugin and the mistake.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

import pluggy

if TYPE_CHECKING:
    import click

    from kb_core.extend.contracts import (
        Embedder,
        FactoryContext,
        Index,
        IndexContext,
        LanguageModel,
        OcrEngine,
        Parser,
        ParserContext,
    )
    from kb_core.extend.options import Option
    from kb_core.extend.record_store import RecordStore, StoreContext

hookspec = pluggy.HookspecMarker("kb")
hookimpl = pluggy.HookimplMarker("kb")


class RegisterParser(Protocol):
    """``register(name, factory, extensions=(".md", ...), description="...")``."""

    def __call__(
        self,
        name: str,
        factory: Callable[[ParserContext], Parser],
        *,
        extensions: Sequence[str],
        description: str = "",
        licence: str = "",
        needs: str = "",
    ) -> None: ...


class RegisterEmbedder(Protocol):
    """``register(name, factory, languages="English", scripts={"latin"}, licence="...")``."""

    def __call__(
        self,
        name: str,
        factory: Callable[[FactoryContext], Embedder],
        *,
        languages: str = "",
        scripts: Collection[str] | None = None,
        description: str = "",
        licence: str = "",
        needs: str = "",
    ) -> None: ...


class RegisterIndex(Protocol):
    """``register(name, factory, mode="lexical" | "vector")``."""

    def __call__(
        self,
        name: str,
        factory: Callable[[IndexContext], Index],
        *,
        mode: Literal["lexical", "vector"],
        description: str = "",
        licence: str = "",
        needs: str = "",
    ) -> None: ...


class RegisterLanguageModel(Protocol):
    """``register(name, factory, default_model="...", licence="...", needs="...")``."""

    def __call__(
        self,
        name: str,
        factory: Callable[[FactoryContext], LanguageModel],
        *,
        default_model: str = "",
        description: str = "",
        licence: str = "",
        needs: str = "",
    ) -> None: ...


class RegisterOcrEngine(Protocol):
    """``register(name, factory, languages="English, Korean, Chinese", licence="...", needs="...")``."""

    def __call__(
        self,
        name: str,
        factory: Callable[[FactoryContext], OcrEngine],
        *,
        languages: str = "",
        description: str = "",
        licence: str = "",
        needs: str = "",
    ) -> None: ...


class RegisterStore(Protocol):
    """``register(name, factory, description="...", licence="...", needs="...")``: a store of record."""

    def __call__(
        self,
        name: str,
        factory: Callable[[StoreContext], RecordStore],
        *,
        description: str = "",
        licence: str = "",
        needs: str = "",
    ) -> None: ...


class RegisterOptions(Protocol):
    """``register(table, {"name": Option.whole(1, 100, 10, "what it is")})``: the options of ``[backends.<table>]``."""

    def __call__(self, table: str, options: Mapping[str, Option]) -> None: ...


class RegisterCommand(Protocol):
    """``register(name, command)`` with a ``click.Command`` (or group)."""

    def __call__(self, name: str, command: click.Command) -> None: ...


@hookspec
def register_parsers(register: RegisterParser) -> None:
    """Register document parsers for file extensions.

    ``factory(ParserContext)`` returns a :class:`~kb_core.extend.contracts.Parser`. The last
    plugin to claim an extension parses it; the core's own parsers load first. ``ctx.ocr`` is the
    OCR engine for page images (None when none is installed).
    """


@hookspec
def register_embedders(register: RegisterEmbedder) -> None:
    """Register embedders, chosen by ``[models.embedding] name``.

    ``factory(FactoryContext)`` returns an :class:`~kb_core.extend.contracts.Embedder`.
    """


@hookspec
def register_indexes(register: RegisterIndex) -> None:
    """Register indexes, enabled by ``[indexes] enabled``.

    ``factory(IndexContext)`` returns an object that is both an
    :class:`~kb_core.extend.contracts.Index` and a :class:`~kb_core.extend.contracts.Retriever`
    serving ``mode`` search.
    """


@hookspec
def register_language_models(register: RegisterLanguageModel) -> None:
    """Register generation backends, chosen by ``[models.llm] backend`` or ``kb --backend``.

    ``factory(FactoryContext)`` returns a :class:`~kb_core.extend.contracts.LanguageModel`;
    ``ctx.options`` holds the backend's ``[backends.<name>]`` table.
    """


@hookspec
def register_ocr_engines(register: RegisterOcrEngine) -> None:
    """Register OCR engines, chosen by ``[ingest] ocr`` (``"auto"``: the one installed).

    ``factory(FactoryContext)`` returns an :class:`~kb_core.extend.contracts.OcrEngine`; it is
    made on the first page an ingest needs read, and ``ctx.options`` holds its
    ``[backends.<name>]`` table.
    """


@hookspec
def register_stores(register: RegisterStore) -> None:
    """Register stores of record, chosen by ``[store] backend`` (default ``"sqlite"``, the core's own).

    ``factory(StoreContext)`` returns a :class:`~kb_core.extend.record_store.RecordStore`: where documents,
    chunks, the change feed the indexes follow, the answer ledger and threads are kept. Not an index
    (``register_indexes``): indexes are derived from the store of record.
    """


@hookspec
def register_options(register: RegisterOptions) -> None:
    """Declare the options of a ``[backends.<table>]`` table: ``register(table, {name: Option, ...})``.

    Each :class:`~kb_core.extend.options.Option` gives a key's type and range or choices, its default and
    a line of help. Every command that loads the configuration checks the table against them first (an
    unknown key or a bad value is one line, exit 2), ``kb config show`` and ``kb doctor`` list them, and
    the factory reads the table with ``checked_options`` (the defaults filled in). A table is declared by
    one plugin; it need not be the name of anything the plugin registers (``[backends.documents]``).
    """


@hookspec
def register_commands(register: RegisterCommand) -> None:
    """Register CLI commands: ``register(name, command)`` adds ``kb <name>``.

    A command cannot replace a built-in one. Use :data:`kb_core.commands.pass_session` to receive the
    global options and the knowledge base.
    """
