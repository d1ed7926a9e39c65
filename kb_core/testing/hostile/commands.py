"""Hostile command lines, configuration files, environments, ignore files and citations for ``kb``.

The command lines come from walking kb's click tree (built-in and installed plugins' commands), so an
option added tomorrow is generated too; each value is drawn by the option's type.
"""

from __future__ import annotations

import datetime
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import click
from hypothesis import strategies as st

from kb_core.config_schema import RULES
from kb_core.testing.hostile.values import deep, depths, names, number_texts, numbers, texts

#: Commands that do not return by themselves (they serve, watch or wait on stdin): run as subprocesses only.
LONG_RUNNING = frozenset({("serve",), ("watch",), ("mcp",)})
#: The language-model backend every generated command uses unless it generates its own name (never a real
#: backend: robustness needs no model, and a real one would download or load gigabytes).
SCRIPTED = "scripted"


@attrs.frozen
class Places:
    """Where generated commands point: a folder they may write in, the knowledge base, and real targets.

    ``sandbox``: every generated path is inside it; ``kb_dir``: the knowledge base of ``--kb``;
    ``documents``: stored paths (for citations and targets); ``folders``: folders that may be ingested.
    """

    sandbox: Path
    kb_dir: Path
    documents: tuple[str, ...] = ()
    folders: tuple[Path, ...] = ()


def kb_commands() -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command of ``kb`` (its path of names and the command), built-in and from installed plugins."""
    from kb_core.cli import main

    main._register_builtin_commands()
    main._register_plugin_commands()
    return command_tree(main.cli)


def command_tree(group: click.Command, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """The leaf commands under ``group``, each with its path of names."""
    if not isinstance(group, click.Group):
        return [(path, group)]
    return [leaf for name, sub in sorted(group.commands.items()) for leaf in command_tree(sub, (*path, name))]


def paths_in(places: Places) -> st.SearchStrategy[str]:
    """A path inside the sandbox (hostile names, folders that do not exist), or an existing folder or file."""
    inside = st.lists(names(), min_size=1, max_size=3).map(lambda parts: str(places.sandbox.joinpath(*parts)))
    known = [str(p) for p in places.folders] + [str(places.sandbox), str(places.kb_dir)]
    return st.one_of(inside, inside, st.sampled_from(known))


def citations(documents: Sequence[str] = ("notes/a.md",)) -> st.SearchStrategy[str]:
    """A citation: ``path#L1-L2``, ``path#page=N&xywh=x,y,w,h&L1-L3``, and mangled forms of both."""
    path = st.one_of(st.sampled_from(list(documents) or ["a.md"]), texts(3))
    n = st.one_of(number_texts(), st.integers(min_value=-3, max_value=40).map(str))
    lines = st.one_of(
        st.tuples(n, n).map(lambda ab: f"L{ab[0]}-L{ab[1]}"),
        n.map(lambda a: f"L{a}"),
        st.sampled_from(["L", "L-", "L-1-L2", "L1-", "L1-L", "L2-L1", "L1-L2-L3", "l1-l2", "L1–L2", "L+1-L+2"]),
    )
    box = st.lists(n, min_size=0, max_size=5).map(lambda parts: "xywh=" + ",".join(parts))
    page = n.map(lambda p: f"page={p}")
    fragment = st.one_of(
        lines,
        st.lists(st.one_of(page, box, lines, texts(2)), min_size=1, max_size=4).map("&".join),
        st.tuples(page, box, lines).map("&".join),
        texts(4),
    )
    joins = st.sampled_from(["#", "#", "#", "##", "%23", ""])
    return st.tuples(path, joins, fragment).map("".join)


def _value_for(param: click.Parameter, places: Places) -> st.SearchStrategy[str]:
    """A hostile value for one option or argument, by its type and name."""
    kind = param.type
    name = (param.name or "").lower()
    if isinstance(kind, click.Choice):
        return st.one_of(st.sampled_from([str(c) for c in kind.choices]), texts(3))
    if isinstance(kind, click.IntRange | click.FloatRange) or kind.name in ("integer", "float", "number"):
        return number_texts()
    if isinstance(kind, click.Path | click.File):
        return paths_in(places)
    if name == "backend":
        return st.one_of(st.just(SCRIPTED), texts(3).filter(lambda s: s.strip() not in _real_backends()))
    if any(word in name for word in ("citation", "target", "path", "prefix")):
        return st.one_of(citations(places.documents), st.sampled_from(list(places.documents) or ["x"]), texts())
    return st.one_of(texts(), citations(places.documents), number_texts())


def _real_backends() -> frozenset[str]:
    from kb_core.extend.registry import registry

    return frozenset(n for n in registry().names("language_models") if n != SCRIPTED)


