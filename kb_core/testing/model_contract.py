"""The contract of a LanguageModel, as a pytest class.

::

    import pytest
    from kb_core.testing import LanguageModelContract

    class TestMyBackend(LanguageModelContract):
        @pytest.fixture
        def language_model(self):
            return MyModel(...)

        @pytest.fixture
        def unavailable_language_model(self):
            return lambda: MyModel(url="http://127.0.0.1:9")  # nothing listens there

The second fixture makes a model whose backend cannot work (a missing file, a closed port): kb
relies on such failures being one :class:`~kb_core.errors.KbError`, raised when the model is
made or used, or a stream that ends with ``Done(finish_reason="error")``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kb_core.errors import KbError
from kb_core.extend.contracts import LanguageModel
from kb_core.types import Done, GenerateRequest, Token

REQUEST = GenerateRequest(
    system="You repeat the user's words exactly, nothing else.",
    user="one two three four five six seven eight",
    max_tokens=24,
    temperature=0.0,
    seed=7,
)


def run(model: LanguageModel, request: GenerateRequest) -> tuple[str, Done]:
    """The text and the closing Done of one stream, checking that exactly one Done closes it."""
    events = list(model.generate_stream(request))
    assert events, "a stream has at least its Done"
    *head, done = events
    assert isinstance(done, Done), "the last event is Done"
    tokens = [t for t in head if isinstance(t, Token)]
    assert len(tokens) == len(head), "every other event is a Token"
    return "".join(t.text for t in tokens), done


class LanguageModelContract:
    """What every LanguageModel must do. Provide ``language_model`` and ``unavailable_language_model``."""

    @pytest.fixture
    def language_model(self) -> LanguageModel:
        """The model under test, ready to generate."""
        raise NotImplementedError("define a 'language_model' fixture in your LanguageModelContract subclass")

    @pytest.fixture
    def unavailable_language_model(self) -> Callable[[], LanguageModel]:
        """A function that makes the model with a backend that cannot work."""
        raise NotImplementedError("define an 'unavailable_language_model' fixture in your subclass")

    def test_declares_what_it_is(self, language_model: LanguageModel) -> None:
        assert language_model.model_ref.id
        assert language_model.context_tokens > 0
        assert isinstance(language_model.check(), list)

    def test_counts_tokens(self, language_model: LanguageModel) -> None:
        short = language_model.count_tokens("heron")
        assert 0 < short < language_model.count_tokens("heron " * 40)

    def test_a_stream_is_tokens_closed_by_exactly_one_done(self, language_model: LanguageModel) -> None:
        text, done = run(language_model, REQUEST)
        assert text.strip(), "a plain request gets some text"
        assert done.finish_reason in ("stop", "length"), done
        assert done.error is None
        assert 0 <= done.completion_tokens <= REQUEST.max_tokens

    def test_the_same_seed_gives_the_same_text(self, language_model: LanguageModel) -> None:
        request = GenerateRequest(REQUEST.system, REQUEST.user, max_tokens=16, temperature=0.9, seed=11)
        assert run(language_model, request)[0] == run(language_model, request)[0]

    def test_a_stop_sequence_ends_the_text_before_it(self, language_model: LanguageModel) -> None:
        text, _ = run(language_model, GenerateRequest(REQUEST.system, REQUEST.user, stop=("four",), max_tokens=24))
        assert "four" not in text

    def test_an_unavailable_backend_is_one_kb_error(
        self, unavailable_language_model: Callable[[], LanguageModel]
    ) -> None:
        try:
            model = unavailable_language_model()
            _, done = run(model, REQUEST)
        except KbError as error:
            assert str(error).strip() and "\n" not in error.message
        else:
            assert done.finish_reason == "error" and done.error
