"""A person's folder in every format kb reads besides Markdown, PDF and Office (issue 46), made here.

Kestrel Instruments, a small company that makes river-level gauges, and the people around it: the
project mail of a quarter (an mbox of 12 messages in five threads, one HTML-only, one with a Markdown
attachment, replies quoting their original; two exported .eml files), a hydrometry lecture deck with
speaker notes (.pptx), a site-visit briefing (.odp), a field technician's handbook (.epub, five
chapters), an expenses policy (.odt), an equipment register (.ods) and a data-analysis notebook
(.ipynb, markdown and code cells with outputs). Every fact is made up and written in exactly one
part (a message, a slide's text or notes, a chapter, a cell), so a question's expected citation is
unambiguous; ``bench/data/formats/golden.jsonl`` asks about them and ``tests/test_formats_bench.py``
checks that each fact is where its question expects it.

The containers are written by kb-documents' test builders (``plugins/kb-documents/tests/part_formats.py``:
the parts PowerPoint, LibreOffice, EPUB writers and Jupyter write that the readers use), the mail by the
standard library's ``email``; nothing random, and zip members carry a fixed date, so the folder is the
same bytes on every run.
"""

from __future__ import annotations

import io
import sys
import zipfile
from email.message import EmailMessage
from pathlib import Path
from xml.sax.saxutils import escape

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins" / "kb-documents" / "tests"))

from part_formats import (  # noqa: E402  (the builders live beside kb-documents' tests)
    code_cell,
    epub,
    markdown_cell,
    notebook,
    odf,
    pptx,
    slide_xml,
    stream,
    xhtml,
)

GOLDEN = REPO / "bench" / "data" / "formats" / "golden.jsonl"
DOMAIN = "kestrel.example"
STAMP = (2024, 3, 1, 9, 0, 0)

PEOPLE = {
    "priya": "Priya Natarajan <priya@kestrel.example>",
    "tom": "Tom Becker <tom@kestrel.example>",
    "lena": "Lena Ortiz <lena@kestrel.example>",
    "dev": "Dev Anand <dev@kestrel.example>",
    "ruth": "Ruth Malley <ruth@kestrel.example>",
    "team": "Kestrel team <team@kestrel.example>",
}

#: (id, sender, subject, date, body, in-reply-to id or "", html-only, attachment (name, text) or None)
MESSAGES: list[tuple[str, str, str, str, str, str, bool, tuple[str, str] | None]] = [
    ("trial-1", "priya", "Otter v2 field trial", "Mon, 04 Mar 2024 09:12:00 +0000",
     "Hi all,\n\nThe field trial of the Otter v2 gauge starts on 14 March at the Hollin Bridge site.\n"
     "We will install four units on the left bank.\n\nPriya", "", False, None),
    ("trial-2", "tom", "Re: Otter v2 field trial", "Mon, 04 Mar 2024 11:40:00 +0000",
     "I can drive the van. The battery packs for the trial arrive from Voltaic Supplies on 11 March.\n\nTom",
     "trial-1", False, None),
    ("trial-3", "priya", "Re: Otter v2 field trial", "Tue, 05 Mar 2024 08:05:00 +0000",
     "Good news: the river authority granted the site permit, number EA-4471-K.\n\nPriya",
     "trial-2", False, None),
    ("enclosures-1", "lena", "Supplier quote for enclosures", "Wed, 06 Mar 2024 14:20:00 +0000",
     "<html><body><p>Hello,</p><p>Castlemoor Plastics quoted <b>38.50 euros per enclosure</b> for an order of "
     "500 units, delivered within six weeks.</p><p>Lena</p></body></html>", "", True, None),
    ("enclosures-2", "priya", "Re: Supplier quote for enclosures", "Wed, 06 Mar 2024 16:02:00 +0000",
     "Approved. Please send purchase order PO-2291 to Castlemoor today.\n\nPriya", "enclosures-1", False, None),
    ("firmware-1", "dev", "Firmware 2.3 release", "Thu, 07 Mar 2024 10:30:00 +0000",
     "Firmware 2.3 is out. It fixes the clock drift bug: the old clock drifted 9 seconds per day.\n"
     "Release notes attached.\n\nDev", "", False,
     ("release-notes.md", "# Firmware 2.3 release notes\n\n## Changes\n\nThe shortest sampling interval is now "
      "30 seconds; shorter settings are rounded up.\n\nThe status LED blinks blue while the modem registers.\n")),
    ("firmware-2", "tom", "Re: Firmware 2.3 release", "Fri, 08 Mar 2024 17:45:00 +0000",
     "Rolled out to 37 of the 40 deployed units. The three units at Marsh Lane are offline and still "
     "run 2.2.\n\nTom", "firmware-1", False, None),
    ("office-1", "ruth", "Office move", "Mon, 11 Mar 2024 09:00:00 +0000",
     "We move to the new office at 12 Quarry Street on 2 May. Packing crates are delivered on 29 April.\n\nRuth",
     "", False, None),
    ("office-2", "ruth", "Re: Office move", "Tue, 12 Mar 2024 09:30:00 +0000",
     "The new office has eight parking spaces in the rear yard; book them through Facilities.\n\nRuth",
     "office-1", False, None),
    ("office-3", "dev", "Re: Office move", "Tue, 12 Mar 2024 12:15:00 +0000",
     "The soldering bench and the environmental chamber go on the second removal van, on 3 May.\n\nDev",
     "office-2", False, None),
    ("tarnby-1", "lena", "Tarnby council order", "Wed, 13 Mar 2024 15:00:00 +0000",
     "Tarnby council wants 25 gauges by September for flood warning on the river Lune.\n\nLena",
     "", False, None),
    ("tarnby-2", "lena", "Re: Tarnby council order", "Thu, 14 Mar 2024 10:10:00 +0000",
     "Their budget holder is Marion Achebe, and the contract is worth 61,000 pounds.\n\nLena",
     "tarnby-1", False, None),
]  # fmt: skip

