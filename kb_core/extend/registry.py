"""The plugin manager: loads entry points of the group ``kb`` and collects what they register.

Every registration is checked as it is made (:func:`validate`): a mistake in a plugin is one
line naming the plugin, the thing and the mistake. ``KB_LOAD_PLUGINS`` restricts loading to a
comma-separated list of entry-point names (an empty value loads none); tests use it, and so can
a user chasing a misbehaving plugin. ``KB_PLUGIN_MODULES`` loads plugins that are not installed:
a comma-separated list of ``module`` or ``module:object`` (a class is instantiated), as llm's
``LLM_LOAD_PLUGINS`` or pytest's ``-p`` do; the core's tests use it to run ``kb`` in a
subprocess with the test indexes of :mod:`kb_core.testing`. The core's store of record
(:mod:`kb_core.builtin.stores`) is always loaded: no knowledge base opens without one.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal, cast

import attrs
import pluggy

from kb_core.errors import KbError, NotFoundError
from kb_core.extend import hookspecs
from kb_core.extend.options import Declared, declaration_problem

if TYPE_CHECKING:
    from kb_core.extend.contracts import Embedder, FactoryContext, IndexContext, LanguageModel, SearchIndex
    from kb_core.extend.record_store import RecordStore, StoreContext

ENTRY_POINT_GROUP = "kb"
CORE_DISTRIBUTION = "kb-core"
LOAD_ENV = "KB_LOAD_PLUGINS"
MODULES_ENV = "KB_PLUGIN_MODULES"
#: The kinds of thing a plugin registers.
Kind = Literal["parsers", "embedders", "indexes", "language_models", "ocr_engines", "stores", "commands"]
KINDS: tuple[Kind, ...] = ("parsers", "embedders", "indexes", "language_models", "ocr_engines", "stores", "commands")
LABELS = {
    "parsers": "parser",
    "embedders": "embedder",
    "indexes": "index",
    "language_models": "language model",
    "ocr_engines": "OCR engine",
    "stores": "store of record",
    "commands": "command",
}


COMMON_DETAILS = frozenset({"description", "licence", "needs"})
DETAILS: dict[str, frozenset[str]] = {
    "parsers": COMMON_DETAILS | {"extensions"},
    "embedders": COMMON_DETAILS | {"languages", "scripts"},
    "indexes": COMMON_DETAILS | {"mode"},
    "language_models": COMMON_DETAILS | {"default_model"},
    "ocr_engines": COMMON_DETAILS | {"languages"},
    "stores": COMMON_DETAILS,
    "commands": frozenset(),
}
INDEX_MODES = ("lexical", "vector")
#: Engines kb's documentation names; each comes in the distribution ``kb-<name>`` ("install it" hints).
KNOWN_ENGINES = frozenset({"tantivy", "sqlitevec", "qdrant", "postgres", "llamacpp", "ollama", "openai", "tesseract"})


class PluginError(KbError):
    """An installed plugin registered something kb cannot use."""


def _registration_problem(kind: str, name: object, factory: object, info: dict[str, Any]) -> str:
    """What is wrong with one registration ('' when nothing is)."""
    if not isinstance(name, str) or not name.strip():
        return f"a {LABELS[kind]} name must be a non-empty string, not {name!r}"
    unknown = sorted(set(info) - DETAILS[kind])
    if unknown:
        allowed = ", ".join(sorted(DETAILS[kind])) or "none"
        return f"unknown detail {', '.join(unknown)} for {LABELS[kind]} {name!r} (allowed: {allowed})"
    if kind == "commands":
        import click

        return "" if isinstance(factory, click.Command) else f"command {name!r} is not a click.Command"
    if not callable(factory):
        return f"the factory of {LABELS[kind]} {name!r} is not callable"
    if kind == "indexes" and info.get("mode") not in INDEX_MODES:
        return f"index {name!r} needs mode='lexical' or mode='vector', not {info.get('mode')!r}"
    if kind == "parsers":
        extensions = info.get("extensions")
        if (
            not isinstance(extensions, (list, tuple))
            or not extensions
            or not all(isinstance(e, str) and e.startswith(".") and len(e) > 1 for e in extensions)
        ):
            return f"parser {name!r} needs extensions=('.ext', ...), not {extensions!r}"
    return ""


def validate(kind: str, plugin: str, name: object, factory: object, info: dict[str, Any]) -> None:
    """Raise :class:`PluginError` naming ``plugin`` when a registration is unusable."""
    problem = _registration_problem(kind, name, factory, info)
    if problem:
        raise PluginError(f"plugin {plugin!r}: {problem}", hint="fix or uninstall the plugin; 'kb plugins' lists them")


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


def _with_core_store() -> dict[str, dict[str, Registration]]:
    """Nothing of any kind but the core's SQLite store: no knowledge base opens without a store of record, so
    every registry holds it, one made by hand (as tests make one) too; a plugin may register another."""
    from kb_core.builtin import stores

    items: dict[str, dict[str, Registration]] = {kind: {} for kind in KINDS}
    items["stores"][stores.SQLITE] = Registration("stores", stores.SQLITE, stores.sqlite_store, "stores")
    return items


@attrs.define
class Registry:
    """Everything the loaded plugins registered, by kind and name."""

    plugins: list[PluginInfo] = attrs.field(factory=list)
    items: dict[str, dict[str, Registration]] = attrs.field(factory=lambda: _with_core_store())
    #: The declared options of each ``[backends.<table>]`` table (``register_options``), and who declared them.
    options: dict[str, Declared] = attrs.field(factory=dict)
    options_plugins: dict[str, str] = attrs.field(factory=dict)

    def get(self, kind: Kind, name: str) -> Registration:
        """The registration ``name`` of ``kind``, or a NotFoundError naming what exists."""
        try:
            return self.items[kind][name]
        except KeyError:
            known = ", ".join(sorted(self.items[kind])) or "none installed"
            hint = (
                f"install it: pip install kb-{name}"
                if name in KNOWN_ENGINES
                else "run 'kb plugins' to see what is installed"
            )
            raise NotFoundError(f"no {LABELS[kind]} named {name!r} (available: {known})", hint=hint) from None

    def names(self, kind: Kind) -> list[str]:
        """The registered names of ``kind``, sorted."""
        return sorted(self.items[kind])

    def index_factory(self, name: str) -> Callable[[IndexContext], SearchIndex]:
        """The factory of the index ``name`` (a NotFoundError naming what exists when there is none)."""
        return cast("Callable[[IndexContext], SearchIndex]", self.get("indexes", name).factory)

    def embedder_factory(self, name: str) -> Callable[[FactoryContext], Embedder]:
        """The factory of the embedder ``name``."""
        return cast("Callable[[FactoryContext], Embedder]", self.get("embedders", name).factory)

    def store_factory(self, name: str) -> Callable[[StoreContext], RecordStore]:
        """The factory of the store of record ``name``."""
        return cast("Callable[[StoreContext], RecordStore]", self.get("stores", name).factory)

    def language_model_factory(self, name: str) -> Callable[[FactoryContext], LanguageModel]:
        """The factory of the language model backend ``name``."""
        return cast("Callable[[FactoryContext], LanguageModel]", self.get("language_models", name).factory)


def _selected(entry_points: Iterable[md.EntryPoint]) -> list[md.EntryPoint]:
    wanted = os.environ.get(LOAD_ENV)
    if wanted is None:
        return list(entry_points)
    names = {n.strip() for n in wanted.split(",") if n.strip()}
    return [ep for ep in entry_points if ep.name in names]


def _plugin_modules() -> list[tuple[str, object]]:
    """The plugins ``KB_PLUGIN_MODULES`` names, imported: (name, module or object)."""
    plugins: list[tuple[str, object]] = []
    for spec in (s.strip() for s in os.environ.get(MODULES_ENV, "").split(",")):
        if not spec:
            continue
        module_name, _, attribute = spec.partition(":")
        try:
            plugin: object = importlib.import_module(module_name)
            if attribute:
                plugin = getattr(plugin, attribute)
        except (ImportError, AttributeError) as exc:
            raise PluginError(
                f"{MODULES_ENV} names {spec!r}, which cannot be loaded: {exc}",
                hint="give importable modules as 'package.module' or 'package.module:object', comma-separated",
            ) from None
        plugins.append((spec, plugin() if isinstance(plugin, type) else plugin))
    return plugins


def _core_store(found: list[tuple[str, object, str, str]]) -> list[tuple[str, object, str, str]]:
    """The core's store of record as a plugin to load, named ``stores``, whatever ``KB_LOAD_PLUGINS`` says
    (nothing when it is loaded already)."""
    from kb_core.builtin import stores

    if any(module is stores for _name, module, _dist, _version in found):
        return []
    try:
        version = md.version(CORE_DISTRIBUTION)
    except md.PackageNotFoundError:  # pragma: no cover - kb-core runs uninstalled
        version = "0"
    return [("stores", stores, CORE_DISTRIBUTION, version)]


def _collect(pm: pluggy.PluginManager, registry: Registry) -> dict[str, dict[str, list[str]]]:
    """Call every plugin's hook implementations, recording which plugin registered what."""
    provides: dict[str, dict[str, list[str]]] = {}
    for kind in KINDS:
        caller = getattr(pm.hook, f"register_{kind}")
        for impl in caller.get_hookimpls():  # registration order: core first, so plugins may override

            def register(
                name: str, factory: Any, _kind: str = kind, _plugin: str = impl.plugin_name, **info: Any
            ) -> None:
                validate(_kind, _plugin, name, factory, info)
                registry.items[_kind][name] = Registration(_kind, name, factory, _plugin, info)
                provides.setdefault(_plugin, {}).setdefault(_kind, []).append(name)

            impl.function(register=register)
    for impl in pm.hook.register_options.get_hookimpls():

        def declare(table: str, options: Declared, _plugin: str = impl.plugin_name) -> None:
            problem = declaration_problem(table, options)
            earlier = registry.options_plugins.get(table) if isinstance(table, str) else None
            if not problem and earlier is not None and earlier != _plugin:
                problem = f"the options of [backends.{table}] are declared by plugin {earlier!r} already"
            if problem:
                raise PluginError(
                    f"plugin {_plugin!r}: {problem}", hint="fix or uninstall the plugin; 'kb plugins' lists them"
                )
            registry.options[table] = dict(options)
            registry.options_plugins[table] = _plugin
            provides.setdefault(_plugin, {}).setdefault("options", []).append(table)

        impl.function(register=declare)
    return provides


