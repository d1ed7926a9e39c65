"""Where a computation's operands sit, against what the question names.

A number copied from a passage is not yet the number the question asks about: the same table holds other
rows and other years. kb checks each operand's place:

- in a table, its row is the one the question names: the row's label (with its section's) is all in the
  question, or the question's words all in the label, and no other row of that table fits the question's
  words better (``Total other assets`` is not ``Other assets`` when both are rows); in a table with a row per
  period (``2021 | 138 | 6``), its column's heading is the one that names it;
- when the question names periods (``2019``, ``FY19``, ``F19``, ``fiscal 2019``), its column is one kb can tell
  is one of them (a column kb cannot place is refused); the operands come from all of them (an average "for
  2018 and 2019" averages one number of each), and a percentage change divides by the earliest one's;
- in prose, its line holds two of the question's words (all of them, when it has fewer) and names no other
  period only;
- the two numbers of a change between named periods (new and old) are one measure: in one table row, or one
  column of a table with a row per period.

Another document's row that fits the question as well (:func:`rival_documents`), or a question that names no
row in particular (:func:`names_no_row`), makes the question ambiguous; :func:`named_rows` are the rows
pointed out to the model.

>>> names_no_row("What was the change in the total?")
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import regex

from kb_core.answers.computation import Computation, Operand, Place
from kb_core.answers.numbers import Binary, Negative, Node, Number, walk
from kb_core.answers.operations import performed_operation
from kb_core.answers.question_terms import PERIOD, periods_of, respective_period, sentence_periods, words_of
from kb_core.answers.tables import readable_tables

__all__ = [
    "header_periods",
    "named_rows",
    "names_no_row",
    "operands_problem",
    "rival_documents",
    "row_fit",
]

_DIGIT = regex.compile(r"\d")
#: Words that label a row in almost every table: a question naming only these names no row in particular.
_GENERIC = frozenset({"total", "net", "other", "gross", "subtotal", "balance", "item"})
_RANGE = regex.compile(r"\b((?:19|20)\d\d)\s*(?:-|–|to|through|until)\s*((?:19|20)\d\d)\b", regex.IGNORECASE)


def _spanned(question: str, named: list[int], tree: Node) -> list[int]:
    """The periods an average or total "from 2017 to 2019" takes (every year between), else ``named``."""
    found = _RANGE.search(question)
    if found is None or performed_operation(tree) not in ("average", "total"):
        return named
    first, last = sorted((int(found.group(1)), int(found.group(2))))
    return list(range(first, last + 1)) if last - first < 12 else named


class _Words(frozenset[str]):
    """A question's content words, and the ``optional`` ones a label may leave out (set once, when made): a total
    of rows ("the total deferred revenue") sums rows none of which is called total."""

    optional: frozenset[str]

    def __new__(cls, words: frozenset[str], optional: frozenset[str] = frozenset()) -> _Words:
        made = super().__new__(cls, words)
        made.optional = optional
        return made


def _fit(label: frozenset[str], words: frozenset[str]) -> int:
    """How well a row labelled ``label`` fits the question's ``words``: 3 the same words, 2 the label all in the
    question, 1 the question all in the label, 0 not at all (a label of no words fits nothing); the best of
    the question's words with and without their optional ones."""
    optional = words.optional if isinstance(words, _Words) else frozenset()
    return max(_plain_fit(label, words), _plain_fit(label, words - optional) if optional & words else 0)


def _plain_fit(label: frozenset[str], words: frozenset[str]) -> int:
    if not label or not words:
        return 0
    return 3 if label == words else 2 if label <= words else 1 if words <= label else 0


def row_fit(lines: Sequence[str], index: int, words: frozenset[str]) -> int:
    """The fit of table row ``index``: of its own label, or of its label with its section's."""
    own = words_of(lines[index].split("|")[0])
    return max(_fit(own, words), _fit(own | _section_above(lines, index), words))


def _section_above(lines: Sequence[str], index: int) -> frozenset[str]:
    """The words of the section row above a table row (``Industrial Solutions: | | |``)."""
    for line in reversed(lines[:index]):
        if "|" not in line:
            break
        cells = line.split("|")
        if all(not cell.strip() for cell in cells[1:]) and cells[0].strip():
            return words_of(cells[0])
    return frozenset()


