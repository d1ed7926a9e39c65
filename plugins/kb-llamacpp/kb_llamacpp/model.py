"""A :class:`kb_core.plugin.LanguageModel` that runs a GGUF file in process with llama-cpp-python.

The prompt is rendered with the model's own chat template (``tokenizer.chat_template`` in the
GGUF metadata) and tokenized exactly once, so ``Done.prompt_tokens`` is exact. The part of it
before the user's message (template opening and system message) is evaluated once and reused
across questions and processes (:mod:`kb_llamacpp.prefix_cache`); ``Done.cached_tokens`` says
how many prompt tokens were reused. Generation runs
token by token through ``Llama.generate``: every sampled token is counted, end-of-generation
tokens and stop strings end the stream with ``"stop"``, and the token budget (or a full
context) with ``"length"``.
"""

from __future__ import annotations

import codecs
import contextlib
import importlib.util
import io
import logging
import os
import random
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from kb_core import KbError, ModelUnavailableError
from kb_core.plugin import Done, GenerateRequest, ModelRef, Problem, Progress, StreamEvent, Token
from kb_llamacpp.loading import CRASH_HINT, WeightRepacking, model_parameters, use_extra_buffers
from kb_llamacpp.packaged import PackagedModel, cache_dir, is_available, materialize
from kb_llamacpp.prefix_cache import PrefixCache
from kb_llamacpp.stops import StopScanner
from kb_llamacpp.verdicts import OpenWithVerdict, spellings, yes_no_mass

GGUF_MAGIC = b"GGUF"

log = logging.getLogger(__name__)


@attrs.frozen
class LlamaSettings:
    """How to load and sample one GGUF model."""

    path: Path
    model_id: str
    context_tokens: int = 4096
    threads: int = 0
    batch_tokens: int = 512
    repeat_penalty: float = 1.0
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    packaged: PackagedModel | None = None
    progress: Progress | None = attrs.field(default=None, eq=False)  # (stage, done, total) while joining and loading
    state_dir: Path | None = None  # where prompt-prefix states are saved (default: the model cache)
    weight_repacking: WeightRepacking = "auto"  # see kb_llamacpp.loading


def _check_file(path: Path) -> str | None:
    """Why ``path`` cannot be a GGUF model, or None when it looks like one."""
    if not path.is_file():
        return f"language model file not found: {path}"
    with path.open("rb") as handle:
        if handle.read(4) != GGUF_MAGIC:
            return f"not a GGUF model file: {path}"
    return None


