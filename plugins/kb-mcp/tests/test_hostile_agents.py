"""A hostile or careless agent against a real ``kb mcp`` subprocess: every reported reproduction is refused
with one line (or stops the server as asked), and the server answers the next call.

Reproductions: a ``k`` of two billion ended the server (Tantivy allocated 32 GB); ``ingest`` read any
path (``/etc``) and ``fetch`` returned it; text names that cannot be stored raised (``x.md/y.md`` over
a file) or were reported stored and were not (``.git/h.md``); Ctrl-C was ignored while stdin was open.
"""

from __future__ import annotations

import re
import signal
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mcp.types import CallToolResult
from mcp_helpers import (
    NOTES,
    Call,
    RawStdio,
    http_server,
    http_session,
    run_kb,
    stdio_session,
    text_of,
    write_notes,
)

import kb_core
from kb_core.bounds import LIST_LIMIT, K
from kb_core.commands import error_line

pytestmark = pytest.mark.slow
HUGE_K = 2_000_000_000


def refusal(result: CallToolResult) -> str:
    """The one line of a tool error that kb made (a bug is the SDK's 'Error executing tool ...')."""
    line = text_of(result)
    assert result.is_error, line
    assert line.startswith("kb: error: ") and "\n" not in line, line
    return line


def documents(call: Call) -> list[str]:
    """The stored paths, through the server (which must still answer)."""
    result = call("list_documents", {})
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return [d["path"] for d in result.structured_content["documents"]]


def kb_line(check: Any, *args: Any) -> str:
    """The line kb_core's own check prints for these arguments (one message everywhere)."""
    with pytest.raises(kb_core.KbError) as caught:
        check(*args)
    return error_line(caught.value)


def huge_requests(call: Call) -> None:
    """Out-of-bounds k and text, each refused with kb_core's line; the server answers after each."""
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("search", {"query": "backups", "k": HUGE_K}, kb_line(K.check, HUGE_K, "k")),
        ("search", {"query": "backups", "k": 10**30}, kb_line(K.check, 10**30, "k")),
        ("search", {"query": "backups", "k": 0}, kb_line(K.check, 0, "k")),
        ("ask", {"question": "how long are backups kept?", "k": HUGE_K}, kb_line(K.check, HUGE_K, "k")),
        ("threads", {"limit": 2**63}, kb_line(LIST_LIMIT.check, 2**63, "limit")),
        ("answers", {"limit": 0}, kb_line(LIST_LIMIT.check, 0, "limit")),
        ("search", {"query": "x" * 4001}, kb_line(kb_core.check_text, "x" * 4001, "query")),
        ("ask", {"question": "y" * 100_000}, kb_line(kb_core.check_text, "y" * 100_000, "question")),
        ("search", {"query": ""}, kb_line(kb_core.check_text, "", "query")),
        (
            "ask",
            {"question": "how long are backups kept?", "thread_id": "t" * 100_000},
            "kb: error: the thread_id is 100000 characters long; at most 64 are accepted",
        ),
    ]
    before = documents(call)
    for tool, arguments, line in cases:
        assert refusal(call(tool, arguments)) == line
        assert documents(call) == before
    wrong_type = refusal(call("search", {"query": "backups", "k": "many"}))
    assert wrong_type.startswith("kb: error: invalid arguments for search: k: ")
    assert refusal(call("fetch", {"target": "a" * 100_000})).startswith("kb: error: the target is 100000 characters")
    assert not call("search", {"query": "backups", "k": kb_core.LIMITS.k}).is_error  # the bound itself is fine


def test_a_huge_k_or_text_is_one_line_and_the_server_keeps_answering(kb_dir: Path) -> None:
    with stdio_session(kb_dir) as call:
        huge_requests(call)


def test_the_schemas_state_the_bounds(kb_dir: Path) -> None:
    async def scenario(session: Any) -> dict[str, Any]:
        return {tool.name: tool.input_schema["properties"] for tool in (await session.list_tools()).tools}

    from mcp_helpers import with_server

    tools = with_server(kb_dir, scenario)
    limits = kb_core.LIMITS
    for tool in ("search", "ask"):
        assert (tools[tool]["k"]["minimum"], tools[tool]["k"]["maximum"]) == (1, limits.k)
    for tool, text in (("search", "query"), ("ask", "question")):
        assert (tools[tool][text]["minLength"], tools[tool][text]["maxLength"]) == (1, limits.query_chars)
    assert tools["ingest"]["name"]["maxLength"] == limits.path_chars
    for tool in ("ask", "threads"):
        assert (tools[tool]["thread_id"]["minLength"], tools[tool]["thread_id"]["maxLength"]) == (1, 64)


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """An allowed folder with a note and links leading out of it, and a secret folder outside it."""
    secret = write_notes(tmp_path / "secret", {"s.md": "# Secret\n\nThe vault code is 4711.\n"})
    allowed = write_notes(tmp_path / "allowed", {"note.md": "# Note\n\nThe heron fishes at dawn.\n"})
    (allowed / "out").symlink_to(secret, target_is_directory=True)
    (allowed / "s.md").symlink_to(secret / "s.md")
    (allowed / "etc").symlink_to("/etc", target_is_directory=True)
    return {"allowed": allowed, "secret": secret, "kb": tmp_path / "kb", "config": tmp_path / "config.toml"}


