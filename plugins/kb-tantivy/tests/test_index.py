"""The Tantivy index as an index and a retriever, on real indexes in temporary directories."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core import Chunk, Config, Document, KbError, SearchQuery
from kb_core.plugin import IndexContext, SearchIndex, SnippetMaker
from kb_core.testing import StoreOfRecord, load_registry
from kb_tantivy import TantivyIndex, make_index
from kb_tantivy.index import FIX, META_FILE

FIX_COMMAND = "kb reindex --store tantivy"


def chunk(doc: str, ordinal: int, text: str, heading: tuple[str, ...] = (), start: int = 1, end: int = 4) -> Chunk:
    """A chunk built by hand (no ingest pipeline)."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return Chunk(f"{doc}:{ordinal}:{digest}", doc, ordinal, text, digest, start, end, heading)


def open_index(kb_dir: Path, store: StoreOfRecord, **options: object) -> TantivyIndex:
    ctx = IndexContext(
        Config(backends={"tantivy": dict(options)}),
        name="tantivy",
        directory=kb_dir / "indexes" / "tantivy",
        store=store,
    )
    return make_index(ctx)


@pytest.fixture
def kb_dir(tmp_path: Path) -> Path:
    return tmp_path / "kb"


@pytest.fixture
def store(kb_dir: Path) -> Iterator[StoreOfRecord]:
    s = StoreOfRecord(kb_dir)
    yield s
    s.close()


@pytest.fixture
def index(kb_dir: Path, store: StoreOfRecord) -> Iterator[TantivyIndex]:
    idx = open_index(kb_dir, store)
    yield idx
    idx.close()


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.chunk_id for h in hits]


def apply_batch(index: TantivyIndex, paths: list[str], chunks: list[Chunk]) -> None:
    """What the sync engine does with one batch."""
    index.delete(paths)
    index.upsert(chunks)
    index.commit()


A = [
    chunk("docs/a.md", 0, "The cat runs across the garden every morning."),
    chunk("docs/a.md", 1, "Gardening tips: water the tomatoes before sunrise.", ("Garden", "Tomatoes"), 5, 9),
]
B = [chunk("notes/b.md", 0, "Quarterly budget review for the finance team.")]


def test_the_plugin_registers_a_lexical_index_satisfying_both_protocols(index: TantivyIndex) -> None:
    registration = load_registry().get("indexes", "tantivy")
    assert registration.info["mode"] == "lexical"
    assert isinstance(index, SearchIndex)
    assert index.mode == "lexical" and index.name == "tantivy"


def test_upsert_search_delete(index: TantivyIndex) -> None:
    apply_batch(index, ["docs/a.md", "notes/b.md"], A + B)
    assert index.count() == 3
    hits = index.search(SearchQuery("tomatoes watering"))
    assert ids(hits)[0] == A[1].chunk_id
    apply_batch(index, ["docs/a.md"], [])
    assert index.count() == 1
    assert index.search(SearchQuery("tomatoes")) == []
    assert ids(index.search(SearchQuery("budget"))) == [B[0].chunk_id]


def test_replaying_a_batch_changes_nothing(index: TantivyIndex) -> None:
    apply_batch(index, ["docs/a.md"], A)
    first = index.search(SearchQuery("cat garden"))
    apply_batch(index, ["docs/a.md"], A)
    index.upsert(A)  # an upsert without the delete must not duplicate either
    index.commit()
    assert index.count() == 2
    assert [(h.chunk_id, h.raw_score) for h in index.search(SearchQuery("cat garden"))] == [
        (h.chunk_id, h.raw_score) for h in first
    ]


def test_an_edited_document_replaces_its_old_chunks(index: TantivyIndex) -> None:
    apply_batch(index, ["docs/a.md"], A)
    edited = [chunk("docs/a.md", 0, "The dog sleeps by the fire.")]
    apply_batch(index, ["docs/a.md"], edited)
    assert index.count() == 1
    assert index.search(SearchQuery("cat")) == []
    assert ids(index.search(SearchQuery("dog"))) == [edited[0].chunk_id]


def test_nothing_is_visible_before_commit_and_close_discards_it(kb_dir: Path, store: StoreOfRecord) -> None:
    index = open_index(kb_dir, store)
    apply_batch(index, ["docs/a.md"], A)
    index.upsert(B)
    assert index.search(SearchQuery("budget")) == []
    index.close()
    reopened = open_index(kb_dir, store)
    assert reopened.count() == 2 and reopened.search(SearchQuery("budget")) == []
    reopened.close()