def _params(command: click.Command, places: Places) -> st.SearchStrategy[list[str]]:
    """Generated options (any subset, in any order) and arguments of ``command``."""
    pieces: list[st.SearchStrategy[list[str]]] = []
    for param in command.params:
        if isinstance(param, click.Option):
            if param.hidden or param.name == "help":
                continue
            flags = [*param.opts, *param.secondary_opts]
            if param.is_flag or param.count:
                pieces.append(st.lists(st.sampled_from(flags), max_size=1))
                continue
            one = st.tuples(st.sampled_from(list(param.opts)), _value_for(param, places)).map(list)
            most = 3 if param.multiple else 1
            pieces.append(st.lists(one, max_size=most).map(lambda pairs: [x for pair in pairs for x in pair]))
        elif isinstance(param, click.Argument):
            count = (0, 3) if param.nargs == -1 else (param.nargs, param.nargs)
            values = st.lists(_value_for(param, places), min_size=count[0], max_size=count[1])
            pieces.append(st.one_of(values, values, st.lists(_value_for(param, places), max_size=2)))
    extra = st.lists(st.sampled_from(["--nope", "--", "-", "--json", "-x", "--k=", "--help"]), max_size=1)
    return st.tuples(*pieces, extra).flatmap(
        lambda parts: st.permutations([p for p in parts if p]).map(lambda ps: [x for p in ps for x in p])
    )


def cli_arguments(
    places: Places, commands: Sequence[tuple[tuple[str, ...], click.Command]] | None = None
) -> st.SearchStrategy[list[str]]:
    """A whole ``kb`` command line (after ``kb``): the knowledge base, the scripted backend, a command of
    ``commands`` (default: every in-process one of :func:`kb_commands`) and its generated options."""
    chosen = list(commands) if commands is not None else [c for c in kb_commands() if c[0] not in LONG_RUNNING]
    front = st.one_of(
        st.just(["--kb", str(places.kb_dir), "--backend", SCRIPTED]),
        st.just(["--kb", str(places.kb_dir), "--backend", SCRIPTED]),
        st.tuples(paths_in(places), texts(2).filter(lambda s: s.strip() not in _real_backends())).map(
            lambda pair: ["--kb", pair[0], "--backend", pair[1] or SCRIPTED]
        ),
    )
    command = st.sampled_from(chosen).flatmap(lambda pc: _params(pc[1], places).map(lambda ps: [*pc[0], *ps]))
    return st.tuples(front, command).map(lambda fc: [*fc[0], *fc[1]])


# -- configuration -------------------------------------------------------------------------------------


@attrs.frozen
class Deep:
    """A value nested ``depth`` times: arrays, or inline tables."""

    depth: int
    kind: str = "array"


def toml_values() -> st.SearchStrategy[Any]:
    """A value a TOML file can hold, of any type and shape: NaN, huge integers, dates, tables, deep arrays."""
    scalars = st.one_of(
        numbers(),
        texts(4),
        st.booleans(),
        st.just(datetime.date(1979, 5, 27)),
        st.just(datetime.datetime(1979, 5, 27, 7, 32)),
        st.just(datetime.time(7, 32)),
    )
    nested = st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abx"), inner, max_size=2)
        ),
        max_leaves=5,
    )
    return st.one_of(nested, nested, st.builds(Deep, depths(), st.sampled_from(["array", "toml-table"])))


def config_data() -> st.SearchStrategy[dict[str, Any]]:
    """Configuration as nested tables: keys of :data:`kb_core.config_schema.RULES` (and below, above and beside
    them, and plugins' ``[backends.NAME]`` tables) set to :func:`toml_values`."""
    keys = list(RULES) + ["backends.tesseract", "backends.ollama", "backends.openai", "backends.llamacpp", "nope"]
    suffix = st.sampled_from(["", "", "", ".x", ".x.y", ".model", ".url", ".languages", ".timeout_s"])
    where = st.one_of(
        st.tuples(st.sampled_from(keys), suffix).map("".join), st.sampled_from(sorted({k.split(".")[0] for k in keys}))
    )
    return st.lists(st.tuples(where, toml_values()), min_size=1, max_size=4).map(_nest)