def _table_rows(lines: Sequence[str], index: int) -> range:
    """The indexes of the table lines around line ``index`` (the contiguous lines with cells)."""
    first = index
    while first > 0 and "|" in lines[first - 1]:
        first -= 1
    last = index
    while last + 1 < len(lines) and "|" in lines[last + 1]:
        last += 1
    return range(first, last + 1)


def header_periods(lines: Sequence[str], index: int, column: int) -> set[int]:
    """The periods heading ``column`` of the table row ``index``: from the nearest row above that is a header of
    periods (an empty first cell, or every other cell a period or words: ``(In millions) | 2019 | Change | 2018``);
    none when there is no such row, or it has no such column."""
    for line in reversed(lines[:index]):
        if "|" not in line:
            return set()
        cells = line.split("|")
        heads = not cells[0].strip() or all(periods_of(cell) or not _DIGIT.search(cell) for cell in cells[1:])
        if heads and PERIOD.search(line):
            return set(periods_of(cells[column])) if column < len(cells) else set()
    return set()


def _header_words(lines: Sequence[str], index: int, column: int) -> frozenset[str]:
    """The words heading ``column`` above table row ``index`` (the header rows: those with an empty first cell)."""
    words: frozenset[str] = frozenset()
    for line in reversed(lines[:index]):
        cells = line.split("|")
        if "|" not in line:
            break
        if not cells[0].strip() and column < len(cells):
            words |= words_of(cells[column])
    return words


def _row_named(lines: Sequence[str], index: int, words: frozenset[str]) -> bool:
    """Whether table row ``index`` fits the question's ``words``, and no row of its table fits them better."""
    own = row_fit(lines, index, words)
    return bool(own) and all(row_fit(lines, other, words) <= own for other in _table_rows(lines, index))


def _column_named(lines: Sequence[str], index: int, column: int, words: frozenset[str]) -> bool:
    """Whether the heading of ``column`` (above table row ``index``) fits the question's ``words``, and no other
    column's heading fits them better ("Workforce reduction | Facility costs" over a row per date)."""
    width = lines[index].count("|") + 1
    fits = [_fit(_header_words(lines, index, other), words) for other in range(1, width)]
    own = fits[column - 1] if 0 < column <= len(fits) else 0
    return bool(own) and own == max(fits)


def _place_periods(text: str, place: Place, words: frozenset[str], allowed: set[int], counted: bool) -> set[int] | None:
    """The periods of the cell holding ``place`` (its column's heading, or its row's label in a table with a row
    per period) when the place is in a row, column or sentence the question names (any row, when the rows are
    ``counted``) and, when periods are ``allowed``, in a column kb can tell is one of them; None when it is not."""
    lines = text.split("\n")  # numbered as read_numbers numbers them (a form feed is no line break)
    index = place.line - 1
    if not 0 <= index < len(lines):
        return None
    line = lines[index]
    if "|" not in line:  # prose: the line holds two of the question's words (or all, when it has fewer)
        found = sentence_periods(line, words, allowed)  # the line's, not its sentence's: a long one holds any words
        paragraph, start = _paragraph(lines, index)  # "respectively" may be on a line the sentence wraps onto
        paired = respective_period(paragraph, start + place.offset - (text.rfind("\n", 0, place.offset) + 1))
        if found is None or paired is None:
            return found
        return None if allowed and paired not in allowed else {paired}
    column = text[: place.offset].rsplit("\n", 1)[-1].count("|")  # the cells before the number's
    by_row = set(periods_of(line.split("|")[0]))
    if by_row:  # a row per period ("2021 | 138 | 6"): the column's heading names the item
        periods = by_row
        if not counted and not _fit(_header_words(lines, index, column), words):
            return None
    else:
        if not counted and not _row_named(lines, index, words) and not _column_named(lines, index, column, words):
            return None
        periods = header_periods(lines, index, column) if column else set()
    if allowed and not periods & allowed:  # another period's column, or one kb cannot tell
        return None
    return periods


