"""The llamacpp backend with the REAL embedded default model (loaded once for the module)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import attrs
import llama_cpp
import pytest

from kb_core import KbError, load_config
from kb_core.plugin import Done, FactoryContext, GenerateRequest, LanguageModel, Preloadable, Token, VerdictOpening
from kb_core.testing import load_registry
from kb_llamacpp import DEFAULT_MODEL, make_model
from kb_llamacpp.model import LlamaCppModel

pytestmark = pytest.mark.slow

COUNTING = GenerateRequest(
    system="You are a precise assistant.",
    user="Count from 1 to 30, separated by commas and spaces. Output only the numbers.",
    max_tokens=24,
    temperature=0.0,
    seed=7,
)


def _config(tmp_path: Path, **llm: object):
    overrides = {f"models.llm.{key}": value for key, value in llm.items()}
    return load_config(config_path=None, kb_dir=tmp_path, overrides=overrides, environ={})


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppModel]:
    loaded = make_model(FactoryContext(_config(tmp_path_factory.mktemp("kb"), context_tokens=2048)))
    yield loaded
    loaded.close()  # one model in memory at a time: each holds about 2 GB


def _collect(model: LlamaCppModel, request: GenerateRequest) -> tuple[list[Token], list[Done], list[object]]:
    events = list(model.generate_stream(request))
    return ([e for e in events if isinstance(e, Token)], [e for e in events if isinstance(e, Done)], events)


def test_registered_through_the_kb_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KB_LOAD_PLUGINS", "llamacpp")
    registration = load_registry().get("language_models", "llamacpp")
    assert registration.factory is make_model
    assert registration.info["licence"] == DEFAULT_MODEL.licence


def test_satisfies_the_protocol_and_names_the_default(model: LlamaCppModel) -> None:
    assert isinstance(model, LanguageModel)
    assert model.model_ref.id == DEFAULT_MODEL.id and model.model_ref.provider == "llamacpp"
    assert model.context_tokens == 2048
    assert model.check() == []


def test_stream_is_tokens_then_exactly_one_done(model: LlamaCppModel) -> None:
    tokens, dones, events = _collect(model, COUNTING)
    assert tokens and all(t.text for t in tokens)
    assert len(dones) == 1 and events[-1] is dones[0]
    done = dones[0]
    assert done.finish_reason in ("stop", "length") and done.error is None
    assert done.prompt_tokens == len(model.prompt_tokens(COUNTING))
    assert 0 < done.completion_tokens <= COUNTING.max_tokens


def test_uses_the_models_chat_template_and_answers_sensibly(model: LlamaCppModel) -> None:
    prompt = model.render_prompt(COUNTING)
    assert "<|im_start|>system\nYou are a precise assistant.<|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    text = "".join(t.text for t in _collect(model, COUNTING)[0])
    assert text.replace(" ", "").startswith("1,2,3,4,5")


def test_stream_equals_llama_cpp_non_streamed_chat_completion(model: LlamaCppModel) -> None:
    tokens, dones, _ = _collect(model, COUNTING)
    llama = model._load()
    reference = llama.create_chat_completion(
        [{"role": "system", "content": COUNTING.system}, {"role": "user", "content": COUNTING.user}],
        max_tokens=COUNTING.max_tokens,
        temperature=0.0,
        seed=COUNTING.seed,
        top_k=40,
        top_p=0.95,
        min_p=0.05,
        repeat_penalty=model.settings.repeat_penalty,
    )
    assert "".join(t.text for t in tokens) == reference["choices"][0]["message"]["content"]
    assert dones[0].prompt_tokens == reference["usage"]["prompt_tokens"]
    assert dones[0].completion_tokens == reference["usage"]["completion_tokens"]


def test_two_runs_with_the_same_seed_are_identical(model: LlamaCppModel) -> None:
    warm = GenerateRequest(system="", user="Write one sentence about rivers.", max_tokens=16, temperature=0.8, seed=3)
    first = "".join(t.text for t in _collect(model, warm)[0])
    assert first == "".join(t.text for t in _collect(model, warm)[0])


def test_stop_string_ends_generation_before_it(model: LlamaCppModel) -> None:
    full = "".join(t.text for t in _collect(model, COUNTING)[0])
    assert ", 6" in full
    tokens, dones, _ = _collect(model, attrs.evolve(COUNTING, stop=(", 6",)))
    text = "".join(t.text for t in tokens)
    assert dones[0].finish_reason == "stop"
    assert text == full[: full.index(", 6")]


def test_max_tokens_ends_with_length(model: LlamaCppModel) -> None:
    tokens, dones, _ = _collect(model, attrs.evolve(COUNTING, max_tokens=3))
    assert dones[0].finish_reason == "length" and dones[0].completion_tokens == 3
    assert tokens


def test_count_tokens_matches_an_independent_llama_tokenizer(model: LlamaCppModel) -> None:
    vocab = llama_cpp.Llama(model_path=model.model_ref.path, vocab_only=True, verbose=False)
    for text in ("", "hello world", "백업은 매일 밤 02:30 UTC에 실행된다.", "근거가 부족하다 [#1] 数据库"):
        assert model.count_tokens(text) == len(vocab.tokenize(text.encode("utf-8"), add_bos=False))
    assert model.count_tokens("백업은 매일 밤 실행된다") > len("백업은 매일 밤 실행된다") / 4


def test_grammar_restricts_output_to_yes_or_no(model: LlamaCppModel) -> None:
    grammar = 'root ::= "yes" | "no"'
    for user in ("Is water wet? Answer yes or no.", "Write a long poem about the sea."):
        tokens, dones, _ = _collect(model, GenerateRequest(system="", user=user, max_tokens=8, grammar=grammar))
        assert "".join(t.text for t in tokens) in ("yes", "no")
        assert dones[0].finish_reason == "stop"


def test_grammar_can_force_citation_markers(model: LlamaCppModel) -> None:
    grammar = 'root ::= [A-Za-z ,.]{1,40} " [#" ("1" | "2") "]"'
    request = GenerateRequest(
        system="Answer from the evidence.",
        user="[#1] The sky is blue.\n\nWhat colour is the sky?",
        max_tokens=40,
        grammar=grammar,
    )
    text = "".join(t.text for t in _collect(model, request)[0])
    assert text.endswith(("[#1]", "[#2]"))


def test_invalid_grammar_is_a_kb_error(model: LlamaCppModel) -> None:
    with pytest.raises(KbError, match="not valid GBNF"):
        model.generate_stream(GenerateRequest(system="", user="hi", grammar="root ::= (unclosed"))


def test_prompt_longer_than_the_context_is_a_kb_error(model: LlamaCppModel) -> None:
    with pytest.raises(KbError, match="context holds 2048"):
        model.generate_stream(GenerateRequest(system="", user="word " * 3000))


def test_missing_model_file_is_a_one_line_kb_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(KbError) as caught:
        make_model(FactoryContext(_config(tmp_path, model=str(missing))))
    assert str(missing) in str(caught.value) and "\n" not in str(caught.value)


def test_model_path_from_backend_options_and_non_gguf_file(tmp_path: Path) -> None:
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"not a model")
    with pytest.raises(KbError, match="not a GGUF model file"):
        make_model(FactoryContext(_config(tmp_path), {"model": str(fake)}))


# -- the prompt prefix state and the answer check ----------------------------------------------------

EXAMPLES = (("Evidence: roses are pruned in late winter.\n\nQuestion: When are roses pruned?", "In late winter [#1]."),)


def _asked(question: str, evidence: str) -> GenerateRequest:
    return GenerateRequest(
        system="Answer from the evidence only, citing it like [#1].",
        examples=EXAMPLES,
        user=f"Evidence: {evidence}\n\nQuestion: {question}",
        max_tokens=24,
        temperature=0.0,
        seed=3,
    )


def test_the_prefix_state_is_reused_and_answers_repeat(model: LlamaCppModel, tmp_path: Path) -> None:
    """System message and examples are evaluated once; from memory or from the state file, the answer is the same."""
    model.count_tokens("x")  # the default model is joined into its cache on first use
    settings = attrs.evolve(model.settings, packaged=None, state_dir=tmp_path)
    first = LlamaCppModel(settings)
    request = _asked("What port does the daemon use?", "The daemon listens on TCP port 7341.")
    tokens_a, (done_a,), _ = _collect(first, request)
    tokens_b, (done_b,), _ = _collect(first, request)
    assert done_a.cached_tokens == 0 and done_b.cached_tokens > 0  # computed, then restored
    assert "".join(t.text for t in tokens_a) == "".join(t.text for t in tokens_b)
    assert len(list(tmp_path.glob("*.kvstate"))) == 1
    first.close()  # one extra model in memory at a time
    second = LlamaCppModel(settings)  # as a new process would: the state comes from the file
    tokens_c, (done_c,), _ = _collect(second, request)
    second.close()
    assert done_c.cached_tokens == done_b.cached_tokens  # restored from the file
    assert "".join(t.text for t in tokens_c) == "".join(t.text for t in tokens_a)


def test_the_answer_check_tells_an_answering_passage_from_one_that_is_not(model: LlamaCppModel) -> None:
    def judged(passage: str) -> GenerateRequest:
        return GenerateRequest(
            system="You check whether a passage answers a question. Reply with one word: Yes or No.",
            user=f"Passage:\n{passage}\n\nQuestion: What port does the daemon use?\n\n"
            "Does the passage state the answer to this question? Reply Yes or No.",
        )

    stated, missing = judged("The daemon listens on TCP port 7341."), judged("The daemon was written in Rust in 2021.")
    answer = _asked("What port does the daemon use?", "The daemon listens on TCP port 7341.")
    before = "".join(t.text for t in _collect(model, answer)[0])
    p_stated, p_missing = model.yes_probability(stated), model.yes_probability(missing)
    assert 0.0 <= p_missing < 0.5 < p_stated <= 1.0
    assert model.yes_probability(stated) == p_stated  # the same question gives the same probability
    # a check between two answers leaves nothing behind: the answer after it is the answer before it
    tokens, (done,), _ = _collect(model, answer)
    assert "".join(t.text for t in tokens) == before and done.cached_tokens > 0
    assert "7341" in before


COFFEE = "In 300 adults, blood pressure rose by 4 mmHg after four weeks of daily coffee, against none."


def _coffee_question(max_tokens: int) -> GenerateRequest:
    """A yes/no question whose evidence says yes."""
    return GenerateRequest(
        system="Answer from the evidence only, citing it like [#1]. Begin a yes/no answer with Yes. or No.",
        user=f"Evidence:\n[#1] {COFFEE}\n\nQuestion: Does daily coffee raise blood pressure?",
        max_tokens=max_tokens,
    )


def test_a_verdict_opening_decides_yes_or_no_and_leaves_the_rest_to_the_model(model: LlamaCppModel) -> None:
    plain = _coffee_question(32)

    def opened(share: float) -> str:
        return "".join(
            t.text for t in _collect(model, attrs.evolve(plain, verdict=VerdictOpening("Yes", "No", share)))[0]
        )

    own = "".join(t.text for t in _collect(model, plain)[0])
    assert own.startswith("Yes")
    assert opened(0.5) == own  # 0.5 is the model's own choice
    assert opened(0.9999) == own
    assert opened(0.0001).startswith("No")  # any P(No) at all: "No", then the model's own words
    off_topic = attrs.evolve(plain, user="Evidence:\n[#1] The garden gate is green.\n\nQuestion: What is 2 + 2?")
    as_is = "".join(t.text for t in _collect(model, off_topic)[0])
    decided = attrs.evolve(off_topic, verdict=VerdictOpening("Yes", "No", 0.0001))
    assert "".join(t.text for t in _collect(model, decided)[0]) == as_is  # a first token that is no verdict stays


def test_the_share_a_verdict_was_decided_on_is_reported_in_done(model: LlamaCppModel) -> None:
    request = _coffee_question(8)
    (done,) = _collect(model, attrs.evolve(request, verdict=VerdictOpening("Yes", "No", 0.5)))[1]
    assert done.verdict_no_share is not None and 0.0 <= done.verdict_no_share < 0.5  # the model said yes
    assert _collect(model, request)[1][0].verdict_no_share is None  # no verdict asked, none reported


def test_a_verdict_replaces_an_opening_that_is_not_an_allowed_alternative(model: LlamaCppModel) -> None:
    system = (
        "Answer from the evidence only, citing it like [#1]. "
        "If the evidence does not say, reply only: Insufficient evidence."
    )

    def reply(question: str, evidence: str, alternatives: tuple[str, ...] | None) -> str:
        request = GenerateRequest(
            system=system,
            user=f"Evidence:\n[#1] {evidence}\n\nQuestion: {question}",
            max_tokens=24,
            verdict=VerdictOpening("Yes", "No", 0.0001, alternatives),
        )
        return "".join(t.text for t in _collect(model, request)[0])

    unanswered = ("Is the garden gate open?", "The garden gate is green.")
    allowed = ("Insufficient", "Mixed")
    assert reply(*unanswered, allowed).startswith("Insufficient evidence")  # an allowed opening stays
    assert reply(*unanswered, None).startswith("Insufficient evidence")
    assert reply(*unanswered, ()).startswith("No")  # no opening allowed but the verdict
    explained_first = ("Does daily coffee raise blood pressure? Start with the number of adults.", COFFEE)
    assert reply(*explained_first, None).startswith("300")  # the model explains before any verdict
    assert reply(*explained_first, allowed).startswith("No")  # the verdict first, then the model's own words


# -- preloading --------------------------------------------------------------------------------------


def test_preload_loads_in_the_background_once_and_answers_as_a_model_loaded_on_first_use(
    model: LlamaCppModel,
) -> None:
    model.count_tokens("x")  # the default model is joined into its cache on first use
    model.close()  # one model in memory at a time
    fresh = LlamaCppModel(model.settings)
    assert isinstance(fresh, Preloadable)
    fresh.preload()
    fresh.preload()  # a second call while loading starts nothing more
    (loader,) = [t for t in threading.enumerate() if t.name == "kb-llamacpp-preload"]
    loader.join()
    assert fresh._llama is not None  # loaded by the thread, before any use
    fresh.preload()  # loaded: nothing to do
    assert not any(t.name == "kb-llamacpp-preload" for t in threading.enumerate())
    tokens, (done,), _ = _collect(fresh, COUNTING)
    fresh.close()
    expected, (expected_done,), _ = _collect(model, COUNTING)  # loaded again on first use
    assert "".join(t.text for t in tokens) == "".join(t.text for t in expected)
    assert done.completion_tokens == expected_done.completion_tokens


def test_a_preload_that_fails_raises_nothing_and_the_use_says_why(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)  # the magic, then nothing llama.cpp can load
    llm = make_model(FactoryContext(_config(tmp_path, model=str(broken))))
    assert isinstance(llm, LlamaCppModel)
    llm.preload()
    for thread in threading.enumerate():
        if thread.name == "kb-llamacpp-preload":
            thread.join()
    with pytest.raises(KbError, match="llama.cpp could not load"):
        llm.count_tokens("x")