EML = {
    "invoice-dispute.eml": ("lena", "Courier invoice dispute", "Fri, 15 Mar 2024 11:00:00 +0000",
                            "Invoice 7781 from Greyfield Couriers charged one pallet twice; they owe us 140 euros.\n"
                            "I have asked them for a credit note.\n\nLena"),
    "new-hire.eml": ("ruth", "Welcome Sam", "Mon, 18 Mar 2024 08:30:00 +0000",
                     "Sam Whitaker joins us as a test engineer on 6 May. Dev Anand will be Sam's mentor for the "
                     "first three months.\n\nRuth"),
}  # fmt: skip

#: The lecture deck: (title, text lines, table rows, notes lines) per slide.
DECK = [
    ("Measuring river flow", ["Hydrometry 210, lecture 4"], [],
     ["Remind the students that the lab report is due on 21 October."]),
    ("Stage and discharge", ["A rating curve converts water level (stage) into discharge."], [],
     ["The rating curve at Wendle Weir was last recalibrated in 2019, after the weir crest was rebuilt."]),
    ("The velocity-area method", ["Divide the channel into at least 20 verticals."], [],
     ["No single vertical should carry more than 5 percent of the total flow."]),
    ("Dilution gauging", ["Salt dilution suits steep, turbulent mountain streams."], [],
     ["Use about 1 kilogram of salt for every cubic metre per second of expected flow."]),
    ("Acoustic Doppler profilers", ["Profilers measure velocity from the Doppler shift of sound."],
     [["Instrument", "Deepest water"], ["Towed ADCP", "40 m"], ["Handheld ADV", "1.5 m"]],
     ["The department's ADCP was bought in 2021 and is booked through Dr Okafor."]),
    ("Summary", ["Choose the method by channel, depth and turbulence."], [],
     ["Next week's lecture covers sediment transport."]),
]  # fmt: skip

#: The site-visit briefing (.odp): (title, text, notes) per slide.
BRIEFING = [
    ("Arrival", "Meet at the Wendle Weir car park at 08:30.", "Hard hats are handed out at the gate hut."),
    ("Safety", "Life jackets must be worn within 2 metres of the water.",
     "The nearest hospital is Carrow General, 14 km from the weir."),
    ("Tasks", "Group A gauges the flow; Group B samples water quality.",
     "Water samples must be kept below 4 degrees Celsius until they reach the lab."),
]  # fmt: skip

