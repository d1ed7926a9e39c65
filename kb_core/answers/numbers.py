"""Numbers as English-language reports write them, read exactly and written back, and the expression language
over them that :mod:`kb_core.answers.computation` evaluates and checks (its tokenizer and recursive-descent parser).

:func:`read_numbers` finds every number in a passage: ``1,571.7`` (a comma is a thousands separator
only before exactly three digits; ``1 571,7`` is not read as one number: English reports only), a
parenthesised negative ``(1,234)``, ``(12.5)%`` or ``(12.5%)``, a leading ``-``, ``−`` (U+2212) or
``–`` (an en dash used as a minus: not after a letter, digit or bracket, so ``2018–2019`` is two
years), a currency sign ``$ € £ ¥`` before it, a trailing ``%`` (or ``percent``), and a scale word
after it (``thousand``, ``million``, ``billion``, ``trillion``, ``bn``, ``mn``, ``k``, ``m``),
recorded but not multiplied. A number joined to a letter before it (``FY2019``, ``Q4``) is not read,
nor one of more than :data:`kb_core.bounds.NUMBER_DIGITS` digits. Values are exact
(:class:`fractions.Fraction`), never floats.

>>> [(n.text, str(n.value), n.percent) for n in read_numbers("Sales $ 1,452.4 million, down (12.5)%")]
[('$ 1,452.4 million', '7262/5', False), ('(12.5)%', '-25/2', True)]
>>> format_number(Fraction(-1801, 1), 1)
'-1,801.0'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction
from typing import Literal

import attrs

from kb_core.bounds import COMPUTATION_NESTING, COMPUTATION_TOKENS, NUMBER_DIGITS

__all__ = [
    "CURRENCY_SIGNS",
    "EXPRESSION_NUMBER",
    "Binary",
    "Call",
    "Compare",
    "ExpressionError",
    "Negative",
    "Node",
    "Number",
    "Parser",
    "RefusalReason",
    "WrittenNumber",
    "evaluate",
    "format_number",
    "holds",
    "number_from_match",
    "parse",
    "read_numbers",
    "terms",
    "tokens",
    "walk",
]

RefusalReason = Literal[
    "expression_unparsed",
    "operand_not_found",
    "operand_off_question",
    "operation_off_question",
    "ambiguous_source",
    "result_mismatch",
    "division_by_zero",
    "too_large",
    "no_operands",
]

CURRENCY_SIGNS = "$€£¥"
MINUS_SIGNS = "-−–"  # hyphen-minus, U+2212 minus, en dash
_SCALES = {"thousand": "thousand", "k": "thousand", "million": "million", "mn": "million", "m": "million"}
_SCALES |= {"billion": "billion", "bn": "billion", "trillion": "trillion"}

_BODY = r"(?P<body>\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,]\d)|\d+(?:\.\d+)?|\.\d+)(?!\d)"
_PERCENT = r"(?:[ \t]?%|[ \t](?i:percent|per[ \t]cent)\b)"
_SCALE = (
    r"(?:(?P<scale_short>[kKmM]|bn|mn|Bn|BN)(?![A-Za-z])"  # attached: 5m, $3bn
    r"|[ \t](?P<scale>(?i:thousand|million|billion|trillion|bn|mn))\b)"  # 5 million
)


def _number_pattern(signed: bool) -> re.Pattern[str]:
    """A number as reports write it; ``signed`` lets a leading minus belong to it (a passage), else a minus is
    the expression's operator. A bracket is a parenthesised negative only around a lone unsigned number."""
    minus = rf"(?:(?<![\w.)\]%])[{MINUS_SIGNS}][ \t]?)?" if signed else ""  # not 12%-15%
    return re.compile(
        r"(?<![\w.])"  # not inside a word or a number
        rf"(?P<prefix>{minus}(?:[{CURRENCY_SIGNS}][ \t]{{0,3}})?{minus})"  # -$12, $-12, $ 12
        rf"(?P<open>\()?(?P<inner>[{CURRENCY_SIGNS}][ \t]{{0,3}})?"  # (12), ($12)
        rf"{_BODY}(?P<inner_percent>{_PERCENT})?"
        rf"(?(open)\))(?P<percent>{_PERCENT})?{_SCALE}?"
    )


