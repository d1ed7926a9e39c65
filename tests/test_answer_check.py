"""The answer check: after a grounded answer, the template's judge asks the model whether the
passages state the answer; below ``[rag] answer_check`` the answer is refused as ``not_answered``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_core.answers.pipeline import AskOptions, RagPipeline
from kb_core.answers.prompts import RAG_V4_KO, RAG_V4_ZH, RAG_V5, choose_template
from kb_core.answers.questions import kind_of
from kb_core.cli.main import main
from kb_core.config import load_config
from kb_core.evaluation.answers import check_curve, score_answer
from kb_core.evaluation.golden import GoldenQuestion
from kb_core.extend.registry import load_registry, reset_registry
from kb_core.storage.store import StoreOfRecord
from kb_core.testing import CheckingLanguageModel, ScriptedPlugin, TestIndexesPlugin, store_document
from kb_core.types import Answer, Hit, ModelRef

QUESTION = "What port does the daemon use?"


@pytest.fixture
def store(tmp_path: Path) -> StoreOfRecord:
    db = StoreOfRecord(tmp_path / "kb")
    yield db
    db.close()


def ask(store: StoreOfRecord, llm: CheckingLanguageModel, question: str = QUESTION, **overrides: object) -> Answer:
    texts = ["The daemon listens on TCP port 7341.", "It is written in Rust."]
    chunks = store_document(store, "notes/daemon.md", texts)
    hits = [Hit(c.chunk_id, c.doc_path, 0.9 - i / 10, i + 1, c.citation, c.heading_path) for i, c in enumerate(chunks)]
    config = load_config(kb_dir=store.kb_dir, overrides=overrides, environ={})
    pipeline = RagPipeline(config, store, lambda _q: hits, lambda: llm, lambda: ModelRef("e", "onnx", 384))
    return pipeline.ask(question, AskOptions())


def test_a_grounded_answer_the_judge_doubts_is_refused_as_not_answered(store: StoreOfRecord) -> None:
    llm = CheckingLanguageModel(["The daemon listens on TCP port 7341 [#1]."], yes=0.2)
    answer = ask(store, llm, **{"rag.answer_check": 0.5})
    assert (answer.grounded, answer.refusal_reason, answer.refusal_detail) == (False, "llm_self_judge", "not_answered")
    assert answer.answer == RAG_V5.unanswered_refusal and answer.citations == ()
    assert [(c.marker, c.citation.path) for c in answer.candidates] == [(1, "notes/daemon.md")]  # what it cited
    assert answer.answer_check == 0.2 and "p=0.20, below 0.50" in answer.note
    (check,) = llm.checks
    assert check.system == RAG_V5.judge.system and check.examples == ()  # type: ignore[union-attr]
    assert QUESTION in check.user and "port 7341" in check.user and "[#1]" in check.user
    assert check.user != llm.requests[0].user  # its own prompt, not the answer's


def test_a_grounded_answer_the_judge_confirms_stays_grounded(store: StoreOfRecord) -> None:
    llm = CheckingLanguageModel(["The daemon listens on TCP port 7341 [#1]."], yes=0.8)
    answer = ask(store, llm, **{"rag.answer_check": 0.5})
    assert answer.grounded and answer.answer_check == 0.8 and len(llm.checks) == 1
    assert answer.usage.check_ms is not None and answer.usage.check_ms >= 0


@pytest.mark.parametrize(
    ("script", "overrides", "asked"),
    [
        (["Insufficient evidence."], {"rag.answer_check": 0.5}, 1),  # already a refusal: the check changes nothing
        (["The daemon is written in Go [#1]."], {"rag.answer_check": 0.5}, 1),  # unsupported: refused anyway
        (["The daemon listens on TCP port 7341 [#1]."], {"rag.answer_check": 0.0}, 0),  # the check is off
        (["The daemon listens on TCP port 7341 [#1]."], {"rag.prompt_template_version": "rag-v2"}, 0),  # no judge
    ],
)
def test_the_judge_is_asked_before_the_answer_and_counts_only_for_grounded_ones(
    store: StoreOfRecord, script: list[str], overrides: dict[str, object], asked: int
) -> None:
    """The judge reads the passages and the question, not the answer: it is asked before the model writes (so
    no text is shown that it would withdraw), whenever it is on; only a grounded answer is withdrawn by it."""
    llm = CheckingLanguageModel(script, yes=0.0)
    answer = ask(store, llm, **overrides)
    assert len(llm.checks) == asked and answer.answer_check is None
    assert answer.refusal_detail != "not_answered"


def test_every_default_template_has_a_judge_in_its_language() -> None:
    asked = ((QUESTION, RAG_V5), ("데몬은 어떤 포트를 쓰나요?", RAG_V4_KO), ("守护进程用哪个端口？", RAG_V4_ZH))
    for question, template in asked:
        assert choose_template("auto", kind_of(question)) is template
        assert template.judge is not None
        assert "{query}" in template.judge.user and "{packed_chunks}" in template.judge.user
        assert template.unanswered_refusal


def test_the_check_curve_counts_what_a_withdrawn_answer_cited(store: StoreOfRecord) -> None:
    """At threshold 0 the curve gives the figures with the check off, from one run with it on."""
    golden = [
        GoldenQuestion("a", QUESTION, True, expected_docs=("notes/daemon.md",)),
        GoldenQuestion("b", QUESTION, True, expected_docs=("notes/daemon.md",)),
        GoldenQuestion("u", QUESTION, False),
    ]
    script = ["The daemon listens on TCP port 7341 [#1]."]
    results = []
    for item, yes in zip(golden, (0.8, 0.3, 0.45), strict=True):
        answer = ask(store, CheckingLanguageModel(script, yes=yes), **{"rag.answer_check": 0.5})
        results.append(score_answer(item, answer))
    assert [r.grounded for r in results] == [True, False, False]
    assert [r.cited_expected for r in results] == [1, 1, 0]
    curve = {p.threshold: (p.grounded_expected_rate, p.correct_refusal_rate) for p in check_curve(golden, results)}
    assert curve[0.0] == (1.0, 0.0)  # the check off: both answered, the unanswerable one grounded
    assert curve[0.4] == (0.5, 0.0)
    assert curve[0.5] == (0.5, 1.0)  # what this run did
    assert curve[0.9] == (0.0, 1.0)


def test_kb_ask_shows_a_withdrawn_answer_with_what_it_cited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "daemon.md").write_text("# Daemon\n\nThe daemon listens on TCP port 7341.\n", encoding="utf-8")
    plugins = [("test-indexes", TestIndexesPlugin()), ("scripted", ScriptedPlugin(["Port 7341 [#1]."], yes=0.1))]
    reset_registry(load_registry(extra_plugins=plugins))
    monkeypatch.setenv("KB_INDEXES__ENABLED", '["test-lexical"]')
    try:
        kb = ["--kb", str(tmp_path / "kb")]
        assert main([*kb, "ingest", str(notes)]) == 0
        code = main([*kb, "--backend", "scripted", "ask", "--mode", "lexical", "Which TCP port does the daemon use?"])
    finally:
        reset_registry(None)
    out, err = capsys.readouterr()
    assert code == 1, err  # a refusal
    assert "Passages the refused answer cited:\n  daemon.md#L" in out, out
    assert "kb refused to answer (llm_self_judge): asked whether the passages state the answer" in out
    assert "p=0.10, below 0.62" in out
