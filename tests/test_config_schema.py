"""The configuration schema: every key has a rule, every rule refuses what it must and accepts the rest.

The cases are derived from :data:`kb_core.config_schema.RULES` (each key's kind, range and choices)
and :data:`~kb_core.config_schema.ORDERS`, so a key added to Config is covered as soon as it has a
rule, and cannot be added without one (:func:`test_every_config_key_has_a_rule`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb_core.cli.main import main
from kb_core.config import Config, config_from_json, config_to_json, load_config
from kb_core.config_schema import ORDERS, RULES, Rule
from kb_core.conversations import METHODS
from kb_core.errors import EXIT_USAGE, ConfigError
from kb_core.types import SEARCH_MODES

KB_DIR = "/nonexistent/kb-schema-test"  # load_config neither reads nor creates it
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)  # no lone surrogates: TOML has none
NOT_TEXT = st.one_of(st.integers(), st.booleans(), st.lists(st.integers(), max_size=2))


def _load(overrides: dict[str, Any]) -> Config:
    """``load_config`` with ``overrides`` (source "flag") and no file or environment."""
    return load_config(None, None if "kb_dir" in overrides else KB_DIR, overrides, environ={})


def _leaf_keys(cls: type, prefix: str = "") -> list[str]:
    keys: list[str] = []
    for field in attrs.fields(attrs.resolve_types(cls)):
        if field.name == "sources":  # where values came from, not a setting
            continue
        if isinstance(field.type, type) and attrs.has(field.type):
            keys.extend(_leaf_keys(field.type, f"{prefix}{field.name}."))
        else:
            keys.append(prefix + field.name)
    return keys


def test_every_config_key_has_a_rule() -> None:
    keys = _leaf_keys(Config)
    assert "search.fanout" in keys and "models.llm.max_tokens" in keys and "backends" in keys
    assert sorted(keys) == sorted(RULES), "every key of Config needs a rule in kb_core.config_schema.RULES (and back)"


def test_the_defaults_keep_the_schema() -> None:
    load_config(None, KB_DIR, environ={})  # raises if a default broke its own rule
    for order in ORDERS:
        assert order.smaller in RULES and order.larger in RULES


def test_every_key_is_documented() -> None:
    install = (Path(__file__).parents[1] / "docs" / "install.md").read_text(encoding="utf-8")
    section = install.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    assert [key for key in RULES if f"| `{key}` |" not in section] == [], "add them to docs/install.md, Configuration"


def test_choices_are_the_constants_they_repeat() -> None:
    assert RULES["conversations.standalone"].choices == METHODS
    assert RULES["search.mode"].choices == SEARCH_MODES


# -- the cases, from the rules ---------------------------------------------------------------------


def _whole_range(rule: Rule) -> tuple[int, int]:
    assert rule.low is not None and rule.high is not None, "a number's range is bounded on both sides"
    return math.ceil(rule.low), math.floor(rule.high)


def bad_values(rule: Rule) -> st.SearchStrategy[Any]:
    """Values ``rule`` must refuse: out of range, not a choice, of another type."""
    if rule.kind in ("whole", "number"):
        low, high = _whole_range(rule)
        wrong = st.one_of(st.integers(max_value=low - 1), st.integers(min_value=high + 1), st.booleans(), TEXT)
        if rule.kind == "whole":
            return wrong | st.floats().filter(lambda f: not f.is_integer())
        outside = st.floats(max_value=rule.low, exclude_max=True) | st.floats(min_value=rule.high, exclude_min=True)
        return wrong | outside | st.sampled_from([math.nan, math.inf, -math.inf])
    if rule.kind == "flag":
        return st.one_of(st.integers(), TEXT, st.sampled_from(["true", "false", "yes", 0, 1]))
    if rule.kind in ("text", "path"):
        wrong = NOT_TEXT | st.floats(allow_nan=False)
        if rule.choices:
            return wrong | TEXT.filter(lambda t: t not in rule.choices)
        if rule.kind == "path":
            return wrong | st.builds(lambda a, b: f"{a}\x00{b}", TEXT, TEXT)
        return wrong | st.just("") if rule.nonempty else wrong
    if rule.kind == "texts":
        wrong = TEXT | st.integers() | st.lists(st.integers() | st.booleans(), min_size=1, max_size=3)
        return wrong | st.just(["x", ""]) if rule.nonempty else wrong
    if rule.kind == "gates":
        other = TEXT.filter(lambda t: t not in SEARCH_MODES)
        outside = st.floats(max_value=0, exclude_max=True) | st.floats(min_value=1, exclude_min=True) | TEXT
        return st.one_of(
            st.dictionaries(other, st.floats(0, 1), min_size=1, max_size=2),
            st.dictionaries(st.sampled_from(SEARCH_MODES), outside, min_size=1, max_size=2),
            NOT_TEXT,
            TEXT,
        )
    assert rule.kind == "tables", f"no bad values for kind {rule.kind!r}: add them here"
    return st.one_of(NOT_TEXT, TEXT, st.dictionaries(TEXT, NOT_TEXT | TEXT, min_size=1, max_size=2))


def good_values(rule: Rule) -> st.SearchStrategy[Any]:
    """Values ``rule`` must accept."""
    if rule.kind == "whole":
        return st.integers(*_whole_range(rule))
    if rule.kind == "number":
        assert rule.low is not None and rule.high is not None
        good = st.floats(rule.low, rule.high) | st.integers(*_whole_range(rule))
        return good | st.none() if rule.optional else good
    if rule.kind == "flag":
        return st.booleans()
    if rule.kind == "text":
        return st.sampled_from(rule.choices) if rule.choices else TEXT.filter(lambda t: bool(t) or not rule.nonempty)
    if rule.kind == "path":
        return st.from_regex(r"[A-Za-z0-9_./ -]{0,30}", fullmatch=True)  # any text resolves ("~user" may not)
    if rule.kind == "texts":
        usable = (lambda t: not rule.item_problem(t)) if rule.item_problem else (lambda t: True)  # noqa: E731
        return st.lists(TEXT.filter(lambda t: (bool(t) or not rule.nonempty) and usable(t)), max_size=3)
    if rule.kind == "gates":
        return st.dictionaries(st.sampled_from(SEARCH_MODES), st.floats(0, 1) | st.sampled_from([0, 1]), max_size=3)
    assert rule.kind == "tables", f"no good values for kind {rule.kind!r}: add them here"
    return st.dictionaries(TEXT, st.dictionaries(TEXT, TEXT | st.integers(), max_size=2), max_size=2)


def _keeping_orders(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with the other keys of :data:`ORDERS` moved (from their defaults) so that every order holds."""
    flat = {key: value for key, value, _ in _defaults()} | values
    pinned = set(values)
    for _ in ORDERS:
        for order in ORDERS:
            small, large = flat[order.smaller], flat[order.larger]
            if order.holds(small, large) or {order.smaller, order.larger} <= set(values):
                continue
            gap = 1 if order.strict else 0
            if order.smaller in pinned:
                flat[order.larger] = small + gap
                pinned.add(order.larger)
            else:
                flat[order.smaller] = large - gap
                pinned.add(order.smaller)
    keys = {o.smaller for o in ORDERS} | {o.larger for o in ORDERS} | set(values)
    return {key: flat[key] for key in keys}


