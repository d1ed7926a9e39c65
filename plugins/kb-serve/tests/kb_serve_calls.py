"""The access probe's requests: every route of ``kb serve``, as each person (or as nobody), with generated
parameters (test_access_probe.py, bench/access_probe.py).

A :class:`Call` is drawn from a ``random.Random`` (``hypothesis.strategies.randoms()`` in the test, a seeded
one in the bench), so one generator serves both. Paths are drawn from the stored documents, inside and
outside the asker's grants, and then often disguised (:data:`TRICKS`): dot segments, encoded slashes,
another case, a folder sharing a start (``web`` / ``web2/``), decomposed Unicode, a citation's ``#``.
"""

from __future__ import annotations

import random
import re
import unicodedata
import urllib.parse
from collections.abc import Callable
from typing import Any

import attrs
from kb_serve_leaks import GROUPS, access_of

#: Who a call is sent as, besides the people: no Authorization header, or a token nobody has.
NOBODY, WRONG = "(no token)", "(wrong token)"
#: Folders uploads may be sent to: the write grants, folders only readable, and their lookalikes.
UPLOAD_FOLDERS = (
    "notes/inbox/",
    "team_a/drafts/",
    "notes/",
    "notes/ops/",
    "team_a/",
    "web/",
    "",
    "notes/inbox2/",
    "notes/Inbox/",
    "team_a/drafts-old/",
    "teamxa/drafts/",
    "web2/",
    "café/",
)
#: Upload folders written in ways a name check might read differently from a grant check.
UPLOAD_TRICKS = ("notes/inbox/../", "../notes/inbox/", "/notes/inbox/", "notes/inbox//", "notes\\inbox\\", "./")
ROUTES = (
    "GET /health",
    "GET /openapi.json",
    "GET /",
    "GET /documents",
    "POST /documents",
    "GET /documents/{path}",
    "DELETE /documents/{path}",
    "GET /documents/{path}/pages/{page}.png",
    "GET /search",
    "POST /ask",
    "POST /ask/stream",
    "GET /answers",
    "GET /answers/{id}",
    "GET /threads",
    "POST /threads",
    "GET /threads/{id}",
    "POST /threads/{id}/ask",
    "DELETE /threads/{id}",
    "GET /v1/models",
    "POST /v1/chat/completions",
)
#: How often each route is drawn, relative to the others (questions cost the most).
WEIGHTS = (2, 1, 1, 4, 4, 8, 4, 3, 8, 3, 2, 2, 4, 2, 3, 3, 2, 2, 1, 4)


def _quoted(path: str) -> str:
    return urllib.parse.quote(path, safe="/")


def _swapcase_first(path: str) -> str:
    head, sep, rest = path.partition("/")
    return _quoted(head.swapcase() + sep + rest)


def _lookalike(path: str) -> str:
    head, sep, rest = path.partition("/")
    return _quoted(head + ("2" if sep else "x") + sep + rest)


def _shortened(path: str) -> str:
    head, sep, rest = path.partition("/")
    return _quoted(head[:-1] + sep + rest) if len(head) > 1 else _quoted(path)


TRICKS: dict[str, Callable[[str], str]] = {
    "as stored": _quoted,
    "encoded slash": lambda p: urllib.parse.quote(p, safe=""),
    "double-encoded slash": lambda p: _quoted(p).replace("/", "%252F"),
    "dot segments": lambda p: "web/%2E%2E/" + _quoted(p),
    "dot segments from notes": lambda p: "notes/inbox/%2E%2E/%2E%2E/" + _quoted(p),
    "leading dot": lambda p: "%2E/" + _quoted(p),
    "leading slash": lambda p: "/" + _quoted(p),
    "another case": _swapcase_first,
    "upper case": lambda p: _quoted(p.upper()),
    "sharing a start": _lookalike,
    "one letter short": _shortened,
    "decomposed": lambda p: _quoted(unicodedata.normalize("NFD", p)),
    "citation": lambda p: _quoted(p) + "%23L1-L2",
    "trailing blank": lambda p: _quoted(p) + "%20",
    "backslashes": lambda p: _quoted(p.replace("/", "\\")),
    "its folder": lambda p: _quoted(p.rpartition("/")[0] + "/") if "/" in p else _quoted(p),
    "nul": lambda p: _quoted(p) + "%00",
}


