"""Any bytes as an .eml or an .mbox: documents or one-line KbErrors, never another exception, never a hang."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_core import KbError
from kb_core.plugin.containers import Part
from kb_mail.parser import MailParser

PARSER = MailParser()
PIECES = st.sampled_from(
    [
        b"From a@x Mon Jan 1 2024\n",
        b"\n",
        b"Content-Type: multipart/mixed; boundary=B\n",
        b"Content-Type: text/html; charset=x-nope\n",
        b"Content-Transfer-Encoding: base64\n",
        b"Content-Disposition: attachment; filename*=utf-8''r%C3%A9sum%C3%A9.md\n",
        b"--B\n",
        b"--B--\n",
        b"Subject: =?utf-8?b?broken\n",
        b"Message-ID: <a/b#c@d>\n",
        b">From x\n",
        b"<blockquote><p>q</p>",
        b"> quoted\n",
        b"\xff\xfe\x00bytes",
        b"Content-Type: message/rfc822\n",
    ]
)
MAIL = st.one_of(
    st.binary(max_size=2000), st.lists(st.one_of(PIECES, st.binary(max_size=40)), max_size=40).map(b"".join)
)


def _parts(data: bytes, name: str) -> list[Part]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        return list(PARSER.parts(path, name))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MAIL, st.sampled_from(["m.eml", "box.mbox"]))
def test_any_bytes_give_parts_or_one_line(data: bytes, name: str) -> None:
    try:
        parts = _parts(data, name)
    except KbError as exc:
        assert "\n" not in str(exc)
        return
    names = [p.name for p in parts]
    assert len(names) == len(set(names))
    for part in parts:
        assert "\n" not in part.problem
        if part.problem or part.extension != ".eml":
            continue
        parsed = PARSER.parse_bytes(part.data, "m.eml")
        for block in parsed.blocks:
            block.text.encode("utf-8")  # valid text: no lone surrogates
            assert block.start_line <= block.end_line
            assert block.text.count("\n") == block.end_line - block.start_line