#: A number in a passage (its minus sign included).
PASSAGE_NUMBER = _number_pattern(signed=True)
#: A number in an expression the model writes (a minus there is an operator).
EXPRESSION_NUMBER = _number_pattern(signed=False)


@attrs.frozen
class WrittenNumber:
    """One number as a passage writes it: its exact ``value`` (negative for ``(1,234)``), the ``text`` as
    written (``$ 1,452.4``), where it is (``start``/``end`` offsets, 1-based ``line``), whether it is a
    ``percent``, the ``decimals`` shown, the ``digits`` as written (``1,452.4``: no sign, currency or
    unit), its ``currency`` sign and ``scale`` word (``million``), if any."""

    value: Fraction
    text: str
    start: int
    end: int
    line: int
    percent: bool
    decimals: int
    digits: str
    currency: str = ""
    scale: str = ""
    parenthesised: bool = False


def number_from_match(match: re.Match[str], line: int = 1) -> WrittenNumber | None:
    """The :class:`WrittenNumber` a match of :data:`PASSAGE_NUMBER` or :data:`EXPRESSION_NUMBER` reads, or
    None when it has more digits than :data:`kb_core.bounds.NUMBER_DIGITS` allows."""
    body = match.group("body")
    if sum(ch.isdigit() for ch in body) > NUMBER_DIGITS.high:
        return None
    whole, _, fraction = body.replace(",", "").partition(".")
    value = Fraction(int(whole or "0") * 10 ** len(fraction) + int(fraction or "0"), 10 ** len(fraction))
    parenthesised = match.group("open") is not None
    prefix = match.group("prefix")
    if parenthesised or any(sign in prefix for sign in MINUS_SIGNS):
        value = -value
    scale = match.group("scale") or match.group("scale_short") or ""
    return WrittenNumber(
        value=value,
        text=match.group(0),
        start=match.start(),
        end=match.end(),
        line=line,
        percent=bool(match.group("percent") or match.group("inner_percent")),
        decimals=len(fraction),
        digits=body,
        currency="".join(ch for ch in prefix + (match.group("inner") or "") if ch in CURRENCY_SIGNS)[:1],
        scale=_SCALES.get(scale.lower(), ""),
        parenthesised=parenthesised,
    )


def read_numbers(text: str) -> list[WrittenNumber]:
    """Every number written in ``text``, in order (see the module's docstring for the forms read)."""
    found: list[WrittenNumber] = []
    line, counted = 1, 0
    for match in PASSAGE_NUMBER.finditer(text):
        line += text.count("\n", counted, match.start())
        counted = match.start()
        number = number_from_match(match, line)
        if number is not None:
            found.append(number)
    return found


def format_number(value: Fraction, decimals: int) -> str:
    """``value`` rounded half away from zero to ``decimals`` places, with thousands separators: ``-1,801.0``."""
    scaled = abs(value) * 10**decimals
    rounded = (scaled.numerator * 2 + scaled.denominator) // (2 * scaled.denominator)
    whole, fraction = divmod(rounded, 10**decimals)
    text = f"{whole:,}" + (f".{fraction:0{decimals}d}" if decimals else "")
    return f"-{text}" if value < 0 and rounded else text


_FUNCTIONS = {"sum": "sum", "avg": "avg", "average": "avg", "mean": "avg", "min": "min", "max": "max"}
_FUNCTIONS |= {"count": "count", "abs": "abs"}
_OPERATORS = {"+": "+", "-": "-", "−": "-", "–": "-", "*": "*", "×": "*", "/": "/", "÷": "/"}
_COMPARISONS = {">": ">", "<": "<", ">=": ">=", "<=": "<=", "≥": ">=", "≤": "<="}
_TOKEN = re.compile(r"\s*(?:(?P<cmp>>=|<=|[<>≥≤])|(?P<op>[-+*/−–×÷])|(?P<punct>[()\[\],])|(?P<name>[A-Za-z_]\w*))")


# The expression language of kb_core.answers.computation, as a tree.
@attrs.frozen
class Number:
    """A number of the expression, the ``index``-th."""

    number: WrittenNumber
    index: int  # among the expression's operands


@attrs.frozen
class Negative:
    """Unary minus."""

    child: Node


