"""The extension surface of kb: every hook receives a ``register`` callable.

A plugin is a module with functions marked ``@kb_core.hookimpl`` and named like the specs
below; it is found through the entry-point group ``kb``. Registering is cheap: a factory is
only called when the thing it makes is chosen (by configuration or a command-line flag)::

    import kb_core

    @kb_core.hookimpl
    def register_language_models(register):
        register("echo", lambda ctx: EchoModel(ctx.config))
"""

from __future__ import annotations

from typing import Callable

import pluggy

hookspec = pluggy.HookspecMarker("kb")
hookimpl = pluggy.HookimplMarker("kb")

Register = Callable[..., None]


@hookspec
def register_parsers(register: Register) -> None:
    """Register document parsers: ``register(name, factory, extensions=(".md", ...))``.

    ``factory(config)`` returns a :class:`kb_core.extend.contracts.Parser`.
    """


@hookspec
def register_embedders(register: Register) -> None:
    """Register embedders: ``register(name, factory)``.

    ``factory(ModelContext)`` returns a :class:`kb_core.extend.contracts.Embedder`.
    """


@hookspec
def register_indexes(register: Register) -> None:
    """Register indexes (stores that are also retrievers): ``register(name, factory, mode=...)``.

    ``mode`` is ``"lexical"`` or ``"vector"``; ``factory(IndexContext)`` returns an object that
    satisfies both :class:`kb_core.extend.contracts.Store` and :class:`kb_core.extend.contracts.Retriever`.
    """


@hookspec
def register_language_models(register: Register) -> None:
    """Register generation backends: ``register(name, factory)``.

    ``factory(ModelContext)`` returns a :class:`kb_core.extend.contracts.LanguageModel`.
    """


@hookspec
def register_commands(register: Register) -> None:
    """Register CLI commands: ``register(name, command)`` with a ``click.Command``."""


