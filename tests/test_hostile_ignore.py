"""A folder's ``.kbignore`` cannot stop kb from reading the folder (issue 42, part 1).

A line pathspec refuses (``!``, a lone trailing ``\\``, ``[z-a]``) made ``kb ingest DIR`` exit 70, and a
rule of many '*' made a long name take minutes to match. Each such line is now reported once and skipped,
and the folder is read with the other rules: these tests compare what is read with what the usable lines,
read by pathspec itself, leave in.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import pathspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kbtest import LEXICAL, run_kb

from kb_core.app import KnowledgeBase
from kb_core.bounds import IGNORE_FILE_BYTES, IGNORE_RULES
from kb_core.commands import check_new_file
from kb_core.ingest.ignores import DEFAULT_IGNORES, IgnoreProblem, compile_ignores
from kb_core.ingest.pipeline import ingest_paths
from kb_core.ingest.source import SourceFile, ignore_line_problem, ignored_part, walk

HOSTILE = ["!", "\\", "drafts/", "[z-a]", "*a*a*a*a*a*a*a*a*a*x", "tmp\\", "*.tmp.md"]
FILES = {
    "a.md": "# A\n\nThe aardvark.\n",
    "sub/b.md": "# B\n\nThe bee.\n",
    "drafts/d.md": "# D\n\nA draft.\n",
    "x.tmp.md": "# X\n\nScratch.\n",
    "!bang.md": "# Bang\n\nA name with a '!'.\n",
    "a" * 200 + ".md": "# Long\n\nA long name.\n",
}
#: What ``HOSTILE`` leaves in: the usable lines are ``drafts/`` and ``*.tmp.md``.
KEPT = sorted(name for name in FILES if name not in ("drafts/d.md", "x.tmp.md"))
#: Characters that end a line for str.splitlines (a generated line holds none of them).
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
#: Pieces of gitignore syntax, and names of the files above, that generated lines are made of.
PIECES = ["!", "\\", "*", "**", "/", "?", "[", "]", "z-a", "a-z", "^", " ", "#", "a", "b", "drafts", "sub", ".md"]
lines_strategy = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=8).map("".join),
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters=LINE_BREAKS), max_size=16),
)


def _write(folder: Path, ignore_lines: list[str]) -> None:
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    (folder / ".kbignore").write_text("\n".join(ignore_lines) + "\n", encoding="utf-8")


def _expected(lines: list[str]) -> list[str]:
    """The files of FILES that the usable ``lines`` (with kb's defaults) leave in, as pathspec itself reads them."""
    spec = pathspec.GitIgnoreSpec.from_lines(
        [*DEFAULT_IGNORES, *(line for line in lines if not ignore_line_problem(line))]
    )
    kept = []
    for name in FILES:
        parts = name.split("/")
        folders = ["/".join(parts[:end]) + "/" for end in range(1, len(parts))]
        if not any(spec.match_file(part) for part in [*folders, name]):
            kept.append(name)
    return sorted(kept)


def _walked(folder: Path, extra: list[str] | None = None) -> tuple[list[str], list[IgnoreProblem]]:
    items = list(walk(folder, [".md"], extra or []))
    return sorted(i.path for i in items if isinstance(i, SourceFile)), [
        i for i in items if isinstance(i, IgnoreProblem)
    ]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("!", "a '!' with nothing to un-ignore"),
        ("! ", "a '!' with nothing to un-ignore"),
        ("\\", "ends with a '\\' that escapes nothing"),
        ("notes\\", "ends with a '\\' that escapes nothing"),
        ("[z-a]", "bad character range z-a"),
        ("*a*b*c*d", "4 wildcards ('*'), over 3"),
        ("drafts/", ""),
        ("!keep.md", ""),
        ("\\!bang.md", ""),
        ("notes\\\\", ""),  # an escaped backslash
        ("# a comment", ""),
        ("", ""),
        ("**/build/**/*.o", ""),
        ("a" + "*" * 40 + "b", ""),  # one run of '*' is one wildcard
    ],
)
def test_ignore_line_problem_says_why_a_line_cannot_be_used(line: str, why: str) -> None:
    problem = ignore_line_problem(line)
    assert (why in problem and bool(problem)) if why else problem == ""