@attrs.frozen
class Binary:
    """``left op right``, ``op`` one of ``+ - * /``."""

    op: str
    left: Node
    right: Node
    grouped: bool = False  # written in brackets: (a + b) / 2 divides a sum of two terms, ((a - b) + c) / 2 too


@attrs.frozen
class Call:
    """A function (``sum``, ``avg``, ``min``, ``max``, ``count``, ``abs``) of its arguments."""

    name: str
    args: tuple[Node, ...]


@attrs.frozen
class Compare:
    """``left op right``, ``op`` one of ``> < >= <=``: only an argument of ``count``."""

    op: str
    left: Node
    right: Node


Node = Number | Negative | Binary | Call | Compare


class ExpressionError(Exception):
    """An expression that is refused: its ``reason`` and a one-line ``detail``."""

    def __init__(self, reason: RefusalReason, detail: str) -> None:
        super().__init__(detail)
        self.reason: RefusalReason = reason
        self.detail = detail


def tokens(expression: str) -> list[tuple[str, str | WrittenNumber]]:
    """(kind, text or number) for each token: ``num``, ``op``, ``cmp``, ``punct``, ``name``."""
    found: list[tuple[str, str | WrittenNumber]] = []
    at = 0
    while at < len(expression):
        if expression[at].isspace():
            at += 1
            continue
        if len(found) >= COMPUTATION_TOKENS.high:
            raise ExpressionError(
                "too_large", f"more than {COMPUTATION_TOKENS.high} tokens: write a shorter computation"
            )
        after_name = bool(found) and found[-1][0] == "name"  # sum(1,234) is a call, not a negative
        if expression[at] in CURRENCY_SIGNS and expression[at + 1 : at + 2] == "(":  # $(1 + 2): a unit, no number
            at += 1
            continue
        number = None if after_name and expression[at] == "(" else EXPRESSION_NUMBER.match(expression, at)
        if number is not None:
            written = number_from_match(number)
            if written is None:
                raise ExpressionError("too_large", f"a number of more than {NUMBER_DIGITS.high} digits")
            found.append(("num", written))
            at = number.end()
            continue
        token = _TOKEN.match(expression, at)
        if token is None or token.lastgroup is None:
            raise ExpressionError("expression_unparsed", f"unexpected {expression[at]!r} at character {at + 1}")
        found.append((token.lastgroup, token.group(token.lastgroup)))
        at = token.end()
    return found


def parse(expression: str) -> Node:
    """The tree of ``expression`` (:class:`ExpressionError` when it does not parse or is too large)."""
    return Parser(tokens(expression)).whole()