@attrs.frozen
class Call:
    """One request of the probe: the route it exercises, who sends it, and what it names."""

    route: str
    person: str  # a person's name, NOBODY or WRONG
    method: str
    url: str  # path and query, already percent-encoded
    json: Any = None
    files: list[tuple[str, tuple[str, bytes, str]]] | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    target: str | None = None  # the stored path the call names, when it names one as stored ("as stored")
    thread_of: str | None = None  # whose thread or answer the call names (an id), when it names one

    @property
    def writes(self) -> bool:
        """Whether the call may change the stored documents."""
        return self.route in ("POST /documents", "DELETE /documents/{path}")

    def sent_text(self) -> str:
        """Everything the request carries that a response may echo: its URL (also decoded), body and files."""
        parts = [self.url, urllib.parse.unquote(self.url), str(self.json or ""), *self.headers.values()]
        for name, (filename, data, _kind) in self.files or []:
            parts += [name, filename, data.decode("utf-8", "replace")]
        return "\n".join(parts)


@attrs.define
class Known:
    """What the probe knows when it draws a call: the stored texts, uploads, and the ids each person owns."""

    texts: dict[str, str]
    uploads: list[str] = attrs.field(factory=list)
    answers: dict[str, str] = attrs.field(factory=dict)  # answer id -> person
    threads: dict[str, str] = attrs.field(factory=dict)  # thread id -> person
    replies: list[tuple[str, str, str]] = attrs.field(factory=list)  # (person, question, /v1 reply)


def question(rnd: random.Random, known: Known) -> str:
    """A question made of words of a stored document (any: inside the asker's grants or not; often an upload,
    so that answers cite what later uploads change)."""
    uploads = [p for p in known.uploads if p in known.texts]
    path = rnd.choice(uploads if uploads and rnd.random() < 0.35 else sorted(known.texts))
    text = known.texts[path]
    cjk = re.findall(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]{2,}", text)
    if cjk and rnd.random() < 0.6:
        return "".join(rnd.sample(cjk, min(2, len(cjk)))) + "?"
    words = sorted(set(re.findall(r"[A-Za-z]{5,}", text))) or ["heliograph"]
    picked = rnd.sample(words, min(len(words), rnd.randint(2, 4)))
    return rnd.choice(("What does the knowledge base say about {}?", "{}?", "Tell me about {}.")).format(
        " ".join(picked)
    )


def _path(rnd: random.Random, known: Known, person: str, among: str = "") -> tuple[str, str]:
    """(a stored path, under ``among`` when there is one, and how it is written in the URL): half the time
    one ``person`` may read, else any."""
    paths = [p for p in [*sorted(known.texts), *known.uploads] if p.startswith(among)] or sorted(known.texts)
    if person in GROUPS and rnd.random() < 0.5:
        paths = [p for p in paths if access_of(person).can_read(p)] or paths
    path = rnd.choice(paths)
    trick = "as stored" if rnd.random() < 0.45 else rnd.choice(sorted(TRICKS))
    return path, TRICKS[trick](path) if trick != "as stored" else _quoted(path)


def _an_id(rnd: random.Random, owners: dict[str, str], person: str, prefix: str, digits: int) -> tuple[str, str | None]:
    """(an id: ``person``'s own, someone else's, or one nobody has; its owner or None)."""
    own = sorted(i for i, owner in owners.items() if owner == person)
    roll = rnd.random()
    if own and roll < 0.4:
        return rnd.choice(own), person
    if owners and roll < 0.85:
        chosen = rnd.choice(sorted(owners))
        return chosen, owners[chosen]
    return prefix + "".join(rnd.choice("0123456789abcdef") for _ in range(digits)), None


def _ask_body(rnd: random.Random, known: Known) -> dict[str, Any]:
    body: dict[str, Any] = {"question": question(rnd, known)}
    if rnd.random() < 0.3:
        body["k"] = rnd.choice((1, 3, 8, 20))
    if rnd.random() < 0.3:
        body["mode"] = rnd.choice(("lexical", "vector", "hybrid"))
    if rnd.random() < 0.3:
        body["explain"] = True
    return body


def _upload(rnd: random.Random, known: Known, person: str) -> Call:
    plain = True  # a name as stored, in a folder as a grant names it
    if known.uploads and rnd.random() < 0.35:
        name = rnd.choice(known.uploads)  # a new version of an uploaded document
    else:
        plain = rnd.random() < 0.8
        folders: tuple[str, ...] = UPLOAD_FOLDERS if plain else UPLOAD_TRICKS
        if plain and person in GROUPS and access_of(person).write and rnd.random() < 0.5:
            folders = access_of(person).write  # the asker's own write grants, half the time
        name = rnd.choice(folders) + f"probe-{rnd.randrange(16**4):04x}.md"
    marker = f"zq{rnd.randrange(16**8):08x}"
    words = " ".join(question(rnd, known).rstrip("?.").split()[-3:])
    data = f"# Probe {marker}\n\nThe {marker} ledger records {words} in its {marker} column.\n".encode()
    files = [("file", (name, data, "text/markdown"))]
    target = name if plain else None
    if rnd.random() < 0.2:  # two files in one upload: one outside the grants refuses both
        other = rnd.choice(UPLOAD_FOLDERS) + f"probe-{rnd.randrange(16**4):04x}.md"
        files.append(("file", (other, data.replace(b"ledger", b"register"), "text/markdown")))
        target = other if plain else None  # (a first name refused as a name is a 400 first)
    return Call("POST /documents", person, "POST", "/documents", files=files, target=target)


