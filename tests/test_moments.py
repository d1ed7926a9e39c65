"""A recording's citation names its moment (``talk.mp3#t=00:00:06,00:00:13``): from what the parser stored in
``metadata["moments"]``, in answers' citations, in Markdown, and back to its lines in ``kb inspect``
(``kb_core.storage.moments``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core import KnowledgeBase, ask, ingest_paths, load_config
from kb_core.cli.main import main
from kb_core.extend.registry import reset_registry
from kb_core.output import schema
from kb_core.plugin import Block, ParsedDocument, RegisterParser, hookimpl
from kb_core.service.markdown import place
from kb_core.storage.moments import is_moment, lines_at, moment_of, parse_moment
from kb_core.testing import ScriptedPlugin, TestIndexesPlugin, extractive, load_registry
from kb_core.types import CitationError, Moment, clock, to_json

LINES = [
    "[00:00:01] The heron pump by the weir was serviced on Tuesday.",
    "[00:00:06] Its seals were replaced and the filter was cleaned.",
    "[00:00:12] The next inspection is planned for the spring.",
]
METADATA = {"moments": {"media": "audio", "duration": 18.4, "lines": [[1, 1.0], [2, 6.41], [3, 12.08]]}}


def test_a_moment_runs_from_its_first_line_to_the_next_line_or_the_end() -> None:
    assert moment_of(METADATA, 1, 1) == Moment(1, 7, "audio")  # (6.41 rounded up)
    assert moment_of(METADATA, 2, 3) == Moment(6, 19, "audio")
    assert moment_of(METADATA, 2, 3).fragment() == "t=00:00:06,00:00:19"  # type: ignore[union-attr]
    assert moment_of(METADATA, 3, 10**9) == Moment(12, 19, "audio")
    assert moment_of(METADATA, 4, 9) is None and moment_of({}, 1, 3) is None
    unknown = {"moments": {"media": "video", "lines": [[1, 3725.5]]}}
    assert moment_of(unknown, 1, 1) == Moment(3725, None, "video")
    assert Moment(3725, None).fragment() == "t=01:02:05" and clock(400_000) == "111:06:40"


def test_a_moment_resolves_to_the_lines_said_in_it() -> None:
    assert lines_at(METADATA, 6, 12) == (2, 2)  # (line 3 starts at 12.08)
    assert lines_at(METADATA, 7, 12.5) == (2, 3)
    assert lines_at(METADATA, 0, None) == (1, 3)  # before the first line: from it
    assert lines_at(METADATA, 13, None) == (3, 3)
    assert lines_at(METADATA, 19, None) is None  # after the end
    assert lines_at({}, 0, 5) is None


def test_the_moment_form_kb_prints_reads_back() -> None:
    assert parse_moment("talk.mp3#t=00:12:03,00:12:41") == parse_moment("talk.mp3#t=npt:723,761")
    cited = parse_moment("a#b.ogg#t=1:02:03.5")
    assert (cited.path, cited.start, cited.end) == ("a#b.ogg", 3723.5, None)
    assert (parse_moment("x.wav#t=,10").start, parse_moment("x.wav#t=02:30,3:00:00").end) == (0.0, 10800.0)
    for bad in ("x.wav#t=", "x.wav#t=5,4", "x.wav#t=00:61", "x.wav#t=1:2:3", "#t=5", "x.wav#t=5,5", "x.wav#t=1e3"):
        with pytest.raises(CitationError):
            parse_moment(bad)
    assert is_moment("x.wav#t=oops") and not is_moment("x.wav#L1-L2") and not is_moment("t=5")


TIME = st.one_of(
    st.integers(0, 10**7).map(str),
    st.builds(lambda h, m, s: f"{h:02d}:{m:02d}:{s:02d}", st.integers(0, 900), st.integers(0, 59), st.integers(0, 59)),
    st.builds(lambda m, s, f: f"{m:02d}:{s:02d}.{f}", st.integers(0, 99), st.integers(0, 99), st.integers(0, 999)),
)


@given(
    st.one_of(
        st.text(max_size=40),
        st.builds(lambda a, b: f"talk.mp3#t={a},{b}", TIME, TIME),
        st.builds(lambda a, junk: f"talk.mp3#t=npt:{a}{junk}", TIME, st.text("0123456789:.,-e", max_size=30)),
        st.builds(lambda n: "talk.mp3#t=" + "9" * n, st.integers(1, 5000)),
    )
)
def test_any_text_is_a_moment_in_bounds_or_one_kb_error(text: str) -> None:
    try:
        cited = parse_moment(text)
    except CitationError as exc:
        assert "\n" not in exc.message and exc.hint
        return
    assert 0 <= cited.start <= 2_592_000 and (cited.end is None or cited.start < cited.end <= 2_592_000)
    assert text.startswith(f"{cited.path}#t=")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**9) | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=40,
)


@given(st.dictionaries(st.sampled_from(["moments", "lines"]), JSON | st.fixed_dictionaries({"lines": JSON})))
def test_any_stored_metadata_is_read_without_error(metadata: dict[str, Any]) -> None:
    moment = moment_of(metadata, 1, 10**6)
    assert moment is None or (moment.end is None or moment.end > moment.start >= 0)
    found = lines_at(metadata, 0.0, None)
    assert found is None or 1 <= found[0] <= found[1]


class RecordingPlugin:
    """A parser of ``.talk`` files (their text is the transcript), storing :data:`METADATA` as kb-audio does."""

    @hookimpl
    def register_parsers(self, register: RegisterParser) -> None:
        register("talk", lambda ctx: self, extensions=(".talk",))

    def parse(self, text: str, path: str) -> ParsedDocument:
        blocks = tuple(Block(line, n, n, (), "paragraph", verbatim=True) for n, line in enumerate(LINES, 1))
        return ParsedDocument(path, blocks, dict(METADATA))


@pytest.fixture
def talks_kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "pump.talk").write_text("\n".join(LINES), encoding="utf-8")
    (notes / "plain.md").write_text("The weir has a fish ladder.\n", encoding="utf-8")
    plugins = [
        ("test-indexes", TestIndexesPlugin()),
        ("talks", RecordingPlugin()),
        ("scripted", ScriptedPlugin(extractive)),
    ]
    overrides = {"indexes.enabled": ["test-lexical"], "models.llm.backend": "scripted", "rag.answer_check": 0}
    registry = load_registry(extra_plugins=plugins)
    with KnowledgeBase(load_config(kb_dir=tmp_path / "kb", overrides=overrides, environ={}), registry) as kb:
        assert ingest_paths(kb, [notes]).failed == []
        reset_registry(registry)
        yield kb
    reset_registry(None)


def test_an_answer_from_a_recording_cites_its_lines_and_its_moment(talks_kb: KnowledgeBase) -> None:
    answer = ask(talks_kb, "When is the next inspection of the heron pump planned?", save=False)
    assert answer.grounded, answer.note
    cited = answer.citations[0]
    assert cited.citation.path == "pump.talk" and cited.ref.startswith("pump.talk#L")  # the lines stay canonical
    assert cited.moment == moment_of(METADATA, cited.citation.start_line, cited.citation.end_line) is not None
    source = to_json(cited)
    assert source["moment"] == {"start": 1, "end": 19, "media": "audio"}
    assert place(source).endswith(", pump.talk#t=00:00:01,00:00:19")
    fish = ask(talks_kb, "What does the weir have for fish?", save=False)
    assert fish.grounded and all(c.moment is None for c in fish.citations if c.citation.path == "plain.md")


def test_kb_ask_prints_the_moment_and_inspect_resolves_it_to_its_lines(
    talks_kb: KnowledgeBase, capsys: pytest.CaptureFixture[str]
) -> None:
    config = talks_kb.directory.parent / "talks.toml"  # the fixture's settings: no installed model or index is used
    config.write_text(
        '[indexes]\nenabled = ["test-lexical"]\n[models.llm]\nbackend = "scripted"\n[rag]\nanswer_check = 0\n',
        encoding="utf-8",
    )
    kb_dir = ["--config", str(config), "--kb", str(talks_kb.directory)]
    main([*kb_dir, "ask", "When is the next inspection of the heron pump planned?"])
    assert "pump.talk#t=00:00:01,00:00:19" in capsys.readouterr().out
    main([*kb_dir, "ask", "When is the next inspection of the heron pump planned?", "--json"])
    answer = json.loads(capsys.readouterr().out)
    jsonschema.validate(answer, schema("answer.v1"))
    assert answer["citations"][0]["moment"] == {"start": 1, "end": 19, "media": "audio"}
    assert main([*kb_dir, "inspect", "pump.talk#t=00:00:06,00:00:12"]) == 0
    out = capsys.readouterr().out
    assert "pump.talk#t=00:00:06,00:00:12 is said in pump.talk#L2-L2" in out and "next inspection" in out
    assert main([*kb_dir, "inspect", "pump.talk#t=00:00:06,00:00:12", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunk"]["doc_path"] == "pump.talk"
    assert main([*kb_dir, "inspect", "pump.talk#L1-L3"]) == 0  # the line form keeps working
    capsys.readouterr()
    for bad, said in (
        ("pump.talk#t=00:01:00", "starts after the end"),
        ("plain.md#t=5", "holds no moments"),
        ("pump.talk#t=9,3", "ends before it starts"),
    ):
        assert main([*kb_dir, "inspect", bad]) != 0
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, err