def _nest(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for dotted, value in pairs:
        *parents, leaf = dotted.split(".")
        node = data
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[leaf] = value
    return data


def toml_text(data: dict[str, Any], inline: bool = False) -> str:
    """``data`` written as TOML: tables as ``[headers]`` (or ``inline``), NaN as ``nan``, :class:`Deep` as is."""
    scalars = [f"{_key(k)} = {_toml(v)}" for k, v in data.items() if inline or not isinstance(v, dict)]
    lines = list(scalars)
    if not inline:
        _tables(data, (), lines)
    return "\n".join(lines) + "\n"


def _tables(data: dict[str, Any], path: tuple[str, ...], lines: list[str]) -> None:
    for key, value in data.items():
        if isinstance(value, dict):
            header = ".".join(_key(p) for p in (*path, key))
            lines.append(f"[{header}]")
            lines += [f"{_key(k)} = {_toml(v)}" for k, v in value.items() if not isinstance(v, dict)]
            _tables(value, (*path, key), lines)


def _key(name: str) -> str:
    plain = name and all(c.isascii() and (c.isalnum() or c in "_-") for c in name)
    return name if plain else _string(name)


def _string(text: str) -> str:
    escaped = "".join(
        c
        if c.isprintable() and c not in '"\\' and not 0xD800 <= ord(c) <= 0xDFFF
        else f"\\u{ord(c):04x}"
        if ord(c) < 0x10000
        else f"\\U{ord(c):08x}"
        for c in text
    )
    return f'"{escaped}"'


def _toml(value: Any) -> str:
    if isinstance(value, Deep):
        return deep(value.depth, value.kind)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value) if abs(value) < 10**4000 else "1" * 4000
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    return value.isoformat() if hasattr(value, "isoformat") else _string(str(value))


def config_files() -> st.SearchStrategy[str]:
    """A configuration file's text: generated tables as headers or inline, and now and then text that is not TOML."""
    written = st.tuples(config_data(), st.booleans()).map(lambda pair: toml_text(*pair))
    broken = st.one_of(
        texts(),
        st.sampled_from(["[search\n", "a = \n", "[a]\n[a]\n", "a=1\na=2\n", "[search]\nfanout = 1\n[search]\n"]),
        st.builds(lambda d: f"x = {deep(d)}\n", depths()),
    )
    return st.one_of(written, written, written, broken)


#: The longest environment value a process can be started with on Linux (MAX_ARG_STRLEN, 128 KiB), less a margin.
ENV_VALUE_BYTES = 120_000


def environments(places: Places) -> st.SearchStrategy[dict[str, str]]:
    """``KB_*`` variables: a key of :data:`~kb_core.config_schema.RULES` (or below it) set to hostile text,
    TOML-looking values included; ``KB_HOME`` and ``KB_CONFIG`` pointing inside the sandbox."""
    names_ = st.tuples(st.sampled_from(list(RULES)), st.sampled_from(["", "", "__X", "__X__Y"])).map(
        lambda pair: "KB_" + pair[0].upper().replace(".", "__") + pair[1]
    )
    values = st.one_of(
        texts(3),
        number_texts(),
        st.sampled_from(["{a=1}", "[1,", "[]", '["x"]', "[[1]]", "true", "nan", "{}", '"', "a=1"]),
        depths().map(deep),
    )
    # what a process can be given: no NUL, at most ENV_VALUE_BYTES (Linux refuses a longer one: E2BIG)
    settable = values.map(
        lambda v: os.fsdecode(v.replace("\x00", "").encode("utf-8", "surrogatepass")[:ENV_VALUE_BYTES])
    )
    text_env = st.dictionaries(names_, settable, min_size=1, max_size=3)
    paths = st.dictionaries(st.sampled_from(["KB_HOME", "KB_CONFIG"]), paths_in(places), max_size=1)
    return st.tuples(text_env, paths).map(lambda pair: {**pair[0], **pair[1]})


# -- ignore files ----------------------------------------------------------------------------------

#: Lines of an ignore file (gitignore syntax) that broke a walk, and their neighbours.
IGNORE_PIECES: tuple[str, ...] = (
    "!", "\\", "[", "[!", "]", "[]", "[z-a]", "[a-", "**", "***", "/", "//", "!/", "#", "\\#", "\\!", "*.md", "!*.md",
    "a/**/b", "**/", "/**", " ", "\t", "\\ ", "?", "[[:alpha:]]", "[\\", "x\\", "!!", "!\\", "*", "notes/", "\u202e",
)  # fmt: skip


def ignore_lines() -> st.SearchStrategy[list[str]]:
    """The lines of a ``.kbignore`` (or ``[ingest] ignore``): :data:`IGNORE_PIECES` and pieces of text."""
    line = st.one_of(
        st.sampled_from(IGNORE_PIECES),
        st.lists(st.sampled_from(IGNORE_PIECES), min_size=1, max_size=3).map("".join),
        texts(3).map(lambda s: s.replace("\n", "").replace("\r", "")),
    )
    return st.lists(line, min_size=1, max_size=6)