def _defaults() -> list[tuple[str, Any, str]]:
    from kb_core.config import effective_values

    return effective_values(load_config(None, KB_DIR, environ={}))


@pytest.mark.parametrize("key", sorted(RULES))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_each_key_refuses_what_its_rule_refuses(key: str, data: st.DataObject) -> None:
    value = data.draw(bad_values(RULES[key]), label=key)
    with pytest.raises(ConfigError) as caught:
        _load({key: value})
    message = str(caught.value)
    assert "\n" not in message and f"{key}" in message and "(flag)" in message, message


@pytest.mark.parametrize("key", sorted(RULES))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_each_key_accepts_what_its_rule_allows(key: str, data: st.DataObject) -> None:
    value = data.draw(good_values(RULES[key]), label=key)
    overrides = _keeping_orders({key: value})
    config = _load(overrides)
    if key != "kb_dir":  # resolved to an absolute path
        assert _value_at(config, key) == value


def _value_at(config: Config, key: str) -> Any:
    node: Any = config
    for part in key.split("."):
        node = getattr(node, part)
    return node


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: f"{o.smaller}<{o.larger}")
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_each_order_between_two_keys_is_kept(order: Any, data: st.DataObject) -> None:
    s_low, s_high = _whole_range(RULES[order.smaller])
    l_low, l_high = _whole_range(RULES[order.larger])
    large = data.draw(st.integers(max(l_low, s_low), min(l_high, s_high - (0 if order.strict else 1))), label="larger")
    small = data.draw(st.integers(large if order.strict else large + 1, s_high), label="smaller")
    overrides = _keeping_orders({order.smaller: small, order.larger: large})
    with pytest.raises(ConfigError) as caught:
        _load(overrides)
    message = str(caught.value)
    assert "\n" not in message and order.smaller in message and order.larger in message, message


