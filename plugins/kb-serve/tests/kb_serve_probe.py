"""The access probe (issue 45): generated requests on every route of one real ``kb serve``, as people with
different grants, one without any, and nobody, each response checked for what crosses the grants
(test_access_probe.py runs it briefly, bench/access_probe.py at length).

After every request: nothing in the response names or quotes a document outside the asker's grants, nor
shows another person's answer or thread (:func:`kb_serve_leaks.leaks`); a document outside the grants is a
404 exactly as a path that does not exist is; another person's thread or answer is a 404; a write outside
the write grants is a 403 (or the 404 of a document the asker cannot see) and changes no stored document
and no uploaded file; a request without a person's token is a 401.
"""

from __future__ import annotations

import random
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import httpx
from kb_serve_calls import NOBODY, WRONG, Call, Known, draw
from kb_serve_leaks import (
    EXTRA,
    GRANTS,
    GROUPS,
    Sent,
    World,
    access_of,
    forbidden_for,
    ids_in,
    leaks,
    owned_by_others,
    response_text,
)
from kb_serve_people import add_people, as_person
from kb_serve_scans import OVERRIDES, lines_for, write_scans

import kb_core
from kb_core import KnowledgeBase
from kb_core.testing import ScriptedOcrPlugin, following_up

#: The configuration and in-process plugins a probed server needs (the scans are read by a scripted OCR engine).
SERVER_OVERRIDES = dict(OVERRIDES)
OPERATOR = "probe-operator-token"
#: The scripted model's script: extractive answers (an answer quotes what retrieval found), and a topic for follow-ups.
SCRIPT = following_up("the ledger and the garden")
PUBLIC = ("GET /",)


def server_plugins() -> list[tuple[str, object]]:
    """The plugins to start the probed server with (besides the scripted language model)."""
    return [("scans-ocr", ScriptedOcrPlugin(lines_for))]


def prepare(service: Any, folder: Path) -> dict[str, str]:
    """Ingest :data:`EXTRA` and the scans (written into ``folder``) through the server's ``service`` (a
    ``KbService``), and keep the people of :data:`GROUPS`; returns each person's token."""
    for path, text in EXTRA.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    write_scans(folder / "scans")

    def work(kb: KnowledgeBase) -> dict[str, str]:
        report = kb_core.ingest_paths(kb, [folder])
        assert report.failed == [], report.failed
        return add_people(kb.store, GROUPS, GRANTS)

    tokens: dict[str, str] = service.write(work)
    return tokens


@attrs.define
class Violation:
    """A response that crossed the grants."""

    route: str
    person: str
    method: str
    url: str
    status: int
    what: list[str]


