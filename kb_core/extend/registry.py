"""The plugin manager: loads entry points of the group ``kb`` and collects what they register.

``KB_LOAD_PLUGINS`` restricts loading to a comma-separated list of entry-point names (an
empty value loads none); tests use it, and so can a user chasing a misbehaving plugin.
"""

from __future__ import annotations

import importlib.metadata as md
import os
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import pluggy

from kb_core.extend import hookspecs
from kb_core.errors import NotFoundError

ENTRY_POINT_GROUP = "kb"
LOAD_ENV = "KB_LOAD_PLUGINS"
KINDS = ("parsers", "embedders", "indexes", "language_models", "commands")
LABELS = {"parsers": "parser", "embedders": "embedder", "indexes": "index", "language_models": "language model",
          "commands": "command"}


@attrs.frozen
class Registration:
    """One named thing a plugin provides, and the factory that makes it."""

    kind: str
    name: str
    factory: Any
    plugin: str
    info: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class PluginInfo:
    """An installed plugin: its entry point, distribution and what it registers."""

    name: str
    distribution: str
    version: str
    provides: dict[str, list[str]]


@attrs.define
class Registry:
    """Everything the loaded plugins registered, by kind and name."""

    plugins: list[PluginInfo] = attrs.field(factory=list)
    items: dict[str, dict[str, Registration]] = attrs.field(factory=lambda: {k: {} for k in KINDS})

    def get(self, kind: str, name: str) -> Registration:
        """The registration ``name`` of ``kind``, or a NotFoundError naming what exists."""
        try:
            return self.items[kind][name]
        except KeyError:
            known = ", ".join(sorted(self.items[kind])) or "none installed"
            raise NotFoundError(
                f"no {LABELS[kind]} named {name!r} (available: {known})",
                hint="run 'kb plugins' to see what is installed",
            ) from None

    def names(self, kind: str) -> list[str]:
        """The registered names of ``kind``, sorted."""
        return sorted(self.items[kind])


def _selected(entry_points: Iterable[md.EntryPoint]) -> list[md.EntryPoint]:
    wanted = os.environ.get(LOAD_ENV)
    if wanted is None:
        return list(entry_points)
    names = {n.strip() for n in wanted.split(",") if n.strip()}
    return [ep for ep in entry_points if ep.name in names]


def _collect(pm: pluggy.PluginManager, registry: Registry) -> dict[str, dict[str, list[str]]]:
    """Call every plugin's hook implementations, recording which plugin registered what."""
    provides: dict[str, dict[str, list[str]]] = {}
    for kind in KINDS:
        caller = getattr(pm.hook, f"register_{kind}")
        for impl in caller.get_hookimpls():  # registration order: core first, so plugins may override

            def register(name: str, factory: Any, _kind: str = kind, _plugin: str = impl.plugin_name, **info: Any) -> None:
                registry.items[_kind][name] = Registration(_kind, name, factory, _plugin, info)
                provides.setdefault(_plugin, {}).setdefault(_kind, []).append(name)

            impl.function(register=register)
    return provides


def load_registry(extra_plugins: Iterable[tuple[str, object]] = ()) -> Registry:
    """Load the installed plugins (filtered by ``KB_LOAD_PLUGINS``) plus ``extra_plugins``."""
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    registry = Registry()
    found: list[tuple[str, object, str, str]] = []
    for ep in _selected(md.entry_points(group=ENTRY_POINT_GROUP)):
        module = ep.load()
        dist = ep.dist.name if ep.dist else "unknown"
        version = ep.dist.version if ep.dist else "0"
        found.append((ep.name, module, dist, version))
    found.extend((name, module, "(in process)", "0") for name, module in extra_plugins)
    found.sort(key=lambda f: (f[2] != "kb", f[0]))  # the core's own plugins first
    for name, module, _dist, _version in found:
        pm.register(module, name=name)
    provides = _collect(pm, registry)
    for name, _module, dist, version in found:
        registry.plugins.append(PluginInfo(name, dist, version, provides.get(name, {})))
    return registry


_cached: Registry | None = None


def registry() -> Registry:
    """The process-wide registry, loaded on first use."""
    global _cached
    if _cached is None:
        _cached = load_registry()
    return _cached


def reset_registry(new: Registry | None = None) -> None:
    """Forget (or replace) the process-wide registry; used by tests and by plugins' own tests."""
    global _cached
    _cached = new


def make(kind: str, name: str, *args: Any, **kwargs: Any) -> Any:
    """Instantiate the registered ``kind`` named ``name`` with its factory."""
    factory: Callable[..., Any] = registry().get(kind, name).factory
    return factory(*args, **kwargs)