#: The handbook (.epub): (title, paragraphs) per chapter.
CHAPTERS = [
    ("Before you leave", ["Check the forecast and the river level before every trip.",
                          "File a trip plan with the office; never work alone when the river is above the amber "
                          "mark."]),
    ("Installing a gauge", ["Choose a straight reach with a stable bed.",
                            "Mount the pressure sensor 15 cm above the bed on a stainless steel bracket."]),
    ("Calibration", ["Calibrate on site, never in the van.",
                     "Zero the sensor in air for 60 seconds before you lower it into the water."]),
    ("Retrieving data", ["Download the logger every month.",
                         "Use the grey USB-C cable; files are named by site code and date."]),
    ("When things go wrong", ["Most faults show on the status light.",
                              "A flashing red light means the desiccant cartridge must be replaced."]),
]  # fmt: skip

#: The notebook: ("md" or "code", source, output text or "") per cell.
CELLS = [
    ("md", "# Flow analysis, Wendle Weir 2023", ""),
    ("code", "import pandas as pd\nflows = pd.read_csv('wendle_2023.csv', parse_dates=['time'])", ""),
    ("md", "## Cleaning\nReadings from the ice period of 9 to 15 January were removed as unreliable.", ""),
    ("code", "peak = flows.loc[flows.discharge.idxmax()]\nprint(peak.discharge, peak.time.date())",
     "peak discharge 48.2 m3/s on 2023-11-03\n"),
    ("md", "## Rating curve\nWe fit a power-law rating curve; its fitted exponent is 1.63.", ""),
    ("code", "fit = rating_curve(flows)\nprint(round(fit.r2, 3))", "0.971\n"),
    ("md", "## Conclusion\nThe gauge under-reads by about 6 percent at high flows; recalibrate it before spring.", ""),
]  # fmt: skip

POLICY = [
    ("h", "Travel and expenses policy"),
    ("p", "This policy applies to every employee of Kestrel Instruments."),
    ("h", "Travel"),
    ("p", "Mileage in a private car is reimbursed at 45 pence per mile."),
    ("p", "Train travel is booked in standard class."),
    ("h", "Claims"),
    ("p", "Expense claims must be submitted within 60 days of the expense."),
    ("p", "Meals abroad are reimbursed up to 35 euros per day."),
]

REGISTER = [
    ["Asset", "Item", "Location", "Purchased"],
    ["K-017", "Water level logger", "Van 2", "2022-03-04"],
    ["K-023", "Current meter", "Store room B", "2021-11-19"],
    ["K-031", "Survey drone", "Office safe", "2023-06-30"],
    ["K-044", "Portable generator", "Garage", "2020-08-12"],
]


def message_id(key: str) -> str:
    """The Message-ID of message ``key`` (without angle brackets): kb names the message's document by it."""
    return f"{key}@{DOMAIN}"


def _mail(sender: str, subject: str, date: str, body: str, html: bool = False) -> EmailMessage:
    mail = EmailMessage()
    mail["From"] = PEOPLE[sender]
    mail["To"] = PEOPLE["team"]
    mail["Subject"] = subject
    mail["Date"] = date
    mail.set_content(body, subtype="html" if html else "plain")
    return mail


def _quoted(original: EmailMessage) -> str:
    """The original's text as a mail client quotes it under a reply."""
    text = original.get_body(("plain",))
    lines = (text.get_content() if text is not None else "").rstrip("\n").split("\n")
    return f"\n\nOn {original['Date']}, {original['From']} wrote:\n" + "\n".join(f"> {x}".rstrip() for x in lines)


def mailbox_bytes() -> bytes:
    """The mbox (mboxrd, as Thunderbird writes it): replies quote the message they answer."""
    out = io.BytesIO()
    sent: dict[str, EmailMessage] = {}
    for key, sender, subject, date, body, parent, html, attachment in MESSAGES:
        if parent and sent[parent].get_content_type() != "text/html":
            body += _quoted(sent[parent])
        mail = _mail(sender, subject, date, body, html)
        mail["Message-ID"] = f"<{message_id(key)}>"
        if parent:
            mail["In-Reply-To"] = f"<{message_id(parent)}>"
        if attachment:
            name, text = attachment
            mail.add_attachment(text.encode(), "text", "markdown", filename=name)
            mail.set_boundary(f"=-{key}-boundary")  # not the random one: the same bytes every run
        sent[key] = mail
        data = mail.as_bytes().replace(b"\nFrom ", b"\n>From ")
        out.write(b"From - Mon Mar  4 09:00:00 2024\n" + data.rstrip(b"\n") + b"\n\n")
    return out.getvalue()