class LlamaCppModel:
    """A GGUF model loaded on first use and kept until :meth:`close` (at the latest, when the process exits).

    One generation at a time: consume (or drop) a stream before starting the next.
    """

    #: What to try when generating crashes the process (``kb doctor`` shows it).
    crash_hint = CRASH_HINT

    def __init__(self, settings: LlamaSettings) -> None:
        problem = self._problem(settings)
        if problem:
            hint = "" if settings.packaged else "set [models.llm] model = '/path/to/model.gguf'"
            raise ModelUnavailableError(problem, hint=hint)
        self.settings = settings
        self.context_tokens = settings.context_tokens
        self.model_ref = ModelRef(id=settings.model_id, provider="llamacpp", path=str(settings.path))
        self._llama: Any = None
        self._release: Callable[[], Any] = lambda: None
        self._template: Any = None
        self._prefixes: PrefixCache | None = None
        self._prefix_of: dict[tuple[str, tuple[tuple[str, str], ...]], list[int]] = {}
        self._loading = threading.Lock()  # one load at a time: a preload and the first use wait for each other
        self._preloading: threading.Thread | None = None
        self._closes = 0  # times closed: a preload started before a close does not load after it

    @staticmethod
    def _problem(settings: LlamaSettings) -> str | None:
        if settings.packaged is not None:
            return is_available(settings.packaged, settings.path.parent)
        return _check_file(settings.path)

    # -- loading ------------------------------------------------------------------------------

    def preload(self) -> None:
        """Start loading the model in a background thread and return at once (see ``Preloadable``)."""
        if self._llama is None and self._preloading is None:
            self._preloading = threading.Thread(
                target=self._load_quietly, args=(self._closes,), name="kb-llamacpp-preload"
            )
            self._preloading.start()

    def _load_quietly(self, closes: int) -> None:
        """Load without progress; not when the model was closed since :meth:`preload` was called."""
        try:
            with self._loading:
                if closes == self._closes:
                    self._load_once(None)
        except Exception as exc:  # noqa: BLE001 - the next use loads again and raises it in its caller's thread
            log.debug("preloading %s failed: %s", self.settings.path, exc)
        finally:
            self._preloading = None

    def _load(self) -> Any:
        if self._llama is not None:  # (published last, when everything it needs is in place: no lock on every call)
            return self._llama
        with self._loading:  # a preload may be under way
            return self._load_once(self.settings.progress)

    def _load_once(self, progress: Progress | None) -> Any:
        if self._llama is None:
            import llama_cpp
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            report = progress or (lambda stage, done, total: None)
            if self.settings.packaged is not None:
                materialize(self.settings.packaged, self.settings.path.parent, report)
            report("loading the model", 0, 1)

            threads = self.settings.threads or os.cpu_count() or 1
            repack = use_extra_buffers(self.settings.weight_repacking)
            try:
                with model_parameters(repack):
                    llama = llama_cpp.Llama(
                        model_path=str(self.settings.path),
                        n_ctx=self.settings.context_tokens,
                        n_batch=self.settings.batch_tokens,
                        n_threads=threads,
                        n_threads_batch=threads,
                        verbose=False,
                    )
            except (ValueError, RuntimeError) as exc:
                raise ModelUnavailableError(
                    f"llama.cpp could not load {self.settings.path}: {exc}",
                    hint="check that the file is a complete GGUF model this llama.cpp supports",
                ) from None
            template = llama.metadata.get("tokenizer.chat_template")
            if not template:
                raise ModelUnavailableError(
                    f"{self.settings.path} has no chat template in its metadata",
                    hint="use an instruction-tuned GGUF model (its metadata carries tokenizer.chat_template)",
                )
            model = llama._model
            eos, bos = llama.token_eos(), llama.token_bos()
            self._template = Jinja2ChatFormatter(
                template=template,
                eos_token=model.token_get_text(eos) if eos != -1 else "",
                bos_token=model.token_get_text(bos) if bos != -1 else "",
                add_generation_prompt=True,
            )
            # Freed when this model is (nothing else holds it: an atexit hook on self.close kept every model
            # loaded in a process alive until exit), else at exit, not by llama-cpp-python's finalizers at shutdown.
            self._release = weakref.finalize(self, llama.close)
            settings = self.settings
            key = f"ctx={settings.context_tokens} batch={settings.batch_tokens} threads={threads} repack={repack}"
            self._prefixes = PrefixCache(self.settings.state_dir or cache_dir(), self.settings.path, key)
            self._llama = llama  # last: everything it needs is in place
            report("loading the model", 1, 1)
        return self._llama

    def close(self) -> None:
        """Free the model and its context (it loads again on next use); a load under way finishes first,
        and a preload not begun yet does not begin."""
        with self._loading:
            self._closes += 1
            llama, self._llama = self._llama, None
        if llama is not None:
            self._release()  # llama.close(), once

    # -- tokens -------------------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in this model's vocabulary (no BOS, special tokens as text)."""
        return len(self._load().tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def render_prompt(self, request: GenerateRequest, *turns: tuple[str, str]) -> str:
        """The request (then any further ``(role, content)`` turns) as the chat template renders it."""
        self._load()
        messages = [{"role": "system", "content": request.system}] if request.system else []
        for asked, answered in request.examples:
            messages += [{"role": "user", "content": asked}, {"role": "assistant", "content": answered}]
        messages.append({"role": "user", "content": request.user})
        messages += [{"role": role, "content": content} for role, content in turns]
        return str(self._template(messages=messages).prompt)

    def _tokens(self, text: str) -> list[int]:
        return list(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def prompt_tokens(self, request: GenerateRequest) -> list[int]:
        """The exact tokens the model reads for ``request``."""
        return self._tokens(self.render_prompt(request))  # the template writes any BOS the model wants

    def prefix_tokens(self, request: GenerateRequest, tokens: list[int]) -> list[int]:
        """The tokens of ``tokens`` before the (last) user message, when they tokenize apart cleanly (else []).

        That is the chat template's opening, the system message and any worked examples.
        """
        key = (request.system, request.examples)
        if key not in self._prefix_of:  # the same for every question of a template: rendered once
            prompt = self.render_prompt(request)
            cut = prompt.rfind(request.user) if request.user else -1
            self._prefix_of[key] = self._tokens(prompt[:cut]) if cut > 0 else []
        prefix = self._prefix_of[key]
        return prefix if len(prefix) < len(tokens) and tokens[: len(prefix)] == prefix else []

    # -- generation ---------------------------------------------------------------------------

    def generate_stream(self, request: GenerateRequest) -> Iterator[StreamEvent]:
        """Stream Token events, then one Done with exact token counts.

        A prompt that does not fit the context, or a grammar llama.cpp rejects, raises KbError
        before the stream starts; a failure while generating ends it with ``finish_reason="error"``.
        """
        llama = self._load()
        tokens = self.prompt_tokens(request)
        room = self.context_tokens - len(tokens)
        if room <= 0:
            raise KbError(
                f"the prompt takes {len(tokens)} tokens but the context holds {self.context_tokens}",
                hint="raise [models.llm] context_tokens or lower [rag] max_context_tokens",
            )
        grammar = self._grammar(request.grammar)
        return self._stream(llama, tokens, request, min(request.max_tokens, room), grammar)

    def _grammar(self, text: str | None) -> Any:
        if not text:
            return None
        import llama_cpp

        _validate_grammar(text, self._llama)
        return llama_cpp.LlamaGrammar.from_string(text, verbose=False)

    def _stream(
        self, llama: Any, prompt: list[int], request: GenerateRequest, budget: int, grammar: Any
    ) -> Iterator[StreamEvent]:
        import llama_cpp

        seed = request.seed if request.seed is not None else random.randrange(2**31)
        cached = self._start_from_prefix(llama, request, prompt)
        llama.set_seed(seed)
        scanner = StopScanner(tuple(s for s in request.stop if s))
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        vocab = llama._model.vocab
        completion: list[int] = []
        finish = "length"
        opening = self._verdict_processor(request)
        try:
            if budget > 0:
                for token in llama.generate(
                    prompt,
                    temp=max(0.0, request.temperature),
                    top_k=self.settings.top_k,
                    top_p=self.settings.top_p,
                    min_p=self.settings.min_p,
                    repeat_penalty=self.settings.repeat_penalty,
                    grammar=grammar,
                    logits_processor=None if opening is None else llama_cpp.LogitsProcessorList([opening]),
                ):
                    if llama_cpp.llama_vocab_is_eog(vocab, token):
                        finish = "stop"
                        break
                    piece = llama.detokenize([token])
                    completion.append(token)
                    text = scanner.feed(decoder.decode(piece))
                    if text:
                        yield Token(text)
                    if scanner.stopped:
                        finish = "stop"
                        break
                    if len(completion) >= budget:
                        break
            rest = scanner.feed(decoder.decode(b"", final=True)) + scanner.flush()
            if rest:
                yield Token(rest)
        except Exception as exc:  # llama.cpp failures surface as assorted exception types
            yield Done(
                "error", len(prompt), len(completion), error=f"{type(exc).__name__}: {exc}", cached_tokens=cached
            )
            return
        share = None if opening is None else opening.no_share_seen
        yield Done(finish, len(prompt), len(completion), cached_tokens=cached, verdict_no_share=share)

    def _start_from_prefix(self, llama: Any, request: GenerateRequest, tokens: list[int]) -> int:
        """Leave the context holding the prompt's fixed prefix; the tokens reused (0 when there is none).

        The prefix is always its own batch, restored or computed, so answers repeat either way.
        """
        prefix = self.prefix_tokens(request, tokens)
        if not prefix or self._prefixes is None:
            llama.reset()
            return 0
        return len(prefix) if self._prefixes.prepare(llama, prefix) else 0

    # -- the answer check -----------------------------------------------------------------------

    def yes_probability(self, request: GenerateRequest) -> float:
        """P(Yes) / (P(Yes) + P(No)) for the first token of the reply to ``request``, without generating.

        The prompt prefix (the system message) is restored from the prefix cache and only the
        rest is evaluated.
        """
        import numpy as np

        llama = self._load()
        tokens = self.prompt_tokens(request)
        if len(tokens) >= self.context_tokens:
            return 1.0  # no room to ask: the check abstains
        self._start_from_prefix(llama, request, tokens)
        llama.n_tokens = _common_length(llama._input_ids.tolist(), tokens[:-1])
        llama.eval(tokens[llama.n_tokens :])
        logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),))
        yes = self._first_tokens(("Yes", "yes", " Yes", "YES"))
        no = self._first_tokens(("No", "no", " No", "NO"))
        p_yes, p_no = yes_no_mass(logits, sorted(yes), sorted(no))
        return p_yes / (p_yes + p_no)

    def _verdict_processor(self, request: GenerateRequest) -> OpenWithVerdict | None:
        """The logits processor that opens a yes/no answer as ``request.verdict`` says (None without one)."""
        if request.verdict is None:
            return None
        verdict = request.verdict
        alternatives = verdict.alternatives
        return OpenWithVerdict(
            verdict,
            self._first_tokens(spellings(verdict.yes)),
            self._first_tokens(spellings(verdict.no)),
            None if alternatives is None else self._first_tokens(tuple(s for w in alternatives for s in spellings(w))),
        )

    def _first_tokens(self, words: tuple[str, ...]) -> set[int]:
        return {self._llama.tokenize(w.encode("utf-8"), add_bos=False, special=False)[0] for w in words}

    # -- health -------------------------------------------------------------------------------

    def check(self) -> list[Problem]:
        """Problems that would stop generation: the runtime or the model file. Does not load it."""
        problems: list[Problem] = []
        if importlib.util.find_spec("llama_cpp") is None:
            problems.append(Problem("llamacpp", "llama-cpp-python is not installed", "pip install llama-cpp-python"))
        problem = self._problem(self.settings)
        if problem:
            problems.append(Problem("llamacpp", problem, "set [models.llm] model = '/path/to/model.gguf'"))
        return problems


def _validate_grammar(text: str, llama: Any) -> None:
    """Raise KbError when llama.cpp cannot parse the GBNF grammar ``text`` (its log is captured)."""
    import llama_cpp

    log = io.StringIO()
    with contextlib.redirect_stderr(log):
        sampler = llama_cpp.llama_sampler_init_grammar(llama._model.vocab, text.encode("utf-8"), b"root")
    if not sampler:
        reason = next((line.strip() for line in log.getvalue().splitlines() if line.strip()), "parse error")
        raise KbError(f"the generation grammar is not valid GBNF: {reason}", hint="fix the grammar's rules")
    llama_cpp.llama_sampler_free(sampler)


def _common_length(a: list[int], b: list[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    length = 0
    for x, y in zip(a, b):
        if x != y:
            break
        length += 1
    return length
