"""Text that is not valid Unicode is a one-line usage error where it comes in, never an internal error.

Reproductions: ``kb search $'\\xff'`` and ``kb ask $'\\xff...'`` exited 70 (Python decodes a byte that is not
UTF-8 in an argument to a lone surrogate, which cannot be encoded); such a line on ``kb chat``'s standard input
ended the chat with exit 70; ``kb ingest`` of a folder holding a file whose name is not UTF-8 exited 70. The
one check is :func:`kb_core.limits.check_unicode` (NUL is refused in queries and questions too).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kbtest import CORPUS, KB, TEST_INDEXES_ENV, kb_env

from kb_core import KbError, check_text
from kb_core.cli.main import main
from kb_core.extend.registry import load_registry, reset_registry
from kb_core.limits import LIMITS, UNICODE_HINT, as_typed, check_unicode
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, extractive


def test_a_lone_surrogate_is_refused_with_where_it_is() -> None:
    for text, where in [("\ud800 x", 1), ("caf\udce9", 4), ("ok \udfff", 4), ("😀\udc00", 2)]:
        with pytest.raises(KbError) as caught:
            check_unicode(text, "query")
        code = f"U+{ord(text[where - 1]):04X}"
        assert (
            caught.value.message
            == f"the query is not valid Unicode: character {where} is {code}, half of a surrogate pair"
        )
        assert caught.value.hint == UNICODE_HINT and caught.value.exit_code == 2
        with pytest.raises(KbError, match="not valid Unicode"):
            check_text(text, "query")


def test_valid_text_passes_and_nul_only_where_it_is_asked_for() -> None:
    for text in ["😀", "e\u0301", "\u202egpj", "한국어", "\ufffe\uffff", "a\x00b"]:
        assert check_unicode(text) is text
    with pytest.raises(KbError, match=r"the question contains a NUL character \(U\+0000\) at character 2"):
        check_text("a\x00b", "question")
    with pytest.raises(KbError, match="the name contains a NUL"):
        check_unicode("a\x00", "name", nul=False)


def test_parsed_json_is_searched_and_the_message_names_the_field() -> None:
    cases = [
        ({"question": "\ud800"}, "the body's field 'question' is not valid Unicode"),
        ({"a": [1, {"b": ["x", "\udfff"]}]}, "the body's field 'a[1].b[1]' is not valid Unicode"),
        ({"a": [{"b\udcff": 1}]}, "the body's field name 'b\\xff' in 'a[0]' is not valid Unicode"),
        ("\ud800", "the body is not valid Unicode"),
    ]
    for value, start in cases:
        with pytest.raises(KbError) as caught:
            check_unicode(value, "body")
        assert caught.value.message.startswith(start), caught.value.message
    deep: object = "\ud800"
    for _ in range(5000):  # deeper than Python's recursion limit: the walk is a loop
        deep = [deep]
    with pytest.raises(KbError, match="not valid Unicode"):
        check_unicode(deep, "body")
    fine = {"q": ["ok", 1, None, 2.5, {"é": "😀"}]}
    assert check_unicode(fine, "body") is fine


def test_as_typed_shows_the_byte_a_surrogate_stands_for() -> None:
    assert as_typed("b\udcff.md") == "b\\xff.md"
    assert as_typed("\ud800x") == "\\ud800x"
    assert as_typed("é") == "é"


# -- the command line, in process --------------------------------------------------------------------


@pytest.fixture(scope="module")
def notes_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture corpus' notes on the lexical test index (built once)."""
    kb_dir = tmp_path_factory.mktemp("unicode") / "kb"
    reset_registry(load_registry(extra_plugins=[("test-indexes", TestIndexesPlugin())]))
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("KB_INDEXES__ENABLED", TEST_INDEXES_ENV["KB_INDEXES__ENABLED"])
            assert main(["--kb", str(kb_dir), "ingest", str(CORPUS / "notes")]) == 0
    finally:
        reset_registry(None)
    return kb_dir


