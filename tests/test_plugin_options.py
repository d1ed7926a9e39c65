"""A plugin's ``[backends.NAME]`` options, declared once (``register_options``) and checked at start (issues 42, 44).

With a plugin made in the test (no engine installed): the wording, the exit code of ``kb config show``,
defaults, secrets, bad declarations. With kb's own plugins (``needs_plugins``): the reproductions of
issue 42 (``[backends.tesseract]`` bad values, ``[backends.ollama] model = {a=1}``, ``[backends.openai]
url = 5``), an unknown key in every declared table, and values of every TOML shape for every option.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core.cli.main import main
from kb_core.config import Config, load_config
from kb_core.errors import EXIT_USAGE, ConfigError
from kb_core.extend.options import Declared, check_declared
from kb_core.extend.registry import PluginError, Registry, load_registry, registry, reset_registry
from kb_core.plugin import hookimpl
from kb_core.plugin.options import Option, RegisterOptions, checked_options

ACME: dict[str, Option] = {
    "url": Option.text("http://127.0.0.1:9000", "where the server listens", nonempty=True),
    "retries": Option.whole(0, 10, 2, "how often a failed request is sent again"),
    "timeout_s": Option.timeout(30.0, "seconds one request may take"),
    "mode": Option.text("fast", "how hard to try", choices=("fast", "careful")),
    "fast": Option.flag(True, "skip the slow path"),
    "names": Option.texts(["a"], "names to use", pattern=r"[a-z]+", shape="lowercase letters", least=1),
    "api_key": Option.text("", "the key", secret=True),
}


class Acme:
    """A plugin that declares ``[backends.acme]``."""

    def __init__(self, table: object = "acme", options: object = None) -> None:
        self.table, self.options = table, ACME if options is None else options

    @hookimpl
    def register_options(self, register: RegisterOptions) -> None:
        register(self.table, self.options)  # type: ignore[arg-type]


@pytest.fixture
def acme() -> Iterator[Registry]:
    """The process's registry with the Acme plugin (and whatever else is installed)."""
    loaded = load_registry([("acme", Acme())])
    reset_registry(loaded)
    yield loaded
    reset_registry(None)


