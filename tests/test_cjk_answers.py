"""Korean and Chinese answers among near-miss distractors (fixtures/cjk, fixtures/golden/answers_cjk.jsonl).

fixtures/cjk holds about 150 Korean and 150 Chinese paragraphs in which several files on one
topic state the same kind of fact with different values (three metro lines and their opening
years, five stews and their gram amounts, three dynasties' walls and their lengths, ...). The
golden set asks for one of those facts (answer in exactly one file) or for an on-topic fact no
file states. The slow test ingests the folder with the default configuration, answers with the
real embedded default model through ``evaluate_answers`` (what ``kb eval answers`` runs) and
holds the floors measured with ``bench/cjk_answers.py``; two strict xfails record what kb does
wrong today (a grounded answer copied from a near-miss sibling; right Korean answers refused by
the lexical support check, reproduced without the model by the fast attribution tests).

The real-model tests use the llamacpp plugin's default model when its packages are installed;
``KBTEST_GGUF=/path/model.gguf`` points it at another GGUF file instead.
"""

from __future__ import annotations

import json
import re

import attrs
import jsonschema
import pytest
from kbtest import FIXTURES, real_model_path

from kb_core import AskOptions, Hit, KnowledgeBase, SearchQuery, ingest_paths, load_config, search
from kb_core.evaluation.answers import AnswerReport, QuestionResult, doc_matches, evaluate_answers
from kb_core.evaluation.golden import GoldenQuestion, load_golden
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


# -- Korean answer attribution (fast; the cause of most Korean refusals before 0.2) --------------------
# content_units used to drop a Latin unit glued to a Hangul particle ('5.87km로' -> only '로') and to count
# Korean polite endings ('입니다') as claim content that plain-style passages never hold.
KOREAN_SUPPORT_DEFECT = "right Korean answers were refused by the lexical support check"


@pytest.mark.parametrize(
    ("question", "answer", "passage"),
    [
        (
            "솔뫼산성의 둘레는 몇 km인가요?",
            "5.87km [#1].",
            "솔뫼산성의 둘레는 5.87km로 가람 지역의 산성 가운데 가장 크다.",
        ),
        (
            "별섬의 면적은 얼마인가요?",
            "별섬의 면적은 7.9㎢입니다 [#1].",
            "별섬의 면적은 7.9㎢이고, 약 640명이 살고 있다.",
        ),
    ],
)
def test_a_right_korean_answer_is_supported_by_its_passage(question: str, answer: str, passage: str) -> None:
    from kb_core.answers.attribution import attribute

    (sentence,) = attribute(answer, question, {1: passage})
    assert sentence.supported, sentence  # measured: support 0.5 and 0.333, under CLAIM_SUPPORT 0.6


def test_the_same_answer_in_chinese_is_supported() -> None:
    from kb_core.answers.attribution import attribute

    passage = "根据2015年的全面测量，西陵国边墙的总长度为1385公里，北起白狼山，南至青石峡。"
    (sentence,) = attribute("1385公里。[#1]", "西陵国边墙的总长度是多少公里？", {1: passage})
    assert sentence.supported and sentence.supported_by == (1,)


# -- with the real embedded default model (slow) ----------------------------------------------------

#: The questions the slow tests ask (80 s on 2 shared cores, ingest included; the whole set, about 2.5 min,
#: is ``python bench/cjk_answers.py``): per language four answerable, among them ones whose answer
#: passage lexical search ranks below the three that get packed, and two or three unanswerable.
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
    "zh-fenghe2-breeder",
)

#: Floors on SMOKE with the default configuration (embedder minilm, model qwen2.5-coder-1.5b q4_k_m),
#: each below what was measured (bench/cjk_answers.py and this test, 2026-11-22):
#: document of the answer in the top 3 hits: ko 4/4, zh 4/4 (zh-fenghe3-yield at rank 3, behind its two siblings);
#: the answer passage itself in the top 3: ko 2/4 (ko-line2-open rank 4, ko-tuna rank 9), zh 4/4;
#: grounded citing only the expected document and stating the fact: ko 0/4 before the attribution fixes of
#: 0.2, at least 2/4 after (test_real_model_grounds_most_korean_answers), zh 4/4;
#: unanswerable refused: ko 2/2, zh 2/3 before (zh-fenghe2-breeder grounded on its sibling 丰禾1号), 3/3 after.
FLOORS = {
    "ko": {"doc_top3": 3, "passage_top3": 1, "refused": 1},
    "zh": {"doc_top3": 3, "passage_top3": 3, "right": 3, "refused": 1},
}


