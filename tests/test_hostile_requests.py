"""Requests that once killed a process, deleted data or left files readable: the CLI and the library refuse
them with one line, and what is stored stays (issue "Safe with hostile clients", core part)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kbtest import TEST_INDEXES_ENV, run_kb, save_answer_row

from kb_core import (
    LIMITS,
    AskOptions,
    Cancelled,
    KbError,
    SearchQuery,
    ask,
    check_k,
    check_text,
    ingest_paths,
    search,
)
from kb_core.answers.pipeline import RagPipeline
from kb_core.app import KnowledgeBase
from kb_core.plugin import GenerateRequest, StreamEvent
from kb_core.storage.store import StoreOfRecord
from kb_core.testing import ScriptedLanguageModel


@pytest.fixture
def ingested(tmp_path: Path) -> dict[str, str]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Heliograph\n\nHeliograph 2.3.0 was released on 2024-06-18.\n")
    env = TEST_INDEXES_ENV | {"KB_HOME": str(tmp_path / "kb")}
    assert run_kb("ingest", str(docs), env=env).returncode == 0
    return env


@pytest.mark.slow
@pytest.mark.parametrize("k", ["2000000000", "99999999999999999999", str(LIMITS.k + 1), "0", "-3"])
def test_a_huge_or_tiny_k_is_a_usage_error_not_a_crash(ingested: dict[str, str], k: str) -> None:
    for command in (["search", "heliograph", "--mode", "lexical"], ["ask", "when was heliograph released?"]):
        result = run_kb(*command, "--k", k, env=ingested)
        assert result.returncode == 2, (command, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert run_kb("search", "heliograph", "--k", str(LIMITS.k), env=ingested).returncode == 0


@pytest.mark.slow
def test_an_overlong_query_is_refused_in_one_line(ingested: dict[str, str]) -> None:
    result = run_kb("search", "word " * LIMITS.query_chars, env=ingested)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"at most {LIMITS.query_chars}" in result.stderr


def test_the_library_refuses_what_the_cli_refuses(make_kb: Callable[..., KnowledgeBase]) -> None:
    kb = make_kb()
    for query in (
        SearchQuery(text="x", k=2_000_000_000),
        SearchQuery(text="x", k=0),
        SearchQuery(text=" "),
        SearchQuery(text="x" * (LIMITS.query_chars + 1)),
        SearchQuery(text="x", path_glob="*" * (LIMITS.path_chars + 1)),
    ):
        with pytest.raises(KbError):
            search(kb, query)
    with pytest.raises(KbError, match="is not a whole number from 1 to 1,000"):
        ask(kb, "why?", AskOptions(k=LIMITS.k + 1))


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_check_k_accepts_exactly_the_range(k: int) -> None:
    if 1 <= k <= LIMITS.k:
        check_k(k)
    else:
        with pytest.raises(KbError) as raised:
            check_k(k)
        assert "\n" not in str(raised.value) and len(str(raised.value)) < 120


@given(st.text(max_size=LIMITS.query_chars + 50))
def test_check_text_returns_the_stripped_text_or_one_line(text: str) -> None:
    stripped = text.strip()
    if stripped and len(stripped) <= LIMITS.query_chars and "\x00" not in text:  # (NUL: never in a query)
        assert check_text(text) == stripped
    else:
        with pytest.raises(KbError) as raised:
            check_text(text)
        assert "\n" not in raised.value.message


@pytest.mark.slow
@pytest.mark.parametrize("day", ["2026-13-45", "2026-02-30", "2026-1-", "tomorrow", "0000-00-00"])
def test_purge_before_an_impossible_date_deletes_nothing(tmp_path: Path, day: str) -> None:
    kb_dir = tmp_path / "k"
    store = StoreOfRecord(kb_dir)
    row = {"answer_id": "a0", "created_at": "2026-01-01T00:00:00Z", "question": "q", "answer": "a", "grounded": 1}
    with store.transaction():
        save_answer_row(store, row | {"prompt_template_version": "rag-v5"})
    store.close()
    result = run_kb("answers", "purge", "--before", day, env={"KB_HOME": str(kb_dir)})
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "real date" in result.stderr
    store = StoreOfRecord(kb_dir)
    assert store.conn.execute("SELECT count(*) FROM answers").fetchone()[0] == 1
    store.close()


@pytest.mark.slow
def test_every_file_is_private_even_in_a_folder_created_open(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir(mode=0o755)
    os.chmod(kb_dir, 0o755)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSecret text.\n")
    assert run_kb("ingest", str(docs), env=TEST_INDEXES_ENV | {"KB_HOME": str(kb_dir)}).returncode == 0
    assert stat.S_IMODE(kb_dir.stat().st_mode) == 0o700
    folders = [p for p in kb_dir.rglob("*") if p.is_dir()]
    assert folders, "the indexes have folders of their own"
    for folder in folders:  # nobody else can enter any folder, so no file inside can be read by them
        assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0, folder


class _Stopper:
    """A token callback that cancels after ``after`` pieces."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.seen: list[str] = []

    def __call__(self, text: str) -> None:
        self.seen.append(text)
        if len(self.seen) >= self.after:
            raise Cancelled("stopped by the caller")


class _CountingModel(ScriptedLanguageModel):
    """A scripted model that counts the tokens it produced before its stream was closed."""

    def __init__(self, pieces: list[str]) -> None:
        super().__init__(pieces)
        self.produced = 0

    def generate_stream(self, request: GenerateRequest) -> Iterator[StreamEvent]:
        for event in super().generate_stream(request):
            self.produced += 1
            yield event


def test_a_cancelling_callback_stops_the_model_and_stores_nothing(
    make_kb: Callable[..., KnowledgeBase], tmp_path: Path
) -> None:
    kb = make_kb()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Heliograph\n\nHeliograph 2.3.0 was released on 2024-06-18.\n")
    ingest_paths(kb, [docs])
    model = _CountingModel([f"word{i} " for i in range(200)] + ["[#1]"])
    pipeline = RagPipeline(kb.config, kb.store, lambda query: search(kb, query).hits, lambda: model)
    stopper = _Stopper(after=3)
    with pytest.raises(Cancelled):
        pipeline.ask("When was Heliograph 2.3.0 released?", AskOptions(mode="lexical"), stopper)
    assert len(stopper.seen) == 3
    assert model.produced < 10  # the stream was closed, not drained
    assert kb.store.conn.execute("SELECT count(*) FROM answers").fetchone()[0] == 0