@pytest.mark.parametrize("key", sorted(RULES))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_config_from_json_checks_as_load_config_does(key: str, data: st.DataObject) -> None:
    value = data.draw(bad_values(RULES[key]), label=key)
    config = load_config(None, KB_DIR, {"search.fanout": 70, "rag.score_gate": 0.2}, environ={})
    assert config_from_json(config_to_json(config)) == config  # what config_to_json wrote passes
    tables = json.loads(config_to_json(config))
    *parents, leaf = key.split(".")
    node = tables
    for part in parents:
        node = node[part]
    node[leaf] = value
    with pytest.raises(ConfigError) as caught:
        config_from_json(json.dumps(tables))
    assert "\n" not in str(caught.value) and key in str(caught.value)


# -- the issue's reproductions, through the real CLI (in process) -------------------------------------


def _kb(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, str]:
    """``kb --kb DIR ARGS`` in process, on a knowledge base made first (a refusal is the configuration's)."""
    _init(capsys, tmp_path)
    code = main(["--kb", str(tmp_path / "kb"), *args])
    return code, capsys.readouterr().err


def _init(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    if not (tmp_path / "kb").exists():
        assert main(["--kb", str(tmp_path / "kb"), "init"]) == 0
        capsys.readouterr()


def test_a_huge_fanout_in_the_file_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config_file = tmp_path / "c.toml"
    config_file.write_text("[search]\nfanout = 2000000000\n")
    code, err = _kb(capsys, tmp_path, "--config", str(config_file), "search", "zebrafish")
    assert code == EXIT_USAGE
    assert err.count("\n") == 1 and "search.fanout = 2000000000" in err and f"file:{config_file}" in err, err
    assert "1,000" in err  # the allowed range


def test_a_huge_fanout_in_the_environment_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _init(capsys, tmp_path)
    monkeypatch.setenv("KB_SEARCH__FANOUT", "2000000000")
    code, err = _kb(capsys, tmp_path, "search", "zebrafish")
    assert code == EXIT_USAGE
    assert err.count("\n") == 1 and "search.fanout" in err and "env:KB_SEARCH__FANOUT" in err, err


@pytest.mark.parametrize(
    ("toml", "key", "command"),
    [
        ("[ingest]\nchunk_target_tokens = 0", "ingest.chunk_target_tokens", ["ingest", "{docs}"]),
        ("[ingest]\nchunk_max_tokens = 0", "ingest.chunk_max_tokens", ["ingest", "{docs}"]),
        ("[ingest]\nchunk_target_tokens = 300", "ingest.chunk_target_tokens", ["ingest", "{docs}"]),
        ("[ingest]\nmax_file_bytes = -1", "ingest.max_file_bytes", ["ingest", "{docs}"]),
        ("[ingest]\nfollow_symlinks = 'false'", "ingest.follow_symlinks", ["ingest", "{docs}"]),
        ("[search]\nrrf_k = -60", "search.rrf_k", ["search", "zebrafish"]),
        ("[rag]\nmax_chunks = -3", "rag.max_chunks", ["ask", "zebrafish"]),
        ("[rag]\nunsupported_claims = 'ignore'", "rag.unsupported_claims", ["ask", "zebrafish"]),
        ("[models.llm]\nmax_tokens = -5", "models.llm.max_tokens", ["ask", "zebrafish"]),
        ("[conversations]\nhistory_tokens = -100", "conversations.history_tokens", ["ask", "zebrafish"]),
        ("[conversations]\nstandalone = 'guess'", "conversations.standalone", ["config", "show"]),
    ],
)
def test_bad_values_of_the_issue_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, toml: str, key: str, command: list[str]
) -> None:
    config_file = tmp_path / "c.toml"
    config_file.write_text(toml + "\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "zebrafish.md").write_text("# Zebrafish\n\nZebrafish regrow their fins.\n")
    code, err = _kb(capsys, tmp_path, "--config", str(config_file), *(a.format(docs=docs) for a in command))
    assert code == EXIT_USAGE, err
    assert err.count("\n") == 1 and err.startswith("kb: error: invalid configuration: ") and key in err, err
    assert "Traceback" not in err


def test_config_show_shows_token_counts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["--kb", str(tmp_path / "kb"), "config", "show"]) == 0
    assert "models.llm.max_tokens = 384" in capsys.readouterr().out  # not '***': no key of the schema is a secret


def test_environment_values_are_checked_as_written() -> None:
    with pytest.raises(ConfigError, match=r"ingest.follow_symlinks = 'yes' \(env:KB_INGEST__FOLLOW_SYMLINKS\)"):
        load_config(None, KB_DIR, environ={"KB_INGEST__FOLLOW_SYMLINKS": "yes"})  # was True, as "false" was
    config = load_config(None, KB_DIR, environ={"KB_MODELS__LLM__MODEL": "7", "KB_MODELS__EMBEDDING__NAME": '"x"'})
    assert config.models.llm.model == "7" and config.models.embedding.name == "x"  # a text key's value is text