def _right(result: QuestionResult) -> bool:
    """Grounded, citing only the expected document, and stating every must-contain string."""
    return (
        result.grounded
        and bool(result.cited)
        and result.cited_expected == len(result.cited)
        and not result.must_contain_missing
    )


def _holds(hit: Hit, golden: GoldenQuestion) -> tuple[bool, bool]:
    """Whether the hit is from the expected document, and whether its cited lines hold the answer."""
    if not doc_matches(hit.doc_path, golden.expected_docs[0]):
        return False, False
    lines = (CJK / hit.citation.path).read_text(encoding="utf-8").split("\n")
    text = "\n".join(lines[hit.citation.start_line - 1 : hit.citation.end_line])
    return True, all(s in text for s in golden.must_contain)


@attrs.frozen
class Smoke:
    """The SMOKE questions answered once for the module, with their retrieval."""

    report: AnswerReport
    doc_top3: dict[str, bool]
    passage_top3: dict[str, bool]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Smoke:
    """fixtures/cjk ingested with the default configuration, SMOKE answered by the real default model."""
    overrides: dict[str, object] = {"models.llm.model": real_model_path(), "ingest.ignore": ["/README.md"]}
    golden = [g for g in load_golden(GOLDEN) if g.id in SMOKE]
    assert len(golden) == len(SMOKE)
    folder = tmp_path_factory.mktemp("cjk")
    doc_top3, passage_top3 = {}, {}
    with KnowledgeBase(load_config(kb_dir=folder / "kb", overrides=overrides, environ={})) as kb:
        ingest_paths(kb, [CJK])
        for g in golden:
            if g.answerable:
                holds = [_holds(h, g) for h in search(kb, SearchQuery(text=g.question, k=3)).hits]
                doc_top3[g.id] = any(doc for doc, _ in holds)
                passage_top3[g.id] = any(passage for _, passage in holds)
        report = evaluate_answers(kb, golden, AskOptions(), golden_file=GOLDEN, out_dir=folder / "report")
    jsonschema.validate(
        json.loads((folder / "report" / "report.json").read_text(encoding="utf-8")), schema("answer_report.v1")
    )
    for r in report.results:  # shown with -s
        print(f"{r.id:<20} grounded={r.grounded!s:<6} {r.refusal_detail or '':<18} {r.cited} {r.answer[:60]!r}")
    return Smoke(report, doc_top3, passage_top3)


def _language(results: tuple[QuestionResult, ...], lang: str) -> tuple[list[QuestionResult], list[QuestionResult]]:
    mine = [r for r in results if r.id.startswith(lang + "-")]
    return [r for r in mine if r.answerable], [r for r in mine if not r.answerable]


@pytest.mark.needs_plugins
@pytest.mark.slow
def test_real_model_answers_korean_and_chinese_among_distractors(smoke: Smoke) -> None:
    """The floors measured with the default configuration and model, per language."""
    assert smoke.report.metrics.grounded_violations == 0  # no unpacked marker, no claim without support
    for lang, floors in FLOORS.items():
        answerable, unanswerable = _language(smoke.report.results, lang)
        assert sum(smoke.doc_top3[r.id] for r in answerable) >= floors["doc_top3"], (lang, smoke.doc_top3)
        assert sum(smoke.passage_top3[r.id] for r in answerable) >= floors["passage_top3"], (lang, smoke.passage_top3)
        right = [r.id for r in answerable if _right(r)]
        assert len(right) >= floors.get("right", 0), (lang, [(r.id, r.refusal_detail, r.answer) for r in answerable])
        refused = [r.id for r in unanswerable if not r.grounded]
        assert len(refused) >= floors["refused"], (lang, [(r.id, r.answer) for r in unanswerable])


@pytest.mark.needs_plugins
@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="kb grounds a copy of a near-miss passage: ko-line2-open answers 1호선's opening date as 2호선's citing "
    "the 1호선 file, whose passage mentions '2' elsewhere (the named-number check of 0.2 caught zh-fenghe2-breeder, "
    "which copied 丰禾1号's breeder)",
)
def test_real_model_never_grounds_an_answer_on_a_near_miss(smoke: Smoke) -> None:
    wrong = [
        (r.id, r.cited)
        for r in smoke.report.results
        if r.grounded and (not r.answerable or r.cited_expected < len(r.cited))
    ]
    assert wrong == []


@pytest.mark.needs_plugins
@pytest.mark.slow
def test_real_model_grounds_most_korean_answers(smoke: Smoke) -> None:
    answerable, _ = _language(smoke.report.results, "ko")
    assert sum(_right(r) for r in answerable) >= 2, [(r.id, r.refusal_detail, r.answer) for r in answerable]