def confined(call: Call, tree: dict[str, Path], allowed: list[Path]) -> None:
    """``ingest`` reads nothing outside ``allowed``, says how to allow more, and ``fetch`` reads no file."""
    secret = tree["secret"]
    outside = [
        "/etc",
        "/etc/passwd",
        str(secret),
        str(secret / "s.md"),
        str(secret / "absent.md"),  # a refusal never tells whether a file exists
        f"{tree['allowed']}/../secret",
        str(tree["allowed"] / "out"),  # links inside the folder that lead out of it
        str(tree["allowed"] / "s.md"),
        str(tree["allowed"] / "etc"),
        "~",
        "relative/path",
        "/tmp/\x00nul",
    ]
    for path in outside:
        line = refusal(call("ingest", {"path": path}))
        if "\x00" not in path or not allowed:
            assert "--ingest-folder" in line and "ingest_folders" in line, line
        assert documents(call) == []
    for target in ("X11/rgb.txt", "passwd", "/etc/passwd", "../../../../etc/passwd", "/etc/passwd#L1-L2", "s.md"):
        assert refusal(call("fetch", {"target": target})).startswith("kb: error: no document, chunk id or citation")
    if not allowed:
        assert "no folder is allowed" in refusal(call("ingest", {"path": str(tree["allowed"])}))
        return
    report = call("ingest", {"path": str(tree["allowed"])})
    assert not report.is_error, text_of(report)
    assert report.structured_content is not None
    assert report.structured_content["added"] == ["note.md"]
    skipped = {failure["path"]: failure["reason"] for failure in report.structured_content["failed"]}
    assert set(skipped) == {"out/", "s.md", "etc/"} and all("outside the folder" in r for r in skipped.values())
    assert documents(call) == ["note.md"]
    missing = refusal(call("ingest", {"path": str(tree["allowed"] / "absent.md")}))
    assert missing.startswith("kb: error: no such file or folder")
    assert refusal(call("fetch", {"target": "s.md"})).startswith("kb: error: no document")


def test_ingest_reads_no_folder_by_default(tree: dict[str, Path]) -> None:
    with stdio_session(tree["kb"]) as call:
        confined(call, tree, [])
        assert not call("ingest", {"text": "# Memo\n\nText is always accepted.\n", "name": "memo.md"}).is_error
        assert documents(call) == ["memo.md"]


def test_ingest_reads_only_inside_the_allowed_folders(tree: dict[str, Path]) -> None:
    with stdio_session(tree["kb"], mcp_args=["--ingest-folder", str(tree["allowed"])]) as call:
        confined(call, tree, [tree["allowed"]])


def test_ingest_folders_from_the_config_file(tree: dict[str, Path]) -> None:
    tree["config"].write_text(f'[backends.mcp]\ningest_folders = ["{tree["allowed"]}"]\n', encoding="utf-8")
    with stdio_session(tree["kb"], "--config", str(tree["config"])) as call:
        confined(call, tree, [tree["allowed"]])
    tree["config"].write_text('[backends.mcp]\ningest_folders = ["notes"]\n', encoding="utf-8")
    bad = run_kb(tree["kb"], "--config", str(tree["config"]), "mcp")
    assert (bad.returncode, bad.stderr) == (
        2,
        f"kb: error: invalid configuration: backends.mcp.ingest_folders = ['notes'] (file:{tree['config']}) is not"
        " a list of text, each an absolute folder (starting with / or ~) (remove it for the default, [])\n",
    )


