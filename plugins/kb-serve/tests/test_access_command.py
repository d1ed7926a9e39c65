"""``kb access`` on a real store (the fixture corpus, SQLite): a grant covers what it names and no more, a group is
made with all its members or not at all, and people's times are written as every stored time is."""

from __future__ import annotations

import json
import shutil
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kb_core import KbError
from kb_core.commands import Session
from kb_serve.access_command import access_command

Kb = Callable[..., Result]


@pytest.fixture
def kb_access(corpus_kb: Path, tmp_path: Path) -> Iterator[Kb]:
    """``kb_access(*args)``: ``kb access ARGS`` on a copy of the ingested fixture corpus (the session closed after)."""
    folder = tmp_path / "kb"
    shutil.copytree(corpus_kb, folder)
    sessions: list[Session] = []

    def run(*args: str) -> Result:
        sessions.append(Session(None, str(folder), None))
        return CliRunner().invoke(access_command, list(args), obj=sessions[-1])

    yield run
    for session in sessions:
        session.close()


def state(kb_access: Kb) -> dict[str, Any]:
    result = kb_access("list", "--json")
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.output))


def refused(result: Result) -> KbError:
    assert isinstance(result.exception, KbError), result.output
    return result.exception


def test_a_grant_is_a_folder_a_stored_document_or_everything(kb_access: Kb) -> None:
    assert kb_access("groups", "add", "team").exit_code == 0
    error = refused(kb_access("grant", "team", "notes"))  # would also grant notes-private/..., notes.md
    assert "neither a folder nor a stored document" in error.message and "end a folder with '/'" in error.hint
    assert refused(kb_access("grant", "team", "notes/heli", "--write")).exit_code == 2
    assert state(kb_access)["grants"] == []  # nothing kept
    for prefix in ("notes/", "notes/heliograph.md", ""):
        assert kb_access("grant", "team", prefix).exit_code == 0, prefix
    granted = {g["prefix"] for g in state(kb_access)["grants"]}
    assert granted == {"notes/", "notes/heliograph.md", ""}
    assert kb_access("grant", "team", "notes/heliograph.md", "--revoke").exit_code == 0


def test_a_grant_is_compared_as_stored_paths_are_nfc(kb_access: Kb) -> None:
    stored = "ko/김치찌개.md"  # (NFC, as kb stores paths)
    decomposed = unicodedata.normalize("NFD", stored)
    assert decomposed != stored
    assert kb_access("groups", "add", "team").exit_code == 0
    assert kb_access("grant", "team", decomposed).exit_code == 0  # a stored document, as macOS might type it
    assert kb_access("grant", "team", unicodedata.normalize("NFD", "ko/é/")).exit_code == 0
    assert {g["prefix"] for g in state(kb_access)["grants"]} == {stored, "ko/é/"}
    assert kb_access("grant", "team", decomposed, "--revoke").exit_code == 0  # found as NFC too
    assert {g["prefix"] for g in state(kb_access)["grants"]} == {"ko/é/"}


def test_a_group_is_made_with_all_its_members_or_not_at_all(kb_access: Kb) -> None:
    assert kb_access("users", "add", "ann").exit_code == 0
    error = refused(kb_access("groups", "add", "team", "ann", "nobody"))
    assert error.message == "no person 'nobody'" and error.exit_code == 2
    after = state(kb_access)
    assert after["groups"] == [] and after["people"][0]["groups"] == []  # neither the group nor ann's membership
    assert kb_access("groups", "add", "team", "ann").exit_code == 0
    assert state(kb_access)["people"][0]["groups"] == ["team"]


def test_people_and_groups_are_stamped_as_every_stored_time(kb_access: Kb) -> None:
    assert kb_access("users", "add", "ann").exit_code == 0
    assert kb_access("groups", "add", "team", "ann").exit_code == 0
    [person] = state(kb_access)["people"]
    assert person["created_at"].endswith("Z") and "+" not in person["created_at"]
    assert len(person["created_at"]) == len("2026-01-01T00:00:00Z")
