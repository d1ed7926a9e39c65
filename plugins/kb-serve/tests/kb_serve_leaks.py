"""The access probe's world and its leak detector (test_access_probe.py, bench/access_probe.py).

**The world**: the fixture corpus plus :data:`EXTRA` (folders whose names share a start with a granted one,
differ from one only in case or in a LIKE wildcard, or hold non-ASCII letters) and two scans read by OCR,
and the people of :data:`GROUPS` with the grants of :data:`GRANTS`. Every write grant covers a folder that
only uploads fill, so the probe's writes never remove the corpus. :class:`World` is what the operator's
token reads of it (every document's text), refreshed after each write.

**A leak** is anything in a response (body, headers, Server-Sent Events) that names or quotes what the asker
may not see: the path of a document outside their grants, :data:`SHINGLE` consecutive characters (after
:func:`normalised`) found only in documents outside their grants, or the id of an answer or thread someone
else asked. What the request itself carried (a path or words it names) is not a leak.
"""

from __future__ import annotations

import json
import re
import unicodedata
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs
import httpx

from kb_core.plugin.stores import Access

#: Documents added to the fixture corpus (path -> text), each with words of its own.
EXTRA = {
    "web2/raised-beds.md": "# Raised beds\n\nThe raised beds behind the Pellworth glasshouse are watered from "
    "the copper cistern every Thursday evening.\n",
    "Web/capital-letters.md": "# Capital letters\n\nThe Quillfeather press sets every heading of the almanac in "
    "hand-cut brass capitals.\n",
    "team_a/roadmap.md": "# Roadmap\n\nTeam A ships the Marrowgate bridge sensors before the autumn storms.\n",
    "teamxa/roadmap.md": "# Budget\n\nTeam Xa spends its Brindlecombe grant on a lighthouse lens grinder.\n",
    "café/menu.md": "# Menu\n\nThe Saffron Owl café serves quince tart with juniper cream on Sundays.\n",
}
#: Each person's groups (dee is in a group without any grant: she may read nothing).
GROUPS: dict[str, list[str]] = {
    "ann": ["gardeners", "teams"],
    "bob": ["writers", "diners"],
    "cho": ["gardeners", "ops", "asia"],
    "dee": ["idle"],
}
#: Each group's grants as (prefix, write). Writes reach only folders uploads fill (``inbox/``, ``drafts/``).
GRANTS: dict[str, list[tuple[str, bool]]] = {
    "gardeners": [("web/", False)],
    "teams": [("team_a/", False), ("team_a/drafts/", True)],
    "writers": [("notes/", False), ("notes/inbox/", True)],
    "diners": [("café/", False)],
    "ops": [("notes/ops/", False), ("notes/inbox/", False)],
    "asia": [("ko/", False), ("zh/tea.md", False), ("scans/", False)],
    "idle": [],
}
#: Characters in a row (of normalised text) that quote a document.
SHINGLE = 24
_IDS = re.compile(r"\b(?:ans_[0-9a-f]{16}|thr_[0-9a-f]{12})\b")


def access_of(person: str) -> Access:
    """``person``'s grants, as the server computes them from :data:`GROUPS` and :data:`GRANTS`."""
    given = [grant for group in GROUPS[person] for grant in GRANTS[group]]
    read = tuple(sorted({p for p, _ in given}))
    return Access(person, read, tuple(sorted({p for p, w in given if w})))


def normalised(text: str) -> str:
    """``text`` compatibility-composed, case-folded, every run of other than letters and digits one space."""
    return re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


def shingles(text: str) -> set[str]:
    """Every :data:`SHINGLE` characters in a row of ``normalised(text)``."""
    clean = normalised(text)
    return {clean[i : i + SHINGLE] for i in range(len(clean) - SHINGLE + 1)}


