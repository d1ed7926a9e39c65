"""Only checked text is shown (issue 44, deliver 1): what ``on_token`` receives is checked before it goes out,
and a refused answer sends none of the model's text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_core.answers.pipeline import AskOptions, RagPipeline
from kb_core.answers.release import CheckedRelease, complete_part
from kb_core.answers.validation import Verdict
from kb_core.config import load_config
from kb_core.storage.store import StoreOfRecord
from kb_core.testing import CheckingLanguageModel, ScriptedLanguageModel, store_document
from kb_core.types import Answer, Hit, ModelRef

QUESTION = "What port does the daemon use?"
SUPPORTED = "The daemon listens on TCP port 7341 [#1]."
UNSUPPORTED = "It was written by Ada Lovelace in 1843 [#2]."


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StoreOfRecord]:
    db = StoreOfRecord(tmp_path / "kb")
    yield db
    db.close()


def ask(store: StoreOfRecord, llm: ScriptedLanguageModel, shown: list[str] | None, **overrides: object) -> Answer:
    chunks = store_document(
        store, "notes/daemon.md", ["The daemon listens on TCP port 7341.", "It is written in Rust."]
    )
    hits = [Hit(c.chunk_id, c.doc_path, 0.9 - i / 10, i + 1, c.citation, c.heading_path) for i, c in enumerate(chunks)]
    config = load_config(kb_dir=store.kb_dir, overrides=overrides, environ={})
    pipeline = RagPipeline(config, store, lambda _q: hits, lambda: llm, lambda: ModelRef("e", "onnx", 384))
    return pipeline.ask(QUESTION, AskOptions(), None if shown is None else shown.append)


def test_a_refused_answer_shows_none_of_its_text(store: StoreOfRecord) -> None:
    shown: list[str] = []
    answer = ask(store, ScriptedLanguageModel([UNSUPPORTED, " ", SUPPORTED]), shown)
    assert not answer.grounded and answer.refusal_reason == "unsupported"
    assert "".join(shown) == ""  # nothing of "Ada Lovelace", nothing of the port either
    # nor in answer.v1, which kb serve's extra field, MCP and --json give: its answer is kb's refusal,
    # the model's text only in the sentences kb checked (what --explain shows)
    assert answer.answer.startswith("Insufficient evidence") and "Lovelace" not in answer.answer
    assert answer.sentences and "Lovelace" in answer.sentences[0].text


def test_the_answer_check_is_asked_first_and_a_doubted_answer_shows_nothing(store: StoreOfRecord) -> None:
    shown: list[str] = []
    llm = CheckingLanguageModel([SUPPORTED, " ", SUPPORTED], yes=0.1)
    answer = ask(store, llm, shown, **{"rag.answer_check": 0.5})
    assert answer.refusal_detail == "not_answered" and "".join(shown) == ""
    assert len(llm.checks) == 1


def test_text_shown_is_never_withdrawn_the_answer_stops_there(store: StoreOfRecord) -> None:
    shown: list[str] = []
    answer = ask(store, ScriptedLanguageModel([SUPPORTED, " ", UNSUPPORTED, " More."]), shown)
    said = "".join(shown)
    assert said == SUPPORTED and "Lovelace" not in said
    assert answer.grounded and answer.answer == SUPPORTED and "stopped the answer" in answer.note
    whole = ask(store, ScriptedLanguageModel([SUPPORTED, " ", UNSUPPORTED]), None)  # nothing shown: checked whole
    assert not whole.grounded and whole.refusal_reason == "unsupported"


def test_a_grounded_answer_is_shown_whole_and_as_checked(store: StoreOfRecord) -> None:
    shown: list[str] = []
    answer = ask(
        store,
        ScriptedLanguageModel(["The daemon listens", " on TCP port 7341 [1].", " It is", " written in Rust [#2]."]),
        shown,
    )
    assert answer.grounded and "".join(shown) == answer.answer  # the loose "[1]" went out repaired, as "[#1]"
    assert "[#1]" in "".join(shown)


@given(
    st.lists(st.sampled_from(["Port 7341 [#1].", " It is Rust [#2].", " Lovelace [#1].", " ", "\n", "ok"]), max_size=8)
)
def test_released_text_is_always_a_checked_prefix(pieces: list[str]) -> None:
    """Whatever the pieces, what goes out is, at every moment, text the check found grounded."""
    checked: list[str] = []

    def check(text: str) -> Verdict:
        ok = "Lovelace" not in text and "ok" not in text and "[#" in text
        if ok:
            checked.append(text)
        return Verdict(grounded=ok, text=text)

    out: list[str] = []
    release = CheckedRelease(out.append, check)
    for piece in pieces:
        release.feed(piece)
        assert release.shown == "" or release.shown in checked
        assert "".join(out) == release.shown


def test_the_last_sentence_is_held_until_the_next_begins() -> None:
    assert complete_part("Port 7341 [#1]. It") == "Port 7341 [#1]. "
    assert complete_part("Port 7341 [#1].") == ""  # markers may still follow its full stop


def test_kb_chat_and_kb_ask_show_a_refused_answers_refusal_and_none_of_its_text(tmp_path: Path) -> None:
    """``kb chat`` under a pseudo-terminal (as a person runs it) and ``kb ask`` without one: the refused answer's
    words never reach the screen, neither streamed nor after the refusal."""
    import os
    import pty
    import subprocess

    from kbtest import CORPUS, KB, kb_env, run_kb

    env = {"KB_PLUGIN_MODULES": kb_env()["KB_PLUGIN_MODULES"] + ",withdrawing_backend"}
    env |= {"PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))}
    kb_dir = tmp_path / "kb"
    assert run_kb("--kb", str(kb_dir), "ingest", str(CORPUS), env=env).returncode == 0
    asked = run_kb("--kb", str(kb_dir), "--backend", "withdrawing", "ask", "What port does the daemon use?", env=env)
    assert asked.returncode == 1 and "kb refused to answer (unsupported)" in asked.stdout + asked.stderr
    assert "Lovelace" not in asked.stdout + asked.stderr  # kb ask, not streamed (no terminal): the same
    leader, follower = pty.openpty()
    chat = [str(KB), "--kb", str(kb_dir), "--backend", "withdrawing", "chat"]
    with subprocess.Popen(chat, stdin=follower, stdout=follower, stderr=follower, env=kb_env(env)) as process:
        os.close(follower)
        os.write(leader, b"What TCP port does the Heliograph daemon listen on?\n/quit\n")
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: kb chat ended
                break
            if not chunk:
                break
            seen += chunk
        assert process.wait(timeout=120) == 0, seen.decode(errors="replace")
    os.close(leader)
    shown = seen.decode(errors="replace")

    assert "kb refused to answer (unsupported)" in shown
    assert "Lovelace" not in shown and "7341" not in shown