@settings(max_examples=2000, deadline=None)
@given(lines_strategy)
def test_no_line_stops_the_rules_and_each_is_used_or_named(line: str) -> None:
    rules = compile_ignores([(".kbignore", [line])])  # never raises, whatever pathspec thinks of the line
    problem = ignore_line_problem(line)
    assert bool(problem) == bool(rules.problems)
    if problem:
        (named,) = rules.problems
        assert (named.origin, named.number, named.line) == (".kbignore", 1, line)
        assert "\n" not in named.reason and named.reason.startswith("line 1 ")
    else:
        pathspec.GitIgnoreSpec.from_lines([line])  # a usable line is one pathspec takes
        assert [rule for _, rule in rules.origins] in ([], [line])


@settings(max_examples=3000, deadline=None)
@given(
    st.lists(
        st.sampled_from(["*", "**", "***", "a", "b", "/", "!", "?", "\\*", " ", "\\ ", "\t"]), min_size=1, max_size=7
    ).map("".join),
    st.lists(st.sampled_from(["a", "b", "ab", "*", "!", "", " ", "a "]), min_size=1, max_size=4).map("/".join),
)
def test_a_usable_rule_matches_what_pathspec_matches(line: str, path: str) -> None:
    """kb writes a run of '*' as one '*' (so that a long name matches fast): the rule stays the same."""
    try:
        original = pathspec.GitIgnoreSpec.from_lines([line])
    except Exception:
        return
    rules = compile_ignores([("test", [line])])
    if not rules.problems:
        for candidate in (path, path + "/"):
            assert rules.spec.match_file(candidate) == original.match_file(candidate), (line, candidate)


def test_a_hostile_kbignore_is_reported_once_and_the_folder_is_read(tmp_path: Path) -> None:
    _write(tmp_path, HOSTILE)
    paths, problems = _walked(tmp_path)
    assert paths == KEPT == _expected(HOSTILE)
    assert [(p.path, p.number, p.line) for p in problems] == [
        (".kbignore", 1, "!"),
        (".kbignore", 2, "\\"),
        (".kbignore", 4, "[z-a]"),
        (".kbignore", 5, "*a*a*a*a*a*a*a*a*a*x"),
        (".kbignore", 6, "tmp\\"),
    ]
    assert problems[0].reason == (
        "line 1 '!': a '!' with nothing to un-ignore (write '\\!' for a name that starts with '!'); the rule is skipped"
    )


def test_ingest_config_lines_kb_cannot_use_are_skipped_too(tmp_path: Path) -> None:
    _write(tmp_path, [])
    paths, problems = _walked(tmp_path, ["!", "\\\\", "\\", "drafts/"])
    assert paths == sorted(name for name in FILES if name != "drafts/d.md")
    assert [(p.origin, p.number) for p in problems] == [("[ingest] ignore", 1), ("[ingest] ignore", 3)]
    assert problems[0].reason.startswith("entry 1 '!': ")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(lines_strategy, max_size=6))
def test_any_kbignore_leaves_in_every_file_its_usable_lines_do_not_exclude(tmp_path: Path, lines: list[str]) -> None:
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    _write(folder, ["!", *lines, "\\"])
    paths, problems = _walked(folder)
    assert paths == _expected(lines)
    assert len(problems) >= 2 and problems[0].number == 1


def test_a_rule_of_many_wildcards_does_not_make_a_long_name_slow(tmp_path: Path) -> None:
    """``*a*a*...x`` against a 200-character name of 'a's took longer than a test run: it is refused, and
    ``a******x`` (one wildcard, written as many) is matched as ``a*x``."""
    _write(tmp_path, ["*a*a*a*a*a*a*a*a*a*a*a*a*x", "aaaa" + "*" * 30 + "x", "a" + "*" * 30 + "b.md"])
    paths, problems = _walked(tmp_path)
    assert [p.number for p in problems] == [1]
    assert "a" * 200 + ".md" in paths and "a.md" in paths


