"""kb_core.bounds: the one declaration of every numeric range, and reading digits from untrusted text (issue 42)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from kb_core.bounds import LINE, SEED, TEMPERATURE, digits_value, shown


@given(st.one_of(st.integers(), st.floats(), st.booleans(), st.text(max_size=5), st.none()))
def test_a_bound_holds_only_numbers_of_its_kind_within_it(value: object) -> None:
    held = SEED.holds(value)
    assert held == (type(value) is int and 0 <= value <= 2**32 - 1)  # type: ignore[operator]
    if TEMPERATURE.holds(value):
        assert isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 2  # type: ignore[operator]


def test_a_huge_integer_is_shown_without_spelling_it_out() -> None:
    assert "more than 40 digits" in shown(10**5000)
    assert "more than 40 digits" in str(_refusal(10**5000))


def _refusal(value: int) -> Exception:
    try:
        LINE.check(value)
    except Exception as exc:  # noqa: BLE001 - the refusal is the subject
        return exc
    raise AssertionError("accepted")


@given(st.text(max_size=30))
def test_digits_value_reads_plain_ascii_digits_or_nothing(text: str) -> None:
    value = digits_value(text)
    if value is None:
        assert not (text.isascii() and text.isdigit() and len(text) <= 18)
    else:
        assert str(value) == text.lstrip("0") or (value == 0 and set(text) == {"0"})


def test_digits_value_refuses_what_int_cannot_read_or_no_bound_needs() -> None:
    assert digits_value("²") is None and digits_value("9" * 5000) is None and digits_value("-1") is None
    assert digits_value("0042") == 42