def _paragraph(lines: Sequence[str], index: int) -> tuple[str, int]:
    """The prose line ``index`` with the lines it wraps onto (no blank line or table row between), joined by
    spaces, and where line ``index`` starts in it."""
    first = index
    while first > 0 and lines[first - 1].strip() and "|" not in lines[first - 1]:
        first -= 1
    last = index
    while last + 1 < len(lines) and lines[last + 1].strip() and "|" not in lines[last + 1]:
        last += 1
    return " ".join(lines[first : last + 1]), sum(len(line) + 1 for line in lines[first:index])


def operands_problem(done: Computation, tree: Node, passages: Mapping[int, str], question: str) -> str | None:
    """Why the operands of ``done`` (parsed as ``tree``) are not the numbers ``question`` asks about, or None."""
    operation = performed_operation(tree)
    # "the total deferred revenue": a sum of rows, none of them labelled "total"
    words = _Words(words_of(question), frozenset({"total", "sum"}) if operation == "total" else frozenset())
    named = _spanned(question, periods_of(question), tree)
    counted = operation == "count"  # the rows counted are not named: they are every row
    allowed = set(named)
    if operation == "average" and len(named) == 1:  # "the 2019 average" of a balance: its opening and closing
        allowed.add(named[0] - 1)
    periods: list[set[int]] = []
    accepted: list[list[Place]] = []  # each passage operand's places that fit the question
    for operand in done.operands:
        if operand.source != "passage":
            periods.append(set())
            continue
        found = [(p, _place_periods(passages.get(p.passage, ""), p, words, allowed, counted)) for p in operand.places]
        fitting = [(place, held) for place, held in found if held is not None]
        if not fitting:
            return f"{operand.literal} is in no row, column or sentence the question names: take each number from those"
        periods.append(set().union(*(held for _, held in fitting)))
        accepted.append([place for place, _ in fitting])
    measured = {operand.value for operand in done.operands if operand.source == "passage"}  # new and old, or more
    changes = operation in ("change", "percent_change") and len(named) >= 2 and len(measured) == 2
    if changes and not _one_measure(accepted, passages):
        return "the numbers of a change between periods are in different rows: take one row's number of each period"
    return _coverage_problem(done.operands, periods, tree, named)


def _one_measure(accepted: list[list[Place]], passages: Mapping[int, str]) -> bool:
    """Whether the operands of a change (their fitting ``accepted`` places) can be one measure at several periods:
    all in one table row, or one column of a table with a row per period; always, unless all are in table rows."""
    shared: set[tuple[str, int, int]] | None = None
    for places in accepted:
        keys: set[tuple[str, int, int]] = set()
        for place in places:
            text = passages.get(place.passage, "")
            lines = text.split("\n")
            line = lines[place.line - 1] if 0 < place.line <= len(lines) else ""
            if "|" not in line:
                return True  # a number in prose: its sentence is checked, not its row
            keys.add(("row", place.passage, place.line))
            if periods_of(line.split("|")[0]):  # a row per period ("2021 | 138 | 6"): a measure is a column
                keys.add(("column", place.passage, text[: place.offset].rsplit("\n", 1)[-1].count("|")))
        shared = keys if shared is None else shared & keys
    return bool(shared) or shared is None


def _coverage_problem(operands: Sequence[Operand], periods: list[set[int]], tree: Node, named: list[int]) -> str | None:
    """Why operands from the period columns ``periods`` do not cover the periods ``named`` (when two or more are),
    or a percentage change divides by a later period's number than the earliest named."""
    from_passages = [found for operand, found in zip(operands, periods, strict=True) if operand.source == "passage"]
    if len(named) < 2 or not from_passages or not all(from_passages):
        return None
    used = set().union(*from_passages)
    missing = sorted(set(named) - used)
    if missing:
        listed = ", ".join(str(year) for year in missing)
        return f"the question names {listed}, but no operand is from its column: take one number of each period"
    if performed_operation(tree) == "average" and len(from_passages) != len(named):
        return f"the question averages {len(named)} periods, but the computation {len(from_passages)} numbers"
    divisor = _divisor(tree)
    if divisor is not None and periods[divisor] and min(named) not in periods[divisor]:
        return f"a change from {min(named)} is relative to {min(named)}: divide by that period's number"
    return None