def eml_bytes(name: str) -> bytes:
    sender, subject, date, body = EML[name]
    mail = _mail(sender, subject, date, body)
    mail["Message-ID"] = f"<{Path(name).stem}@{DOMAIN}>"
    return mail.as_bytes()


def _fixed(data: bytes) -> bytes:
    """The zip ``data`` again with every member dated STAMP, so the file is the same bytes on every run."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            member = zipfile.ZipInfo(info.filename, STAMP)
            member.compress_type = info.compress_type
            target.writestr(member, source.read(info.filename))
    return out.getvalue()


def _odf_text(value: str) -> str:
    return f"<text:p>{escape(value)}</text:p>"


def _frame(kind: str, text: str) -> str:
    return f'<draw:frame presentation:class="{kind}"><draw:text-box>{_odf_text(text)}</draw:text-box></draw:frame>'


def briefing_bytes() -> bytes:
    pages = "".join(
        f"<draw:page>{_frame('title', title)}{_frame('outline', text)}"
        f"<presentation:notes>{_frame('notes', notes)}</presentation:notes></draw:page>"
        for title, text, notes in BRIEFING
    )
    return odf("presentation", pages, title="Site visit briefing")


def policy_bytes() -> bytes:
    body = "".join(
        f'<text:h text:outline-level="{1 if n == 0 else 2}">{t}</text:h>' if kind == "h" else _odf_text(t)
        for n, (kind, t) in enumerate(POLICY)
    )
    return odf("text", body, title="Travel and expenses policy")


def register_bytes() -> bytes:
    rows = "".join(
        "<table:table-row>"
        + "".join(f"<table:table-cell>{_odf_text(value)}</table:table-cell>" for value in row)
        + "</table:table-row>"
        for row in REGISTER
    )
    return odf("spreadsheet", f'<table:table table:name="Register">{rows}</table:table>', title="Equipment register")


def deck_bytes() -> bytes:
    return pptx(
        [(slide_xml(title, [text], table), notes) for title, text, table, notes in DECK], title="Measuring river flow"
    )


def handbook_bytes() -> bytes:
    chapters = [
        (f"chapter{n}.xhtml", xhtml(title, f"<h1>{title}</h1>" + "".join(f"<p>{p}</p>" for p in paragraphs)))
        for n, (title, paragraphs) in enumerate(CHAPTERS, start=1)
    ]
    return epub(chapters, title="The Field Technician's Handbook")


def notebook_bytes() -> bytes:
    cells = [
        markdown_cell(source) if kind == "md" else code_cell(source, *([stream(output)] if output else []))
        for kind, source, output in CELLS
    ]
    return notebook(cells)


def write_folder(target: Path) -> list[Path]:
    """Write the folder's files into ``target`` (made if missing); returns their paths."""
    target.mkdir(parents=True, exist_ok=True)
    files = {
        "mail/inbox.mbox": mailbox_bytes(),
        **{f"mail/{name}": eml_bytes(name) for name in EML},
        "teaching/river-flow-lecture.pptx": _fixed(deck_bytes()),
        "teaching/site-visit.odp": _fixed(briefing_bytes()),
        "handbook/field-handbook.epub": _fixed(handbook_bytes()),
        "admin/expenses-policy.odt": _fixed(policy_bytes()),
        "admin/equipment-register.ods": _fixed(register_bytes()),
        "analysis/wendle-flows.ipynb": notebook_bytes(),
    }
    written = []
    for name, data in files.items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    return written


def part_of(metadata: dict[str, object], line: int) -> int | None:
    """The part (slide, chapter, cell) that holds ``line`` of a document with ``page_lines``; None without parts."""
    page_lines = metadata.get("page_lines")
    if not isinstance(page_lines, list) or not page_lines:
        return None
    return sum(1 for first in page_lines if isinstance(first, int) and first <= line) or None
