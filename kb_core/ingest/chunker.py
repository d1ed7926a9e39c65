"""The heading-aware chunker: parsed blocks in, chunks that fit the embedder out.

Rules, in order:

1. A chunk never spans two sections (a change of heading path starts a new chunk); a heading
   block always travels with the block after it.
2. Blocks are packed up to ``target`` tokens; a block larger than the hard maximum is split by
   lines, and a line larger than it by characters. A line of a verbatim block is cited as its own
   source line, a line of another block by its ``line_spans`` entry, else by the block's span.
3. When a section continues in a new chunk, the new chunk starts with up to ``overlap`` tokens of
   the previous chunk's trailing lines.
4. Every chunk is recounted with the real tokenizer and split again if it is over ``hard_max``:
   no chunk is ever over the hard maximum, whatever the tokenizer does at joins.
5. A table (a block of kind ``"table"``, one row per line, its first line the header row) too
   large for one chunk is split between rows, and every chunk that continues it starts with its
   header row again, so a row read alone keeps its columns' names. The repeated header counts
   toward the token limits but lies outside the chunk's span: ``start_line..end_line`` names the
   rows the chunk holds, and its text is one line longer than that span. A chunk that continues a
   table holds nothing but that table's rows, and no table row is carried as overlap, so every
   row lies in exactly one chunk's span. (Markdown's delimiter row ``|---|`` is not repeated: it
   names nothing.) A header row too long to fit beside a row is not repeated; a row over the hard
   maximum is cut like any other line (a piece of it gets the header only where both fit).
6. A table continued from an earlier block (its ``header`` set: a table carried over a page
   break) is all rows: its header row is repeated, outside the span, right before the first of
   its rows in every chunk that holds them (after the heading that opens the chunk, if any), and
   a chunk that starts with it holds nothing but its rows, as for a split table.

Token counts come from a ``count_tokens(texts) -> list[int]`` callable: the embedder's own
tokenizer, so chunks respect the model's real limit.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left
from collections.abc import Callable, Sequence

import attrs

from kb_core.types import Block, Chunk

CountTokens = Callable[[Sequence[str]], list[int]]
TokenStarts = Callable[[Sequence[str]], list[list[int]]]
SpanCounter = Callable[[Sequence[tuple[int, int]]], list[int]]
Piece = tuple[int, int, int]  # start, stop (character offsets) and token count

SENTENCE = re.compile(r"[^.!?。！？]+(?:[.!?。！？]+\s*|$)|[.!?。！？]+\s*")
WORD = re.compile(r"\s*\S+\s*")


@attrs.frozen
class ChunkLimits:
    """Sizes in tokens (special tokens included)."""

    target: int = 180
    hard_max: int = 256
    overlap: int = 32

    def __attrs_post_init__(self) -> None:
        if not self.hard_max >= 8:
            raise ValueError("hard_max must be at least 8 tokens")
        if not 1 <= self.target <= self.hard_max:
            raise ValueError("target must be between 1 and hard_max")
        if not 0 <= self.overlap < self.target:
            raise ValueError("overlap must be smaller than target")


@attrs.frozen
class _Unit:
    """A piece that is never split further: a whole block, a line, or a slice of a line."""

    text: str
    start_line: int
    end_line: int
    tokens: int
    heading_path: tuple[str, ...]
    is_heading: bool = False
    joiner: str = "\n\n"  # how it joins the unit before it
    table: int = -1  # which table block of the document the unit belongs to (-1: none)
    header: str = ""  # a row of a split table: its table's header row, to repeat in a new chunk
    header_tokens: int = 0
    is_header: bool = False  # the header row itself, in its place
    repeated: bool = False  # a header row repeated at the start of a chunk (outside the chunk's span)
    continued: bool = False  # a row of a table continued from an earlier block: its header goes before it


def sha256_hex(text: str) -> str:
    """Hex SHA-256 of UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_id(doc_path: str, ordinal: int, content_hash: str) -> str:
    """Deterministic chunk id from (document, ordinal, content hash)."""
    return hashlib.sha256(f"{doc_path}\0{ordinal}\0{content_hash}".encode()).hexdigest()[:24]


