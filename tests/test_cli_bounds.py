"""Every number on kb's command line is within the bound the configuration and HTTP share (issue 42).

``kb_core.bounds`` declares each range once: a value outside it is exit 2 with one line naming the value and
what is allowed, whatever it is (negative, NaN, infinity, past 64 bits, past Python's 4,300 digits).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb_core.bounds import LIST_LIMIT, SEED, TEMPERATURE, Bound, K
from kb_core.cli.main import main
from kb_core.config_schema import RULES
from kb_core.errors import EXIT_USAGE

#: (the arguments before the number, the option, its bound)
OPTIONS = [
    (["ask", "q"], "--seed", SEED),
    (["ask", "q"], "--temperature", TEMPERATURE),
    (["ask", "q"], "--k", K),
    (["search", "q"], "--k", K),
    (["answers", "list"], "--limit", LIST_LIMIT),
    (["threads", "list"], "--limit", LIST_LIMIT),
]


def _invoke(tmp_path: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["--kb", str(tmp_path / "kb"), *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


VALUES = ["18446744073709551616", "-1", "4294967296", "nan", "inf", "-inf", "1e400", "3", "9" * 5000, "x", "0.5"]


def _outside(bound: Bound, value: str) -> bool:
    """Whether ``value``, as the command line gives it, is outside ``bound``."""
    try:
        number: float = int(value) if bound.kind == "whole" else float(value)
    except ValueError:
        return True
    return not bound.holds(number)


@pytest.mark.parametrize(
    ("before", "option", "bound", "value"),
    [(*option, value) for option in OPTIONS for value in VALUES if _outside(option[2], value)],
)
def test_a_number_out_of_its_bound_is_exit_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], before: list[str], option: str, bound: Bound, value: str
) -> None:
    code, output = _invoke(tmp_path, [*before, option, value], capsys)
    assert code == EXIT_USAGE, output
    assert bound.allowed in output
    assert len(output.strip().splitlines()) == 1, output


def test_the_cli_and_the_configuration_share_each_bound() -> None:
    for key, bound in [("models.llm.temperature", TEMPERATURE), ("models.llm.seed", SEED), ("search.fanout", K)]:
        rule = RULES[key]
        assert (rule.low, rule.high) == (bound.low, bound.high)


@settings(max_examples=60, deadline=None)
@given(value=st.text(max_size=30))
def test_any_text_for_a_number_is_a_number_in_bound_or_exit_2(value: str) -> None:
    from kb_core.cli.options import Bounded

    for bound in (SEED, TEMPERATURE, LIST_LIMIT):
        try:
            number = Bounded(bound).convert(value, None, None)
        except Exception as exc:  # noqa: BLE001 - click's usage error is the only one allowed
            assert type(exc).__name__ == "BadParameter", exc
        else:
            assert bound.holds(number)
