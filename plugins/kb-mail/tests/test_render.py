"""A message as a document: headers first, quotes dropped, HTML read as text, odd charsets and broken MIME read."""

from __future__ import annotations

import pytest
from mailtest import message

from kb_core import KbError
from kb_mail.parser import MailParser, _unique, message_name
from kb_mail.quotes import drop_quotes

PARSER = MailParser()


def _lines(data: bytes) -> list[str]:
    parsed = PARSER.parse_bytes(data, "mail.eml")
    return "\n".join(b.text for b in parsed.blocks).split("\n")


def test_headers_come_first_then_the_text_without_the_quoted_reply() -> None:
    body = (
        "Agreed, Friday it is.\n\nOn Mon, 4 Mar 2024 at 09:12, Alice Example <alice@example.com>\nwrote:\n"
        "> Shall we meet Friday?\n> Alice\n"
    )
    parsed = PARSER.parse_bytes(message("Re: Meeting", body).as_bytes(), "mail.eml")
    lines = "\n".join(b.text for b in parsed.blocks).split("\n")
    assert lines == [
        "From: Alice Example <alice@example.com>",
        "To: Bob <bob@example.com>",
        "Date: Tue, 05 Mar 2024 10:00:00 +0000",
        "Subject: Re: Meeting",
        "Agreed, Friday it is.",
    ]
    assert [(b.start_line, b.end_line) for b in parsed.blocks] == [(1, 4), (6, 6)]
    assert parsed.title == "Re: Meeting" and parsed.warnings == ()


def test_outlook_replies_lose_the_original_below_them() -> None:
    text = "Yes, approved.\n\n-----Original Message-----\nFrom: Alice\nSent: Monday\nCan I buy the pump?"
    assert drop_quotes(text) == "Yes, approved."
    outlook = "Yes, approved.\n\n________________________________\nFrom: Alice\nSent: Monday\nTo: Bob\nCan I?"
    assert drop_quotes(outlook) == "Yes, approved.\n\n________________________________"


def test_html_only_mail_is_read_as_text_without_its_quote() -> None:
    html = (
        "<html><head><style>p {color: red}</style></head><body><p>The <b>bittern</b> count rose.</p>"
        "<table><tr><td>heron</td><td>4</td></tr></table><div>On Monday, Carol wrote:</div>"
        "<blockquote><p>old text</p><blockquote>older</blockquote></blockquote></body></html>"
    )
    lines = _lines(message("Birds", "", html=html).as_bytes())
    assert lines[4:] == ["The bittern count rose.", "heron | 4"]


def test_a_plain_part_is_preferred_to_its_html_alternative() -> None:
    lines = _lines(message("Both", "plain words\n", html="<p>html words</p>").as_bytes())
    assert lines[-1] == "plain words"


def test_odd_charsets_are_decoded_and_an_unknown_one_is_a_warning() -> None:
    for charset, text in (
        ("iso-8859-1", "Café crème"),
        ("euc-kr", "회의록 요약"),
        ("shift_jis", "議事録"),
        ("koi8-r", "Привет"),
    ):
        raw = (
            f"From: a@example.com\nSubject: x\nContent-Type: text/plain; charset={charset}\n"
            "Content-Transfer-Encoding: 8bit\n\n"
        ).encode() + text.encode(charset)
        assert _lines(raw)[-1] == text, charset
    unknown = b"From: a@example.com\nSubject: x\nContent-Type: text/plain; charset=x-martian\n\nnaive caf\xc3\xa9\n"
    parsed = PARSER.parse_bytes(unknown, "m.eml")
    assert parsed.blocks[-1].text == "naive café"
    assert parsed.warnings == ("unknown charset 'x-martian'; read as UTF-8",)
    rot13 = b"From: a@example.com\nContent-Type: text/plain; charset=rot13\n\nplain\n"
    assert PARSER.parse_bytes(rot13, "m.eml").blocks[-1].text == "plain"


def test_encoded_and_raw_8bit_headers_are_read() -> None:
    raw = (
        b"From: =?utf-8?q?Ren=C3=A9e?= <r@example.com>\nSubject: =?euc-kr?b?yLjAx7fP?=\n"
        b"To: \xc3\xa9lise <e@example.com>\n\nbody\n"
    )
    lines = _lines(raw)
    assert lines[:3] == ["From: Renée <r@example.com>", "To: élise <e@example.com>", "Subject: 회의록"]


def test_a_broken_mime_structure_is_read_with_a_warning() -> None:
    raw = (
        b'From: a@example.com\nSubject: broken\nContent-Type: multipart/mixed; boundary="XYZ"\n\n'
        b"--XYZ\nContent-Type: text/plain\n\nthe only text\n"  # never closed
    )
    parsed = PARSER.parse_bytes(raw, "m.eml")
    assert parsed.blocks[-1].text == "the only text"
    assert parsed.warnings == ("broken MIME structure (CloseBoundaryNotFoundDefect); read what could be read",)


def test_a_huge_header_is_cut_with_a_warning() -> None:
    raw = b"From: a@example.com\nSubject: " + b"word " * 400_000 + b"\n\nbody\n"
    parsed = PARSER.parse_bytes(raw, "m.eml")
    assert parsed.warnings == ("the Subject header is 2,000,000 characters long; read its first 2,000",)
    assert len(parsed.title) <= 200 and parsed.blocks[-1].text == "body"


def test_message_names_are_safe_stable_and_never_empty() -> None:
    assert message_name(b"Message-ID: <CAK7x=q9+z@mail.gmail.com>\n\n") == "CAK7x=q9+z@mail.gmail.com"
    assert message_name(b"Message-ID: <../../etc/passwd#L1>\n\n") == "etc-passwd-L1"
    assert message_name(b"Message-Id: <" + b"x" * 500 + b"@h>\n\n").startswith("x" * 100)
    assert len(message_name(b"Message-Id: <" + b"x" * 500 + b"@h>\n\n")) == 120
    assert message_name(b"Subject: none\n\n").startswith("sha-")


def test_hostile_shapes_end_soon_in_a_line() -> None:
    params = b"From: a@x\nContent-Type: text/plain; " + b"a=b; " * 200_000 + b"\n\nbody\n"  # took 273 s unbounded
    assert PARSER.parse_bytes(params, "m.eml").blocks[-1].text == "body"
    part = b"--B\nContent-Type: text/plain\nContent-Disposition: attachment; filename=a.md\n\nx\n"
    many = b"From: a@x\nContent-Type: multipart/mixed; boundary=B\n\n" + part * 20_000 + b"--B--\n"
    with pytest.raises(KbError, match="more than 10,000 MIME boundary lines"):
        PARSER.parse_bytes(many, "m.eml")
    nested = b"".join(b"Content-Type: multipart/mixed; boundary=B%d\n\n--B%d\n" % (i, i) for i in range(2000))
    with pytest.raises(KbError, match="nests its parts too deeply"):
        PARSER.parse_bytes(b"From: a@x\n" + nested + b"\n\nx\n", "m.eml")


def test_attachment_names_are_made_unique_before_their_extension() -> None:
    taken: dict[str, int] = {}
    names = [_unique(n, taken) for n in ["a.md", "a.md", "a.md", "a~2.md", "b", "b"]]
    assert names == ["a.md", "a~2.md", "a~3.md", "a~2~2.md", "b", "b~2"]