def test_the_bounds_of_a_kbignore_file(tmp_path: Path) -> None:
    rules = [f"rule{n}.md" for n in range(int(IGNORE_RULES.high) + 5)]
    many = compile_ignores([(".kbignore", ["# many", *rules])])
    assert len(many.origins) == IGNORE_RULES.high
    assert [(p.number, p.line) for p in many.problems] == [(IGNORE_RULES.high + 2, f"rule{int(IGNORE_RULES.high)}.md")]
    _write(tmp_path, ["drafts/", "#" * int(IGNORE_FILE_BYTES.high), "*.tmp.md"])
    paths, problems = _walked(tmp_path)
    assert paths == sorted(n for n in FILES if n != "drafts/d.md")  # the rules past the bound are not read
    assert [(p.number, p.why) for p in problems] == [
        (2, f"the file is over {IGNORE_FILE_BYTES.high:,.0f} bytes; what follows is not read")
    ]


def test_a_kbignore_that_is_not_a_file_is_not_waited_on(tmp_path: Path) -> None:
    _write(tmp_path, [])
    (tmp_path / ".kbignore").unlink()
    os.mkfifo(tmp_path / ".kbignore")  # opening it for reading would wait for a writer
    assert _walked(tmp_path) == (sorted(FILES), [])


def test_names_for_uploads_and_the_inbox_are_checked_with_the_usable_rules(tmp_path: Path) -> None:
    """kb serve's uploads and kb mcp's inbox ask check_new_file, which read the same rules (it raised)."""
    _write(tmp_path, HOSTILE)
    assert check_new_file(tmp_path, "new.md", [".md"]) == "new.md"
    assert check_new_file(tmp_path, "!x.md", [".md"], ["!"]) == "!x.md"
    with pytest.raises(Exception, match=re.escape("(rule 'drafts/' of .kbignore)")):
        check_new_file(tmp_path, "drafts/new.md", [".md"])
    assert ignored_part(tmp_path, "x.tmp.md") == "x.tmp.md"
    assert ignored_part(tmp_path, "sub/b.md") is None


def test_ingest_reads_the_folder_and_warns_once(tmp_path: Path, make_kb: Callable[..., KnowledgeBase]) -> None:
    kb = make_kb(indexes__enabled=[LEXICAL])
    folder = tmp_path / "notes"
    _write(folder, HOSTILE)
    report = ingest_paths(kb, [folder, folder / "sub", folder / "a.md"])
    assert sorted(report.added) == KEPT and report.failed == []
    bad = [w for w in report.warnings if w.path == ".kbignore"]
    assert [w.reason.split(":")[0] for w in bad] == [
        "line 1 '!'",
        "line 2 '\\\\'",
        "line 4 '[z-a]'",
        "line 5 '*a*a*a*a*a*a*a*a*a*x'",
        "line 6 'tmp\\\\'",
    ]


def test_kb_ingest_of_a_hostile_folder_exits_0_with_one_line_per_bad_rule(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    _write(folder, ["!", "drafts/", "\\"])
    done = run_kb("--kb", str(tmp_path / "kb"), "ingest", str(folder))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"added {len(FILES) - 1}, ")
    warned = [line for line in done.stderr.splitlines() if ".kbignore" in line]
    assert warned == [
        "  warning: .kbignore: line 1 '!': a '!' with nothing to un-ignore"
        " (write '\\!' for a name that starts with '!'); the rule is skipped",
        "  warning: .kbignore: line 3 '\\\\': ends with a '\\' that escapes nothing"
        " (write '\\\\' for a backslash); the rule is skipped",
    ]


def test_files_no_parser_reads_are_named_in_one_warning(tmp_path: Path, make_kb: Callable[..., KnowledgeBase]) -> None:
    """A .svg in an ingested folder was passed over without a line (issue 42): one warning counts such files by
    extension; hidden files and ignored ones are not counted."""
    kb = make_kb(indexes__enabled=[LEXICAL])
    folder = tmp_path / "notes"
    (folder / "art").mkdir(parents=True)
    for name in ["a.md", "logo.svg", "art/b.svg", "deck.key", ".hidden.svg", "LICENSE", "skip.odt"]:
        (folder / name).write_text("# a\n\ntext\n" if name.endswith(".md") else "x", encoding="utf-8")
    (folder / ".kbignore").write_text("*.odt\n", encoding="utf-8")
    report = ingest_paths(kb, [folder])
    assert report.added == ["a.md"] and report.failed == []
    passed = [w.reason for w in report.warnings if w.reason.startswith("passed over")]
    assert passed == [
        "passed over 3 file(s) no parser reads (.svg 2, .key 1); install a plugin that reads them, or add them to"
        " .kbignore"
    ]
