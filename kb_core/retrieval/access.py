"""Who is asking, and what they may read: a person's grants as path prefixes, carried by the context.

A server that knows its caller (``kb serve`` with people, :mod:`kb_serve.access`) runs each request under
:func:`restricted_to` with the person's :class:`Access`; every search made in that context
(``kb_core.search``, the answer pipeline's, a thread's follow-ups) carries the person's read prefixes
into every index's query (``SearchQuery.path_prefixes``), so a passage they may not read is never
retrieved for them. Outside any :func:`restricted_to` (the command line, a single-user server)
nothing is restricted.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import attrs

__all__ = ["Access", "asking_person", "current_access", "narrow_prefixes", "restricted_to", "under"]


def under(path: str, prefixes: Iterable[str]) -> bool:
    """Whether ``path`` starts with one of ``prefixes`` (a plain string prefix; ``""`` covers every path)."""
    return any(path.startswith(prefix) for prefix in prefixes)


def narrow_prefixes(first: tuple[str, ...] | None, second: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The prefixes whose paths both ``first`` and ``second`` allow (None allows every path), sorted, without
    one another covers."""
    if first is None:
        return second
    if second is None:
        return first
    both = {a for a in first if under(a, second)} | {b for b in second if under(b, first)}
    return tuple(sorted(p for p in both if not any(p != q and p.startswith(q) for q in both)))


@attrs.frozen
class Access:
    """One person's grants: the path prefixes they may read, and those they may also write (upload, delete)."""

    person: str
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()

    def can_read(self, path: str) -> bool:
        """Whether the person may read the document at ``path`` (a write grant includes reading)."""
        return under(path, self.read) or under(path, self.write)

    def can_write(self, path: str) -> bool:
        """Whether the person may upload to or delete the document (or folder) at ``path``."""
        return under(path, self.write)

    @property
    def readable(self) -> tuple[str, ...]:
        """Every prefix the person may read, without one another covers."""
        return narrow_prefixes(tuple(set(self.read) | set(self.write)), ("",)) or ()


_CURRENT: contextvars.ContextVar[Access | None] = contextvars.ContextVar("kb_access", default=None)


def current_access() -> Access | None:
    """The :class:`Access` this context runs under, or None (nothing restricted)."""
    return _CURRENT.get()


def asking_person() -> str | None:
    """The person this context runs under (who owns what is asked in it), or None outside :func:`restricted_to`."""
    access = _CURRENT.get()
    return None if access is None else access.person


@contextmanager
def restricted_to(access: Access | None) -> Iterator[None]:
    """Run the block as ``access``'s person (None: unrestricted): every search in it reads only their prefixes.

    A thread started inside does not inherit it: run its work with ``contextvars.copy_context().run``."""
    token = _CURRENT.set(access)
    try:
        yield
    finally:
        _CURRENT.reset(token)
