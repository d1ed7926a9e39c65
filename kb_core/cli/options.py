"""Options several commands take (``kb ask``, ``kb search``, ``kb eval ...``), each written once.

Each is a decorator factory: the command passes what differs (its help text, the flag of an input
file), the option's name, type and behaviour stay the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kb_core.bounds import Bound
from kb_core.types import SEARCH_MODES

F = TypeVar("F", bound=Callable[..., Any])

#: ``--mode``: one of the search modes.
MODE_CHOICE = click.Choice(list(SEARCH_MODES))


def input_file(flag: str, name: str, help: str) -> Callable[[F], F]:
    """A required option naming a file that exists (``--golden``, ``--set``, ``--queries``, ``--qrels``),
    passed as a Path in ``name``."""
    path = click.Path(exists=True, dir_okay=False, path_type=Path)
    return click.option(flag, name, required=True, type=path, help=help)


def out_option(help: str) -> Callable[[F], F]:
    """``--out DIR``: the folder a report is written to, passed as a Path in ``out_dir`` (None: not given)."""
    return click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), help=help)


def backend_option(help: str = "Language model backend (default: [models.llm] backend).") -> Callable[[F], F]:
    """``--backend NAME``: the language model backend of this command (None: the configured one)."""
    return click.option("--backend", help=help)


def mode_option(help: str, *, multiple: bool = False) -> Callable[[F], F]:
    """``--mode``: a search mode, in ``mode`` (None: not given); ``multiple``: repeatable, a tuple in ``modes``."""
    if multiple:
        return click.option("--mode", "modes", type=MODE_CHOICE, multiple=True, help=help)
    return click.option("--mode", type=MODE_CHOICE, help=help)


def constrained_option(help: str) -> Callable[[F], F]:
    """``--constrained/--unconstrained``: constrained generation, in ``constrained`` (None: the configured one)."""
    return click.option("--constrained/--unconstrained", default=None, help=help)


class Bounded(click.ParamType):
    """A number within a :class:`kb_core.bounds.Bound`: the CLI's ranges are the config's and HTTP's.

    A value outside it is a usage error (exit 2) naming the value and what is allowed; NaN, infinity and
    integers too large for any range are outside every bound.
    """

    def __init__(self, bound: Bound) -> None:
        self.bound = bound
        self.name = "integer" if bound.kind == "whole" else "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """``value`` (text from the command line, or a default) as an int or float within the bound."""
        if isinstance(value, int | float) and not isinstance(value, bool):
            number: int | float = value
        else:
            try:
                number = int(value, 10) if self.bound.kind == "whole" else float(value)
            except ValueError:  # not a number, or an integer past Python's 4,300 digits
                self.fail(f"{str(value)[:40]!r} is not {self.bound.allowed}", param, ctx)
        if not self.bound.holds(number):
            self.fail(f"{str(value)[:40]} is not {self.bound.allowed}", param, ctx)
        return number

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """``[LOW..HIGH]`` in the help."""
        low, high = (
            f"{v:g}" if isinstance(v, float) and not v.is_integer() else f"{int(v)}"
            for v in (self.bound.low, self.bound.high)
        )
        return f"{'INTEGER' if self.bound.kind == 'whole' else 'FLOAT'} [{low}..{high}]"
