"""The zip-bomb checks the .docx and .xlsx parsers share (:func:`kb_documents.office.check_archive`)."""

from __future__ import annotations

import io
import zipfile

import pytest

from kb_core import KbError
from kb_documents.docx import DocxParser
from kb_documents.limits import Limits
from kb_documents.office import BOMB_HINT, check_archive
from kb_documents.xlsx import XlsxParser


def _archive(members: dict[str, bytes]) -> zipfile.ZipFile:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return zipfile.ZipFile(io.BytesIO(out.getvalue()))


def check(archive: zipfile.ZipFile, limits: Limits, parts: tuple[str, ...] | None = None) -> set[str]:
    """The names check_archive returns for an archive whose main part is ``main.xml``."""
    found = check_archive(archive, limits, ".fmt", main="main.xml", missing="a Fmt file", missing_hint="h", parts=parts)
    return set(found)


def test_only_the_parts_read_are_measured_and_all_members_are_counted() -> None:
    archive = _archive({"main.xml": b"<a/>", "zeros.bin": b"\0" * 1_000_000})
    assert check(archive, Limits(), parts=("main.xml",)) == {"main.xml"}  # zeros.bin is never read
    with pytest.raises(KbError, match=r"^zeros\.bin in the \.fmt would inflate \d+ times") as caught:
        check(archive, Limits())  # every member may be read: each is measured
    assert caught.value.hint == BOMB_HINT
    with pytest.raises(KbError, match=r"^the \.fmt has 2 parts, over the limit of 1 "):
        check(archive, Limits(max_docx_entries=1), parts=("main.xml",))
    with pytest.raises(KbError, match=r"^the \.fmt would inflate to 1000004 bytes, over the limit of 1000 "):
        check(archive, Limits(max_docx_inflated_bytes=1000, max_docx_ratio=10**9))
    with pytest.raises(KbError, match=r"^not a Fmt file \(the archive has no main\.xml\) "):
        check(_archive({"other.xml": b"<a/>"}), Limits())


@pytest.mark.parametrize(
    ("parser", "kind", "main"), [(DocxParser, ".docx", "word/document.xml"), (XlsxParser, ".xlsx", "xl/workbook.xml")]
)
def test_both_office_formats_refuse_a_bomb_in_the_same_words(parser: type, kind: str, main: str) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(main, b"<a/>" + b" " * 2_000_000)
    with pytest.raises(KbError, match=rf"^{main} in the \{kind} would inflate \d+ times \(2000004 bytes\)") as caught:
        parser().parse_bytes(out.getvalue(), f"bomb{kind}")
    assert caught.value.hint == BOMB_HINT
