"""The options of a plugin's ``[backends.NAME]`` table: declared once, when the plugin registers, and
checked by the core with the rest of the configuration.

A plugin declares each option as an :class:`Option` (a :class:`~kb_core.config_schema.Rule`, its
default and a line of help) in its ``register_options`` hook; every command that loads the
configuration checks the declared tables before it does anything (:func:`check_declared`): an
unknown key or a bad value is one line, exit 2, worded as the core's own keys are::

    invalid configuration: backends.openai.url = 5 (file:c.toml) is not text

A table no installed plugin declares is left alone (its plugin may be installed later). The plugin's
factory reads its table with :func:`checked_options`: the same check, and every default filled in.
"""

from __future__ import annotations

import os
import re
import reprlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from kb_core import bounds
from kb_core.config_schema import Rule
from kb_core.errors import ConfigError

if TYPE_CHECKING:
    from kb_core.config import Config

#: Parts of an unknown key's name that mark a secret: its value is not shown (as ``kb config show`` masks them).
SECRET_MARKERS = ("api_key", "apikey", "token", "secret", "password")


class _Masked:
    def __repr__(self) -> str:
        return "***"


MASKED: Any = _Masked()

#: What a table's name and an option's name may be: what ``KB_BACKENDS__NAME__KEY`` can spell.
NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


@attrs.frozen
class Option:
    """One option of a ``[backends.NAME]`` table: what it accepts (``rule``), its ``default`` and a line of ``help``.

    ``pattern`` (a regular expression every text must match whole, for ``text``, ``path`` and ``texts``)
    with ``shape``, what the pattern means in words; ``secret``: the value is never shown in a message.
    Build one with the class methods: ``Option.whole(1, 10_000, 2000, "a PDF with more pages is refused")``.
    """

    rule: Rule
    default: Any
    help: str
    pattern: str = ""
    shape: str = ""
    secret: bool = False
    least: int = 0  # the fewest items of a list (``texts``)

    @classmethod
    def whole(cls, low: int, high: int, default: int, help: str, *, note: str = "") -> Option:
        """An integer from ``low`` to ``high``."""
        return cls(Rule("whole", low, high, note=note), default, help)

    @classmethod
    def number(cls, low: float, high: float, default: float, help: str, *, note: str = "") -> Option:
        """A finite number from ``low`` to ``high`` (an integer too)."""
        return cls(Rule("number", low, high, note=note), default, help)

    @classmethod
    def timeout(cls, default: float, help: str) -> Option:
        """Seconds, 0 = no limit: kb's one bound of a timeout (a day at most)."""
        return cls._bounded(bounds.TIMEOUT_S, default, help)

    @classmethod
    def threads(cls, default: int, help: str) -> Option:
        """A number of threads, 0 = automatic: kb's one bound of threads."""
        return cls._bounded(bounds.THREADS, default, help)

    @classmethod
    def flag(cls, default: bool, help: str) -> Option:
        """``true`` or ``false``."""
        return cls(Rule("flag"), default, help)

    @classmethod
    def text(
        cls,
        default: str,
        help: str,
        *,
        choices: tuple[str, ...] = (),
        nonempty: bool = False,
        pattern: str = "",
        shape: str = "",
        secret: bool = False,
    ) -> Option:
        """A string: one of ``choices`` when given, matching ``pattern`` (described by ``shape``) when given."""
        return cls(Rule("text", choices=tuple(choices), nonempty=nonempty), default, help, pattern, shape, secret)

    @classmethod
    def path(cls, default: str, help: str, *, pattern: str = "", shape: str = "") -> Option:
        """A path (text without NUL characters; ``""`` for unset when the default is)."""
        return cls(Rule("path"), default, help, pattern, shape)

    @classmethod
    def texts(
        cls,
        default: list[str],
        help: str,
        *,
        nonempty: bool = False,
        pattern: str = "",
        shape: str = "",
        least: int = 0,
    ) -> Option:
        """A list of at least ``least`` strings (``nonempty``: none empty), each matching ``pattern`` when given."""
        return cls(Rule("texts", nonempty=nonempty), list(default), help, pattern, shape, least=least)

    @classmethod
    def _bounded(cls, bound: bounds.Bound, default: float, help: str) -> Option:
        return cls(Rule(bound.kind, bound.low, bound.high, note=bound.note), default, help)

    @property
    def allowed(self) -> str:
        """What the option accepts, as the end of "… is not <allowed>"."""
        if not self.pattern:
            allowed = self.rule.allowed
        else:
            shape = self.shape or f"matching {self.pattern}"
            allowed = f"a list of text, each {shape}" if self.rule.kind == "texts" else shape
        return f"{allowed}, at least {self.least}" if self.least else allowed

    def fault(self, value: Any) -> str | None:
        """None when ``value`` is allowed, else what is allowed (the end of the error line)."""
        fault = self.rule.fault(value)
        if fault is not None:
            return self.allowed if self.pattern or self.least else fault[2]
        if self.least and len(value) < self.least:
            return self.allowed
        if self.pattern and self.rule.kind in ("text", "path", "texts"):
            texts = value if isinstance(value, list) else [value]
            if not all(re.fullmatch(self.pattern, text) for text in texts):
                return self.allowed
        return None


