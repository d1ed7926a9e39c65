"""Checks of command-line values that click cannot express: a ``--k`` within the shared limits, and a
well-formed ``--path`` glob. Each failure is a one-line usage error (exit 2).

A query or question is not checked here: the library function a command calls (``search``, ``ask``,
``ask_in_thread``) checks it, once, and its one line reaches the user the same way.
"""

from __future__ import annotations

import click

from kb_core.bounds import K
from kb_core.cli.options import Bounded
from kb_core.limits import check_path_glob

#: ``--k``: a whole number from 1 to ``LIMITS.k`` (a larger one is a usage error, exit 2).
K_RANGE = Bounded(K)


def check_glob(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A well-formed ``--path`` glob (or None)."""
    check_path_glob(value)  # the one line every interface gives
    return value