class Chunker:
    """Packs blocks into chunks; one instance per tokenizer and limits.

    ``token_starts(texts)``, when the tokenizer offers it, gives the character offset of every
    content token of each text; token counts of any slice are then read off it without
    tokenizing again (one tokenizer pass per block, plus the final recount).
    """

    def __init__(self, count_tokens: CountTokens, limits: ChunkLimits, token_starts: TokenStarts | None = None) -> None:
        self.count_tokens = count_tokens
        self.token_starts = token_starts
        self.limits = limits
        self.specials = count_tokens([""])[0]  # [CLS]/[SEP] and the like
        if self.specials >= limits.hard_max // 2:
            raise ValueError("hard_max is too small for this tokenizer")

    # -- units ------------------------------------------------------------------------------

    def _content_tokens(self, texts: Sequence[str]) -> list[int]:
        return [max(0, n - self.specials) for n in self.count_tokens(texts)] if texts else []

    def _exact_counter(self, text: str) -> SpanCounter:
        return lambda spans: self._content_tokens([text[a:b] for a, b in spans])

    @staticmethod
    def _offset_counter(starts: list[int]) -> SpanCounter:
        return lambda spans: [bisect_left(starts, b) - bisect_left(starts, a) for a, b in spans]

    def _measure(self, texts: list[str]) -> tuple[list[int], list[SpanCounter]]:
        """Content-token counts of texts, and a counter for slices of each (one tokenizer call)."""
        if self.token_starts is not None:
            starts = self.token_starts(texts) if texts else []
            return [len(s) for s in starts], [self._offset_counter(s) for s in starts]
        return self._content_tokens(texts), [self._exact_counter(t) for t in texts]

    def _units(self, blocks: Sequence[Block], counts: Sequence[int], counters: Sequence[SpanCounter]) -> list[_Unit]:
        budget = self.limits.hard_max - self.specials
        units: list[_Unit] = []
        for number, (block, tokens, counter) in enumerate(zip(blocks, counts, counters)):
            if not block.text.strip():
                continue
            table = number if block.kind == "table" else -1
            if _header(block):
                units.extend(self._continuation(block, number, tokens, counter))
            elif tokens <= budget:
                units.append(
                    _Unit(
                        block.text,
                        block.start_line,
                        block.end_line,
                        tokens,
                        block.heading_path,
                        block.kind == "heading",
                        table=table,
                    )
                )
            else:
                split = self._split_block(block, budget, counter)
                units.extend(_table_rows(split, table) if table >= 0 else split)
        return units

    def _continuation(self, block: Block, table: int, tokens: int, counter: SpanCounter) -> list[_Unit]:
        """The units of a table continued from an earlier block: one when it fits beside its header, else its rows."""
        budget = self.limits.hard_max - self.specials
        header_tokens = self._content_tokens([block.header])[0]
        whole = _Unit(block.text, block.start_line, block.end_line, tokens, block.heading_path, table=table)
        units = [whole] if tokens + header_tokens <= budget else self._split_block(block, budget, counter)
        return [
            attrs.evolve(u, table=table, header=block.header, header_tokens=header_tokens, continued=True)
            for u in units
        ]

    def _split_block(self, block: Block, budget: int, counter: SpanCounter) -> list[_Unit]:
        text = block.text
        spans: list[tuple[int, int]] = []
        position = 0
        for line in text.split("\n"):
            spans.append((position, position + len(line)))
            position += len(line) + 1
        # Line i of the text is source line start+i only for verbatim text of the same height;
        # other text is cited by the spans the parser gave its lines, else by the whole block.
        exact = block.verbatim and len(spans) == block.end_line - block.start_line + 1
        mapped = not exact and block.line_spans_fit()
        units: list[_Unit] = []
        for offset, ((a, b), tokens) in enumerate(zip(spans, counter(spans))):
            if not text[a:b].strip():
                continue
            if exact:
                number = end = block.start_line + offset
            elif mapped:
                number, end = block.line_spans[offset]
            else:
                number, end = block.start_line, block.end_line
            pieces = [(a, b, tokens)] if tokens <= budget else self._split_span(text, a, b, budget, counter)
            if self.token_starts is None:
                pieces = self._verified(text, pieces, budget)
            for index, (start, stop, n) in enumerate(pieces):
                joiner = "" if index else ("\n" if units else "\n\n")
                units.append(_Unit(text[start:stop], number, end, n, block.heading_path, False, joiner))
        return units

    def _split_span(self, text: str, a: int, b: int, budget: int, counter: SpanCounter) -> list[Piece]:
        """Cut text[a:b] into consecutive pieces of at most ``budget`` tokens.

        Each sentence is a piece of its own (the packer then fills chunks to the target size, with
        overlap, sentence by sentence); a sentence over the budget is cut between words, and a word
        between characters, those fragments merged up to the budget.
        """
        segment = text[a:b]
        for pattern in (SENTENCE, WORD):
            parts = [(a + m.start(), a + m.end()) for m in pattern.finditer(segment)]
            if len(parts) > 1:
                break
        else:
            parts = [(a + i, a + i + 1) for i in range(len(segment))]
        merge = pattern is not SENTENCE or len(parts) == 1
        pieces: list[Piece] = []
        for (start, stop), count in zip(parts, counter(parts)):
            if count > budget and stop - start > 1:
                pieces.extend(self._split_span(text, start, stop, budget, counter))
            elif merge and pieces and pieces[-1][1] == start and pieces[-1][2] + count <= budget:
                pieces[-1] = (pieces[-1][0], stop, pieces[-1][2] + count)
            else:
                pieces.append((start, stop, count))
        return pieces

    def _verified(self, text: str, pieces: list[Piece], budget: int) -> list[Piece]:
        """Recount merged pieces (joins may tokenize differently) and halve any that overflow."""
        real = self._content_tokens([text[a:b] for a, b, _ in pieces])
        out: list[Piece] = []
        for (a, b, _), count in zip(pieces, real):
            if count <= budget or b - a <= 1:
                out.append((a, b, count))
            else:
                middle = (a + b) // 2
                out.extend(self._verified(text, [(a, middle, 0), (middle, b, 0)], budget))
        return out

    # -- packing ----------------------------------------------------------------------------

    def _pack(self, units: list[_Unit]) -> list[list[_Unit]]:
        groups: list[list[_Unit]] = []
        current: list[_Unit] = []
        tokens = 0
        target = self.limits.target - self.specials
        hard = self.limits.hard_max - self.specials
        for unit in units:
            adding = self._opening(current, unit, hard)
            cost = sum(u.tokens for u in adding)
            heading_only = bool(current) and all(u.is_heading for u in current)
            new_section = bool(current) and unit.heading_path != current[-1].heading_path and not heading_only
            too_big = bool(current) and tokens + cost > (hard if heading_only else target)
            if unit.is_heading and current and not heading_only:
                new_section = True
            if current and current[0].repeated and unit.table != current[0].table:
                too_big = True  # a chunk that continues a table holds that table's rows only
            if new_section or too_big:
                if too_big and self._header_moves(current, unit):
                    groups.append(current[:-1])  # a header row travels with the first row after it
                    current = [current[-1], unit]
                elif new_section or unit.is_heading:
                    groups.append(current)
                    current = self._opening([], unit, hard)
                else:
                    groups.append(current)
                    opening = self._continued([unit], hard)
                    current = opening if len(opening) > 1 else [*self._overlap(current, unit.tokens, hard), unit]
                tokens = sum(u.tokens for u in current)
            else:
                current.extend(adding)
                tokens += cost
        if current:
            groups.append(current)
        return groups

    def _overlap(self, previous: list[_Unit], incoming: int, hard: int) -> list[_Unit]:
        carried: list[_Unit] = []
        total = 0
        for unit in reversed(previous[1:] if len(previous) > 1 else []):
            if unit.table >= 0 or total + unit.tokens > self.limits.overlap or total + unit.tokens + incoming > hard:
                break  # a table row is never carried: each row lies in one chunk's span
            carried.insert(0, unit)
            total += unit.tokens
        return carried

    @staticmethod
    def _header_moves(current: list[_Unit], unit: _Unit) -> bool:
        """Whether ``current`` ends with the header row of ``unit``'s table, and has more than headings before it."""
        last = current[-1]
        return last.is_header and last.table == unit.table and not all(u.is_heading for u in current[:-1])

    def _opening(self, current: list[_Unit], unit: _Unit, hard: int) -> list[_Unit]:
        """``unit`` as added to ``current``: after its header when it is the first row in it of a continued table."""
        if unit.continued and not (current and current[-1].table == unit.table):
            return self._continued([unit], hard)
        return [unit]

    @staticmethod
    def _continued(units: list[_Unit], hard: int) -> list[_Unit]:
        """``units`` opening a new chunk: after their table's header row when the first continues a table."""
        first = units[0]
        if not first.header or first.header_tokens + first.tokens > hard:
            return units
        header = attrs.evolve(
            first, text=first.header, tokens=first.header_tokens, header="", repeated=True, continued=False
        )
        return [header, attrs.evolve(first, joiner="\n"), *units[1:]]

    def _halves(self, group: list[_Unit]) -> list[list[_Unit]]:
        """A group over the maximum cut in two; a half that continues a table starts with its header again."""
        hard = self.limits.hard_max - self.specials
        if group[0].repeated:
            rows = group[1:]
            if len(rows) == 1:
                return [rows]  # the header does not fit beside this row: the row goes alone
            middle = len(rows) // 2
            return [[group[0], *rows[:middle]], self._continued(rows[middle:], hard)]
        middle = len(group) // 2
        if group[middle - 1].repeated:
            middle += 1  # a repeated header stays with the row after it
        return [group[:middle], self._continued(group[middle:], hard)]

    @staticmethod
    def _join(group: list[_Unit]) -> str:
        parts = [group[0].text]
        for unit in group[1:]:
            parts.append(unit.joiner + unit.text)
        return "".join(parts)

    def _fit(
        self, groups: list[tuple[tuple[int, ...], list[_Unit]]]
    ) -> list[tuple[tuple[int, ...], list[_Unit], str, int]]:
        """Recount joined texts (all documents in one call per round); split what is over the maximum.

        Groups come keyed by (document, position); the result is sorted by key.
        """
        fitted: list[tuple[tuple[int, ...], list[_Unit], str, int]] = []
        pending = groups
        while pending:
            texts = [self._join(g) for _, g in pending]
            retry: list[tuple[tuple[int, ...], list[_Unit]]] = []
            for (key, group), text, count in zip(pending, texts, self.count_tokens(texts)):
                if count <= self.limits.hard_max:
                    fitted.append((key, group, text, count))
                elif len(group) == 1:
                    retry.extend((key + (i,), [u]) for i, u in enumerate(self._resplit(group[0])))
                else:
                    retry.extend((key + (i,), half) for i, half in enumerate(self._halves(group)))
            pending = retry
        fitted.sort(key=lambda item: item[0])
        return fitted

    def _resplit(self, unit: _Unit) -> list[_Unit]:
        """Split one unit the real tokenizer finds too long, counting every piece exactly."""
        budget = self.limits.hard_max - self.specials
        text = unit.text
        pieces = self._verified(text, self._split_span(text, 0, len(text), budget, self._exact_counter(text)), budget)
        return [
            attrs.evolve(unit, text=text[a:b], tokens=n, joiner=unit.joiner if i == 0 else "")
            for i, (a, b, n) in enumerate(pieces)
        ]

    def chunk(self, doc_path: str, blocks: Sequence[Block]) -> list[Chunk]:
        """Chunks for one document's blocks, in document order, with deterministic ids."""
        return self.chunk_many([(doc_path, blocks)])[0]

    def chunk_many(self, documents: Sequence[tuple[str, Sequence[Block]]]) -> list[list[Chunk]]:
        """Chunks for several documents, tokenizing them together (much faster than one by one)."""
        every_block = [block for _, blocks in documents for block in blocks]
        counts, counters = self._measure([b.text for b in every_block])
        keyed: list[tuple[tuple[int, ...], list[_Unit]]] = []
        position = 0
        for number, (_, blocks) in enumerate(documents):
            end = position + len(blocks)
            units = self._units(blocks, counts[position:end], counters[position:end])
            keyed.extend(((number, index), group) for index, group in enumerate(self._pack(units)))
            position = end
        result: list[list[Chunk]] = [[] for _ in documents]
        for key, group, text, count in self._fit(keyed):
            path = documents[key[0]][0]
            ordinal = len(result[key[0]])
            content_hash = sha256_hex(text)[:32]
            result[key[0]].append(
                Chunk(
                    chunk_id=chunk_id(path, ordinal, content_hash),
                    doc_path=path,
                    ordinal=ordinal,
                    text=text,
                    content_hash=content_hash,
                    start_line=min(u.start_line for u in group if not u.repeated),
                    end_line=max(u.end_line for u in group if not u.repeated),
                    heading_path=group[-1].heading_path,
                    token_count=count,
                )
            )
        return result


def _header(block: Block) -> str:
    """The header row a table continued from an earlier block gives ("" for any other block, or one not on one line)."""
    header = block.header
    if block.kind != "table" or not header.strip() or "\n" in header or "\r" in header:
        return ""
    return header


def _table_rows(units: list[_Unit], table: int) -> list[_Unit]:
    """The line units of a split table, marked: the first line is the header row, the others carry it.

    A header cut into pieces (longer than the hard maximum) is not repeated.
    """
    if not units:
        return units
    whole = len(units) == 1 or units[1].joiner != ""
    head = attrs.evolve(units[0], table=table, is_header=whole)
    header, tokens = (head.text, head.tokens) if whole else ("", 0)
    return [head, *(attrs.evolve(u, table=table, header=header, header_tokens=tokens) for u in units[1:])]
