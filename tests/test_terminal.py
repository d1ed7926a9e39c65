"""Terminal safety: control characters in names and contents never reach the terminal raw.

Properties of the escaping (hypothesis), then real `kb` subprocesses over files whose names and
contents carry newlines, ANSI/OSC escapes (window title, clipboard write) and bidi overrides.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from kbtest import TEST_INDEXES_ENV, run_kb

from kb_core.output import dumps
from kb_core.terminal import escape_stream_text, shown

ENV = TEST_INDEXES_ENV
#: Anything a terminal may act on, apart from newline and tab (allowed in stream output).
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
HOSTILE = st.sampled_from(
    [
        "\x1b",
        "\x1b]52;c;aGk=\x07",
        "\x1b]0;pwned\x07",
        "\x1b[2J",
        "\x1b[8m",
        "\r",
        "\n",
        "\x07",
        "\x9b",
        "\u202e",
        "\u2028",
        "\x00",
        "\x7f",
        "\t",
        "\x1b[1m",
    ]
)
TEXT = st.lists(st.one_of(HOSTILE, st.text(min_size=0, max_size=8)), max_size=12).map("".join)
SGR = re.compile(r"\x1b\[[0-9;]*m")


@given(TEXT)
def test_shown_is_one_inert_line(text: str) -> None:
    out = shown(text)
    assert "\n" not in out and "\t" not in out and not RAW.search(out)
    visible = [c for c in text if not RAW.match(c) and c not in "\n\t"]
    assert all(c in out for c in visible)  # nothing printable is lost


@given(TEXT)
def test_stream_text_keeps_lines_and_escapes_the_rest(text: str) -> None:
    out = escape_stream_text(text)
    assert not RAW.search(SGR.sub("", out)), repr(out)
    assert out.count("\n") == text.count("\n")
    for sequence in SGR.findall(out):  # what passes is plain colour/bold, never conceal (8) or others
        assert not re.search(r"(?<![0-9])8(?![0-9])", sequence)
    assert "\x1b]" not in out and "\x1b[2J" not in out


@given(st.dictionaries(TEXT, TEXT, max_size=4))
def test_json_output_is_exact_and_inert(data: dict[str, str]) -> None:
    text = dumps("x.v1", {"data": data})
    assert json.loads(text)["data"] == data
    assert not RAW.search(text)
    assert escape_stream_text(text) == text  # the terminal guard never alters JSON


NAME_CHARS = st.sampled_from(["a", "b", "é", "한", "\n", "\r", "\x1b", "\x07", "\u202e", " ", "\x9b", "]", "[", ";"])
NAMES = st.lists(st.lists(NAME_CHARS, min_size=1, max_size=12).map("".join), min_size=1, max_size=4, unique=True)


@pytest.mark.slow
@settings(
    max_examples=4,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(NAMES)
def test_cli_output_never_carries_raw_controls(tmp_path: Path, names: list[str]) -> None:
    root = tmp_path / "run"
    shutil.rmtree(root, ignore_errors=True)
    docs = root / "docs"
    docs.mkdir(parents=True)
    files = {
        f"{i}{name}.md": f"# Title {name}\x1b]0;owned\x07\n\nMarmot{i} \x1b]52;c;cm0gLXJm\x07 {name}\n"
        for i, name in enumerate(names)
    }
    for name, body in files.items():
        (docs / name).write_text(body, encoding="utf-8")
    env = ENV | {"KB_HOME": str(root / "k")}
    first = min(files)
    runs = [
        run_kb("ingest", str(docs), env=env),
        run_kb("list", env=env),
        run_kb("search", "marmot0", "--mode", "lexical", env=env),
        run_kb("inspect", first, env=env),
    ]
    chunk = json.loads(run_kb("inspect", first, "--json", env=env).stdout)["chunks"][0]
    runs.append(run_kb("inspect", f"{first}#L{chunk['start_line']}-L{chunk['end_line']}", env=env))
    for result in runs:
        assert result.returncode == 0, result.stderr
        for stream in (result.stdout, result.stderr):
            assert not RAW.search(stream), repr(stream)
    assert len(runs[1].stdout.splitlines()) == len(files)  # no forged lines in kb list
    listed = json.loads(run_kb("list", "--json", env=env).stdout)
    assert sorted(d["path"] for d in listed["documents"]) == sorted(files)  # --json stays exact


@pytest.mark.slow
@pytest.mark.parametrize("command", [("search",), ("ask",)])
@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_an_empty_or_blank_query_is_a_usage_error(tmp_path: Path, command: tuple[str, ...], query: str) -> None:
    result = run_kb("--kb", str(tmp_path / "k"), *command, query, env=ENV)
    assert result.returncode == 2 and "empty" in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.slow
def test_a_long_query_is_not_echoed_whole(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Capybaras.\n")
    env = ENV | {"KB_HOME": str(tmp_path / "k")}
    run_kb("ingest", str(docs), env=env)
    result = run_kb("search", "zz" * 50_000, "--mode", "lexical", env=env)
    assert result.returncode == 2  # over LIMITS.query_chars: refused in one line that does not repeat it
    assert len(result.stderr) < 200 and "zz" * 20 not in result.stderr and "at most 4000" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("glob", ["[", "notes/[abc", "[!", "  "])
def test_a_malformed_path_glob_is_an_error(tmp_path: Path, glob: str) -> None:
    result = run_kb("--kb", str(tmp_path / "k"), "search", "x", "--path", glob, env=ENV)
    assert result.returncode == 2 and "invalid path glob" in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("glob", ["*.md", "notes/[ab]*.md", "[]]x", "[!]]*", "a?c"])
def test_well_formed_globs_are_accepted(glob: str) -> None:
    from kb_core.limits import glob_problem

    assert glob_problem(glob) == ""
