"""A large mailbox: a generated mbox of 10,000 messages ingested with kb's default engines (kb-mail).

Prints the time and peak memory (the child's maximum resident set, ``wait4``) of a first ``kb ingest`` and
of an unchanged re-ingest, and writes them to ``bench/out/mail.json``. The messages are made here
(seeded): plain and HTML-only mail, replies quoting their original, one in twenty with a Markdown
attachment, one in fifty with an attachment no parser reads (a zip).

    python bench/mail.py [--messages N] [--indexes tantivy,sqlitevec] [--out FILE]

``--indexes`` sets ``KB_INDEXES__ENABLED`` for the child (default: kb's default indexes), to tell the
reading stage's memory from the embedding stage's; ``--out`` writes elsewhere than ``bench/out/mail.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from email.message import EmailMessage
from pathlib import Path

from common import run_kb

OUT = Path(__file__).resolve().parent / "out" / "mail.json"
WORDS = (
    "pump valve weir heron osprey bittern inspection schedule report budget invoice meeting agenda minutes "
    "river gauge level sensor replaced repaired crew contract supplier delivery quarter review draft final "
    "approve request update note flange seal motor bearing filter station north south east west spring autumn"
).split()


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 18))]
    return " ".join(words).capitalize() + "."


def _body(rng: random.Random) -> str:
    return "\n\n".join(" ".join(_sentence(rng) for _ in range(rng.randint(2, 5))) for _ in range(rng.randint(1, 6)))


def make_message(rng: random.Random, number: int) -> EmailMessage:
    """Message ``number``: its kind (plain, HTML-only, a reply, with attachments) follows from the number."""
    mail = EmailMessage()
    mail["From"] = f"Person {number % 97} <p{number % 97}@example.com>"
    mail["To"] = "team@example.com"
    mail["Subject"] = ("Re: " if number % 3 == 1 else "") + f"{rng.choice(WORDS)} {rng.choice(WORDS)} #{number // 3}"
    mail["Date"] = f"Mon, {1 + number % 28:02d} Jan 2024 {number % 24:02d}:00:00 +0000"
    mail["Message-ID"] = f"<m{number}.{rng.getrandbits(32):08x}@example.com>"
    body = _body(rng)
    if number % 10 == 5:
        paragraphs = "".join(f"<p>{p}</p>" for p in body.split("\n\n"))
        mail.set_content(f"<html><body>{paragraphs}</body></html>", subtype="html")
    else:
        if number % 3 == 1:
            body += "\n\nOn Mon, 1 Jan 2024, someone wrote:\n" + "\n".join("> " + s for s in _body(rng).split("\n"))
        mail.set_content(body)
    if number % 20 == 0:
        mail.add_attachment(f"# Notes {number}\n\n{_body(rng)}\n".encode(), "text", "markdown", filename="notes.md")
    if number % 50 == 7:
        mail.add_attachment(rng.randbytes(20_000), "application", "zip", filename="photos.zip")
    return mail


def write_mbox(path: Path, count: int) -> int:
    """An mbox of ``count`` messages at ``path``, written as Thunderbird does (mboxrd); its size in bytes."""
    rng = random.Random(46)
    with path.open("wb") as out:
        for number in range(count):
            data = make_message(rng, number).as_bytes().replace(b"\nFrom ", b"\n>From ")
            out.write(b"From - Mon Jan  1 00:00:00 2024\n" + data.rstrip(b"\n") + b"\n\n")
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--indexes", default="", help="comma-separated index names (default: kb's default indexes)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the figures (default {OUT})")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder, kb_dir = Path(tmp) / "mail", Path(tmp) / "kb"
        folder.mkdir()
        size = write_mbox(folder / "inbox.mbox", args.messages)
        env = {"KB_HOME": str(kb_dir)}
        if args.indexes:
            env["KB_INDEXES__ENABLED"] = json.dumps([name.strip() for name in args.indexes.split(",")])
        first, first_rss, out = run_kb(["ingest", str(folder), "--json"], env)
        report = json.loads(out)
        second, second_rss, out = run_kb(["ingest", str(folder), "--json"], env)
        again = json.loads(out)
    assert not report["failed"] and not again["added"] and not again["updated"], (report["failed"], again)
    figures = {
        "messages": args.messages,
        "mbox_bytes": size,
        "documents": report["documents"],
        "chunks": report["chunks"],
        "first_ingest_s": round(first, 2),
        "first_ingest_peak_rss_mib": round(first_rss),
        "reingest_unchanged_s": round(second, 2),
        "reingest_unchanged_peak_rss_mib": round(second_rss),
        "reingest_share_of_first": round(second / first, 4),
        "indexes": [i["index"] for i in report["indexes"]],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"mbox                 {args.messages} messages, {size / 1e6:.1f} MB")
    print(f"stored               {report['documents']} documents, {report['chunks']} chunks ({figures['indexes']})")
    print(f"first ingest         {first:.1f} s wall, peak RSS {first_rss:.0f} MiB")
    share = f"{second / first:.1%} of the first"
    print(f"re-ingest unchanged  {second:.2f} s wall ({share}), peak RSS {second_rss:.0f} MiB")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