#: What one plugin declares: option name -> :class:`Option`.
Declared = Mapping[str, Option]


def declaration_problem(table: object, options: object) -> str:
    """What is wrong with a plugin's declaration of ``[backends.<table>]`` ('' when nothing is)."""
    if not isinstance(table, str) or not NAME.fullmatch(table):
        return f"an options table must be named in lowercase letters, digits and '_', not {table!r}"
    if not isinstance(options, Mapping):
        return f"the options of [backends.{table}] must be a mapping of names to Option, not {type(options).__name__}"
    for key, option in options.items():
        where = f"option {key!r} of [backends.{table}]"
        if not isinstance(key, str) or not NAME.fullmatch(key):
            return f"{where}: a name must be lowercase letters, digits and '_'"
        if not isinstance(option, Option):
            return f"{where} is a {type(option).__name__}, not a kb_core.plugin.options.Option"
        if not option.help.strip() or "\n" in option.help:
            return f"{where} needs a line of help"
        if option.fault(option.default) is not None:
            return f"{where}: its default {_shown(option.default)} is not {option.fault(option.default)}"
    return ""


def checked_options(
    table: str, declared: Declared, options: Mapping[str, Any], sources: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``options`` (the ``[backends.<table>]`` table) checked against ``declared``, with every default filled in.

    A key ``declared`` does not name, or a value its :class:`Option` refuses, is a one-line ConfigError
    naming the key, the value, where it was set (``sources``: dotted key -> source, as ``Config.sources``)
    and what is allowed.
    """
    sources = sources or {}
    for key, value in options.items():
        dotted = f"backends.{table}.{key}"
        option = declared.get(key) if isinstance(key, str) else None
        if option is None:
            known = ", ".join(sorted(declared)) or "none"
            shown = MASKED if any(marker in str(key).lower() for marker in SECRET_MARKERS) else value
            raise _refused(dotted, shown, sources, f"an option of [backends.{table}]", f"its options: {known}")
        allowed = option.fault(value)
        if allowed is not None:
            shown = MASKED if option.secret else value
            default = "" if option.default in (None, "") else f"remove it for the default, {_shown(option.default)}"
            raise _refused(dotted, shown, sources, allowed, default)  # (the core's wording: no hint for "")
    return {key: options.get(key, option.default) for key, option in declared.items()}


def check_declared(config: Config, declarations: Mapping[str, Declared]) -> None:
    """Check every ``[backends.NAME]`` table of ``config`` that an installed plugin declares (a ConfigError if bad).

    A text option set through the environment (``KB_BACKENDS__OLLAMA__MODEL=7``) is the variable's text,
    as the core's own text keys are: the value in ``config`` is replaced by it.
    """
    for table, declared in declarations.items():
        options = config.backends.get(table)
        if not isinstance(options, dict):
            continue  # absent (the defaults), or refused as "a table" by the core's own check
        for key, option in declared.items():
            source = config.sources.get(f"backends.{table}.{key}", "")
            if key in options and option.rule.kind in ("text", "path") and source.startswith("env:"):
                options[key] = _environment_text(source[4:], options[key])
        checked_options(table, declared, options, config.sources)


def described(config: Config, declarations: Mapping[str, Declared]) -> list[tuple[str, Any, str, str]]:
    """(dotted key, value, source, help) of every declared option, sorted: what ``kb config show`` and
    ``kb doctor`` list. A secret set is shown as ``***``."""
    rows = []
    for table, declared in sorted(declarations.items()):
        options = config.backends.get(table)
        options = options if isinstance(options, dict) else {}
        for key, option in sorted(declared.items()):
            dotted = f"backends.{table}.{key}"
            if key in options:
                value = "***" if option.secret and options[key] not in ("", None) else options[key]
                source = next((config.sources[k] for k in _prefixes(dotted) if k in config.sources), "default")
            else:
                value, source = option.default, "default"
            rows.append((dotted, value, source, option.help))
    return rows


def _environment_text(name: str, value: Any) -> Any:
    raw = os.environ.get(name)
    return raw if raw is not None else value


def _refused(key: str, value: Any, sources: Mapping[str, str], allowed: str, hint: str) -> ConfigError:
    source = next((sources[k] for k in _prefixes(key) if k in sources), "default")
    return ConfigError(f"invalid configuration: {key} = {_shown(value)} ({source}) is not {allowed}", hint=hint)


def _prefixes(key: str) -> list[str]:
    """``a.b.c``, ``a.b``, ``a``: where a source may be recorded for ``key``, most precise first."""
    parts = key.split(".")
    return [".".join(parts[:n]) for n in range(len(parts), 0, -1)]


class _Short(reprlib.Repr):
    """A value as TOML would write it, short, at any depth and size (a huge integer is not spelt out)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxlist, self.maxdict, self.maxstring = 2, 4, 3, bounds.MAX_SHOWN_CHARS

    def repr_int(self, x: int, level: int) -> str:
        return bounds.shown(x)

    def repr_bool(self, x: bool, level: int) -> str:
        return "true" if x else "false"


def _shown(value: Any) -> str:
    """``value`` in a message: short, whatever its shape."""
    text = _Short().repr(value)
    return text if len(text) <= bounds.MAX_SHOWN_CHARS else text[: bounds.MAX_SHOWN_CHARS - 1] + "…"


def listed(
    rows: list[tuple[str, Any, str]], config: Config, declarations: Mapping[str, Declared]
) -> list[tuple[str, Any, str]]:
    """``rows`` (``kb_core.config.effective_values``) with the ``backends`` table replaced by one row per
    declared option (its value or default, and where it came from) and one per table no plugin declares."""
    kept = [row for row in rows if row[0] != "backends"]
    tables = next((value for key, value, _ in rows if key == "backends" and isinstance(value, dict)), {})
    for table, options in tables.items():
        if table not in declarations:
            dotted = f"backends.{table}"
            source = next((config.sources[k] for k in _prefixes(dotted) if k in config.sources), "default")
            kept.append((dotted, options, source))
    kept += [(key, value, source) for key, value, source, _help in described(config, declarations)]
    return sorted(kept, key=lambda row: row[0])


def summaries(config: Config, declarations: Mapping[str, Declared]) -> list[tuple[str, str]]:
    """(``backends.NAME``, each option's ``key = value``, with where it was set unless a default), per declared
    table, for ``kb doctor``."""
    tables: dict[str, list[str]] = {}
    for dotted, value, source, _help in described(config, declarations):
        table, key = dotted.rsplit(".", 1)
        where = "" if source == "default" else f" ({source})"
        tables.setdefault(table, []).append(f"{key} = {_shown(value)}{where}")
    return [(table, ", ".join(parts)) for table, parts in tables.items()]