def test_clear_empties_the_index_at_commit(index: TantivyIndex) -> None:
    apply_batch(index, ["docs/a.md", "notes/b.md"], A + B)
    index.clear()
    assert index.count() == 3
    index.commit()
    assert index.count() == 0 and index.search(SearchQuery("cat")) == []


def test_english_is_stemmed(index: TantivyIndex) -> None:
    apply_batch(index, ["docs/a.md", "notes/b.md"], A + B)
    assert ids(index.search(SearchQuery("running cats")))[0] == A[0].chunk_id


CJK = [
    chunk("ko.md", 0, "서울특별시의 인구는 약 950만 명이다."),
    chunk("zh.md", 0, "北京是中华人民共和国的首都，也是政治中心。"),
    chunk("ja.md", 0, "東京タワーは人気のある観光地です。"),
]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("인구", "ko.md"),
        ("서울 인구는?", "ko.md"),
        ("首都", "zh.md"),
        ("人民", "zh.md"),
        ("タワー", "ja.md"),
        ("観光", "ja.md"),
    ],
)
def test_words_inside_cjk_runs_are_found(index: TantivyIndex, query: str, expected: str) -> None:
    apply_batch(index, ["ko.md", "zh.md", "ja.md"], CJK)
    hits = index.search(SearchQuery(query))
    assert [h.doc_path for h in hits] == [expected]
    assert 0.0 < hits[0].score <= 1.0


def test_hits_carry_citation_heading_snippet_and_scores(index: TantivyIndex) -> None:
    apply_batch(index, ["docs/a.md", "notes/b.md"], A + B)
    hits = index.search(SearchQuery("watering tomatoes garden", k=5))
    top = hits[0]
    assert top.chunk_id == A[1].chunk_id and top.doc_path == "docs/a.md"
    assert str(top.citation) == "docs/a.md#L5-L9"
    assert top.heading_path == ("Garden", "Tomatoes")
    assert "tomatoes" in top.snippet and len(top.snippet) <= 240
    assert top.retriever == "tantivy" and top.raw_score > 0
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_fan_out_without_snippets_leaves_them_to_snippet(index: TantivyIndex) -> None:
    apply_batch(index, ["docs/a.md", "notes/b.md"], A + B)
    query = SearchQuery("watering tomatoes garden", k=5)
    with_snippets = index.search(query)
    without = index.search(attrs.evolve(query, snippets=False))
    assert [h.chunk_id for h in without] == [h.chunk_id for h in with_snippets]
    assert all(h.snippet == "" for h in without)
    assert isinstance(index, SnippetMaker)
    assert index.snippet(query, A[1].text) == with_snippets[0].snippet


def test_heading_matches_count(index: TantivyIndex) -> None:
    apply_batch(index, ["docs/a.md"], A)
    hits = index.search(SearchQuery("tomatoes"))
    body_and_heading = index.search(SearchQuery("garden tomatoes"))
    assert ids(hits) == [A[1].chunk_id]
    assert body_and_heading[0].chunk_id == A[1].chunk_id  # heading "Garden" outweighs body "garden"


def test_document_title_is_searchable(kb_dir: Path, store: StoreOfRecord, index: TantivyIndex) -> None:
    doc = Document("guide.md", "h", 10, "Espresso Handbook", "markdown", str(kb_dir))
    part = chunk("guide.md", 0, "Grind the beans finely and tamp evenly.")
    with store.transaction():
        store.replace_document(doc, [part])
    apply_batch(index, ["guide.md"], [part])
    assert ids(index.search(SearchQuery("handbook"))) == [part.chunk_id]


def test_k_limits_the_hits(index: TantivyIndex) -> None:
    chunks = [chunk(f"d{i}.md", 0, f"common word number {i}") for i in range(8)]
    apply_batch(index, [c.doc_path for c in chunks], chunks)
    assert len(index.search(SearchQuery("common", k=3))) == 3
    assert index.search(SearchQuery("common", k=0)) == []


PATHS = ["docs/a.md", "docs/sub/b.md", "notes/c.txt", "a(b).md", "한국/문서.md", "x+y/[z].md", "Docs/UP.md"]


@pytest.fixture(scope="module")
def glob_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TantivyIndex]:
    kb = tmp_path_factory.mktemp("globkb")
    s = StoreOfRecord(kb)
    idx = open_index(kb, s)
    apply_batch(idx, PATHS, [chunk(p, 0, f"shared text in {p}") for p in PATHS])
    yield idx
    idx.close()
    s.close()


