"""Follow-up questions in threads: made standalone, answered and checked like any question, kept.

Retrieval is real (the fixture corpus in the test indexes with the real default embedder); the
language model is scripted: it names the topic when asked what a follow-up refers to, and
otherwise answers with the first evidence entry (so every claim is in a passage).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from test_eval_answers import extractive, kb_cli, kb_dir  # noqa: F401 - kb_dir is a fixture

import kb_core
from kb_core.conversations import EarlierTurn, history_block, standalone
from kb_core.conversations.standalone import TOPIC_SYSTEM, content_words, leans_on_context, topic_prompt
from kb_core.errors import KbError, NotFoundError
from kb_core.evaluation.conversation_sets import load_conversation_set, parse_conversation_line
from kb_core.extend.registry import load_registry, reset_registry
from kb_core.limits import LIMITS, check_text
from kb_core.output import schema
from kb_core.testing import ScriptedPlugin
from kb_core.testing.language_models import ScriptedLanguageModel
from kb_core.types import GenerateRequest

TOPIC = "the Heliograph daemon"


def conversing(request: GenerateRequest) -> list[str]:
    """The topic when asked what a follow-up is about; else the first evidence entry, cited."""
    if request.system == TOPIC_SYSTEM:
        return [TOPIC]
    if "breakfast" in request.user:  # a hallucination, cited: kb's sentence check must catch it
        return ["Its founders ate porridge with honey every morning in 1850 [#1]."]
    return extractive(request)


@pytest.fixture
def scripted() -> Iterator[ScriptedPlugin]:
    plugin = ScriptedPlugin(conversing)
    reset_registry(load_registry(extra_plugins=[("scripted-llm", plugin)]))
    yield plugin
    reset_registry(None)


def _json(capsys: pytest.CaptureFixture[str], kb_dir: Path, *args: str, code: int = 0) -> dict:  # noqa: F811
    got, out, err = kb_cli(capsys, kb_dir, *args, "--json")
    assert got == code, err
    data = json.loads(out)
    jsonschema.validate(data, schema(data["schema_version"]))
    return data


# -- making a follow-up standalone -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "leans"),
    [
        ("Which port does it listen on?", True),
        ("And since which version?", True),
        ("What about Windows?", True),
        ("Is that the default?", True),
        ("Which port does the Heliograph daemon listen on?", False),
        ("Who maintains the Heliograph controller project?", False),
        ("그것은 언제 나왔나요?", True),
        ("它支持哪个端口？", True),
    ],
)
def test_a_question_leans_on_the_turns_before_when_it_points_back(question: str, leans: bool) -> None:
    assert leans_on_context(question) is leans


def test_a_question_that_needs_no_context_is_searched_as_asked_without_the_model() -> None:
    model = ScriptedLanguageModel([TOPIC])
    earlier = [EarlierTurn("What does the Heliograph daemon do?", "It turns solar panels.")]
    for question, turns in [("Which port does the Heliograph daemon listen on?", earlier), ("Which port?", [])]:
        made = standalone(question, turns, "model", lambda: model)
        assert (made.question, made.method, made.ms) == (question, "as_asked", 0.0)
    assert model.requests == []


def test_the_model_names_what_a_follow_up_refers_to_and_kb_appends_it() -> None:
    model = ScriptedLanguageModel(['"The Heliograph daemon."'])
    earlier = [EarlierTurn("What does the Heliograph daemon do?", "It turns rows of solar panels [#1].")]
    made = standalone("Which port does it listen on?", earlier, "model", lambda: model)
    assert made.question == "Which port does it listen on? (The Heliograph daemon)"
    assert made.method == "model" and made.prompt_tokens > 0 and made.ms > 0
    [request] = model.requests
    assert request.max_tokens <= 16 and "What does the Heliograph daemon do?" in request.user
    assert request.user.rstrip().endswith("What is the last question about?")


def test_without_the_model_the_previous_question_s_missing_words_complete_a_follow_up() -> None:
    earlier = [EarlierTurn("What does the Heliograph daemon do?", "")]
    made = standalone("Which port does it listen on?", earlier, "previous_turn")
    assert made.question == "Which port does it listen on? (heliograph daemon)"
    assert made.method == "previous_turn"


@pytest.mark.parametrize("method", ["model", "previous_turn"])
def test_a_blank_follow_up_is_refused_not_completed_into_the_previous_question(
    capsys: pytest.CaptureFixture[str],
    kb_dir: Path,  # noqa: F811
    scripted: ScriptedPlugin,
    method: str,
) -> None:
    from kb_core.app import KnowledgeBase
    from kb_core.config import load_config

    _json(capsys, kb_dir, "ask", "What does the Heliograph daemon do?")
    thread_id = _json(capsys, kb_dir, "threads", "list")["threads"][0]["thread_id"]
    models = len(scripted.models)
    with KnowledgeBase(load_config(kb_dir=kb_dir, overrides={"conversations.standalone": method})) as kb:
        with pytest.raises(KbError, match="the question is empty"):  # checked where it comes in, before anything
            kb_core.ask_in_thread(kb, "  ", thread_id, kb_core.AskOptions(backend="scripted"))
        assert len(kb_core.stored_thread(kb.store, thread_id).turns) == 1
    assert len(scripted.models) == models  # no model was asked to complete it


@given(st.text(max_size=80), st.lists(st.text(max_size=60), max_size=4), st.text(max_size=40))
def test_a_standalone_question_always_starts_with_the_question_as_asked(
    question: str, before: list[str], topic: str
) -> None:
    assume(question.strip() and "\x00" not in question)  # what check_text lets in (a blank one: the test above)
    checked = check_text(question, "question")  # where a question comes in: standalone() takes it checked
    earlier = [EarlierTurn(q, q) for q in before]
    for method in ("model", "previous_turn", "as_asked"):
        made = standalone(checked, earlier, method, lambda: ScriptedLanguageModel([topic]))  # type: ignore[arg-type]
        assert made.question.startswith(checked)
        assert content_words(made.question)[: len(content_words(question))] == content_words(question)
        assert check_text(made.question, "question") == made.question  # the question made is checked text still
    assert topic_prompt(question, earlier or [EarlierTurn("")]).endswith("What is the last question about?")


@given(st.integers(LIMITS.query_chars - 300, LIMITS.query_chars - 6), st.text(min_size=1, max_size=200))
def test_a_completed_question_stays_within_the_question_limit(length: int, topic: str) -> None:
    question = "Is it " + "x" * length  # leans on the turns before; up to the longest accepted question
    made = standalone(
        question[: LIMITS.query_chars], [EarlierTurn("Q")], "model", lambda: ScriptedLanguageModel([topic])
    )
    assert len(made.question.strip()) <= LIMITS.query_chars
    assert made.question.startswith(question[: LIMITS.query_chars])


def test_history_keeps_the_newest_turns_that_fit_without_their_markers() -> None:
    earlier = [EarlierTurn(f"question {i}", f"answer {i} [#1][#2].") for i in range(5)]

    def words(text: str) -> int:
        return len(text.split())

    block = history_block(earlier, budget=14, count_tokens=words)
    assert "[#" not in block and "question 4" in block and "answer 4." in block and "question 2" not in block
    assert words(block) <= 14
    assert history_block(earlier, budget=11, count_tokens=words).endswith("Q: question 4\nA: answer")  # trimmed
    assert history_block(earlier, budget=3, count_tokens=words) == ""


@given(st.lists(st.tuples(st.text(max_size=30), st.text(max_size=80)), max_size=5), st.integers(0, 60))
def test_history_never_exceeds_its_budget(turns: list[tuple[str, str]], budget: int) -> None:
    block = history_block([EarlierTurn(q, a) for q, a in turns], budget, len)
    assert len(block) <= budget


# -- threads through the CLI -------------------------------------------------------------------------


def test_a_follow_up_with_continue_searches_the_standalone_question_and_keeps_the_turn(
    capsys: pytest.CaptureFixture[str],
    kb_dir: Path,  # noqa: F811
    scripted: ScriptedPlugin,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KB_CONVERSATIONS__HISTORY_TOKENS", "96")  # the turns before shown (default: none)
    first = _json(capsys, kb_dir, "ask", "What does the Heliograph daemon do?")
    assert first["schema_version"] == "answer.v1" and first["grounded"]
    follow = _json(capsys, kb_dir, "ask", "--continue", "Which port does it listen on?")
    assert follow["schema_version"] == "turn.v1" and follow["position"] == 2 and follow["method"] == "model"
    assert follow["standalone"] == f"Which port does it listen on? ({TOPIC})"
    assert follow["answer"]["question"] == follow["standalone"]  # stored to read on its own
    assert follow["answer"]["grounded"] and "7341" in follow["answer"]["answer"]
    answer_prompt = scripted.models[-1].requests[-1].user
    assert "Q: What does the Heliograph daemon do?" in answer_prompt  # the turn before, not evidence
    assert answer_prompt.index("[#1]") < answer_prompt.index("Q: What does") < answer_prompt.index("Question:")
    code, text, _ = kb_cli(capsys, kb_dir, "ask", "--thread", follow["thread_id"], "Who maintains it?")
    assert code == 0 and f"searched for: Who maintains it? ({TOPIC})" in text and "turn 3" in text
    shown_thread = _json(capsys, kb_dir, "threads", "show", follow["thread_id"])
    assert [t["asked"] for t in shown_thread["turns"]] == [
        "What does the Heliograph daemon do?",
        "Which port does it listen on?",
        "Who maintains it?",
    ]
    assert [t["method"] for t in shown_thread["turns"]] == ["as_asked", "model", "model"]
    listed = _json(capsys, kb_dir, "threads", "list")
    assert listed["threads"][0]["thread_id"] == follow["thread_id"] and listed["threads"][0]["turns"] == 3
    deleted = _json(capsys, kb_dir, "threads", "delete", follow["thread_id"])
    assert deleted["turns"] == 3
    code, _, err = kb_cli(capsys, kb_dir, "threads", "show", follow["thread_id"])
    assert code == 2 and "no thread with id" in err and "Traceback" not in err
    _, listed_answers, _ = kb_cli(capsys, kb_dir, "answers", "list", "--json")
    assert follow["answer"]["answer_id"] not in listed_answers  # deleting a thread deletes its answers


def test_a_follow_up_the_notes_do_not_answer_is_refused_like_any_question(
    capsys: pytest.CaptureFixture[str],
    kb_dir: Path,  # noqa: F811
    scripted: ScriptedPlugin,
) -> None:
    _json(capsys, kb_dir, "ask", "What does the Heliograph daemon do?")
    follow = _json(capsys, kb_dir, "ask", "--continue", "What did its founders eat for breakfast in 1850?", code=1)
    assert "Q: What does" not in scripted.models[-1].requests[-1].user  # no history by default
    assert not follow["answer"]["grounded"] and follow["answer"]["refusal_reason"] == "unsupported"
    assert follow["position"] == 2  # kept in the thread, refused


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("ask", "--thread", "thr_missing", "Which port?"), "no thread with id"),
        (("ask", "--thread", "x", "--continue", "Which port?"), "not both"),
        (("ask", "--again", "ans_x", "--continue"), "leave out --continue"),
        (("threads", "delete", "thr_missing"), "no thread with id"),
    ],
)
def test_thread_mistakes_are_one_line_errors(
    capsys: pytest.CaptureFixture[str],
    kb_dir: Path,  # noqa: F811
    scripted: ScriptedPlugin,
    args: tuple[str, ...],
    message: str,
) -> None:
    code, _, err = kb_cli(capsys, kb_dir, *args)
    assert code == 2 and message in err and err.count("\n") == 1


def test_continue_without_any_thread_says_how_to_start_one(
    tmp_path: Path, scripted: ScriptedPlugin, capsys: pytest.CaptureFixture[str]
) -> None:
    from kb_core.cli.main import main

    assert main(["--kb", str(tmp_path / "k"), "init"]) == 0
    capsys.readouterr()
    code = main(["--kb", str(tmp_path / "k"), "--backend", "scripted", "ask", "--continue", "Which port?"])
    err = capsys.readouterr().err
    assert code == 2 and "no thread to continue" in err and "ask without --continue" in err
    assert "Traceback" not in err


def test_chat_streams_answers_keeps_the_thread_and_answers_its_commands(
    kb_dir: Path,  # noqa: F811
    scripted: ScriptedPlugin,
) -> None:
    from click.testing import CliRunner

    from kb_core.cli.main import _register_builtin_commands, cli

    _register_builtin_commands()  # as main() does

    lines = [
        "What does the Heliograph daemon do?",
        "Which port does it listen on?",
        "/sources",
        "/threads",
        "/new",
        "Who maintains the Heliograph project?",
        "/quit",
    ]
    result = CliRunner().invoke(cli, ["--kb", str(kb_dir), "--backend", "scripted", "chat"], input="\n".join(lines))
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"searched for: Which port does it listen on? ({TOPIC})" in out
    assert "7341" in out and "Sources:" in out and "turn(s)" in out
    assert "a new thread starts" in out
    assert out.count("grounded") >= 3


# -- conversation sets -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("nope", "not valid JSON"),
        ('{"turns": []}', "turns must be a non-empty list"),
        ('{"turns": [{"answerable": true}]}', "question"),
        ('{"turns": [{"question": "q", "answerable": "yes"}]}', "answerable"),
        ('{"turns": [{"question": "q", "expected_docs": "a"}]}', "expected_docs"),
    ],
)
def test_a_malformed_conversation_line_is_named(line: str, message: str) -> None:
    with pytest.raises(KbError, match=message):
        parse_conversation_line(line, 3)


@given(st.text(max_size=200))
def test_any_line_parses_or_is_a_one_line_error(line: str) -> None:
    try:
        parse_conversation_line(line, 1)
    except KbError as exc:
        assert "\n" not in exc.message


def test_eval_conversations_reports_the_three_ways_of_searching_and_the_answers(
    capsys: pytest.CaptureFixture[str],
    kb_dir: Path,  # noqa: F811
    scripted: ScriptedPlugin,
    tmp_path: Path,
) -> None:
    conversation = {
        "id": "helio",
        "turns": [
            {
                "question": "What does the Heliograph controller do?",
                "answerable": True,
                "expected_docs": ["heliograph"],
                "reference_answer": "It turns rows of solar panels to follow the sun.",
                "reference_rewrite": "What does the Heliograph controller do?",
            },
            {
                "question": "Which port does it listen on?",
                "answerable": True,
                "expected_docs": ["heliograph"],
                "reference_answer": "Port 7341.",
                "reference_rewrite": "Which port does the Heliograph daemon listen on?",
            },
            {"question": "What did its founders eat in 1850?", "answerable": False},
            {"question": "thanks!", "answerable": None},
        ],
    }
    set_file = tmp_path / "set.jsonl"
    set_file.write_text(json.dumps(conversation) + "\n", encoding="utf-8")
    assert load_conversation_set(set_file)[0].turns[1].reference_rewrite.startswith("Which port")
    report = _json(capsys, kb_dir, "eval", "conversations", "--set", str(set_file), "--out", str(tmp_path / "r"))
    m = report["metrics"]
    assert (m["conversations"], m["turns"], m["retrieval_turns"], m["unchanged_turns"]) == (1, 4, 2, 1)
    for way in ("asked", "standalone", "reference"):
        assert 0.0 <= m[f"recall_at_5_{way}"] <= 1.0
    second = report["results"][1]
    assert second["standalone"] == f"Which port does it listen on? ({TOPIC})" and second["method"] == "model"
    assert second["grounded"] and second["cited_relevant"] and second["correct"]
    assert m["answerable"] == 2 and m["unanswerable"] == 1 and m["grounded_relevant_rate"] is not None
    assert report["results"][3]["correct"] is None  # not scored
    saved = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    assert saved["run_id"] == report["run_id"]
    retrieval = _json(capsys, kb_dir, "eval", "conversations", "--set", str(set_file), "--no-answers")
    assert all(r["answer_id"] is None for r in retrieval["results"])
    assert retrieval["metrics"]["recall_at_5_standalone"] == m["recall_at_5_standalone"]
    code, text, _ = kb_cli(capsys, kb_dir, "eval", "compare", report["report_path"], retrieval["report_path"])
    assert code == 0 and "recall_at_5_standalone" in text


def test_continue_goes_on_with_the_thread_continued_last_and_a_deleted_thread_takes_no_turn(
    capsys: pytest.CaptureFixture[str],
    kb_dir: Path,  # noqa: F811
    scripted: ScriptedPlugin,
) -> None:
    from kb_core.app import KnowledgeBase
    from kb_core.config import load_config
    from kb_core.storage.threads import add_turn, stored_thread

    first = _json(capsys, kb_dir, "ask", "What does the Heliograph daemon do?")
    _json(capsys, kb_dir, "ask", "Who maintains the Heliograph controller project?")  # a newer thread
    thread = _json(capsys, kb_dir, "threads", "list")["threads"][1]  # the first of the two, continued before
    follow = _json(capsys, kb_dir, "ask", "--thread", thread["thread_id"], "Which port does it listen on?")
    again = _json(capsys, kb_dir, "ask", "--continue", "And who maintains it?")  # the thread continued last
    assert again["thread_id"] == follow["thread_id"] == thread["thread_id"] and again["position"] == 3
    _json(capsys, kb_dir, "threads", "delete", thread["thread_id"])
    with KnowledgeBase(load_config(kb_dir=kb_dir)) as kb:
        answer = kb_core.ask(kb, "What does the Heliograph daemon do?", kb_core.AskOptions(backend="scripted"))
        with pytest.raises(NotFoundError):  # deleted while its follow-up was being answered
            add_turn(kb.store, thread["thread_id"], "Which port?", "Which port?", "as_asked", answer)
        with pytest.raises(NotFoundError):
            stored_thread(kb.store, thread["thread_id"])
        turns = kb.store.conn.execute("SELECT count(*) FROM turns WHERE thread_id = ?", (thread["thread_id"],))
        assert turns.fetchone()[0] == 0
    assert first["grounded"] and thread["first_question"] == first["question"]


@pytest.mark.slow  # another process (the real kb command) deletes while the model writes
@pytest.mark.parametrize("removal", [("threads", "delete", "{thread}"), ("answers", "purge", "--all")])
def test_a_thread_removed_by_another_process_while_its_follow_up_is_answered_keeps_nothing_of_it(
    capsys: pytest.CaptureFixture[str],
    kb_dir: Path,  # noqa: F811
    scripted: ScriptedPlugin,
    removal: tuple[str, ...],
) -> None:
    from kbtest import run_kb

    from kb_core.app import KnowledgeBase
    from kb_core.config import load_config
    from kb_core.storage.answers import list_answers

    _json(capsys, kb_dir, "ask", "What does the Heliograph daemon do?")
    thread_id = _json(capsys, kb_dir, "threads", "list")["threads"][0]["thread_id"]
    removed: list[str] = []

    def remove_meanwhile(token: str) -> None:  # the first token: the answer is being written
        if not removed:
            args = [part.format(thread=thread_id) for part in removal]
            done = run_kb("--kb", str(kb_dir), *args, "--json", timeout=120)
            removed.append(done.stdout)
            assert done.returncode == 0, done.stderr

    with KnowledgeBase(load_config(kb_dir=kb_dir)) as kb:
        with pytest.raises(NotFoundError, match="no thread with id"):
            kb_core.ask_in_thread(
                kb,
                "Which port does it listen on while it is removed?",
                thread_id,
                kb_core.AskOptions(backend="scripted"),
                on_token=remove_meanwhile,
            )
        _, total = list_answers(kb.store)
        kept = kb.store.conn.execute("SELECT count(*) FROM answers WHERE question LIKE '%while it is removed%'")
        turns = kb.store.conn.execute("SELECT count(*) FROM turns WHERE thread_id = ?", (thread_id,))
        assert kept.fetchone()[0] == 0 and turns.fetchone()[0] == 0  # the follow-up's answer is not kept
    assert removed, "the model wrote no token: the removal was never tried"
    if "purge" in removal:
        assert total == 0


def test_a_mistyped_chat_command_is_named_not_asked(
    kb_dir: Path,  # noqa: F811
    scripted: ScriptedPlugin,
) -> None:
    from click.testing import CliRunner

    from kb_core.cli.main import _register_builtin_commands, cli

    _register_builtin_commands()
    lines = ["/bogus", "/quit"]
    result = CliRunner().invoke(cli, ["--kb", str(kb_dir), "--backend", "scripted", "chat"], input="\n".join(lines))
    assert result.exit_code == 0, result.output
    assert "unknown command /bogus (/help lists the commands)" in result.output
    assert not scripted.models or not any(r.user for m in scripted.models for r in m.requests)  # never asked


@pytest.mark.parametrize("command", [("answers", "list"), ("threads", "list")])
@pytest.mark.parametrize("limit", [str(2**63), str(10**40)])
def test_a_limit_past_its_bound_is_one_usage_line(
    capsys: pytest.CaptureFixture[str],
    kb_dir: Path,  # noqa: F811
    scripted: ScriptedPlugin,
    command: tuple[str, str],
    limit: str,
) -> None:
    """A limit past SQLite's integers listed everything; past kb_core.bounds.LIST_LIMIT it is exit 2 (issue 42)."""
    code, _, err = kb_cli(capsys, kb_dir, *command, "--limit", limit)
    assert code == 2 and err.count("\n") == 1 and "is not a whole number from 1 to 1,000,000" in err
