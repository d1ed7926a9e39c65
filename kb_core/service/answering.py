"""The answer service: every front end's questions, follow-ups, reads and writes over one knowledge base.

``kb ask``, ``kb chat``, ``kb serve`` (``/ask``, ``/threads``, ``/v1``, the page) and ``kb mcp`` run
questions through :class:`AnswerService`: readers in parallel, one writer, and one generation at a
time in one queue (:class:`~kb_core.service.gate.GenerationGate`); what each may show is its
:class:`~kb_core.service.showing.Showing`; what each says of an answer is :mod:`kb_core.service.words`
(in Markdown: :mod:`kb_core.service.markdown`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import attrs

from kb_core.answers.pipeline import AskOptions, ask
from kb_core.answers.streaming import TokenCallback
from kb_core.app import KnowledgeBase
from kb_core.config import Config
from kb_core.conversations import Turn, ask_in_thread
from kb_core.conversations.standalone import Standalone
from kb_core.errors import Cancelled
from kb_core.service.gate import GenerationGate
from kb_core.service.handles import Handles, share_embedder
from kb_core.service.showing import Showing
from kb_core.service.threads_in_use import ThreadInUse, ThreadsInUse
from kb_core.storage.threads import Thread, delete_thread, stored_thread
from kb_core.types import Answer

T = TypeVar("T")
#: Questions that may wait for the model while one is generated, and the longest one waits (seconds).
ASK_QUEUE = 4
ASK_WAIT_S = 300.0


class AnswerService:
    """Questions, follow-ups, reads and writes over one knowledge base, for every front end.

    Made with :meth:`serving` (a server: handles of its own) or :meth:`over` (one open knowledge base,
    the caller's). ``gate``: the one generation queue; ``showing``: what the front end shows.
    """

    def __init__(self, handles: Handles, gate: GenerationGate, showing: Showing) -> None:
        self.handles = handles
        self.gate = gate
        self.showing = showing
        self.threads_in_use = ThreadsInUse()

    @classmethod
    def serving(
        cls,
        config: Config,
        registry: Any = None,
        *,
        readers: int = 4,
        ask_queue: int = ASK_QUEUE,
        ask_wait_s: float = ASK_WAIT_S,
        query_cache: int = 2048,
        hide_paths: bool = True,
    ) -> AnswerService:
        """A service with handles of its own over the knowledge base ``config`` names (created if new): ``readers``
        reading handles, a writer and an asker sharing one embedder that caches ``query_cache`` query vectors."""
        base = registry if registry is not None else KnowledgeBase(config).registry
        shared = share_embedder(base, config.models.embedding.name, query_cache)
        KnowledgeBase(config, shared, create=True).close()  # make the store if it is new
        handles = Handles.pooled(lambda: KnowledgeBase(config, shared, create=False), readers)
        showing = Showing(hide_paths=hide_paths, kb_dir=config.kb_path.resolve())
        return cls(handles, GenerationGate(ask_queue, ask_wait_s), showing)

    @classmethod
    def over(
        cls, kb: KnowledgeBase, *, ask_queue: int = ASK_QUEUE, ask_wait_s: float = ASK_WAIT_S, hide_paths: bool = False
    ) -> AnswerService:
        """A service over ``kb`` (opened and closed by the caller): every call takes it in turn."""
        showing = Showing(hide_paths=hide_paths, kb_dir=kb.config.kb_path.resolve())
        return cls(Handles.single(kb), GenerationGate(ask_queue, ask_wait_s), showing)

    @property
    def registry(self) -> Any:
        """The plugins' registry the handles were made with."""
        return self.handles.writer.registry

    def read(self, work: Callable[[KnowledgeBase], T]) -> T:
        """``work(kb)`` on a reading handle (in parallel with other reads and with the one write)."""
        with self.handles.reading() as kb:
            return work(kb)

    def write(self, work: Callable[[KnowledgeBase], T]) -> T:
        """``work(kb)`` on the writer handle, one write at a time."""
        with self.handles.writing() as kb:
            return work(kb)

    def admit(self) -> None:
        """Take a place in the generation queue now (:class:`~kb_core.service.gate.GenerationBusy` when full);
        the next :meth:`ask` or :meth:`ask_in_thread` uses it, and gives it back whatever happens."""
        self.gate.admit()

    def ask(
        self,
        question: str,
        options: AskOptions = AskOptions(),
        on_token: TokenCallback | None = None,
        gone: threading.Event | None = None,
        *,
        admitted: bool = False,
    ) -> Answer:
        """Answer ``question`` when its turn at the model comes, as the front end shows answers.

        ``on_token`` hears the checked text as it is released (and ``""`` at each token while text is held back:
        a stream may say it is alive); ``gone``, once set, stops the question (out of the
        queue, or at the next token) with :class:`~kb_core.errors.Cancelled` and nothing stored;
        ``admitted``: the caller took its place with :meth:`admit` already.
        """
        answer = self._generate(lambda kb, token: ask(kb, question, options, on_token=token), on_token, gone, admitted)
        return self.showing.answer(answer, explain=options.explain)

    def ask_in_thread(
        self,
        question: str,
        thread_id: str | None,
        options: AskOptions = AskOptions(),
        on_token: TokenCallback | None = None,
        gone: threading.Event | None = None,
        on_standalone: Callable[[Standalone], None] | None = None,
        *,
        admitted: bool = False,
    ) -> Turn:
        """Ask ``question`` in the thread ``thread_id`` (None: a new one) and keep the turn, as :meth:`ask` does;
        ``on_standalone`` hears what kb searches with before retrieval and before any token."""

        def work(kb: KnowledgeBase, token: TokenCallback) -> Turn:
            return ask_in_thread(kb, question, thread_id, options, on_token=token, on_standalone=on_standalone)

        try:
            self.threads_in_use.enter(thread_id)  # not deleted under the question
        except ThreadInUse:
            if admitted:
                self.gate.withdraw()  # the place taken for it is given back
            raise
        try:
            turn = self._generate(work, on_token, gone, admitted)
        finally:
            self.threads_in_use.leave(thread_id)
        return attrs.evolve(turn, answer=self.showing.answer(turn.answer, explain=options.explain))

    def thread(self, thread_id: str) -> Thread:
        """The stored thread ``thread_id`` with its turns' answers as the front end shows answers."""
        found = self.read(lambda kb: stored_thread(kb.store, thread_id))
        turns = tuple(attrs.evolve(t, answer=self.showing.answer_json(t.answer)) for t in found.turns)
        return attrs.evolve(found, turns=turns)

    def delete_thread(self, thread_id: str) -> int:
        """Delete the thread with its turns and their stored answers (the number of turns); a
        :class:`~kb_core.service.threads_in_use.ThreadInUse` while a question is under way in it."""
        with self.threads_in_use.deleting(thread_id):
            return self.write(lambda kb: delete_thread(kb.store, thread_id))

    def _generate(
        self,
        work: Callable[[KnowledgeBase, TokenCallback], T],
        on_token: TokenCallback | None,
        gone: threading.Event | None,
        admitted: bool,
    ) -> T:
        """``work(kb, token)`` on the asking handle once it is this question's turn at the model."""

        def token(text: str) -> None:
            if gone is not None and gone.is_set():
                raise Cancelled("the client left; the answer was stopped")
            if on_token is not None:  # ("" while the pipeline holds text back: a front end may keep its client)
                on_token(text)

        if not admitted:
            self.gate.admit()
        with self.gate.turn(gone):
            if gone is not None and gone.is_set():
                raise Cancelled("the client left before its turn")
            with self.handles.asking() as kb:
                return work(kb, token)

    def warm(self) -> None:
        """Open every reading handle's indexes and the embedder, so the first request is as fast as the next."""
        for handle in self.handles.readers.handles:
            for name in handle.enabled_index_names():
                handle.index(name)
            handle.store.count_documents()
        self.handles.readers.handles[0].embedder().embed_query("warm up")

    @contextmanager
    def asker(self) -> Iterator[KnowledgeBase]:
        """The asking handle, outside any question (to load the language model ahead of the first)."""
        with self.handles.asking() as kb:
            yield kb

    def close_if_idle(self) -> bool:
        """Close the handles unless a call is using them (then False); for a process about to end."""
        return self.handles.close_if_idle()

    def close(self) -> None:
        """Close the handles the service made (a service :meth:`over` a caller's knowledge base closes it too)."""
        self.handles.close()