def draw(rnd: random.Random, known: Known, people: list[str]) -> Call:
    """One call: a route (by :data:`WEIGHTS`), who sends it, and its parameters."""
    route = rnd.choices(ROUTES, WEIGHTS)[0]
    person = rnd.choice([*people, *people, NOBODY, WRONG])
    if route == "POST /documents":
        return _upload(rnd, known, person)
    method, _, _ = route.partition(" ")
    if route in ("GET /documents/{path}", "DELETE /documents/{path}", "GET /documents/{path}/pages/{page}.png"):
        path, written = _path(rnd, known, person, "scans/" if route.endswith(".png") and rnd.random() < 0.6 else "")
        target = path if written == _quoted(path) else None
        url = "/documents/" + written
        if route.endswith(".png"):
            url += f"/pages/{rnd.choice(('1', '2', '01', '0', '99'))}.png"
        return Call(route, person, method, url, target=target)
    if route == "GET /documents":
        path = rnd.choice([*sorted(known.texts), ""])
        prefix = path[: rnd.randint(0, len(path))]
        return Call(route, person, method, "/documents?" + urllib.parse.urlencode({"prefix": prefix}))
    if route == "GET /search":
        params: dict[str, Any] = {"q": question(rnd, known), "k": rnd.choice((1, 5, 10, 50))}
        if rnd.random() < 0.3:
            params["mode"] = rnd.choice(("lexical", "vector", "hybrid"))
        if rnd.random() < 0.3:
            params["path"] = rnd.choice(("notes/*", "web*", "*", "team?a/*", "café/*", "*.md"))
        return Call(route, person, method, "/search?" + urllib.parse.urlencode(params))
    if route == "POST /ask":
        stream = rnd.random() < 0.4
        return Call(route, person, method, "/ask?stream=1" if stream else "/ask", json=_ask_body(rnd, known))
    if route == "POST /ask/stream":
        return Call(route, person, method, "/ask/stream", json=_ask_body(rnd, known))
    if route in ("GET /answers", "GET /threads"):
        return Call(route, person, method, route[4:] + f"?limit={rnd.choice((1, 5, 50))}")
    if route == "GET /answers/{id}":
        answer, owner = _an_id(rnd, known.answers, person, "ans_", 16)
        return Call(route, person, method, f"/answers/{answer}", thread_of=owner)
    if route == "POST /threads":
        return Call(route, person, method, "/threads", json=_ask_body(rnd, known), headers=_accept(rnd))
    if route in ("GET /threads/{id}", "POST /threads/{id}/ask", "DELETE /threads/{id}"):
        thread, owner = _an_id(rnd, known.threads, person, "thr_", 12)
        url = f"/threads/{thread}" + ("/ask" if route.endswith("/ask") else "")
        body = {"question": "And what else does it say?"} if method == "POST" else None
        return Call(route, person, method, url, json=body, thread_of=owner, headers=_accept(rnd))
    if route == "POST /v1/chat/completions":
        return _chat(rnd, known, person)
    return Call(route, person, method, route.partition(" ")[2])


def _accept(rnd: random.Random) -> dict[str, str]:
    return {"Accept": "text/event-stream"} if rnd.random() < 0.4 else {}


def _chat(rnd: random.Random, known: Known, person: str) -> Call:
    """A chat completion: a new conversation, one continuing a thread by id (anyone's), or one replaying
    another conversation's messages (kb matches it only among the asker's threads)."""
    body: dict[str, Any] = {"model": "kb", "stream": rnd.random() < 0.5}
    owner = None
    messages = [{"role": "user", "content": question(rnd, known)}]
    roll = rnd.random()
    headers: dict[str, str] = {}
    if roll < 0.35 and known.threads:
        thread, owner = _an_id(rnd, known.threads, person, "thr_", 12)
        if rnd.random() < 0.3:
            headers["X-Kb-Thread"] = thread  # (the header instead of the body's field)
        else:
            body["kb_thread"] = thread
    elif roll < 0.7 and known.replies:
        _who, asked, reply = rnd.choice(known.replies)
        messages = [{"role": "user", "content": asked}, {"role": "assistant", "content": reply}, *messages]
    body["messages"] = messages
    route = "POST /v1/chat/completions"
    return Call(route, person, "POST", route[5:], json=body, thread_of=owner, headers=headers)