class Parser:
    """Recursive descent: sum := product (('+'|'-') product)*; product := unary (('*'|'/') unary)*;
    unary := '-' unary | primary; primary := number | bracket sum bracket | name '(' arguments ')'."""

    def __init__(self, tokens: list[tuple[str, str | WrittenNumber]]) -> None:
        self.tokens = tokens
        self.at = 0
        self.depth = 0
        self.numbers = 0

    def peek(self) -> tuple[str, str | WrittenNumber]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def expect(self, text: str) -> None:
        kind, value = self.peek()
        if kind != "punct" or value != text:
            raise ExpressionError("expression_unparsed", f"expected {text!r}, found {self.shown(value) or 'the end'}")
        self.at += 1

    @staticmethod
    def shown(value: str | WrittenNumber) -> str:
        return repr(value.text if isinstance(value, WrittenNumber) else value) if value else ""

    def nest(self) -> None:
        self.depth += 1
        if self.depth > COMPUTATION_NESTING.high:
            raise ExpressionError("too_large", f"nested more than {COMPUTATION_NESTING.high} deep")

    def whole(self) -> Node:
        if not self.tokens:
            raise ExpressionError("expression_unparsed", "the computation is empty")
        node = self.sum()
        if self.peek()[0] == "cmp":
            raise ExpressionError("expression_unparsed", "a comparison is allowed only inside count(...)")
        if self.at < len(self.tokens):
            raise ExpressionError(
                "expression_unparsed", f"unexpected {self.shown(self.peek()[1])} after a whole expression"
            )
        return node

    def binary(self, ops: str, operand: Callable[[], Node]) -> Node:
        node = operand()
        while self.peek()[0] == "op" and _OPERATORS[str(self.peek()[1])] in ops:
            op = _OPERATORS[str(self.peek()[1])]
            self.at += 1
            node = Binary(op, node, operand())
        return node

    def sum(self) -> Node:
        return self.binary("+-", self.product)

    def product(self) -> Node:
        return self.binary("*/", self.unary)

    def unary(self) -> Node:
        kind, value = self.peek()
        if kind == "op" and _OPERATORS[str(value)] in "+-":
            self.at += 1
            self.nest()
            child = self.unary()
            self.depth -= 1
            return Negative(child) if _OPERATORS[str(value)] == "-" else child
        return self.primary()

    def primary(self) -> Node:
        kind, value = self.peek()
        self.at += 1
        if isinstance(value, WrittenNumber):
            self.numbers += 1
            return Number(value, self.numbers - 1)
        if kind == "punct" and value in ("(", "["):
            self.nest()
            node = self.sum()
            self.expect(")" if value == "(" else "]")
            self.depth -= 1
            return attrs.evolve(node, grouped=True) if isinstance(node, Binary) else node
        if kind == "name" and str(value).lower() in _FUNCTIONS:
            name = _FUNCTIONS[str(value).lower()]
            self.nest()
            self.expect("(")
            args = [self.argument(name)]
            while self.peek() == ("punct", ","):
                self.at += 1
                args.append(self.argument(name))
            self.expect(")")
            self.depth -= 1
            if name == "abs" and len(args) != 1:
                raise ExpressionError("expression_unparsed", "abs takes one argument")
            return Call(name, tuple(args))
        if kind == "name":
            raise ExpressionError(
                "expression_unparsed", f"unknown name {value!r}: use sum, avg, min, max, count or abs"
            )
        raise ExpressionError("expression_unparsed", f"expected a number, found {self.shown(value) or 'the end'}")

    def argument(self, function: str) -> Node:
        node = self.sum()
        if self.peek()[0] == "cmp":
            if function != "count":
                raise ExpressionError("expression_unparsed", "a comparison is allowed only inside count(...)")
            op = _COMPARISONS[str(self.peek()[1])]
            self.at += 1
            node = Compare(op, node, self.sum())
        return node


def evaluate(node: Node) -> Fraction:
    """The exact value of ``node`` (ZeroDivisionError for a division by zero)."""
    if isinstance(node, Number):
        return node.number.value
    if isinstance(node, Negative):
        return -evaluate(node.child)
    if isinstance(node, Binary):
        left, right = evaluate(node.left), evaluate(node.right)
        if node.op in "+-":
            return left + right if node.op == "+" else left - right
        return left * right if node.op == "*" else left / right
    if isinstance(node, Call):
        if node.name == "count":
            return Fraction(sum(1 for arg in node.args if not isinstance(arg, Compare) or holds(arg)))
        values = [evaluate(arg) for arg in node.args]
        if node.name == "sum":
            return sum(values, Fraction(0))
        if node.name == "avg":
            return sum(values, Fraction(0)) / len(values)
        return min(values) if node.name == "min" else max(values) if node.name == "max" else abs(values[0])
    raise ExpressionError("expression_unparsed", "a comparison is allowed only inside count(...)")


def holds(node: Compare) -> bool:
    """Whether a comparison is true."""
    left, right = evaluate(node.left), evaluate(node.right)
    return {">": left > right, "<": left < right, ">=": left >= right, "<=": left <= right}[node.op]


def walk(node: Node) -> list[Node]:
    """``node`` and every node under it, depth first."""
    children: tuple[Node, ...] = ()
    if isinstance(node, Negative):
        children = (node.child,)
    elif isinstance(node, Binary | Compare):
        children = (node.left, node.right)
    elif isinstance(node, Call):
        children = node.args
    return [node, *(found for child in children for found in walk(child))]


def terms(node: Node) -> int:
    """How many terms a sum has: ``a + b - c`` three, ``(a - b) + (c - d)`` two, ``sum(a, b)`` two, anything
    else one."""
    if isinstance(node, Negative):
        return terms(node.child)
    if isinstance(node, Binary) and node.op in "+-":
        return sum(1 if isinstance(side, Binary) and side.grouped else terms(side) for side in (node.left, node.right))
    return len(node.args) if isinstance(node, Call) and node.name == "sum" else 1