def _divisor(tree: Node) -> int | None:
    """The operand a relative change ``(a - b) / b`` divides by, when it is one number."""
    for node in walk(tree):
        if isinstance(node, Binary) and node.op == "/":
            right = node.right.child if isinstance(node.right, Negative) else node.right
            left = node.left.child if isinstance(node.left, Negative) else node.left
            if isinstance(right, Number) and isinstance(left, Binary) and left.op == "-":
                return right.index
    return None


def names_no_row(question: str) -> bool:
    """Whether ``question`` names no row in particular: its only content words are ones almost every table has
    ("the change in the total")."""
    return not words_of(question) - _GENERIC


def rival_documents(
    done: Computation, passages: Mapping[int, str], documents: Mapping[int, str], question: str
) -> list[str]:
    """Other documents among ``passages`` (their paths by marker in ``documents``) with a table row that fits the
    question as well as the operands' rows do, with numbers in the periods it names: the question does not say
    which report it means ("the change in revenue" when two reports have revenue for 2018 and 2019)."""
    words, named = words_of(question), periods_of(question)
    used = {documents.get(o.passage) for o in done.operands if o.passage is not None}
    fits = [fit for operand in done.operands if (fit := _best_place_fit(operand, passages, words))]
    if not fits:
        return []
    rivals: list[str] = []
    for marker, text in passages.items():
        document = documents.get(marker)
        if document is None or document in used or document in rivals:
            continue
        lines = text.split("\n")  # numbered as read_numbers numbers them (a form feed is no line break)
        if any(_rival_row(lines, index, words, named, min(fits)) for index in range(len(lines))):
            rivals.append(document)
    return rivals


def _rival_row(lines: Sequence[str], index: int, words: frozenset[str], named: list[int], fit: int) -> bool:
    """Whether table row ``index`` fits ``words`` at least as well as ``fit`` and has a number in a column of
    one of the ``named`` periods (any number, when none is named)."""
    cells = lines[index].split("|")
    if len(cells) < 2 or not cells[0].strip() or row_fit(lines, index, words) < max(fit, 1):
        return False
    filled = [column for column, cell in enumerate(cells) if column and any(ch.isdigit() for ch in cell)]
    if not named:
        return bool(filled)
    return any(header_periods(lines, index, column) & set(named) for column in filled)


def _best_place_fit(operand: Operand, passages: Mapping[int, str], words: frozenset[str]) -> int:
    """How well the best table row holding ``operand`` fits the question's ``words`` (0: in no table row)."""
    best = 0
    for place in operand.places:
        lines = passages.get(place.passage, "").split("\n")
        if 0 < place.line <= len(lines) and "|" in lines[place.line - 1]:
            best = max(best, row_fit(lines, place.line - 1, words))
    return best


def named_rows(passages: Mapping[int, str], question: str, most: int = 3) -> list[tuple[int, str]]:
    """The table rows of ``passages`` that fit the question best, each with its passage's marker and written with
    its columns' names (``Other assets: 2019 = 18,111; 2018 = 9,521``): at most ``most``, none when no row fits or
    more than ``most`` fit as well (a pointer to every row is no pointer)."""
    words = words_of(question)
    found: list[tuple[int, int, str]] = []
    for marker, text in passages.items():
        lines = text.split("\n")  # numbered as read_numbers numbers them (a form feed is no line break)
        for index, line in enumerate(lines):
            if "|" in line and line.split("|")[0].strip() and (fit := row_fit(lines, index, words)):
                found.append((fit, marker, _written_row(lines, index)))
    best = max((fit for fit, _, _ in found), default=0)
    rows = [(marker, row) for fit, marker, row in found if fit == best and row]
    return rows if len(rows) <= most else []


def _written_row(lines: Sequence[str], index: int) -> str:
    """Table row ``index`` as the model reads it, its values named by their columns' headings."""
    table = _table_rows(lines, index)
    header = [i for i in table if i < index and not lines[i].split("|")[0].strip()]
    shown = readable_tables("\n".join([*(lines[i] for i in header), lines[index]]))
    return shown.splitlines()[-1] if header else ""