@attrs.define
class Probe:
    """One probed server: its URL, the people's tokens, what the operator reads, and what was found."""

    url: str
    tokens: dict[str, str]
    uploads: Path | None = None  # the server's uploads folder, checked unchanged by a refused write
    world: World = attrs.field(factory=World)
    requests: Counter[str] = attrs.field(factory=Counter)
    statuses: Counter[str] = attrs.field(factory=Counter)
    violations: list[Violation] = attrs.field(factory=list)
    helper_requests: int = 0
    server_errors: list[str] = attrs.field(factory=list)
    sent: dict[str, Sent] = attrs.field(factory=dict)
    known: Known = attrs.field(init=False)
    clients: dict[str, httpx.Client] = attrs.field(init=False)
    _forbidden: dict[str, tuple[int, Any]] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        names = {**self.tokens, NOBODY: None, WRONG: "not-a-token", "operator": OPERATOR}
        self.clients = {name: as_person(self.url, token) for name, token in names.items()}
        self.world.refresh(self.clients["operator"])
        self.known = Known(self.world.texts)

    def close(self) -> None:
        """Close every client."""
        for client in self.clients.values():
            client.close()

    def run(self, rnd: random.Random, count: int) -> None:
        """Send ``count`` calls drawn from ``rnd``, checking each."""
        people = sorted(self.tokens)
        for _ in range(count):
            self.send(draw(rnd, self.known, people))

    def send(self, call: Call) -> httpx.Response:
        """Send ``call`` as its person and check the response; what it found is kept in :attr:`violations`."""
        before, files_before = dict(self.world.hashes), self._uploaded_files()
        client = self.clients[call.person]
        reply = client.request(call.method, call.url, json=call.json, files=call.files, headers=call.headers)
        self.requests[call.route] += 1
        self.statuses[f"{call.route} {reply.status_code}"] += 1
        found = self._check(call, reply)
        if reply.status_code >= 500:
            self.server_errors.append(f"{call.method} {call.url[:100]} -> {reply.status_code} {reply.text[:200]}")
        if call.writes:
            found += self._check_write(call, reply, before, files_before)
        self._learn(call, reply)
        if found:
            self.violations.append(Violation(call.route, call.person, call.method, call.url, reply.status_code, found))
        return reply

    def _forbidden_of(self, person: str) -> Any:
        cached = self._forbidden.get(person)
        if cached is None or cached[0] != self.world.version:
            cached = (self.world.version, forbidden_for(self.world, access_of(person)))
            self._forbidden[person] = cached
        return cached[1]

    def _check(self, call: Call, reply: httpx.Response) -> list[str]:
        status = reply.status_code
        if call.person in (NOBODY, WRONG):
            return [] if call.route in PUBLIC or status == 401 else [f"{status} without a person's token"]
        shown = response_text(reply)
        owners = {**self.known.answers, **self.known.threads}
        sent = self.sent.setdefault(call.person, Sent())
        sent.add(call.sent_text())
        found = leaks(shown, sent, self._forbidden_of(call.person), owned_by_others(owners, call.person))
        access = access_of(call.person)
        if call.thread_of is not None and call.thread_of != call.person and status != 404:
            found.append(f"{status} for {call.thread_of}'s thread or answer (not a 404)")
        if call.route == "GET /search" and status == 200:
            outside = [h["doc_path"] for h in reply.json()["hits"] if not access.can_read(h["doc_path"])]
            found += [f"a hit outside the grants: {p!r}" for p in outside]
        if call.route == "GET /documents" and status == 200:
            outside = [d["path"] for d in reply.json()["documents"] if not access.can_read(d["path"])]
            found += [f"lists {p!r}" for p in outside]
        hidden = call.target is not None and call.target in self.world.texts and not access.can_read(call.target)
        if hidden and call.method == "GET" and call.route.startswith("GET /documents/"):
            found += self._as_if_absent(call, reply)
        return found

    def _as_if_absent(self, call: Call, reply: httpx.Response) -> list[str]:
        """A document outside the grants answers as a path that does not exist does (the path aside)."""
        assert call.target is not None
        head, _, tail = call.target.rpartition("/")
        absent = f"{head}/zz-absent-{tail}" if head else f"zz-absent-{tail}"
        quoted, absent_quoted = urllib.parse.quote(call.target, safe="/"), urllib.parse.quote(absent, safe="/")
        twin = self.clients[call.person].get(call.url.replace(quoted, absent_quoted, 1))
        self.helper_requests += 1
        same = reply.status_code == twin.status_code == 404
        if same and reply.text.replace(call.target, "<path>") != twin.text.replace(absent, "<path>"):
            same = False
        return (
            [] if same else [f"{reply.status_code} {reply.text[:160]!r} where an absent path gives {twin.text[:160]!r}"]
        )

    def _uploaded_files(self) -> dict[str, bytes]:
        if self.uploads is None or not self.uploads.exists():
            return {}
        return {str(p.relative_to(self.uploads)): p.read_bytes() for p in self.uploads.rglob("*") if p.is_file()}

    def _check_write(
        self, call: Call, reply: httpx.Response, before: dict[str, str], files_before: dict[str, bytes]
    ) -> list[str]:
        """A write changes only what the asker may write; one outside the grants is refused and changes nothing."""
        self.world.refresh(self.clients["operator"])
        self.helper_requests += 1
        self.known.texts = self.world.texts
        after, access = self.world.hashes, access_of(call.person) if call.person in self.tokens else None
        changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
        found = []
        if access is None:
            found += [f"changed {p!r} without a person's token" for p in sorted(changed)]
        else:
            found += [f"changed {p!r} outside the write grants" for p in sorted(changed) if not access.can_write(p)]
            target = call.target
            if target is not None and not access.can_write(target) and (call.method == "POST" or target in before):
                expected = 403 if call.method == "POST" or access.can_read(target) else 404
                if reply.status_code != expected:
                    found.append(f"{reply.status_code} where {expected} was due: {reply.text[:160]!r}")
        if reply.status_code >= 400:
            found += [f"a refused write changed {p!r}" for p in sorted(changed)]
            files_after = self._uploaded_files()
            if files_after != files_before:
                found.append(
                    f"a refused write changed the uploads folder: {sorted(set(files_after) ^ set(files_before))}"
                )
        for path in changed:
            if path in after and path not in self.known.uploads and path not in before:
                self.known.uploads.append(path)
        self.known.uploads = [p for p in self.known.uploads if p in after]
        return found

    def _learn(self, call: Call, reply: httpx.Response) -> None:
        """Record the ids a person's response gave them (the first to see an id is its owner), and /v1 replies."""
        if call.person not in self.tokens or reply.status_code != 200:
            return
        text = reply.text
        for found in ids_in(text):
            kind = self.known.answers if found.startswith("ans_") else self.known.threads
            if found not in kind and call.method != "DELETE":
                kind[found] = call.person
        if call.route == "DELETE /threads/{id}":
            self.known.threads.pop(call.url.split("/")[2], None)
        if call.route == "POST /v1/chat/completions" and not (call.json or {}).get("stream"):
            content = reply.json()["choices"][0]["message"]["content"]
            self.known.replies.append((call.person, call.json["messages"][-1]["content"], content))

    def summary(self, took_s: float) -> dict[str, Any]:
        """The run's figures: requests per route, statuses, violations, wall time."""
        return {
            "requests": sum(self.requests.values()),
            "helper_requests": self.helper_requests,
            "per_route": dict(sorted(self.requests.items())),
            "statuses": dict(sorted(self.statuses.items())),
            "violations": len(self.violations),
            "server_errors": self.server_errors[:20],
            "found": [attrs.asdict(v) for v in self.violations[:50]],
            "wall_s": round(took_s, 1),
        }


def probe(url: str, tokens: dict[str, str], uploads: Path | None, seed: int, count: int) -> tuple[Probe, float]:
    """Run ``count`` calls of seed ``seed`` against the server at ``url``; the probe and its wall time."""
    began = time.perf_counter()
    found = Probe(url, tokens, uploads)
    try:
        found.run(random.Random(seed), count)
    finally:
        found.close()
    return found, time.perf_counter() - began
