"""``kb access``: people, groups and grants for ``kb serve`` (kept in the store of record: SQLite or PostgreSQL).

Exit codes: 0 done; 2 a mistake (a name taken or unknown, a store that keeps no people); 5 the
store cannot be written. ``--json`` prints ``access.v1`` (the whole state, after the change) or, for
``users add`` and ``users token``, ``access_token.v1`` (the person and their token, shown this once).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

import click

from kb_core import KbError, KnowledgeBase
from kb_core.commands import Session, dumps, json_option, pass_session
from kb_core.plugin.stores import AccessStore
from kb_core.service import people

__all__ = ["access_command"]

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
LIST_HINT = "kb access list shows the people, groups and grants"


def _name(value: str, what: str) -> str:
    if not NAME.fullmatch(value):
        raise KbError(f"{what} {value[:80]!r} is not a name", hint="use letters, digits and . _ @ - (at most 64)")
    return value


def _prefix(value: str) -> str:
    """``value`` as stored paths are (NFC), when it can be a stored path prefix."""
    if "\x00" in value or len(value) > 1000 or value.startswith("/"):
        raise KbError(f"{value[:80]!r} is not a stored path prefix", hint="give a folder as kb lists it: handbook/")
    return unicodedata.normalize("NFC", value)


def _granted(kb: KnowledgeBase, prefix: str) -> str:
    """``prefix`` when a grant of it covers what it names: all (''), a folder (ending in '/') or one stored
    document; a bare word would also cover every path that merely starts with it (``handbook-private/``)."""
    if prefix and not prefix.endswith("/") and kb.store.get_document(prefix) is None:
        raise KbError(
            f"{prefix[:80]!r} is neither a folder nor a stored document",
            hint=f"end a folder with '/': kb access grant GROUP {prefix[:80]}/",
        )
    return prefix


def _store(session: Session) -> tuple[KnowledgeBase, AccessStore]:
    kb = session.kb(create=True)
    if not isinstance(kb.store, AccessStore):
        raise KbError("this store of record keeps no people", hint="use the sqlite or postgres store")
    return kb, kb.store


def state(store: AccessStore) -> dict[str, Any]:
    """``access.v1``: every person (with groups), group and grant."""
    return {
        "people": [{"name": p.name, "created_at": p.created_at, "groups": list(p.groups)} for p in store.people()],
        "groups": store.groups(),
        "grants": [{"group": g.group, "prefix": g.prefix, "write": g.write} for g in store.grants()],
    }


def _done(session: Session, as_json: bool, change: Callable[[AccessStore], bool], failed: KbError) -> None:
    """Run ``change``; a one-line ``failed`` when it changed nothing; print the state (``access.v1``) or 'done'."""
    _kb, store = _store(session)
    if not change(store):
        raise failed
    click.echo(dumps("access.v1", state(store)) if as_json else "done")


@click.group("access")
def access_command() -> None:
    """People, groups and grants of kb serve: who may read and write which folders.

    With no person, kb serve keeps its single token (or none on loopback). Once a person exists,
    every request needs a person's token (or the server's --token, which opens everything), and each
    person sees only the folders their groups are granted, their own answers and threads.
    Exit codes: 0 done, 2 a name taken or unknown, 5 the store cannot be written.
    """


@access_command.group("users")
def users() -> None:
    """People: each has a token, printed once."""


def _token_out(as_json: bool, name: str, token: str) -> None:
    if as_json:
        click.echo(dumps("access_token.v1", {"name": name, "token": token}))
    else:
        click.echo(token)
        click.echo(f"the token of {name!r}: shown this once, kept only hashed", err=True)


@users.command("add")
@click.argument("name")
@json_option
@pass_session
def users_add(session: Session, name: str, as_json: bool) -> None:
    """Make a person and print their token (once: kb keeps only its hash)."""
    _kb, store = _store(session)
    token = people.new_token()
    if not store.add_person(_name(name, "the person"), people.hash_token(token), people.now_iso()):
        raise KbError(f"a person {name!r} exists already", hint="kb access users token NAME gives them a new token")
    _token_out(as_json, name, token)


@users.command("token")
@click.argument("name")
@json_option
@pass_session
def users_token(session: Session, name: str, as_json: bool) -> None:
    """Give a person a new token (the old one stops working at once) and print it once."""
    _kb, store = _store(session)
    token = people.new_token()
    if not store.set_token(name, people.hash_token(token)):
        raise KbError(f"no person {name[:80]!r}", hint=LIST_HINT)
    _token_out(as_json, name, token)


@users.command("remove")
@click.argument("name")
@json_option
@pass_session
def users_remove(session: Session, name: str, as_json: bool) -> None:
    """Remove a person (their token stops working; what they asked stays stored, no longer theirs: a person
    given the name later does not see it)."""
    _done(session, as_json, lambda s: s.remove_person(name), KbError(f"no person {name[:80]!r}", hint=LIST_HINT))


@access_command.group("groups")
def groups() -> None:
    """Groups: people are granted folders through them."""


@groups.command("add")
@click.argument("name")
@click.argument("members", nargs=-1)
@json_option
@pass_session
def groups_add(session: Session, name: str, members: tuple[str, ...], as_json: bool) -> None:
    """Make a group (if new) and put MEMBERS (people) in it: all of it, or (a member who is no person) nothing."""
    kb, store = _store(session)
    group = _name(name, "the group")
    known = {p.name for p in store.people()}
    missing = [m for m in members if m not in known]
    if missing:
        raise KbError(f"no person {missing[0][:80]!r}", hint="kb access users add NAME makes one")
    with kb.store.transaction():  # (a person removed meanwhile: rolled back, nothing kept)
        store.add_group(group, people.now_iso())
        gone = [m for m in members if not store.add_member(group, m)]
        if gone:
            raise KbError(f"no person {gone[0][:80]!r}", hint="kb access users add NAME makes one")
    click.echo(dumps("access.v1", state(store)) if as_json else "done")


@groups.command("remove")
@click.argument("name")
@click.argument("members", nargs=-1)
@json_option
@pass_session
def groups_remove(session: Session, name: str, members: tuple[str, ...], as_json: bool) -> None:
    """Take MEMBERS out of a group, or with none remove the group and its grants."""

    def change(store: AccessStore) -> bool:
        if not members:
            return store.remove_group(name)
        removed = [store.remove_member(name, m) for m in members]  # (every one, not up to the first missing)
        return all(removed)

    _done(session, as_json, change, KbError(f"no group {name[:80]!r} or member of it named", hint=LIST_HINT))


@access_command.command("grant")
@click.argument("group")
@click.argument("prefix")
@click.option("--read", "mode", flag_value="read", default=True, help="Read the folder (the default).")
@click.option("--write", "mode", flag_value="write", help="Read, upload to and delete from the folder.")
@click.option("--revoke", "mode", flag_value="revoke", help="Take the grant back.")
@json_option
@pass_session
def grant(session: Session, group: str, prefix: str, mode: str, as_json: bool) -> None:
    """Grant GROUP the documents whose stored path starts with PREFIX: a folder ending in '/', one stored document,
    or '' for all (a prefix is compared as stored paths are, NFC)."""
    clean = _prefix(prefix)
    if mode != "revoke":  # (any grant kept, a broad one from before included, can be taken back)
        _granted(_store(session)[0], clean)

    def change(store: AccessStore) -> bool:
        return store.revoke(group, clean) if mode == "revoke" else store.set_grant(group, clean, mode == "write")

    failed = f"group {group[:80]!r} has no grant of {clean[:80]!r}" if mode == "revoke" else f"no group {group[:80]!r}"
    _done(session, as_json, change, KbError(failed, hint=LIST_HINT))


@access_command.command("list")
@json_option
@pass_session
def list_access(session: Session, as_json: bool) -> None:
    """Show the people (with their groups), groups and grants (never a token)."""
    _kb, store = _store(session)
    shown = state(store)
    if as_json:
        click.echo(dumps("access.v1", shown))
        return
    for person in shown["people"]:
        click.echo(f"person {person['name']}: {', '.join(person['groups']) or '(no group)'}")
    for name in shown["groups"]:
        click.echo(f"group {name}")
    for g in shown["grants"]:
        click.echo(f"grant {g['group']} {'write' if g['write'] else 'read'} {g['prefix']!r}")