@pytest.mark.parametrize(
    "glob", ["docs/*", "*.md", "docs/?.md", "a(b).md", "[ad]*", "[!d]*", "한국/*", "x+y/[[]z].md", "nothing*"]
)
def test_path_glob_matches_fnmatchcase(glob_index: TantivyIndex, glob: str) -> None:
    hits = glob_index.search(SearchQuery("shared text", k=20, path_glob=glob))
    assert sorted(h.doc_path for h in hits) == sorted(p for p in PATHS if fnmatchcase(p, glob))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(glob=st.text(alphabet="*?[]!/.()+adocsmtx한", max_size=8))
def test_any_path_glob_filters_like_fnmatchcase(glob_index: TantivyIndex, glob: str) -> None:
    hits = glob_index.search(SearchQuery("shared", k=20, path_glob=glob))
    expected = PATHS if glob == "" else [p for p in PATHS if fnmatchcase(p, glob)]  # "" means no filter, as in core
    assert sorted(h.doc_path for h in hits) == sorted(expected)


@pytest.mark.parametrize("glob", ["é" * 500, "한국/" + "문" * 400 + "*", "*" + "é" * 1000])
def test_a_glob_too_large_for_a_tantivy_regex_is_applied_by_filtering(glob_index: TantivyIndex, glob: str) -> None:
    # Tantivy refused the regex of a long non-ASCII glob ("exceeds size limit of 1000 states"): exit 70, HTTP 500.
    assert glob_index.search(SearchQuery("shared", k=20, path_glob=glob)) == []


def test_path_glob_keeps_k_when_most_hits_are_filtered_out(index: TantivyIndex) -> None:
    chunks = [chunk(f"{'keep' if i % 5 == 0 else 'drop'}/{i}.md", 0, "needle " * (i + 1)) for i in range(60)]
    apply_batch(index, [c.doc_path for c in chunks], chunks)
    hits = index.search(SearchQuery("needle", k=10, path_glob="[k]eep/*"))
    assert len(hits) == 10 and all(h.doc_path.startswith("keep/") for h in hits)


ADVERSARIAL = [
    '"unbalanced',
    "foo:bar",
    "(a OR b",
    "AND",
    "-",
    "title:",
    "*",
    "🎉🎉",
    "   ",
    "",
    "a^2 ~3 [x TO y]",
    "NOT OR AND",
    "\\",
    "인구:서울",
    "C++ && ||",
    "\x00",
]


@pytest.fixture(scope="module")
def query_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TantivyIndex]:
    kb = tmp_path_factory.mktemp("querykb")
    s = StoreOfRecord(kb)
    idx = open_index(kb, s)
    apply_batch(idx, ["docs/a.md", "notes/b.md", "ko.md", "zh.md", "ja.md"], A + B + CJK)
    yield idx
    idx.close()
    s.close()


@pytest.mark.parametrize("text", ADVERSARIAL)
def test_query_syntax_is_never_an_error(query_index: TantivyIndex, text: str) -> None:
    hits = query_index.search(SearchQuery(text))
    assert all(0.0 <= h.score <= 1.0 for h in hits)


def test_field_like_words_are_searched_as_words(query_index: TantivyIndex) -> None:
    assert ids(query_index.search(SearchQuery("budget:review")))[0] == B[0].chunk_id


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=80), k=st.integers(min_value=1, max_value=12))
def test_no_query_raises_and_every_score_is_in_range(query_index: TantivyIndex, text: str, k: int) -> None:
    hits = query_index.search(SearchQuery(text, k=k))
    assert len(hits) <= k
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_the_index_reopens_from_disk(kb_dir: Path, store: StoreOfRecord) -> None:
    first = open_index(kb_dir, store)
    apply_batch(first, ["docs/a.md"], A)
    expected = [(h.chunk_id, h.score) for h in first.search(SearchQuery("cat"))]
    first.close()
    second = open_index(kb_dir, store)
    assert second.count() == 2
    assert [(h.chunk_id, h.score) for h in second.search(SearchQuery("cat"))] == expected
    second.close()


CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from kb_core import Chunk, Config, KbError, SearchQuery
    from kb_core.plugin import IndexContext
    from kb_core.testing import StoreOfRecord
    from kb_tantivy import make_index

    kb = Path(sys.argv[1])
    store = StoreOfRecord(kb)
    config = Config(backends={"tantivy": {"lock_timeout_s": 0.3}})
    ctx = IndexContext(config, name="tantivy", directory=kb / "indexes" / "tantivy", store=store)
    index = make_index(ctx)
    out = {"hits": [h.chunk_id for h in index.search(SearchQuery(sys.argv[2]))]}
    if len(sys.argv) > 3:
        try:
            index.upsert([Chunk("child:0", "child.md", 0, sys.argv[3], "x", 1, 1)])
            index.commit()
            out["wrote"] = True
        except KbError as exc:
            out["error"] = str(exc)
    index.close()
    print(json.dumps(out))
    """
)


def run_child(kb_dir: Path, query: str, write: str | None = None) -> dict:  # type: ignore[type-arg]
    args = [sys.executable, "-c", CHILD, str(kb_dir), query] + ([write] if write else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


@pytest.mark.slow
def test_another_process_reads_while_this_one_writes(kb_dir: Path, index: TantivyIndex) -> None:
    apply_batch(index, ["docs/a.md"], A)
    index.upsert(B)  # holds the writer, uncommitted
    child = run_child(kb_dir, "cat budget", write="written by the child")
    assert child["hits"] == [A[0].chunk_id]  # committed data only
    assert "another kb process is writing" in child["error"]
    index.commit()  # releases the writer
    child = run_child(kb_dir, "budget", write="otter facts")
    assert child == {"hits": [B[0].chunk_id], "wrote": True}
    assert ids(index.search(SearchQuery("otter"))) == ["child:0"]  # this process sees the child's commit


def test_check_reports_a_missing_index(index: TantivyIndex) -> None:
    problems = index.check()
    assert len(problems) == 1 and "missing" in problems[0].message and problems[0].fix == FIX_COMMAND == FIX


def test_check_is_clean_for_a_fresh_index_and_counts_against_the_store(
    kb_dir: Path, store: StoreOfRecord, index: TantivyIndex
) -> None:
    doc = Document("docs/a.md", "h", 10, "A", "markdown", str(kb_dir))
    with store.transaction():
        store.replace_document(doc, A)
    apply_batch(index, ["docs/a.md"], A)
    store.set_index_state("tantivy", store.last_seq(), index.fingerprint)
    assert index.check() == []
    apply_batch(index, ["docs/a.md"], [])
    problems = index.check()
    assert len(problems) == 1 and "0 chunks" in problems[0].message and problems[0].fix == FIX_COMMAND


def test_an_outdated_fingerprint_is_reported_refused_and_fixed_by_a_rebuild(kb_dir: Path, index: TantivyIndex) -> None:
    apply_batch(index, ["docs/a.md"], A)
    index.close()
    (index.directory / META_FILE).write_text(json.dumps({"fingerprint": "tantivy-schema0:old"}))
    problems = index.check()
    assert len(problems) == 1 and "another version" in problems[0].message and problems[0].fix == FIX_COMMAND
    with pytest.raises(KbError, match="kb reindex --store tantivy"):
        index.search(SearchQuery("cat"))
    index.clear()
    index.upsert(A)
    index.commit()
    assert index.check() == [] and index.count() == 2


def test_a_corrupt_index_is_reported_and_fixed_by_a_rebuild(index: TantivyIndex) -> None:
    apply_batch(index, ["docs/a.md"], A)
    index.close()
    (index.index_dir / "meta.json").write_text("{ not json")
    problems = index.check()
    assert len(problems) == 1 and "unreadable" in problems[0].message and problems[0].fix == FIX_COMMAND
    index.clear()
    index.upsert(B)
    index.commit()
    assert index.check() == [] and ids(index.search(SearchQuery("budget"))) == [B[0].chunk_id]


def test_search_on_an_index_never_built_finds_nothing(index: TantivyIndex) -> None:
    assert index.search(SearchQuery("anything")) == [] and index.count() == 0


def test_path_glob_never_returns_chunks_that_do_not_match_the_query(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from kb_core import Chunk, Config, SearchQuery
    from kb_core.plugin import IndexContext
    from kb_core.testing import StoreOfRecord
    from kb_tantivy.index import TantivyIndex

    index = TantivyIndex(
        IndexContext(Config(), name="tantivy", directory=tmp_path / "ix", store=StoreOfRecord(tmp_path))
    )
    index.upsert(
        [Chunk("c1", "ko/a.md", 0, "서울 인구", "h1", 1, 1), Chunk("c2", "en/b.md", 0, "heliograph mirror", "h2", 1, 1)]
    )
    index.commit()
    assert index.search(SearchQuery(text="heliograph", k=5, path_glob="ko/*")) == []
    hits = index.search(SearchQuery(text="heliograph", k=5, path_glob="en/*"))
    assert [h.doc_path for h in hits] == ["en/b.md"] and hits[0].score > 0
