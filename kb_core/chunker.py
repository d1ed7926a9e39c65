"""The heading-aware chunker: parsed blocks in, chunks that fit the embedder out.

Rules, in order:

1. A chunk never spans two sections (a change of heading path starts a new chunk); a heading
   block always travels with the block after it.
2. Blocks are packed up to ``target`` tokens; a block larger than the hard maximum is split by
   lines, and a line larger than it by characters.
3. When a section continues in a new chunk, the new chunk starts with up to ``overlap`` tokens of
   the previous chunk's trailing lines.
4. Every chunk is recounted with the real tokenizer and split again if it is over ``hard_max``:
   no chunk is ever over the hard maximum, whatever the tokenizer does at joins.

Token counts come from a ``count_tokens(texts) -> list[int]`` callable: the embedder's own
tokenizer, so chunks respect the model's real limit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import attrs

from kb_core.types import Block, Chunk

CountTokens = Callable[[Sequence[str]], list[int]]


@attrs.frozen
class ChunkLimits:
    """Sizes in tokens (special tokens included)."""

    target: int = 180
    hard_max: int = 256
    overlap: int = 32

    def __attrs_post_init__(self) -> None:
        if not 8 <= self.hard_max:
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


def sha256_hex(text: str) -> str:
    """Hex SHA-256 of UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_id(doc_path: str, ordinal: int, content_hash: str) -> str:
    """Deterministic chunk id from (document, ordinal, content hash)."""
    return hashlib.sha256(f"{doc_path}\0{ordinal}\0{content_hash}".encode()).hexdigest()[:24]


class Chunker:
    """Packs blocks into chunks; one instance per tokenizer and limits."""

    def __init__(self, count_tokens: CountTokens, limits: ChunkLimits) -> None:
        self.count_tokens = count_tokens
        self.limits = limits
        self.specials = count_tokens([""])[0]  # [CLS]/[SEP] and the like
        if self.specials >= limits.hard_max // 2:
            raise ValueError("hard_max is too small for this tokenizer")

    # -- units ------------------------------------------------------------------------------

    def _content_tokens(self, texts: Sequence[str]) -> list[int]:
        return [max(0, n - self.specials) for n in self.count_tokens(texts)] if texts else []

    def _units(self, blocks: Sequence[Block]) -> list[_Unit]:
        budget = self.limits.hard_max - self.specials
        counts = self._content_tokens([b.text for b in blocks])
        units: list[_Unit] = []
        for block, tokens in zip(blocks, counts):
            if not block.text.strip():
                continue
            if tokens <= budget:
                units.append(_Unit(block.text, block.start_line, block.end_line, tokens, block.heading_path,
                                   block.kind == "heading"))
            else:
                units.extend(self._split_block(block, budget))
        return units

    def _split_block(self, block: Block, budget: int) -> list[_Unit]:
        lines = block.text.split("\n")
        # A block's text lines map onto its span when they agree in number; else all share the span.
        exact = len(lines) == block.end_line - block.start_line + 1
        counts = self._content_tokens(lines)
        units: list[_Unit] = []
        for offset, (line, tokens) in enumerate(zip(lines, counts)):
            if not line.strip():
                continue
            number = block.start_line + offset if exact else block.start_line
            end = number if exact else block.end_line
            pieces = [line] if tokens <= budget else self._split_line(line, budget)
            piece_counts = [tokens] if len(pieces) == 1 else self._content_tokens(pieces)
            for index, (piece, n) in enumerate(zip(pieces, piece_counts)):
                joiner = "\n" if units else "\n\n"
                units.append(_Unit(piece, number, end, n, block.heading_path, False, "" if index else joiner))
        return units

    def _split_line(self, line: str, budget: int) -> list[str]:
        """Split one over-long line into slices of at most ``budget`` tokens (by characters)."""
        pieces: list[str] = []
        rest = line
        while rest:
            low, high = 1, len(rest)
            while low < high:  # the longest prefix that fits
                mid = (low + high + 1) // 2
                if self._content_tokens([rest[:mid]])[0] <= budget:
                    low = mid
                else:
                    high = mid - 1
            pieces.append(rest[:low])
            rest = rest[low:]
        return pieces

    # -- packing ----------------------------------------------------------------------------

    def _pack(self, units: list[_Unit]) -> list[list[_Unit]]:
        groups: list[list[_Unit]] = []
        current: list[_Unit] = []
        tokens = 0
        target = self.limits.target - self.specials
        hard = self.limits.hard_max - self.specials
        for unit in units:
            heading_only = bool(current) and all(u.is_heading for u in current)
            new_section = bool(current) and unit.heading_path != current[-1].heading_path and not heading_only
            too_big = bool(current) and tokens + unit.tokens > (hard if heading_only else target)
            if unit.is_heading and current and not heading_only:
                new_section = True
            if new_section or too_big:
                groups.append(current)
                current = [] if new_section or unit.is_heading else self._overlap(current, unit.tokens, hard)
                tokens = sum(u.tokens for u in current)
            current.append(unit)
            tokens += unit.tokens
        if current:
            groups.append(current)
        return groups

    def _overlap(self, previous: list[_Unit], incoming: int, hard: int) -> list[_Unit]:
        carried: list[_Unit] = []
        total = 0
        for unit in reversed(previous[1:] if len(previous) > 1 else []):
            if total + unit.tokens > self.limits.overlap or total + unit.tokens + incoming > hard:
                break
            carried.insert(0, unit)
            total += unit.tokens
        return carried

    @staticmethod
    def _join(group: list[_Unit]) -> str:
        parts = [group[0].text]
        for unit in group[1:]:
            parts.append(unit.joiner + unit.text)
        return "".join(parts)

    def _fit(self, groups: list[list[_Unit]]) -> list[tuple[list[_Unit], str, int]]:
        """Recount joined texts; split any group the tokenizer finds over the hard maximum."""
        fitted: list[tuple[tuple[int, ...], list[_Unit], str, int]] = []
        pending = [((index,), group) for index, group in enumerate(groups)]
        while pending:
            counts = self.count_tokens([self._join(g) for _, g in pending])
            retry: list[tuple[tuple[int, ...], list[_Unit]]] = []
            for (key, group), count in zip(pending, counts):
                if count <= self.limits.hard_max or len(group) == 1:
                    fitted.append((key, group, self._join(group), count))
                else:
                    middle = len(group) // 2
                    retry.extend([(key + (0,), group[:middle]), (key + (1,), group[middle:])])
            pending = retry
        fitted.sort(key=lambda item: item[0])
        return [(group, text, count) for _, group, text, count in fitted]

    def chunk(self, doc_path: str, blocks: Sequence[Block]) -> list[Chunk]:
        """Chunks for one document's blocks, in document order, with deterministic ids."""
        chunks: list[Chunk] = []
        for ordinal, (group, text, count) in enumerate(self._fit(self._pack(self._units(blocks)))):
            content_hash = sha256_hex(text)[:32]
            chunks.append(
                Chunk(
                    chunk_id=chunk_id(doc_path, ordinal, content_hash),
                    doc_path=doc_path,
                    ordinal=ordinal,
                    text=text,
                    content_hash=content_hash,
                    start_line=min(u.start_line for u in group),
                    end_line=max(u.end_line for u in group),
                    heading_path=group[-1].heading_path,
                    token_count=count,
                )
            )
        return chunks