def load_registry(extra_plugins: Iterable[tuple[str, object]] = ()) -> Registry:
    """Load the installed plugins (filtered by ``KB_LOAD_PLUGINS``), ``KB_PLUGIN_MODULES`` and ``extra_plugins``."""
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    registry = Registry()
    found: list[tuple[str, object, str, str]] = []
    for ep in _selected(md.entry_points(group=ENTRY_POINT_GROUP)):
        module = ep.load()
        dist = ep.dist.name if ep.dist else "unknown"
        version = ep.dist.version if ep.dist else "0"
        found.append((ep.name, module, dist, version))
    found.extend((name, module, MODULES_ENV, "0") for name, module in _plugin_modules())
    found.extend(_core_store(found))
    found.extend((name, module, "(in process)", "0") for name, module in extra_plugins)
    found.sort(key=lambda f: (f[2] != CORE_DISTRIBUTION, f[0]))  # the core's own plugins first
    try:
        for name, module, _dist, _version in found:
            pm.register(module, name=name)
        pm.check_pending()  # a hook implementation no spec names: a misspelt hook
    except pluggy.PluginValidationError as exc:
        plugin = pm.get_name(exc.plugin) or repr(exc.plugin)
        first_line = str(exc).splitlines()[0]
        raise PluginError(
            f"plugin {plugin!r}: {first_line}", hint="the hooks are listed in kb_core.extend.hookspecs"
        ) from None
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


def make(kind: Kind, name: str, *args: Any, **kwargs: Any) -> Any:
    """Instantiate the registered ``kind`` named ``name`` with its factory."""
    factory: Callable[..., Any] = registry().get(kind, name).factory
    return factory(*args, **kwargs)
