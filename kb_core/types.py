"""Value types that cross the boundaries between the core, the plugins and the CLI.

Every type is an immutable attrs class; :data:`converter` (cattrs) turns them into plain
JSON-ready structures and back. Anything printed with ``--json`` is one of these, wrapped
in an envelope that names its ``schema_version`` (see :mod:`kb_core.schemas`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

import attrs
import cattrs

from kb_core import bounds
from kb_core.errors import KbError

converter = cattrs.Converter(omit_if_default=False)
converter.register_unstructure_hook(tuple, list)

SearchMode = Literal["lexical", "vector", "hybrid"]
SEARCH_MODES: tuple[str, ...] = ("lexical", "vector", "hybrid")
#: How a follow-up was made standalone (:mod:`kb_core.conversations.standalone`, ``[conversations] standalone``):
#: left as asked, completed by the model, or by the previous turn.
StandaloneMethod = Literal["as_asked", "model", "previous_turn"]
STANDALONE_METHODS: tuple[StandaloneMethod, ...] = ("as_asked", "model", "previous_turn")


class CitationError(KbError, ValueError):
    """A citation kb cannot read, or one naming a line, page or box out of bounds (a ValueError too, as
    :meth:`Citation.parse` raised before)."""


#: What follows ``#`` in every citation kb prints: its lines (``L12-L34``), after the page they lie on
#: (``page=3&``, ``kb pages``) or the slide, chapter or notebook cell (``slide=7&``, ``chapter=3&``,
#: ``cell=12&``: a part of a deck, e-book or notebook, counted as pages are) and the region OCR read them in
#: (``page=3&xywh=72,140,300,40&``). A sign is matched so that ``L-1`` is refused as a line out of bounds
#: rather than as another form.
_FRAGMENT = re.compile(
    r"(?:(page|slide|chapter|cell)=(-?[0-9]+)&)?(?:xywh=(-?[0-9]+),(-?[0-9]+),(-?[0-9]+),(-?[0-9]+)&)?"
    r"L(-?[0-9]+)-L(-?[0-9]+)"
)
#: The bound of each part a citation may name before its lines.
_PARTS = {"page": bounds.PAGE, "slide": bounds.SLIDE, "chapter": bounds.CHAPTER, "cell": bounds.CELL}
#: Digits read of a number in a citation: more is out of every bound (and ``int()`` of 4,301 digits raises).
_MAX_DIGITS = 20
_CITATION_HINT = (
    "give a citation as kb prints it, like report.pdf#L8-L15, scan.pdf#page=2&L8-L15 or deck.pptx#slide=2&L8-L15"
)


@attrs.frozen
class Citation:
    """Where a passage lives: a document path and its line span (``path#L12-L34``)."""

    path: str
    start_line: int
    end_line: int

    def __str__(self) -> str:
        return f"{self.path}#L{self.start_line}-L{self.end_line}"

    @classmethod
    def parse(cls, text: str, page_count: Callable[[str], int | None] | None = None) -> Citation:
        """Parse any citation kb prints: ``path#L12-L34``, ``path#page=3&L12-L34``,
        ``path#page=3&xywh=72,140,300,40&L12-L34``, or with a slide, chapter or notebook cell in place of
        the page (``deck.pptx#slide=7&L40-L52``, ``book.epub#chapter=3&L9-L20``, ``nb.ipynb#cell=4&L8-L9``);
        a :class:`CitationError` for anything else.

        Lines, pages (slides, chapters, cells) and box coordinates are held to
        :data:`kb_core.bounds.LINE`, ``PAGE`` (``SLIDE``, ``CHAPTER``, ``CELL``) and ``BOX`` (the work is
        linear in the text's length). ``page_count``, when given, says how many pages (or parts) the
        document at a path has (0: none; None: unknown), and one it does not have is refused.
        """
        path, _sep, fragment = text.rpartition("#")
        found = _FRAGMENT.fullmatch(fragment) if path else None
        if found is None:
            raise CitationError(f"not a citation: {bounds.shown(text)}", hint=_CITATION_HINT)
        unit, page_text, *box_text, start_text, end_text = found.groups()
        start, end = (_bounded(n, bounds.LINE, "line", text) for n in (start_text, end_text))
        if start > end:
            raise CitationError(f"L{start}-L{end} in {bounds.shown(text)} starts after it ends", hint=_CITATION_HINT)
        for number in box_text if box_text[0] is not None else ():
            _bounded(number, bounds.BOX, "xywh", text)
        if unit is not None and page_text is not None:
            page = _bounded(page_text, _PARTS[unit], unit, text)
            pages = page_count(path) if page_count is not None else None
            if pages is not None and page > pages:
                has = f"has {pages:,} {unit}{'' if pages == 1 else 's'}" if pages else f"has no {unit}s"
                raise CitationError(
                    f"{unit}={page} is not a {unit} of {bounds.shown(path)}: it {has}",
                    hint=f"leave the {unit} out: kb pages finds it from the lines",
                )
        return cls(path, start, end)


def _bounded(digits: str, bound: bounds.Bound, name: str, text: str) -> int:
    """``digits`` (ASCII, perhaps signed) as an integer in ``bound``, or a CitationError naming it."""
    if len(digits.lstrip("-").lstrip("0")) > _MAX_DIGITS:
        value = f"{digits[:_MAX_DIGITS]}… ({len(digits):,} digits)"
        raise CitationError(f"{name} = {value} in {bounds.shown(text)} is not {bound.allowed}", hint=_CITATION_HINT)
    value_ = int(digits)
    if not bound.holds(value_):
        raise CitationError(f"{name} = {value_} in {bounds.shown(text)} is not {bound.allowed}", hint=_CITATION_HINT)
    return value_


@attrs.frozen
class IngestWarning:
    """Something an ingest skipped or parsed with a compromise, and why."""

    path: str
    reason: str


@attrs.frozen
class Block:
    """A structural piece of a parsed document: a paragraph, a code block, a table, a list.

    ``verbatim`` says the text is exactly the source lines ``start_line..end_line``, so line i
    of the text is source line ``start_line + i`` (true for Markdown and plain text; extracted
    text, as from HTML, is not). For text that is not verbatim, ``line_spans`` may give the
    source lines (first, last) of each line of the text, as a parser that writes a table's rows
    knows them (a CSV row, an HTML ``<tr>``); the chunker then cites a line by its own span.

    A block of kind ``"table"`` has one row per line, its header row first; or, when it continues
    a table from an earlier block (a table carried over a page break), ``header`` gives that
    table's header row (one line, not in the text) and every line of the text is a row.
    """

    text: str
    start_line: int
    end_line: int
    heading_path: tuple[str, ...] = ()
    kind: str = "paragraph"
    verbatim: bool = False
    line_spans: tuple[tuple[int, int], ...] = ()
    header: str = ""

    def line_spans_fit(self) -> bool:
        """Whether ``line_spans`` gives each line of the text a span inside the block's own, in order."""
        if len(self.line_spans) != self.text.count("\n") + 1:
            return False
        previous = self.start_line
        for first, last in self.line_spans:
            if not previous <= first <= last <= self.end_line:
                return False
            previous = first
        return True


@attrs.frozen
class ParsedDocument:
    """What a parser returns: a title, metadata (frontmatter) and blocks in document order."""

    title: str
    blocks: tuple[Block, ...]
    metadata: dict[str, Any] = attrs.field(factory=dict)
    warnings: tuple[str, ...] = ()


@attrs.frozen
class Document:
    """A document in the store of record, keyed by its path inside the knowledge base."""

    path: str
    content_hash: str
    size: int
    title: str
    parser: str
    source_root: str
    metadata: dict[str, Any] = attrs.field(factory=dict)
    chunk_count: int = 0
    ingested_at: str = ""


@attrs.frozen
class Chunk:
    """A passage of a document: the unit that is indexed, retrieved and cited."""

    chunk_id: str
    doc_path: str
    ordinal: int
    text: str
    content_hash: str
    start_line: int
    end_line: int
    heading_path: tuple[str, ...] = ()
    token_count: int = 0

    @property
    def citation(self) -> Citation:
        """The citation of this chunk."""
        return Citation(self.doc_path, self.start_line, self.end_line)


@attrs.frozen
class ModelRef:
    """Which model produced something: enough to tell two models (or two versions) apart."""

    id: str
    provider: str
    dimensions: int | None = None
    path: str | None = None


@attrs.frozen
class SearchQuery:
    """A search request as retrievers receive it.

    ``snippets`` is False when the core asks for more hits than it keeps (fusing several indexes): an
    index may then leave ``Hit.snippet`` empty, and the core fills in the snippets of the hits
    it keeps (with the index's :class:`~kb_core.extend.contracts.SnippetMaker` when it has one).

    ``path_prefixes`` (None: every document) restricts the search to documents whose path starts
    with one of them (``()``: none): the asker's read grants. An index applies it inside its query,
    before ranking, so that ``k`` allowed hits come back whenever ``k`` allowed chunks match. kb passes
    None, never ``("",)``, for a grant of every path.
    """

    text: str
    k: int = 10
    mode: str = "hybrid"
    path_glob: str | None = None
    metadata: dict[str, str] = attrs.field(factory=dict)
    snippets: bool = True
    path_prefixes: tuple[str, ...] | None = None


@attrs.frozen
class Hit:
    """One retrieved chunk. ``score`` is in [0, 1]; its meaning per mode is documented in search.py."""

    chunk_id: str
    doc_path: str
    score: float
    rank: int
    citation: Citation
    heading_path: tuple[str, ...] = ()
    snippet: str = ""
    retriever: str = ""
    raw_score: float = 0.0


@attrs.frozen
class VerdictOpening:
    """How the reply to a yes/no question opens: with ``yes`` or ``no``, decided by ``no_share``.

    The reply opens with ``no`` when P(no) / (P(yes) + P(no)) for its first token is at least
    ``no_share``, else with ``yes``: 0.5 is the model's own choice; a model that leans to "yes"
    whatever the evidence says needs less. ``alternatives`` are the other openings the model may
    choose (a refusal, "Mixed"): a first token that opens one of them is left as the model chose it,
    and any other first token (the model starting to explain before its verdict) is replaced by the
    verdict. ``None`` decides only when the model opens with yes or no itself.
    """

    yes: str
    no: str
    no_share: float
    alternatives: tuple[str, ...] | None = None


@attrs.frozen
class GenerateRequest:
    """What a language model is asked to do.

    ``examples`` are (user, assistant) turns shown between the system message and ``user``:
    worked examples of the task, the same for every question (so a backend may cache them).
    ``verdict``, for a yes/no question, decides its first word (a backend without token
    probabilities ignores it).
    """

    system: str
    user: str
    stop: tuple[str, ...] = ()
    max_tokens: int = 512
    temperature: float = 0.0
    seed: int | None = None
    grammar: str | None = None
    examples: tuple[tuple[str, str], ...] = ()
    verdict: VerdictOpening | None = None


@attrs.frozen
class Token:
    """A piece of generated text, streamed as it comes."""

    text: str


@attrs.frozen
class Done:
    """The end of a generation stream: why it stopped and what it cost."""

    finish_reason: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    cached_tokens: int = 0  # of prompt_tokens, how many were reused rather than evaluated
    #: For a reply the request's ``verdict`` opened: P(no) / (P(yes) + P(no)) of its first token.
    verdict_no_share: float | None = None


StreamEvent = Token | Done

#: A progress callback for long work: ``progress(stage, done, total)``.
Progress = Callable[[str, int, int], None]


@attrs.frozen
class OcrImage:
    """A page image handed to an OCR engine: 8-bit RGB ``pixels`` (rows top to bottom, 3 bytes a
    pixel, no padding), its size in pixels and its resolution in dots per inch (told to the engine:
    most read small print badly when they must guess it)."""

    pixels: bytes
    width: int
    height: int
    dpi: int


@attrs.frozen
class OcrLine:
    """A line of text an OCR engine read: the text, its box ``(x, y, width, height)`` in the
    image's pixels (origin top left) and the engine's confidence from 0 to 1."""

    text: str
    box: tuple[int, int, int, int]
    confidence: float


@attrs.frozen
class Problem:
    """A health problem found by ``kb doctor``, with the command that fixes it."""

    component: str
    message: str
    fix: str = ""


def to_json(value: Any) -> Any:
    """Unstructure an attrs value (or a list/dict of them) into JSON-ready data."""
    return converter.unstructure(value)


# --- answers ---

RefusalReason = Literal["no_chunks", "score_gate", "llm_self_judge", "unsupported", "generation_error", "computation"]
REFUSAL_REASONS: tuple[str, ...] = ("no_chunks", "score_gate", "llm_self_judge", "unsupported", "generation_error")


@attrs.frozen
class Region:
    """Where cited text read by OCR sits: its page, the box around it (x, y, width, height in the
    page's units: PDF points, or an image's pixels), the engine's mean confidence (0..1) and
    whether that is low (see :mod:`kb_core.storage.regions`)."""

    page: int
    box: tuple[int, int, int, int]
    confidence: float
    low: bool

    def fragment(self) -> str:
        """``page=3&xywh=72,140,300,40``: what follows ``#`` in a link to the region."""
        return f"page={self.page}&xywh={','.join(map(str, self.box))}"


def clock(seconds: int) -> str:
    """``HH:MM:SS`` of whole ``seconds`` (hours grow past 99), as a recording's moment is written."""
    whole = max(0, seconds)
    return f"{whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}"


@attrs.frozen
class Moment:
    """When cited lines of a recording's transcript are said: from ``start`` to ``end`` (whole seconds
    into the recording; ``end`` None: to its end, unknown), and whether the file is ``audio`` or a
    ``video`` (see :mod:`kb_core.storage.moments`)."""

    start: int
    end: int | None
    media: Literal["audio", "video"] = "audio"

    def fragment(self) -> str:
        """``t=00:12:03,00:12:41`` (W3C Media Fragments, npt): what follows ``#`` in a link to the moment."""
        return f"t={clock(self.start)}" + (f",{clock(self.end)}" if self.end is not None else "")


@attrs.frozen
class AnswerCitation:
    """A chunk an answer cites (``marker`` n of ``[#n]``), or a refusal's candidate (``marker`` None).

    ``region`` is where its text sits on a scanned page or photo (None for text that OCR did not read);
    ``moment`` when a recording says it (None for a document that is no recording).
    """

    marker: int | None
    chunk_id: str
    ref: str
    citation: Citation
    score: float
    heading_path: tuple[str, ...] = ()
    region: Region | None = None
    moment: Moment | None = None


@attrs.frozen
class PackedChunk:
    """A chunk as the model saw it in the evidence section, under the marker ``[#marker]``."""

    marker: int
    chunk_id: str
    ref: str
    score: float
    tokens: int
    truncated: bool
    text: str


@attrs.frozen
class SentenceSupport:
    """One sentence of an answer as kb checked it (see :mod:`kb_core.answers.attribution`).

    ``kind`` is ``claim``, ``about_sources`` or ``no_new_content``; only claims need support.
    ``cited`` are the packed markers the model wrote in the sentence, ``supported_by`` the ones
    whose passages kb found to back it (``attributed`` when kb chose them because the model's own
    did not), and ``support`` the share of the sentence's new content found there.
    """

    text: str
    kind: str
    cited: tuple[int, ...] = ()
    supported_by: tuple[int, ...] = ()
    support: float | None = None
    attributed: bool = False

    @property
    def supported(self) -> bool:
        """True for a claim some packed passage backs (sentences that are not claims need no support)."""
        return self.kind != "claim" or bool(self.supported_by)


@attrs.frozen
class RenderedPrompt:
    """The exact messages sent to the language model (shown with ``--explain``)."""

    system: str
    user: str
    grammar: str | None = None


@attrs.frozen
class RetrievalSummary:
    """How the evidence was found: trace id, mode, k, gate and what came back."""

    trace_id: str
    mode: str
    k: int
    score_gate: float
    top_score: float | None
    chunks_returned: int
    chunks_used: int
    took_ms: float


@attrs.frozen
class TokenUsage:
    """What the answer cost: tokens (from the model's Done event) and wall-clock times in ms.

    ``generation_ms`` is the time spent inside the model's stream; ``latency_ms - generation_ms``
    is the pipeline's own time (retrieval, packing, validation, persistence).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    first_token_ms: float | None = None
    generation_ms: float = 0.0
    cached_prompt_tokens: int = 0
    check_ms: float = 0.0


#: ``refusal_detail`` of an answer the answer check withdrew; its ``candidates`` are the passages it cited.
NOT_ANSWERED = "not_answered"


@attrs.frozen
class ComputedOperand:
    """One number of a computed answer: the ``literal`` the model wrote, its exact ``value`` (as text), where it
    comes from (``source``: ``passage``, ``question`` or ``constant``) and, for a passage, its ``marker`` and
    the 1-based ``line`` in that passage."""

    literal: str
    value: str
    source: str
    marker: int | None = None
    line: int | None = None


@attrs.frozen
class ComputedAnswer:
    """The computation behind a computed answer (:mod:`kb_core.answers.computed`): the ``expression`` as
    ``written_by`` the model (or by kb, for a count of periods over a threshold: :mod:`kb_core.answers.counted`),
    the ``working`` (each operand as its passage writes it), the ``result`` kb worked out, as stated, its
    ``operands`` and the ``markers`` of the passages that hold them; ``stated``, the same result as a passage's
    sentence writes it, rounded (:mod:`kb_core.answers.restated`), when one does."""

    expression: str
    working: str
    result: str
    operands: tuple[ComputedOperand, ...]
    markers: tuple[int, ...]
    written_by: Literal["model", "kb"] = "model"
    stated: ComputedOperand | None = None


@attrs.frozen
class Answer:
    """A grounded answer with the citations it used, or a refusal with its reason (``answer.v1``).

    ``grounded`` is true only when every marker the answer cites names a chunk it was given and
    every claim in it is supported by a packed passage, as kb checked sentence by sentence
    (``sentences``); see :mod:`kb_core.answers.pipeline`. ``citations`` are the passages that support it.
    ``candidates`` lists the nearest chunks of a refusal (of a ``not_answered`` one, the passages
    the withdrawn answer cited); ``note`` says in one line why it was
    refused (or what was dropped) and ``refusal_detail`` names the finer cause. ``verdict`` is
    the opening yes / no / mixed of an answer to a yes/no question; ``answer_check`` the model's
    probability, asked after a grounded answer, that the passages state the answer;
    ``ignored_instructions`` the packed passages that held instructions to the assistant. ``computation``,
    for a number kb worked out, the expression, its operands with their passages, and the result.
    ``packed``, ``prompt`` and ``trace`` (every retrieved hit) are filled only when explaining.
    """

    answer_id: str
    question: str
    answer: str
    grounded: bool
    refusal_reason: RefusalReason | None
    citations: tuple[AnswerCitation, ...]
    candidates: tuple[AnswerCitation, ...]
    invalid_markers: tuple[int, ...]
    model: ModelRef | None
    embedding: ModelRef | None
    prompt_template_version: str
    constrained: bool
    finish_reason: str | None
    retrieval: RetrievalSummary
    usage: TokenUsage
    created_at: str
    note: str = ""
    refusal_detail: str | None = None
    sentences: tuple[SentenceSupport, ...] = ()
    verdict: str | None = None
    verdict_confidence: float | None = None
    verdict_withheld: bool = False
    answer_check: float | None = None
    ignored_instructions: tuple[int, ...] = ()
    computation: ComputedAnswer | None = None
    packed: tuple[PackedChunk, ...] = ()
    prompt: RenderedPrompt | None = None
    trace: tuple[Hit, ...] = ()