def _config_show(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``kb config show`` over a config file holding ``text``: its exit code, and its stderr (or stdout when 0)."""
    config_file = tmp_path / "c.toml"
    config_file.write_text(text, encoding="utf-8")
    code = main(["--kb", str(tmp_path / "kb"), "--config", str(config_file), "config", "show", *args])
    out, err = capsys.readouterr()
    return code, err if code else out


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("retries = 99", "backends.acme.retries = 99 (file:{c}) is not a whole number from 0 to 10"),
        ("retries = {a = 1}", "backends.acme.retries = {'a': 1} (file:{c}) is not a whole number from 0 to 10"),
        ("url = 5", "backends.acme.url = 5 (file:{c}) is not non-empty text"),
        ("timeout_s = nan", "backends.acme.timeout_s = nan (file:{c}) is not a number from 0 to 86,400"),
        ("mode = 'slow'", "backends.acme.mode = 'slow' (file:{c}) is not one of: fast, careful"),
        ("names = ['A']", "backends.acme.names = ['A'] (file:{c}) is not a list of text, each lowercase letters"),
        ("names = []", "is not a list of text, each lowercase letters, at least 1"),
        ("retrys = 1", "backends.acme.retrys = 1 (file:{c}) is not an option of [backends.acme]"),
        ("api_key = ['sk-secret']", "backends.acme.api_key = *** (file:{c}) is not text"),
        ("apikey = 'sk-secret'", "backends.acme.apikey = *** (file:{c}) is not an option of [backends.acme]"),
    ],
)
def test_a_bad_option_stops_kb_config_show_with_one_line_and_exit_2(
    acme: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: str
) -> None:
    code, err = _config_show(tmp_path, f"[backends.acme]\n{text}\n", capsys)
    assert code == EXIT_USAGE
    assert err.count("\n") == 1 and err.startswith("kb: error: invalid configuration: ")
    assert line.replace("{c}", str(tmp_path / "c.toml")) in err
    assert "sk-secret" not in err


def test_an_unknown_key_names_the_options(acme: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _code, err = _config_show(tmp_path, "[backends.acme]\nretrys = 1\n", capsys)
    assert "(its options: api_key, fast, mode, names, retries, timeout_s, url)" in err


def test_a_bad_value_from_the_environment_names_the_variable(acme: Registry, tmp_path: Path) -> None:
    config = load_config(kb_dir=tmp_path, environ={"KB_BACKENDS__ACME__RETRIES": "11"})
    with pytest.raises(ConfigError, match=r"retries = 11 \(env:KB_BACKENDS__ACME__RETRIES\) is not a whole number"):
        check_declared(config, acme.options)


def test_a_text_option_from_the_environment_is_its_text(
    acme: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_BACKENDS__ACME__URL", "7")
    config = load_config(kb_dir=tmp_path)
    check_declared(config, acme.options)
    assert config.backends["acme"]["url"] == "7"


def test_the_options_are_checked_when_a_knowledge_base_opens(acme: Registry, tmp_path: Path) -> None:
    import kb_core

    config = load_config(kb_dir=tmp_path, environ={}, overrides={"backends.acme": {"mode": 3}})
    with pytest.raises(ConfigError, match="mode = 3"):
        kb_core.KnowledgeBase(config, acme)


def test_checked_options_fill_in_the_defaults() -> None:
    values = checked_options("acme", ACME, {"retries": 5})
    assert values == {option: ACME[option].default for option in ACME} | {"retries": 5}


def test_a_table_nobody_declares_is_left_alone(acme: Registry, tmp_path: Path) -> None:
    config = load_config(kb_dir=tmp_path, environ={}, overrides={"backends.other": {"anything": {"a": 1}}})
    check_declared(config, acme.options)


def test_kb_config_show_lists_every_declared_option(
    acme: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "[backends.acme]\nretries = 3\napi_key = 'sk-secret'\n[backends.x]\na = 1\n"
    code, out = _config_show(tmp_path, text, capsys, "--json")
    assert code == 0, out
    rows = {row["key"]: (row["value"], row["source"]) for row in json.loads(out)["values"]}
    assert rows["backends.acme.retries"] == (3, f"file:{tmp_path / 'c.toml'}")
    assert rows["backends.acme.mode"] == ("fast", "default")
    assert rows["backends.acme.api_key"][0] == "***"
    assert rows["backends.x"][0] == {"a": 1}
    assert "backends" not in rows and "sk-secret" not in out


def test_kb_doctor_lists_each_declared_table(acme: Registry, tmp_path: Path) -> None:
    import kb_core
    from kb_core.maintenance import doctor_report

    config = load_config(kb_dir=tmp_path, environ={}, overrides={"backends.acme": {"retries": 3}})
    report = doctor_report(kb_core.KnowledgeBase(config, acme), generate=False)
    detail = next(check.detail for check in report.checks if check.component == "backends.acme")
    assert "retries = 3 (flag)" in detail and "mode = 'fast'," in detail and "api_key = ''" in detail


@pytest.mark.parametrize(
    ("table", "options", "problem"),
    [
        ("Acme!", ACME, "an options table must be named"),
        ("acme", {"x": 5}, "option 'x' of [backends.acme] is a int, not a kb_core.plugin.options.Option"),
        ("acme", {"x": Option.flag(True, "")}, "option 'x' of [backends.acme] needs a line of help"),
        ("acme", {"x": Option.whole(1, 5, 9, "h")}, "its default 9 is not a whole number from 1 to 5"),
        ("acme", {"X-Y": Option.flag(True, "h")}, "a name must be lowercase letters"),
        ("acme", ["x"], "must be a mapping of names to Option"),
    ],
)
def test_a_bad_declaration_is_one_line_naming_the_plugin(table: object, options: object, problem: str) -> None:
    with pytest.raises(PluginError, match="plugin 'acme': ") as raised:
        load_registry([("acme", Acme(table, options))])
    assert problem in raised.value.message


def test_a_table_is_declared_by_one_plugin() -> None:
    with pytest.raises(PluginError, match="declared by plugin 'acme' already"):
        load_registry([("acme", Acme()), ("copycat", Acme())])


# -- every TOML shape, every declared option ------------------------------------------------------------

_scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers().map(lambda n: n * 10**300),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", "auto", "off", "eng", "/tmp", "~/x", "http://h:1", "osd", "\x00"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)


def _declarations() -> dict[str, Declared]:
    return {**load_registry([("acme", Acme())]).options}


DECLARATIONS = _declarations()
OPTIONS = sorted((table, key) for table, declared in DECLARATIONS.items() for key in declared)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(OPTIONS), _values)
def test_any_value_of_any_declared_option_is_one_line_or_accepted(option: tuple[str, str], value: Any) -> None:
    table, key = option
    config = Config(backends={table: {key: value}})
    try:
        check_declared(config, DECLARATIONS)
    except ConfigError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 600
        assert str(exc).startswith(f"invalid configuration: backends.{table}.{key} = ")
        return
    declared = DECLARATIONS[table][key]
    assert declared.fault(value) is None
    if isinstance(value, float):
        assert math.isfinite(value)


def _installed(*tables: str) -> Mapping[str, Declared]:
    installed = registry().options
    missing = [table for table in tables if table not in installed]
    if missing:
        pytest.skip(f"no installed plugin declares [backends.{missing[0]}]")
    return installed


@pytest.mark.needs_plugins
@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[backends.tesseract]\nosd = 'yes'\n", "backends.tesseract.osd = 'yes'"),
        ("[backends.tesseract]\nmodels = 'eng+deu'\n", "backends.tesseract.models = 'eng+deu'"),
        ("[backends.tesseract]\nmodels = ['osd']\n", "backends.tesseract.models = ['osd']"),
        ("[backends.ollama]\nmodel = {a=1}\n", "backends.ollama.model = {'a': 1}"),
        ("[backends.openai]\nurl = 5\n", "backends.openai.url = 5"),
        ("[backends.openai]\nurl = '5'\n", "backends.openai.url = '5' (file:"),
        ("[backends.ollama]\nurl = 'http://'\n", "backends.ollama.url = 'http://'"),
        ("[backends.documents]\nmax_pages = 0\n", "backends.documents.max_pages = 0"),
        ("[backends.sqlitevec]\nexpansion = nan\n", "backends.sqlitevec.expansion = nan"),
        ("[backends.qdrant]\ncollection_prefix = 'my kb!'\n", "backends.qdrant.collection_prefix"),
        ("[backends.tantivy]\nheading_boost = true\n", "backends.tantivy.heading_boost = true"),
        ("[backends.llamacpp]\nweight_repacking = 'sometimes'\n", "backends.llamacpp.weight_repacking"),
        ("[backends.mcp]\ningest_folders = ['notes']\n", "backends.mcp.ingest_folders = ['notes']"),
    ],
)
def test_issue_42s_plugin_options_stop_kb_config_show_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, fragment: str
) -> None:
    _installed(text.split(".", 1)[1].split("]", 1)[0])
    code, err = _config_show(tmp_path, text, capsys)
    assert code == EXIT_USAGE and err.count("\n") == 1
    assert f"kb: error: invalid configuration: {fragment}" in err


@pytest.mark.needs_plugins
def test_an_unknown_key_in_every_declared_table_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    installed = _installed("documents", "tesseract", "ollama", "openai")
    for table in installed:
        code, err = _config_show(tmp_path, f"[backends.{table}]\nno_such_option = 1\n", capsys)
        assert code == EXIT_USAGE and err.count("\n") == 1, table
        assert f"backends.{table}.no_such_option = 1 (file:" in err and "is not an option of" in err


@pytest.mark.needs_plugins
def test_a_bad_tesseract_option_stops_an_ingest_at_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _installed("tesseract")
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    config_file = tmp_path / "c.toml"
    config_file.write_text("[backends.tesseract]\nsplit_cells = 'no'\n", encoding="utf-8")
    code = main(["--kb", str(tmp_path / "kb"), "--config", str(config_file), "ingest", str(folder)])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "backends.tesseract.split_cells = 'no'" in err
    assert not (tmp_path / "kb").exists()  # nothing was read or written
