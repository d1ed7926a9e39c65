"""Checks of command-line values that click cannot express: a query must say something within the
shared limits, and a ``--path`` glob must be well formed. Each failure is a one-line usage error (exit 2)."""

from __future__ import annotations

import click

from kb_core.limits import LIMITS, check_path_glob, check_text


def check_query(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A search query or question with something in it and within ``LIMITS.query_chars``."""
    if value is not None:
        check_text(value, "question" if param.name == "question" else "query")
    return value


#: ``--k``: a whole number from 1 to ``LIMITS.k`` (a larger one is a usage error, exit 2).
K_RANGE = click.IntRange(min=1, max=LIMITS.k)


def check_glob(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A well-formed ``--path`` glob (or None)."""
    check_path_glob(value)  # the one line every interface gives
    return value
