"""A configuration value of any shape is a one-line ConfigError or a setting, never another exception (issue 42).

Tables where a setting is, a key under a setting, arrays nested thousands deep, integers of thousands of
digits: from a file and from ``KB_*`` variables, through the library and through ``kb config show``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core.cli.main import main
from kb_core.config import MAX_DEPTH, load_config
from kb_core.config_schema import RULES
from kb_core.errors import EXIT_USAGE, ConfigError


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[search]\nfanout = {a=1}\n", "search.fanout = {'a': 1}"),
        ("[search]\nmode = {x = 1}\n", "search.mode"),
        ("[search.mode]\nx = 1\n", "search.mode"),
        ("search = 5\n", "search = <int> (file:"),
        ("[models]\nllm = [1, 2]\n", "models.llm"),
        ("[rag.score_gates]\nlexical = {a = 1}\n", "rag.score_gates.lexical"),
        ("[rag.score_gates.lexical]\nx = 1\n", "rag.score_gates.lexical"),
        ("[ingest]\nignore = [[1]]\n", "ingest.ignore"),
        ("[search]\nfanout = " + "[" * 5000 + "]" * 5000 + "\n", "too deep"),
        ("[backends.x]\na = " + "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2) + "\n", "too deep"),
        ("[search]\nfanout = " + "9" * 5000 + "\n", "cannot read"),
    ],
)
def test_a_value_of_the_wrong_shape_in_a_file_is_one_line(tmp_path: Path, text: str, fragment: str) -> None:
    config_file = tmp_path / "c.toml"
    config_file.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(config_file, environ={})
    assert fragment in str(caught.value)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 400


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("KB_SEARCH__FANOUT__X", "1", "search.fanout.x (env:KB_SEARCH__FANOUT__X) names a key inside search.fanout"),
        ("KB_SEARCH__MODE__X__Y", "1", "inside search.mode"),
        ("KB_SEARCH__FANOUT", "[" * 5000 + "]" * 5000, "search.fanout"),
        ("KB_SEARCH__FANOUT", "9" * 5000, "search.fanout = '99999"),
        ("KB_MODELS__LLM__SEED", "18446744073709551616", "models.llm.seed"),
        ("KB_MODELS__LLM__TEMPERATURE", "nan", "models.llm.temperature"),
    ],
)
def test_a_variable_of_the_wrong_shape_is_one_line(name: str, value: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(environ={name: value})
    assert fragment in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_table_set_in_part_keeps_the_defaults_of_the_rest(tmp_path: Path) -> None:
    config_file = tmp_path / "c.toml"
    config_file.write_text("[rag.score_gates]\nlexical = 0.2\n")
    gates = load_config(config_file, environ={}).rag.score_gates
    assert gates["lexical"] == 0.2 and gates["vector"] == 0.35


def test_kb_config_show_refuses_a_table_on_a_setting_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file = tmp_path / "c.toml"
    config_file.write_text("[search]\nfanout = {a=1}\n")
    assert main(["--kb", str(tmp_path), "--config", str(config_file), "config", "show"]) == EXIT_USAGE
    error = capsys.readouterr().err
    assert "search.fanout" in error and len(error.strip().splitlines()) == 1


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
_values = st.recursive(
    _scalars.filter(lambda v: v is not None),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


def _toml(value: Any) -> str:
    """``value`` as a TOML inline value (NaN and infinity as TOML spells them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(repr(value), repr(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + "".join(c if c.isalnum() else f"\\u{ord(c):04x}" for c in value) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f'"k{i}" = {_toml(v)}' for i, v in enumerate(value.values())) + "}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from([*RULES, "search.fanout.x", "search", "models", "rag.score_gates.vector"]), value=_values)
def test_any_value_at_any_key_is_a_setting_or_one_line(tmp_path: Path, key: str, value: Any) -> None:
    *tables, leaf = key.split(".")
    header = f"[{'.'.join(tables)}]\n" if tables else ""
    config_file = tmp_path / "c.toml"
    config_file.write_text(f"{header}{leaf} = {_toml(value)}\n")
    try:
        load_config(config_file, environ={"KB_HOME": str(tmp_path)})
    except ConfigError as exc:
        assert "\n" not in str(exc)


@pytest.mark.parametrize("line", ["!", "\\"])
def test_an_ignore_line_kb_cannot_use_is_refused_in_the_configuration(tmp_path: Path, line: str) -> None:
    config_file = tmp_path / "c.toml"
    config_file.write_text(f'[ingest]\nignore = ["drafts/", {_toml(line)}]\n')
    with pytest.raises(ConfigError) as caught:
        load_config(config_file, environ={})
    message = str(caught.value)
    assert "ingest.ignore[1] = " in message and "(file:" in message and "\n" not in message