def test_text_names_that_cannot_be_stored_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    inbox_kb = tmp_path / "kb"
    with stdio_session(inbox_kb) as call:
        first = call("ingest", {"text": "# X\n\nThe first text.\n", "name": "x.md"})
        assert not first.is_error and first.structured_content is not None
        assert first.structured_content["roots"] == ["inbox"]  # not the server's absolute path
        assert str(tmp_path) not in text_of(first)
        inbox = inbox_kb / "inbox"
        before = sorted(p.relative_to(inbox).as_posix() for p in inbox.rglob("*"))
        cases = {
            "x.md/y.md": "kb: error: cannot store 'x.md/y.md': 'x.md' is a document, not a folder",
            ".git/h.md": "kb: error: the name '.git/h.md' would not be stored: the ingest ignore rules skip '.git/'",
            "a/node_modules/b.md": "kb: error: the name 'a/node_modules/b.md' would not be stored",
            "x.md/": "kb: error: the name 'x.md/' must be a relative path",
            "evil\u202egpj.md": "kb: error: the name contains the invisible or control character U+202E",
            "a\x00b.md": "kb: error: the name contains the invisible or control character U+0000",
            f"{'d' * 256}/a.md": "kb: error: the part 'dddd",
            f"{'é' * 200}.md": "kb: error: the part 'éééé",  # 200 characters, 402 bytes
            "/etc/cron.d/x.md": "kb: error: the name '/etc/cron.d/x.md' must be a relative path",
        }
        for name, start in cases.items():
            line = refusal(call("ingest", {"text": "hidden", "name": name}))
            assert line.startswith(start), line
            assert documents(call) == ["x.md"]
        assert sorted(p.relative_to(inbox).as_posix() for p in inbox.rglob("*")) == before


def test_a_message_that_is_not_valid_unicode_leaves_the_server_answering(tmp_path: Path) -> None:
    raw = RawStdio(tmp_path / "kb")
    try:
        raw.initialize()
        raw.send("tools/call", {"name": "ingest", "arguments": {"text": "a", "name": "\ud800.md"}}, notify=True)
        listed = raw.send("tools/call", {"name": "list_documents", "arguments": {}})  # the SDK drops the line above
        assert listed["result"]["structuredContent"]["documents"] == []
        assert not (tmp_path / "kb" / "inbox").exists()
    finally:
        raw.close()


@pytest.fixture(scope="module")
def named_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Call]:
    """One server for every hypothesis example, over a knowledge base whose inbox holds ``x.md``."""
    kb_dir = tmp_path_factory.mktemp("names") / "kb"
    with stdio_session(kb_dir) as call:
        assert not call("ingest", {"text": "# X\n\nThe first text.\n", "name": "x.md"}).is_error
        yield call


PLAIN = st.sampled_from(["a", "notes", "ü", "e\u0301", "한국어", "x y", "~", "#L1-L2", "2024-05", "x.md"])
HOSTILE = st.sampled_from(
    ["..", ".", "", ".git", "node_modules", "\u202egpj", "\x00", "\u200b", "\u2028", " ", "d" * 256, "é" * 130]
)
PRINTABLE = st.text(st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp")), min_size=1, max_size=12)
PART = st.one_of(PLAIN, PLAIN, PLAIN, PLAIN, PRINTABLE, HOSTILE, st.text(max_size=12))
NAME = st.builds(
    lambda lead, parts, suffix: lead + "/".join(parts) + suffix,
    st.sampled_from(["", "", "", "", "", "/", "~/", "../", "./"]),
    st.lists(PART, min_size=1, max_size=3),
    st.sampled_from([".md", ".md", ".md", ".txt", ".MD", ".exe", "", "/"]),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=NAME, body=st.integers(0, 10**9))
def test_any_name_is_either_stored_and_listed_or_refused(named_session: Call, name: str, body: int) -> None:
    call = named_session
    before = documents(call)
    result = call("ingest", {"text": f"# Note {body}\n\nBody number {body}.\n", "name": name})
    after = documents(call)  # the server still answers
    if result.is_error:
        event(re.sub(r"'.*'", "'…'", refusal(result))[:60])  # --hypothesis-show-statistics: the refusals met
        assert after == before  # refused: nothing changed
    else:
        event("stored")
        assert unicodedata.normalize("NFC", name.strip()) in after  # never "success" with nothing stored


def test_ctrl_c_ends_the_stdio_server_at_once_while_stdin_is_open(kb_dir: Path) -> None:
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 0)):
        raw = RawStdio(kb_dir)
        try:
            raw.initialize()
            reply = raw.send("tools/call", {"name": "list_documents", "arguments": {}})
            assert [d["path"] for d in reply["result"]["structuredContent"]["documents"]] == sorted(NOTES)
            returncode, seconds, stderr = raw.interrupt(sig, timeout=60)  # -1: still running with stdin open
            assert returncode == code, (sig, returncode, seconds)
            assert "Traceback" not in stderr
            if sig == signal.SIGINT:
                assert stderr.endswith("kb: interrupted\n")
        finally:
            raw.close()
    assert run_kb(kb_dir, "list", "--json").returncode == 0  # the knowledge base is intact


def test_over_http_too(tree: dict[str, Path], kb_dir: Path) -> None:
    with http_server(kb_dir) as (process, port), http_session(port) as call:
        huge_requests(call)
    with http_server(tree["kb"], "--ingest-folder", str(tree["allowed"])) as (process, port):
        with http_session(port) as call:
            confined(call, tree, [tree["allowed"]])
            process.send_signal(signal.SIGINT)  # while the client's session is still open
            _, err = process.communicate(timeout=60)
        assert process.returncode == 130
        assert "Traceback" not in err
