"""Korean and Chinese answers among near-miss distractors (fixtures/cjk, fixtures/golden/answers_cjk.jsonl).

fixtures/cjk holds about 150 Korean and 150 Chinese paragraphs in which several files on one
topic state the same kind of fact with different values (three metro lines and their opening
years, five stews and their gram amounts, three dynasties' walls and their lengths, ...). The
golden set asks for one of those facts (answer in exactly one file) or for an on-topic fact no
file states. The slow test ingests the folder with the default configuration, answers with the
real embedded default model through ``evaluate_answers`` (what ``kb eval answers`` runs) and
holds the floors measured with ``bench/cjk_answers.py``.

The real-model test uses the llamacpp plugin's default model when its packages are installed;
``KBTEST_GGUF=/path/model.gguf`` points it at another GGUF file instead.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import jsonschema
import pytest
from kbtest import FIXTURES

from kb_core import AskOptions, KnowledgeBase, SearchQuery, ingest_paths, load_config, search
from kb_core.evaluation.answers import QuestionResult, doc_matches, evaluate_answers, load_golden
from kb_core.output import schema

CJK = FIXTURES / "cjk"
GOLDEN = FIXTURES / "golden" / "answers_cjk.jsonl"
HANGUL = re.compile(r"[\uac00-\ud7af]")
HAN = re.compile(r"[\u4e00-\u9fff]")


# -- the corpus and the golden set (fast) -----------------------------------------------------------


def test_the_corpus_is_large_korean_and_chinese_with_distractors() -> None:
    files = sorted(p for p in CJK.rglob("*.md") if p.name != "README.md")
    paragraphs = dict.fromkeys(("ko", "zh", "en"), 0)
    for path in files:
        lang = path.relative_to(CJK).parts[0]
        paragraphs[lang] += path.read_text(encoding="utf-8").count("\n## ")
    assert 36 <= len(files) <= 60
    assert paragraphs["ko"] >= 140 and paragraphs["zh"] >= 140 and paragraphs["en"] >= 5
    for folder in [p for p in CJK.glob("*/*") if p.is_dir()]:
        assert len(list(folder.glob("*.md"))) >= 3, folder  # every topic has near-miss siblings


def test_the_cjk_golden_set_is_well_formed() -> None:
    golden = load_golden(GOLDEN)
    assert len({g.id for g in golden}) == len(golden)
    for lang, script in (("ko", HANGUL), ("zh", HAN)):
        mine = [g for g in golden if g.id.startswith(lang + "-")]
        assert all(script.search(g.question) for g in mine)
        answerable = [g for g in mine if g.answerable]
        assert len(mine) >= 10 and 0.5 <= len(answerable) / len(mine) <= 0.75, lang
    corpus = {p.relative_to(CJK).as_posix(): p.read_text(encoding="utf-8") for p in CJK.rglob("*.md")}
    for g in golden:
        if not g.answerable:
            assert not g.expected_docs and not g.must_contain, g.id
            continue
        assert len(g.expected_docs) == 1 and g.must_contain, g.id
        (doc,) = g.expected_docs
        assert all(s in corpus[doc] for s in g.must_contain), g.id
        siblings = [p for p in corpus if p != doc and p.rsplit("/", 1)[0] == doc.rsplit("/", 1)[0]]
        assert len(siblings) >= 2, g.id  # distractors sit beside the answer


# -- with the real embedded default model (slow) ----------------------------------------------------


def _real_model_path() -> str:
    """The GGUF file for the real-model test ("" = the plugin's default); skips when there is none."""
    pytest.importorskip("kb_llamacpp", reason="the llamacpp plugin is not installed")
    from kb_core import ModelUnavailableError
    from kb_llamacpp import default_model_path

    if os.environ.get("KBTEST_GGUF"):
        return os.environ["KBTEST_GGUF"]
    try:
        default_model_path()
    except ModelUnavailableError as exc:
        pytest.skip(f"the embedded default model is not installed: {exc.message}")
    return ""


#: The questions the slow test asks (the whole set takes about N minutes on 2 cores): per language
#: four answerable (two whose answer passage lexical search ranks below the packed three) and two
#: unanswerable. ``python bench/cjk_answers.py`` runs all of them.
SMOKE = (
    "ko-line2-open",
    "ko-tuna",
    "ko-solmoe",
    "ko-nuri2-weight",
    "ko-line2-cost",
    "ko-doenjang-kcal",
    "zh-xiling-length",
    "zh-fenghe3-yield",
    "zh-x2-process",
    "zh-line2-open",
    "zh-qingchuan-cost",
    "zh-line3-fare",
)


def _right(result: QuestionResult) -> bool:
    """Grounded, citing only the expected document."""
    return result.grounded and bool(result.cited) and result.cited_expected == len(result.cited)


@pytest.mark.slow
def test_real_model_answers_korean_and_chinese_among_distractors(tmp_path: Path) -> None:
    """The smoke questions with the default configuration and model: no wrong citation, facts found.

    MEASURED
    """
    overrides: dict[str, object] = {"models.llm.model": _real_model_path(), "ingest.ignore": ["/README.md"]}
    golden = [g for g in load_golden(GOLDEN) if g.id in SMOKE]
    assert len(golden) == len(SMOKE)
    with KnowledgeBase(load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={})) as kb:
        ingest_paths(kb, [CJK])
        in_top3 = {}
        for g in golden:
            if g.answerable:
                hits = search(kb, SearchQuery(text=g.question, k=3)).hits
                in_top3[g.id] = any(doc_matches(h.doc_path, g.expected_docs[0]) for h in hits)
        report = evaluate_answers(kb, golden, AskOptions(), golden_file=GOLDEN, out_dir=tmp_path / "report")
    jsonschema.validate(
        json.loads((tmp_path / "report" / "report.json").read_text(encoding="utf-8")), schema("answer_report.v1")
    )
    results = report.results
    for r in results:  # shown with -s, and on failure
        print(f"{r.id:<20} grounded={r.grounded!s:<6} {r.refusal_detail or '':<18} {r.cited} {r.answer[:60]!r}")
    # Whatever the model says, kb must not ground an answer that cites a near miss or holds an unsupported claim.
    assert report.metrics.grounded_violations == 0
    wrong = [r.id for r in results if r.grounded and (not r.answerable or r.cited_expected < len(r.cited))]
    assert wrong == [], wrong
    for lang in ("ko", "zh"):
        answerable = [r for r in results if r.answerable and r.id.startswith(lang + "-")]
        unanswerable = [r for r in results if not r.answerable and r.id.startswith(lang + "-")]
        right = [r for r in answerable if _right(r) and not r.must_contain_missing]
        refused = [r for r in unanswerable if not r.grounded]
        assert sum(in_top3[r.id] for r in answerable) >= FLOORS[lang]["in_top3"], lang
        assert len(right) >= FLOORS[lang]["right"], (lang, [r.id for r in answerable if r not in right])
        assert len(refused) >= FLOORS[lang]["refused"], (lang, [r.id for r in unanswerable if r not in refused])


FLOORS = {"ko": {"in_top3": 0, "right": 0, "refused": 0}, "zh": {"in_top3": 0, "right": 0, "refused": 0}}
