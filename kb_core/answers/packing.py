"""Packing: which retrieved chunks the model reads, under which markers, within a token budget.

Every packed token costs the user time before the first word (prefill), so only hits that can
matter are packed: the first hit always; a later one while fewer than ``max_chunks`` are packed
and its score is at least ``min_relative_score`` of the top hit's. A hit far behind the first
adds reading, not evidence, with one exception: a yes/no question is judged on what its document
reports as a whole (a study's results, beside the methods that restate the question), so for it
the top hit's other retrieved sections are packed whatever their score; and a question that lists every row
("list every ...") or counts a table's rows reads the top hit's document whole (:func:`with_whole_document`), as
far as the budget allows (:func:`unread_note` says what did not fit).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kb_core.answers.prompts import PromptTemplate, QuestionPrompt
from kb_core.answers.tables import readable_tables
from kb_core.errors import KbError
from kb_core.extend.contracts import LanguageModel
from kb_core.types import Chunk, Hit, PackedChunk

#: Tokens a chat template adds around the system and user messages (role headers, BOS ...).
CHAT_TEMPLATE_SLACK = 48
#: The smallest evidence budget worth asking the model with.
MIN_EVIDENCE_TOKENS = 32

_DEFAULT_HEADER = "[#{marker} doc={doc} heading={heading} span=L{start}-L{end}]"


def format_entry(marker: int, chunk: Chunk, text: str | None = None, header: str = _DEFAULT_HEADER) -> str:
    """One evidence entry: the template's header line for ``[#marker]``, then the chunk's text."""
    heading = " > ".join(chunk.heading_path)
    line = header.format(marker=marker, doc=chunk.doc_path, heading=heading, start=chunk.start_line, end=chunk.end_line)
    return f"{line.rstrip(' >')}\n{readable_tables(chunk.text if text is None else text)}"


def _fit_prefix(text: str, fits: Callable[[str], bool]) -> str:
    """The longest prefix of ``text`` (cut at a line end when possible) for which ``fits`` holds."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(text[:middle]):
            low = middle
        else:
            high = middle - 1
    prefix = text[:low]
    line_end = prefix.rfind("\n")
    return prefix[:line_end] if line_end > len(prefix) // 2 else prefix


def select(hits: Sequence[Hit], max_chunks: int, min_relative_score: float, whole_document: bool = False) -> list[Hit]:
    """The hits worth packing, at most ``max_chunks``: the first; then those within ``min_relative_score``
    of it, and with ``whole_document`` those from the first hit's own document whatever their score."""
    if not hits:
        return []
    floor = hits[0].score * min_relative_score
    first = hits[0].doc_path
    kept = (h for h in hits[1:] if h.score >= floor or (whole_document and h.doc_path == first))
    return [hits[0], *kept][: max(1, max_chunks)]


#: The retriever a hit is marked with when it was packed because its document is read whole.
WHOLE = "whole_document"


def with_whole_document(hits: Sequence[Hit], document: Sequence[Chunk], retrieved: Sequence[Hit] = ()) -> list[Hit]:
    """``hits`` with the first hit's ``document`` (its chunks) whole and in order before the others: a count over
    a table's rows reads every row, not the retrieved share of them. A chunk no hit (nor ``retrieved``) holds
    gets a hit of its own, marked :data:`WHOLE`, with the first hit's score."""
    if not hits or not document:
        return list(hits)
    first = hits[0]
    known = {hit.chunk_id: hit for hit in (*retrieved, *hits)}
    own = [
        known.get(chunk.chunk_id)
        or Hit(
            chunk.chunk_id, chunk.doc_path, first.score, first.rank, chunk.citation, chunk.heading_path, retriever=WHOLE
        )
        for chunk in sorted(document, key=lambda chunk: chunk.ordinal)
    ]
    taken = {chunk.chunk_id for chunk in document}
    return [*own, *(hit for hit in hits if hit.chunk_id not in taken)]


def unread_note(ref: str, unread: int) -> str:
    """What kb says of an answer that needs every row of ``ref``'s document when ``unread`` of its passages did not
    fit the model's context (a count is refused with it; a list is given with it)."""
    return f"{unread} passage(s) of {ref.split('#')[0]} did not fit the model's context: every row was not read"


def pack(
    hits: Sequence[Hit],
    chunks: dict[str, Chunk],
    budget: int,
    count_tokens: Callable[[str], int],
    template: PromptTemplate | None = None,
) -> list[tuple[PackedChunk, str]]:
    """Pack hits in order into at most ``budget`` tokens: (packed chunk, entry text) pairs.

    Stops at the first hit that would overflow the budget; the first hit is always packed,
    truncated to the budget if it alone is too large. Hits whose chunk no longer exists are skipped.
    """
    header = template.entry_header if template is not None else _DEFAULT_HEADER
    packed: list[tuple[PackedChunk, str]] = []
    used = 0
    for hit in hits:
        chunk = chunks.get(hit.chunk_id)
        if chunk is None:
            continue
        marker = len(packed) + 1
        entry = format_entry(marker, chunk, header=header)
        cost = count_tokens(entry + "\n\n")
        truncated = False
        if used + cost > budget:
            if packed:
                break
            fits = lambda t, m=marker, c=chunk: count_tokens(format_entry(m, c, t, header) + "\n\n") <= budget  # noqa: E731
            text = _fit_prefix(chunk.text, fits)
            entry = format_entry(marker, chunk, text, header)
            cost, truncated = count_tokens(entry + "\n\n"), True
        used += cost
        item = PackedChunk(marker, chunk.chunk_id, str(chunk.citation), round(hit.score, 4), cost, truncated, entry)
        packed.append((item, entry))
    return packed


def evidence_budget(llm: LanguageModel, prompt: QuestionPrompt, answer_tokens: int, max_context_tokens: int) -> int:
    """Evidence tokens: min(max_context_tokens, the model's context - the prompt around it - the answer's tokens)."""
    template = prompt.template
    examples = sum(llm.count_tokens(a) + llm.count_tokens(b) + CHAT_TEMPLATE_SLACK for a, b in template.examples)
    overhead = llm.count_tokens(template.system) + llm.count_tokens(prompt.user("")) + CHAT_TEMPLATE_SLACK + examples
    room = llm.context_tokens - overhead - answer_tokens
    if room < MIN_EVIDENCE_TOKENS:
        raise KbError(
            f"the model's context ({llm.context_tokens} tokens) leaves no room for evidence "
            f"(prompt {overhead} + answer {answer_tokens} tokens)",
            hint="raise [models.llm] context_tokens, or lower [models.llm] max_tokens"
            " or [conversations] history_tokens",
        )
    return min(max_context_tokens, room)