def strings_of(value: Any) -> Iterator[str]:
    """Every string in a JSON value (keys included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_of(item)


def response_text(response: httpx.Response) -> str:
    """All a response says, as text: its headers, its body, and the strings of its JSON (or of each SSE event's)."""
    parts = [f"{k}: {v}" for k, v in response.headers.items()]
    kind = response.headers.get("content-type", "")
    if kind.startswith("image/"):
        return "\n".join(parts)
    body = response.content.decode("utf-8", "replace")
    parts.append(body)
    chunks = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")] or [body]
    for chunk in chunks:
        try:
            parts.extend(strings_of(json.loads(chunk)))
        except ValueError:
            continue
    return "\n".join(parts)


@attrs.define
class World:
    """The stored documents as the operator reads them: path -> title and text, and path -> content hash."""

    texts: dict[str, str] = attrs.field(factory=dict)
    hashes: dict[str, str] = attrs.field(factory=dict)
    version: int = 0

    def refresh(self, operator: httpx.Client) -> None:
        """Read the list again, and the text of every document new or changed since."""
        listed = operator.get("/documents")
        assert listed.status_code == 200, listed.text
        now = {d["path"]: d["content_hash"] for d in listed.json()["documents"]}
        if now == self.hashes:
            return
        for path, digest in now.items():
            if self.hashes.get(path) != digest or path not in self.texts:
                self.texts[path] = document_text(operator, path)
        for gone in set(self.texts) - set(now):
            del self.texts[gone]
        self.hashes = now
        self.version += 1

    def readable(self, access: Access) -> list[str]:
        """The stored paths ``access`` may read."""
        return [p for p in self.texts if access.can_read(p)]


def document_text(client: httpx.Client, path: str) -> str:
    """A stored document's title and lines (``GET /documents/{path}``)."""
    reply = client.get("/documents/" + urllib.parse.quote(path, safe="/"))
    assert reply.status_code == 200, (path, reply.text)
    body = reply.json()
    return "\n".join([body["title"], *(line for line in body["lines"] if line)])


@attrs.define
class Forbidden:
    """What one person may not be shown, in one version of the world."""

    paths: set[str]
    quotes: set[str]  # shingles found only outside their grants
    titles: set[str]  # normalised titles of documents outside their grants, found nowhere they may read


def forbidden_for(world: World, access: Access) -> Forbidden:
    """What ``access``'s person may not be shown of ``world``."""
    allowed, hidden = set(), set()
    allowed_text: list[str] = []
    for path, text in world.texts.items():
        if access.can_read(path):
            allowed |= shingles(text)
            allowed_text.append(normalised(text))
        else:
            hidden |= shingles(text)
    seen = " | ".join(allowed_text)
    paths = {p for p in world.texts if not access.can_read(p)}
    titles = {normalised(world.texts[p].split("\n", 1)[0]) for p in paths}
    return Forbidden(paths, hidden - allowed, {t for t in titles if len(t) >= 10 and t not in seen})


@attrs.define
class Sent:
    """What a person has sent (their own questions, names and uploads): a response may show it back to them."""

    raw: list[str] = attrs.field(factory=list)
    quotes: set[str] = attrs.field(factory=set)
    clean: list[str] = attrs.field(factory=list)

    def add(self, text: str) -> None:
        """Remember ``text`` as sent."""
        self.raw += [text, urllib.parse.unquote(text)]
        self.quotes |= shingles(text)
        self.clean.append(normalised(text))

    def holds(self, text: str) -> bool:
        """Whether ``text`` is in something sent."""
        return any(text in raw for raw in self.raw)

    def holds_clean(self, text: str) -> bool:
        """Whether the normalised ``text`` is in something sent, normalised."""
        return any(text in clean for clean in self.clean)


def leaks(shown: str, sent: Sent, forbidden: Forbidden, others_ids: Iterable[str]) -> list[str]:
    """What of ``forbidden`` (and of the ids of ``others_ids``) the response text ``shown`` names or quotes,
    leaving out what the asker sent themselves (``sent``: this request and their earlier ones)."""
    found: list[str] = []
    for path in forbidden.paths:
        forms = {path, urllib.parse.quote(path, safe="/"), urllib.parse.quote(path, safe="")}
        if any(form in shown for form in forms) and not sent.holds(path):
            found.append(f"names {path!r}")
    quoted = (shingles(shown) & forbidden.quotes) - sent.quotes
    found.extend(f"quotes {q!r}" for q in sorted(quoted)[:3])
    clean = normalised(shown)
    found.extend(f"titles {t!r}" for t in forbidden.titles if t in clean and not sent.holds_clean(t))
    others = set(others_ids)
    found.extend(f"shows another's id {i}" for i in sorted(set(_IDS.findall(shown)) & others) if not sent.holds(i))
    return found


def ids_in(text: str) -> set[str]:
    """The answer and thread ids in ``text``."""
    return set(_IDS.findall(text))


def owned_by_others(owners: Mapping[str, str], person: str | None) -> list[str]:
    """The ids ``owners`` (id -> person) gives anyone but ``person``."""
    return [i for i, owner in owners.items() if owner != person]
