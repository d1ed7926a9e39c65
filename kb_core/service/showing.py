"""What a front end may show of an answer: the local paths a client must not learn are hidden.

A front end that others reach over a network (``kb serve``) shows no absolute local path: not the
model files an answer names (``model.path``, ``embedding.path``), not the folders in its note,
not a document's source folder outside the knowledge base. A front end on the user's own machine
(``kb ask``, ``kb mcp``) shows everything (:attr:`Showing.hide_paths` false).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs

from kb_core.types import Answer

# An absolute path of two or more parts (POSIX, or a Windows drive): a slash that does not follow a
# word, a URL or another path; its last part is kept, the folders before it are not shown.
_POSIX_PATH = re.compile(r"(?<![\w.~:/>\\-])/(?:[^\s/'\"`]+/)+(?=[^\s/'\"`]+)")
_WINDOWS_PATH = re.compile(r"\b[A-Za-z]:\\(?:[^\s\\'\"`]+\\)+(?=[^\s\\'\"`]+)")


def cut_paths(text: str) -> str:
    """``text`` with every absolute path of two or more parts cut to its last part.

    >>> cut_paths("cannot open /home/ann/kb/kb.sqlite3: locked")
    'cannot open …/kb.sqlite3: locked'
    """
    return _WINDOWS_PATH.sub("…\\\\", _POSIX_PATH.sub("…/", text))


@attrs.frozen
class Showing:
    """What a front end shows: ``hide_paths`` (no local path), relative to the knowledge base folder ``kb_dir``."""

    hide_paths: bool = False
    kb_dir: Path | None = None

    def answer(self, answer: Answer, *, explain: bool = False) -> Answer:
        """``answer`` as the front end shows it: a refusal without the claims kb refused (its ``sentences``: they
        are shown only to a reader who asks to ``explain`` it), and, when paths are hidden, without the local files
        of its models or the folders in its note."""
        if not answer.grounded and not explain:
            answer = attrs.evolve(answer, sentences=())
        if not self.hide_paths:
            return answer
        return attrs.evolve(
            answer,
            model=answer.model and attrs.evolve(answer.model, path=None),
            embedding=answer.embedding and attrs.evolve(answer.embedding, path=None),
            note=cut_paths(answer.note),
        )

    def answer_json(self, answer: dict[str, Any]) -> dict[str, Any]:
        """A stored ``answer.v1`` document (a thread's turn) as :meth:`answer` shows an answer."""
        if not answer.get("grounded") and answer.get("sentences"):
            answer = {**answer, "sentences": []}
        if not self.hide_paths:
            return answer
        shown = dict(answer)
        for key in ("model", "embedding"):
            if isinstance(shown.get(key), dict):
                shown[key] = {**shown[key], "path": None}
        if isinstance(shown.get("note"), str):
            shown["note"] = cut_paths(shown["note"])
        return shown

    def path(self, path: str) -> str:
        """A local path as shown: relative to the knowledge base folder, or "" when outside it (a document
        ingested from the user's own folder does not reveal where that folder is)."""
        if not self.hide_paths or not path or not Path(path).is_absolute():
            return path
        if self.kb_dir is None:
            return ""
        try:
            return Path(path).resolve().relative_to(self.kb_dir).as_posix()
        except (ValueError, OSError):
            return ""

    def text(self, text: str) -> str:
        """Free text (an error, a warning) as shown: :func:`cut_paths` when paths are hidden."""
        return cut_paths(text) if self.hide_paths else text