@pytest.fixture
def scripted_cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The in-process CLI on the lexical test index with the scripted model as ``scripted``."""
    monkeypatch.setenv("KB_INDEXES__ENABLED", TEST_INDEXES_ENV["KB_INDEXES__ENABLED"])
    plugins = [("test-indexes", TestIndexesPlugin()), ("scripted", ScriptedPlugin(extractive))]
    reset_registry(load_registry(extra_plugins=plugins))
    yield
    reset_registry(None)


def one_usage_line(code: int, err: str) -> str:
    """The one line of a usage error (exit 2), never an internal error."""
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("kb: error: ") and "internal error" not in err, err
    return err


@pytest.mark.usefixtures("scripted_cli")
def test_an_argument_that_is_not_utf8_is_a_usage_error(notes_kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kb = ["--kb", str(notes_kb)]
    for args in [
        [*kb, "search", "\udcff"],
        [*kb, "--backend", "scripted", "ask", "\udcffwhat is the wind speed?"],
        [*kb, "search", "wind", "--path", "notes/\udcff*"],
        [*kb, "ingest", f"{notes_kb}/b\udcff.md"],
        [*kb, "threads", "show", "thr_\udcff"],
        [*kb, "config", "show", "--json", "\udcff"],
        ["--kb", f"{notes_kb}\udcfe", "list"],
    ]:
        code = main(args)
        err = one_usage_line(code, capsys.readouterr().err)
        assert err.startswith("kb: error: the command-line argument '"), err
        assert "\\x" in err and "is not valid Unicode" in err  # the byte as it was typed: \xff


@pytest.mark.usefixtures("scripted_cli")
def test_a_nul_in_a_query_or_question_is_a_usage_error(notes_kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args in [["search", "wind\x00speed"], ["--backend", "scripted", "ask", "\x00"]]:
        err = one_usage_line(main(["--kb", str(notes_kb), *args]), capsys.readouterr().err)
        assert "contains a NUL character (U+0000)" in err


def test_a_nul_in_a_path_prefix_or_id_is_a_usage_error(notes_kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """(Only a caller in process can pass one: argv cannot hold a NUL. It never reaches a store query.)"""
    for args in [
        ["list", "--prefix", "web\x00"],
        ["inspect", "notes/a.md\x00"],
        ["rm", "notes\x00/a.md"],
        ["answers", "show", "ans_\x00"],
        ["threads", "show", "thr_\x00"],
        ["search", "wind", "--path", "*\x00"],
    ]:
        err = one_usage_line(main(["--kb", str(notes_kb), *args]), capsys.readouterr().err)
        assert "contains a NUL character (U+0000)" in err, (args, err)


def test_a_file_name_that_is_not_utf8_is_skipped_and_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nA valid name.\n", encoding="utf-8")
    raw = os.fsencode(folder)
    for name in (b"/b\xff.md", b"/d\xfe"):
        path = raw + name
        if name.endswith(b".md"):
            with open(path, "wb") as handle:
                handle.write(b"# B\n\nA name that is not UTF-8.\n")
        else:
            os.mkdir(path)
            with open(path + b"/c.md", "wb") as handle:
                handle.write(b"# C\n\nInside a folder whose name is not UTF-8.\n")
    kb = ["--kb", str(tmp_path / "kb")]
    code = main([*kb, "ingest", str(folder), "--json"])
    out, err = capsys.readouterr()
    assert code == 4, err  # finished, some files failed
    report = json.loads(out)
    assert report["added"] == ["good.md"]
    assert {f["path"]: f["reason"] for f in report["failed"]} == {
        "b\\xff.md": "the name is not valid UTF-8; skipped (rename it to ingest it)",
        "d\\xfe/": "the name is not valid UTF-8; skipped (rename it to ingest it)",
    }
    assert main([*kb, "ingest", str(folder)]) == 4  # again: the same, nothing removed, no crash
    assert "internal error" not in capsys.readouterr().err


TEXT = st.one_of(
    st.text(st.characters(exclude_categories=[]), max_size=40),  # any code point, lone surrogates too
    st.text(st.sampled_from(["\ud800", "\udcff", "\x00", "\u202e", "\u2066", "a", " ", "é", "한", "😀"]), max_size=40),
    st.builds(lambda c, n: c * n, st.sampled_from(["x", "\udc80", "é", " "]), st.integers(1, 10**6)),
)


@pytest.mark.usefixtures("scripted_cli")
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXT, command=st.sampled_from(["search", "ask", "path"]))
def test_any_text_on_the_command_line_is_an_answer_or_one_usage_line(
    notes_kb: Path, capsys: pytest.CaptureFixture[str], text: str, command: str
) -> None:
    kb = ["--kb", str(notes_kb)]
    args = {
        "search": [*kb, "search", "--mode", "lexical", "--", text],  # after --: a text like -0 is no option
        "ask": [*kb, "--backend", "scripted", "ask", "--mode", "lexical", "--", text],
        "path": [*kb, "search", "wind", "--mode", "lexical", "--path", text],
    }[command]
    code = main(args)
    err = capsys.readouterr().err
    assert code in (0, 1, 2), (code, err[-300:])  # an answer, no result or a refusal, a usage error
    if code == 2:
        one_usage_line(code, err)
    valid = "\x00" not in text and not any("\ud800" <= c <= "\udfff" for c in text)
    if not valid and command != "path":
        assert code == 2
    if valid and command == "search" and text.strip() and len(text.strip()) <= LIMITS.query_chars:
        assert code in (0, 1), err


# -- real processes: the reproductions as reported ------------------------------------------------


def run_bytes(
    args: list[bytes], stdin: bytes = b"", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The real ``kb`` with arguments given as bytes (as a shell passes $'\\xff'), on the test indexes."""
    full_env = kb_env(TEST_INDEXES_ENV | (env or {}))
    return subprocess.run([os.fsencode(KB), *args], input=stdin, capture_output=True, env=full_env, timeout=120)


@pytest.mark.slow
def test_the_reported_commands_exit_2_with_one_line(notes_kb: Path) -> None:
    kb = [b"--kb", os.fsencode(notes_kb)]
    for args in ([*kb, b"search", b"\xff"], [*kb, b"ask", b"\xffwhat is the wind speed?"]):
        done = run_bytes(args)
        err = done.stderr.decode()
        assert done.returncode == 2, err
        assert err.count("\n") == 1 and err.startswith("kb: error: the command-line argument '\\xff"), err


@pytest.mark.slow
@pytest.mark.parametrize("stdin_errors", ["", "utf-8:strict"])  # Python's default, and a strict decoder
def test_a_chat_line_that_is_not_utf8_is_refused_and_the_chat_goes_on(notes_kb: Path, stdin_errors: str) -> None:
    env = {"PYTHONIOENCODING": stdin_errors} if stdin_errors else {}
    lines = b"hello \xff there\nwhat is \x00 this?\n\xed\xa0\x80\n/quit\n"
    done = run_bytes([b"--kb", os.fsencode(notes_kb), b"chat"], stdin=lines, env=env)
    err = done.stderr.decode()
    assert done.returncode == 0, err  # the chat ended on /quit, not on the bad lines
    refusals = err.splitlines()
    assert len(refusals) == 3 and all(line.startswith("kb: error: the question ") for line in refusals), err
    assert "U+DCFF" in refusals[0] and "NUL" in refusals[1] and "internal error" not in err
