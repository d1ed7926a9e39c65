"""What a question asks to work out, and whether a computation works that out.

A question's words say which operation its answer is: "percentage change" a relative change, "average" a
mean, "change" or "difference" a difference, "ratio" or "what percentage of" a ratio, "total" a sum, "how
many" a count. A computation's tree says which one it performs. When both are known and differ, the
computation answers another question ("by how much did revenue change" answered with a percentage), and
kb refuses it: the model chose the operation, kb checks it.

>>> sorted(asked_operations("What was the percentage change in average pay from 2018 to 2019?"))
['average', 'percent_change']
>>> sorted(asked_operations("What was the change in the percentage of revenue from 2018 to 2019?"))
['change']
>>> from kb_core.answers.numbers import parse
>>> performed_operation(parse("(120 - 95) / 95 * 100"))
'percent_change'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import regex

from kb_core.answers.numbers import Binary, Call, Negative, Node, Number, terms, walk

__all__ = ["Operation", "asked_operations", "counts_rows", "unlike_terms", "operation_problem", "performed_operation"]

Operation = Literal["percent_change", "change", "average", "total", "ratio", "count", "extreme"]

#: What each operation is called in a refusal's detail, and how it is written.
_WRITTEN: dict[Operation, str] = {
    "percent_change": "a percentage change, (new - old) / old * 100",
    "change": "a change, new - old",
    "average": "an average, avg(a, b)",
    "total": "a total, sum(a, b)",
    "ratio": "a ratio or share, part / whole (* 100 for a percentage)",
    "count": "a count, count(a > x, b > x)",
    "extreme": "a largest or smallest, max(a, b) or min(a, b)",
}

_CHANGE = r"(?:change[sd]?|increase[sd]?|decrease[sd]?|growth|grow|decline[sd]?|rise|fall|drop)"
# Read in this order, each match taken out of the question before the next pattern reads it: the "change" of a
# "percentage change" names no second operation, and a "percentage" left after that asks for a share.
_PATTERNS: tuple[tuple[Operation, str], ...] = (
    ("average", r"\b(?<!weighted[\s-]+)(?:average|mean)\b"),
    # a change of a percentage, in percentage points, is a difference
    ("change", rf"\b{_CHANGE}\s+in\s+(?:the\s+)?percent(?:age)?\b|\bpercent(?:age)?\s+points?\b"),
    (
        "percent_change",
        rf"(?:\bpercent(?:age)?|%)(?:\s+\w+){{0,4}}?\s*(?:{_CHANGE}|difference)\b|\bgrowth\s+rate\b",
    ),
    (
        "change",
        rf"\b{_CHANGE}\b|\bdifference\b|\bdiffer\b|\brose\b|\bfell\b|\bby\s+how\s+much\b"
        r"|\bhow\s+much\s+(?:more|less|higher|lower|larger|smaller|greater|bigger)\b",
    ),
    (
        "ratio",
        r"\bratio\b|\bproportion\b|\bpercent(?:age)?\b|\bshare\s+of\b|\bfraction\b|\bportion\b"
        r"|\bhow\s+many\s+times\b",
    ),
    ("total", r"\btotal\b|\bsum\b|\bcombined\b|\baltogether\b"),
    ("count", r"\bhow\s+many\b|\bnumber\s+of\s+(?:years|periods|quarters|months|rows|items|categories)\b"),
    ("extreme", r"\b(?:largest|smallest|highest|lowest|maximum|minimum|most|least)\b"),
)
_ASKED = tuple((operation, regex.compile(pattern, regex.IGNORECASE)) for operation, pattern in _PATTERNS)
_CALLED: dict[str, Operation] = {"avg": "average", "sum": "total", "count": "count", "min": "extreme", "max": "extreme"}


def asked_operations(question: str) -> frozenset[Operation]:
    """The operations ``question``'s words name ("the percentage change in average pay": a percentage change
    and an average); none when they name none."""
    named: set[Operation] = set()
    for operation, pattern in _ASKED:
        question, found = pattern.subn(" ", question)
        if found:
            named.add(operation)
    return frozenset(named)


def performed_operation(tree: Node) -> Operation | None:
    """The operation a computation performs at its top (a lone number performs none)."""
    node = _unwrapped(tree)
    if isinstance(node, Call):
        return _CALLED.get(node.name)
    if not isinstance(node, Binary):
        return None
    if node.op == "*":
        scaled = _scaled(node)
        return None if scaled is None else "percent_change" if _relative(scaled) else _ratio_or_none(scaled)
    if node.op == "/":
        if _relative(node):
            return "percent_change"
        if isinstance(node.right, Number) and node.right.number.value == terms(node.left) >= 2:
            return "average"
        return "ratio"
    if node.op == "-":
        return "percent_change" if _ratio_less_one(node) else "change"
    return "total"


def operation_problem(question: str, tree: Node) -> str | None:
    """Why the computation ``tree`` does not work out what ``question`` asks (a one-line detail), or None."""
    asked = asked_operations(question)
    performed = performed_operation(tree)
    if not asked or performed is None or "extreme" in asked or performed in _meant(asked):
        return None
    wanted = " or ".join(_WRITTEN[operation] for operation in sorted(asked))
    return f"the question asks for {wanted}, but the computation is {_WRITTEN[performed].split(',')[0]}"


def _meant(asked: frozenset[Operation]) -> frozenset[Operation]:
    """The operations a computation may perform for a question naming ``asked``: "total" is as often a row's
    name ("the change in total assets") and counts only when nothing else is named; a total number is a count."""
    named = asked - {"total"}
    return named if named else frozenset({"total", "count"})


def _unwrapped(node: Node) -> Node:
    """``node`` without a sign or an ``abs()`` around it (the sign of a change is the reader's)."""
    while True:
        if isinstance(node, Negative):
            node = node.child
        elif isinstance(node, Call) and node.name == "abs" and len(node.args) == 1:
            node = node.args[0]
        else:
            return node


def _scaled(node: Binary) -> Node | None:
    """The other side of a product with a plain 100 (``x * 100`` or ``100 * x``), else None."""
    for hundred, other in ((node.right, node.left), (node.left, node.right)):
        if isinstance(hundred, Number) and hundred.number.value == 100:
            return _unwrapped(other)
    return None


def _relative(node: Node) -> bool:
    """Whether ``node`` is a relative change: ``(a - b) / b`` or ``a / b - 1``."""
    if isinstance(node, Binary) and node.op == "/":
        left = _unwrapped(node.left)
        if isinstance(left, Binary) and left.op == "*":  # 100 * (a - b) / b
            left = _scaled(left) or left
        return isinstance(left, Binary) and left.op == "-"
    return isinstance(node, Binary) and _ratio_less_one(node)


def _ratio_less_one(node: Binary) -> bool:
    """``a / b - 1``."""
    right = node.right
    return (
        node.op == "-"
        and isinstance(right, Number)
        and right.number.value == 1
        and isinstance(node.left, Binary)
        and node.left.op == "/"
    )


def _ratio_or_none(node: Node) -> Operation | None:
    """A ratio times 100 is a percentage share; another product is no operation kb names."""
    return "ratio" if isinstance(node, Binary) and node.op == "/" else None


def counts_rows(question: str) -> bool:
    """Whether ``question`` asks how many rows or periods meet a condition (its answer reads a table whole)."""
    return "count" in asked_operations(question)


def unlike_terms(tree: Node, percents: Sequence[bool | None]) -> str | None:
    """Why a sum, difference, average or extreme in ``tree`` mixes a percent with a plain number (``13.1 -
    77%``: not one measure), or None. ``percents`` says, by operand index, whether each number is a percent
    (None: a constant of the formula, alike with anything)."""
    for node in walk(tree):
        if isinstance(node, Binary) and node.op in "+-":
            sides: Sequence[Node] = (node.left, node.right)
        elif isinstance(node, Call) and node.name in ("sum", "avg", "min", "max"):
            sides = node.args
        else:
            continue
        kinds = {percents[side.index] for side in map(_unwrapped, sides) if isinstance(side, Number)} - {None}
        if len(kinds) > 1:
            return "the computation adds or subtracts a percent and a plain number: take numbers of one measure"
    return None
