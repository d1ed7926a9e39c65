"""Answer evaluation and the answer commands (`kb ask`, `kb eval answers`, `kb eval compare`).

Retrieval is real here (the fixture corpus ingested into real Tantivy and sqlite-vec indexes
with the real embedder). Where the command's plumbing is under test, the model is the scripted
one from tests/support, registered as an in-process plugin; it answers extractively (the first
evidence line, cited), so what it says depends on what retrieval really found.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kbtest import CORPUS, FIXTURES, TEST_INDEXES, TEST_PLUGINS, run_kb

from kb_core.app import KnowledgeBase
from kb_core.cli.main import main
from kb_core.config import load_config
from kb_core.errors import KbError
from kb_core.evaluation.answers import QuestionResult, doc_matches, summarize
from kb_core.evaluation.compare import compare_reports
from kb_core.evaluation.golden import GoldenQuestion, load_golden, parse_golden_line
from kb_core.evaluation.stats import percentile
from kb_core.extend.registry import load_registry, reset_registry
from kb_core.output import schema
from kb_core.testing import ScriptedPlugin
from kb_core.types import GenerateRequest

GOLDEN = FIXTURES / "golden" / "answers.jsonl"


def extractive(request: GenerateRequest) -> list[str]:
    """Answer with the text of evidence entry [#1] on one line, citing [#1] (any template's entry format)."""
    entry = re.split(
        r"\n\n\[#2[\] ]|\n\n(?:Question|질문|问题)[:：]", re.split(r"\[#1[\] ]", request.user, maxsplit=1)[1]
    )[0]
    return [" ".join(entry.split("\n", 1)[1].split()), " [#1]"]


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture corpus ingested in the test indexes with the real default embedder (once per module)."""
    from kb_core.ingest.pipeline import ingest_paths
    from kb_core.testing import TestIndexesPlugin

    folder = tmp_path_factory.mktemp("answers-kb")
    plugins = load_registry(extra_plugins=[("kb-test-indexes", TestIndexesPlugin())])  # before any test's set-up
    with KnowledgeBase(load_config(kb_dir=folder, overrides=TEST_INDEXES, environ={}), plugins) as kb:
        ingest_paths(kb, [CORPUS])
    return folder


@pytest.fixture
def scripted() -> Iterator[ScriptedPlugin]:
    plugin = ScriptedPlugin(extractive)
    reset_registry(load_registry(extra_plugins=[("scripted-llm", plugin)]))
    yield plugin
    reset_registry(None)


def kb_cli(capsys: pytest.CaptureFixture[str], kb_dir: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--kb", str(kb_dir), "--backend", "scripted", *args])
    out, err = capsys.readouterr()
    return code, out, err


# -- the golden set --------------------------------------------------------------------------------


def test_the_shipped_golden_set_is_well_formed_and_mixed() -> None:
    golden = load_golden(GOLDEN)
    assert 10 <= len(golden) <= 16
    assert len({g.id for g in golden}) == len(golden)
    answerable = [g for g in golden if g.answerable]
    assert answerable and len(answerable) < len(golden)
    for g in answerable:
        assert g.expected_docs and g.must_contain
        for doc in g.expected_docs:
            text = (CORPUS / doc).read_text(encoding="utf-8")
            assert all(s.casefold() in text.casefold() for s in g.must_contain), (g.id, doc)
    scripts = {"hangul": r"[\uac00-\ud7af]", "han": r"[\u4e00-\u9fff]", "latin": r"^[\x00-\x7f]+$"}
    for name, pattern in scripts.items():
        assert any(re.search(pattern, g.question) for g in answerable), name
        assert any(re.search(pattern, g.question) for g in golden if not g.answerable), name


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"answerable": true}', "question"),
        ('{"question": "  ", "answerable": true}', "question"),
        ('{"question": "q", "answerable": "yes"}', "answerable"),
        ('{"question": "q", "answerable": true, "expected_docs": "a.md"}', "expected_docs"),
        ('{"question": "q", "answerable": true, "must_contain": [1]}', "must_contain"),
    ],
)
def test_malformed_golden_lines_name_the_line(line: str, message: str) -> None:
    with pytest.raises(KbError, match=message) as caught:
        parse_golden_line(line, 7, "g.jsonl")
    assert "g.jsonl line 7" in str(caught.value)


@settings(max_examples=200)
@given(
    st.one_of(
        st.text(),
        st.dictionaries(
            st.sampled_from(["question", "answerable", "expected_docs", "must_contain", "id"]),
            st.one_of(st.none(), st.booleans(), st.text(), st.lists(st.text()), st.integers()),
        ).map(json.dumps),
    )
)
def test_golden_parser_raises_only_kb_errors(line: str) -> None:
    try:
        question = parse_golden_line(line, 1)
    except KbError:
        return
    assert question.question.strip() and isinstance(question.answerable, bool)


def test_empty_golden_file_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "g.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(KbError, match="no questions"):
        load_golden(empty)


# -- metrics ------------------------------------------------------------------------------------------


def result(
    qid: str,
    answerable: bool,
    grounded: bool,
    cited: int = 0,
    expected: int = 0,
    missing: tuple[str, ...] = (),
    latency: float = 100.0,
    correct: bool = False,
) -> QuestionResult:
    return QuestionResult(
        qid,
        "q",
        answerable,
        grounded,
        None if grounded else "llm_self_judge",
        correct,
        tuple(f"d.md#L{i}-L{i}" for i in range(1, cited + 1)),
        expected,
        missing,
        latency,
        None,
        "ans_0",
        "",
        "",
    )


def test_metrics_arithmetic() -> None:
    golden = [
        GoldenQuestion("a", "q", True, ("d.md",), ("x",)),
        GoldenQuestion("b", "q", True, ("d.md",), ("y",)),
        GoldenQuestion("c", "q", True, ("d.md",), ()),
        GoldenQuestion("n1", "q", False),
        GoldenQuestion("n2", "q", False),
    ]
    results = [
        result("a", True, True, cited=2, expected=2, latency=100, correct=True),
        result("b", True, True, cited=2, expected=1, missing=("y",), latency=200),
        result("c", True, False, latency=300),
        result("n1", False, False, latency=400, correct=True),
        result("n2", False, True, cited=1, latency=500),
    ]
    m = summarize(golden, results)
    assert (m.questions, m.answerable, m.unanswerable) == (5, 3, 2)
    assert m.grounded_rate == round(2 / 3, 4)
    assert m.correct_refusal_rate == 0.5
    assert m.citation_precision == 0.75  # 3 of the 4 chunks cited for answerable questions
    assert m.must_contain_rate == 0.5  # a has x; b misses y; c lists nothing
    assert m.accuracy == 0.4
    assert (m.latency_ms_p50, m.latency_ms_p95) == (300.0, 480.0)
    assert m.refusal_reasons == {"llm_self_judge": 2}


def test_rates_are_none_when_undefined() -> None:
    m = summarize([GoldenQuestion("n", "q", False)], [result("n", False, False, correct=True)])
    assert m.grounded_rate is None and m.citation_precision is None and m.must_contain_rate is None
    assert m.correct_refusal_rate == 1.0


@settings(max_examples=100)
@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=50), st.floats(0, 1))
def test_percentile_is_within_the_data(values: list[float], fraction: float) -> None:
    p = percentile(values, fraction)
    assert min(values) - 1e-3 <= p <= max(values) + 1e-3
    assert percentile(values, 0) <= percentile(values, 0.5) <= percentile(values, 1)


def test_doc_matching_tolerates_a_folder_prefix() -> None:
    assert doc_matches("notes/heliograph.md", "notes/heliograph.md")
    assert doc_matches("corpus/notes/heliograph.md", "notes/heliograph.md")
    assert not doc_matches("notes/heliograph.md", "graph.md")
    assert not doc_matches("notes/heliograph.md", "notes/runbook.md")


# -- the commands, with real retrieval and the scripted model -------------------------------------------


def test_ask_streams_then_prints_sources_and_exits_0(
    capsys: pytest.CaptureFixture[str], kb_dir: Path, scripted: ScriptedPlugin
) -> None:
    code, out, _ = kb_cli(capsys, kb_dir, "ask", "What TCP port does the Heliograph daemon listen on?")
    assert code == 0
    assert "Sources:" in out and "notes/heliograph.md#L" in out and "grounded" in out
    streamed = "".join(scripted.models[0].script(scripted.models[0].requests[0]))  # type: ignore[operator]
    assert out.startswith(streamed)
    assert "7341" in streamed


def test_ask_json_is_answer_v1_and_refusal_exits_1(
    capsys: pytest.CaptureFixture[str], kb_dir: Path, scripted: ScriptedPlugin
) -> None:
    code, out, _ = kb_cli(capsys, kb_dir, "ask", "--json", "--explain", "How do I lubricate a bicycle chain?")
    data = json.loads(out)
    jsonschema.validate(data, schema("answer.v1"))
    assert code == (0 if data["grounded"] else 1)
    assert data["packed"] and data["prompt"]["system"] and data["trace"]
    code, out, _ = kb_cli(capsys, kb_dir, "ask", "--json", "Who won the 2018 FIFA World Cup?")
    data = json.loads(out)
    jsonschema.validate(data, schema("answer.v1"))
    assert code == 1 and data["refusal_reason"] in ("score_gate", "no_chunks")
    assert scripted.models == [] or len(scripted.models[0].requests) == 1  # the gate never called the model


def test_ask_explain_prints_trace_and_prompt(
    capsys: pytest.CaptureFixture[str], kb_dir: Path, scripted: ScriptedPlugin
) -> None:
    code, out, _ = kb_cli(
        capsys, kb_dir, "ask", "--explain", "--constrained", "How far apart should cordon tomatoes be planted?"
    )
    assert code == 0
    assert (
        "── retrieval ret_" in out and "── prompt rag-v5: system" in out and "Evidence:\n[#1] web/tomatoes.html" in out
    )
    assert "── grammar" in out and "cite ::=" in out
    assert "── sentences, as kb checked them" in out and "claim           supported by [#1] (cited)" in out


@pytest.mark.slow
def test_ask_gate_refusal_through_the_real_command(kb_dir: Path) -> None:
    env = {"KB_PLUGIN_MODULES": f"{TEST_PLUGINS},kb_core.testing.language_models:ScriptedPlugin"}
    done = run_kb("--kb", str(kb_dir), "--backend", "scripted", "ask", "Who won the 2018 FIFA World Cup?", env=env)
    assert done.returncode == 1, done.stderr
    assert "refused to answer (score_gate)" in done.stdout or "refused to answer (no_chunks)" in done.stdout
    assert "Insufficient evidence" in done.stdout


def test_ask_empty_question_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], kb_dir: Path, scripted: ScriptedPlugin
) -> None:
    code, _, err = kb_cli(capsys, kb_dir, "ask", "   ")
    assert code == 2 and "the question is empty" in err


def test_eval_answers_writes_a_report_and_records_the_run(
    capsys: pytest.CaptureFixture[str], kb_dir: Path, scripted: ScriptedPlugin, tmp_path: Path
) -> None:
    code, out, _ = kb_cli(
        capsys, kb_dir, "eval", "answers", "--golden", str(GOLDEN), "--out", str(tmp_path / "r"), "--json"
    )
    assert code == 0
    report = json.loads(out)
    jsonschema.validate(report, schema("answer_report.v1"))
    on_disk = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    assert on_disk == report
    m = report["metrics"]
    assert m["questions"] == 15 and m["answerable"] == 10
    for r in report["results"]:
        assert bool(r["grounded"]) == (r["refusal_reason"] is None)
    # the extractive script cites [#1]: a grounded answer's citation is the top retrieved chunk, so
    # the citation precision measures real retrieval; off-topic questions must stop at the real gate
    assert m["correct_refusal_rate"] is not None and m["correct_refusal_rate"] >= 0.6
    assert m["citation_precision"] is not None and m["citation_precision"] >= 0.6
    with KnowledgeBase(load_config(kb_dir=kb_dir, overrides=TEST_INDEXES, environ={})) as kb:
        row = kb.store.conn.execute("SELECT * FROM eval_runs WHERE run_id = ?", (report["run_id"],)).fetchone()
        assert row["kind"] == "answers" and json.loads(row["metrics_json"])["questions"] == 15
        assert row["report_path"] == str(tmp_path / "r" / "report.json")
        answers = kb.store.conn.execute("SELECT count(*) FROM answers").fetchone()[0]
        assert answers >= 15


def _report(path: Path, **metrics: float | None) -> Path:
    path.write_text(json.dumps({"schema_version": "answer_report.v1", "metrics": metrics}))
    return path


def test_compare_prints_deltas(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a = _report(tmp_path / "a.json", grounded_rate=0.5, accuracy=0.6, latency_ms_p50=1000.0)
    b = _report(tmp_path / "b.json", grounded_rate=0.75, accuracy=None, latency_ms_p50=800.0)
    code = main(["eval", "compare", str(a), str(b), "--json"])
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, schema("report_compare.v1"))
    assert code == 0
    deltas = {d["metric"]: d for d in data["deltas"]}
    assert deltas["grounded_rate"]["delta"] == 0.25
    assert deltas["latency_ms_p50"]["delta"] == -200.0
    assert deltas["accuracy"]["delta"] is None
    assert main(["eval", "compare", str(a), str(b)]) == 0
    assert "+0.2500" in capsys.readouterr().out


def test_compare_handles_retrieval_reports_per_mode(tmp_path: Path) -> None:
    def write(name: str, ndcg: float) -> Path:
        path = tmp_path / name
        path.write_text(
            json.dumps(
                {
                    "schema_version": "retrieval_report.v1",
                    "modes": [{"mode": "hybrid", "ndcg_at_k": ndcg, "recall_at_k": 0.5}],
                }
            )
        )
        return path

    comparison = compare_reports(write("a.json", 0.4), write("b.json", 0.5))
    assert {d.metric: d.delta for d in comparison.deltas}["hybrid.ndcg_at_k"] == 0.1


def test_compare_refuses_different_kinds_and_non_reports(tmp_path: Path) -> None:
    a = _report(tmp_path / "a.json", grounded_rate=0.5)
    other = tmp_path / "o.json"
    other.write_text(json.dumps({"schema_version": "retrieval_report.v1", "modes": []}))
    with pytest.raises(KbError, match="cannot compare"):
        compare_reports(a, other)
    junk = tmp_path / "junk.json"
    junk.write_text("[]")
    with pytest.raises(KbError, match="not a kb report"):
        compare_reports(a, junk)


def test_a_golden_line_may_hold_unicode_line_separators(tmp_path: Path) -> None:
    golden = tmp_path / "g.jsonl"
    golden.write_text(
        json.dumps({"question": "Is A\u2028B safe?", "answerable": True}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    [question] = load_golden(golden)
    assert question.question == "Is A\u2028B safe?"


def test_eval_answers_reports_verdicts_and_draws_their_curve_for_a_labelled_set(
    capsys: pytest.CaptureFixture[str], kb_dir: Path, scripted: ScriptedPlugin, tmp_path: Path
) -> None:
    golden = tmp_path / "yes-no.jsonl"
    lines = [
        {"question": "Does the Heliograph daemon listen on port 7341?", "answerable": True, "expected_verdict": "yes"},
        {"question": "Is Heliograph written in COBOL?", "answerable": True, "expected_verdict": "no"},
        {"question": "What port does the daemon use?", "answerable": True},
    ]
    golden.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "r"
    code, text, _ = kb_cli(capsys, kb_dir, "eval", "answers", "--golden", str(golden), "--out", str(out))
    assert code == 0
    if importlib.util.find_spec("matplotlib") is not None:  # the evaluation extra is installed
        assert f"risk-coverage plot: {out / 'verdicts.png'}" in text
        assert (out / "verdicts.png").read_bytes()[:4] == b"\x89PNG"
    else:  # kb-core alone: one line says how to get the plot, the report is still written
        assert "no risk-coverage plot: pip install 'kb-core[evaluation]'" in text
        assert not (out / "verdicts.png").exists()
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    jsonschema.validate(report, schema("answer_report.v1"))
    verdicts = report["metrics"]["verdicts"]
    assert verdicts["labelled"] == 2 and len(verdicts["curve"]) == 21
    stated = [
        r for r in report["results"] if r["grounded"] and r["verdict"] in ("yes", "no") and not r["verdict_withheld"]
    ]
    assert verdicts["stated"] == len(stated)
