"""``GET /documents/{path}/pages/{page}.png``: a page OCR read, as a PNG made anew from the document's
own file (when it is still the one ingested), and ``document_text.v1``'s ``ocr``.

The scans are drawn and read by a scripted engine (kb_serve_scans.py); one test reads a photo with the
real Tesseract engine when kb-tesseract and its data are installed. The page is rendered by the
document's parser (kb-documents' tests check its rendering: tests/test_render.py there); kb-serve holds
no image format, pixel limit or decoder of its own (test_page_renderers.py).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from kb_serve_scans import LANDSCAPE, MARK, PHOTO, PORTRAIT, photo_png, start_with_scans, write_scans
from PIL import Image, ImageDraw, ImageFont

import kb_core
from kb_core.commands import LOW_CONFIDENCE
from kb_serve import page_images
from kb_serve.errors import ApiError
from kb_serve.openapi import own_schema
from kb_serve.page_images import MAX_SIDE, source_bytes

pytest.importorskip("kb_documents", reason="kb-documents (PDF pages and images) is not installed")


def png_of(reply: httpx.Response) -> Image.Image:
    """The PNG a reply carries (after checking that it is one, sent as one, and not cached)."""
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"] == "image/png"
    assert reply.headers["cache-control"] == "private, no-store"
    assert reply.headers["x-content-type-options"] == "nosniff"
    image = Image.open(io.BytesIO(reply.content), formats=["PNG"])
    image.load()
    return image


def grey(image: Image.Image, x: int, y: int) -> int:
    """The grey level of a pixel of a grey image."""
    value = image.getpixel((x, y))
    assert isinstance(value, int)
    return value


def refused(reply: httpx.Response, status: int, words: str) -> None:
    """The reply is the one-line JSON error ``status`` whose message holds ``words``."""
    assert reply.status_code == status, (reply.status_code, reply.text)
    body = reply.json()
    jsonschema.validate(body, own_schema("error"))
    assert words in body["error"], body


def test_pages_of_a_scanned_pdf_and_of_images_come_back_as_pngs_of_their_size(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    folder = write_scans(tmp_path / "scans", ("scan.pdf", "birds.png", "birds.jpg"))
    server = start_with_scans(start_server, folder)
    with server.client() as http:
        text = http.get("/documents/scan.pdf").json()
        jsonschema.validate(text, own_schema("document_text.v1"))
        ocr = text["ocr"]
        assert ocr["pages"] == [[1, 595, 842], [2, 842, 595]] and ocr["low_confidence"] == LOW_CONFIDENCE
        low = [line for line in ocr["lines"] if line["low"]]
        assert [text["lines"][line["line"] - 1] for line in low] == ["Its seals were replaced with grey nitrile rings."]
        assert low[0]["confidence"] == 0.41 and low[0]["page"] == 1
        assert http.get("/documents/notes/heliograph.md").json()["ocr"] is None  # text not read by OCR

        portrait = png_of(http.get("/documents/scan.pdf/pages/1.png"))
        landscape = png_of(http.get("/documents/scan.pdf/pages/2.png"))  # the page asked for, at its size
        assert portrait.height == MAX_SIDE and landscape.width == MAX_SIDE
        assert portrait.width / portrait.height == pytest.approx(PORTRAIT[0] / PORTRAIT[1], abs=0.002)
        assert landscape.width / landscape.height == pytest.approx(LANDSCAPE[0] / LANDSCAPE[1], abs=0.002)

        photo = http.get("/documents/birds.png/pages/1.png")
        assert png_of(photo).size == PHOTO == tuple(http.get("/documents/birds.png").json()["ocr"]["pages"][0][1:])
        assert photo.content != (folder / "birds.png").read_bytes()  # made anew, never the file's own bytes
        upright = png_of(http.get("/documents/birds.jpg/pages/1.png")).convert("L")  # EXIF orientation applied
        assert upright.size == PHOTO
        x, y, w, h = MARK
        assert grey(upright, x + w // 2, y + h // 2) < 60  # the dark square at the top left, as shown
        assert grey(upright, PHOTO[0] - 10, PHOTO[1] - 10) > 200
        assert http.head("/documents/birds.png/pages/1.png").status_code == 200


def test_a_page_that_is_not_there_is_a_404(start_server: Callable[..., Any], tmp_path: Path) -> None:
    server = start_with_scans(start_server, write_scans(tmp_path / "scans", ("scan.pdf",)))
    with server.client() as http:
        refused(http.get("/documents/scan.pdf/pages/3.png"), 404, "has no page 3 read by OCR (pages: 1, 2)")
        refused(http.get("/documents/scan.pdf/pages/0.png"), 404, "has no page 0")
        refused(http.get("/documents/notes/heliograph.md/pages/1.png"), 404, "was not read by OCR")
        refused(http.get("/documents/nowhere.pdf/pages/1.png"), 404, "no document at 'nowhere.pdf'")
        refused(http.get("/documents/scan.pdf/pages/x.png"), 404, "no document at 'scan.pdf/pages/x.png'")
        assert http.delete("/documents/scan.pdf/pages/1.png").status_code == 404  # (DELETE is the document's route)


def test_a_file_changed_gone_or_leading_outside_its_folder_is_refused(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    folder = write_scans(tmp_path / "scans", ("scan.pdf", "birds.png", "birds.jpg"))
    server = start_with_scans(start_server, folder)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with server.client() as http:
        (folder / "birds.png").write_bytes((folder / "birds.png").read_bytes() + b"\0")
        changed = "'birds.png' changed since it was ingested; run kb ingest"
        refused(http.get("/documents/birds.png/pages/1.png"), 409, changed)
        original = (folder / "birds.png").read_bytes()[:-1]
        (folder / "birds.png").write_bytes(original[:-1] + bytes([original[-1] ^ 1]))  # the same size
        refused(http.get("/documents/birds.png/pages/1.png"), 409, "changed since it was ingested")
        (folder / "birds.png").write_bytes(original)
        png_of(http.get("/documents/birds.png/pages/1.png"))  # as it was: shown again

        (folder / "scan.pdf").unlink()
        refused(http.get("/documents/scan.pdf/pages/1.png"), 404, "the file of 'scan.pdf' is gone from its folder")

        # the very bytes that were ingested, but through a link that leads out of the folder
        shutil.move(folder / "birds.jpg", elsewhere / "birds.jpg")
        os.symlink(elsewhere / "birds.jpg", folder / "birds.jpg")
        outside = "the file of 'birds.jpg' now leads outside its folder"
        refused(http.get("/documents/birds.jpg/pages/1.png"), 409, outside)
        assert str(tmp_path) not in http.get("/documents/birds.jpg/pages/1.png").text  # no local path in errors


def test_a_fifo_swapped_in_after_the_check_is_refused_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_scans(tmp_path / "scans", ("birds.png",))
    data = (folder / "birds.png").read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    document = kb_core.Document("birds.png", digest, len(data), "birds.png", "image", str(folder))
    assert source_bytes(document) == data
    regular = tmp_path / "regular.png"
    shutil.move(folder / "birds.png", regular)
    fifo = folder / "birds.png"
    os.mkfifo(fifo)  # a pipe nobody writes to, put there once the file was checked (as stat() below says)
    real_stat = Path.stat

    def stat_before_the_swap(path: Path, *args: Any, **kwargs: Any) -> os.stat_result:
        return real_stat(regular if path == fifo else path, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", stat_before_the_swap)
    caught: list[BaseException] = []

    def read() -> None:
        try:
            source_bytes(document)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            caught.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():  # blocked opening the pipe: a writer lets it go, and the test fails
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=10)
        pytest.fail("reading the document's file waited for a writer to its FIFO")
    (error,) = caught
    assert isinstance(error, ApiError) and error.status == 409 and "changed since it was ingested" in str(error)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_page_is_read_only_once_its_render_may_start(
    start_server: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_with_scans(start_server, write_scans(tmp_path / "scans", ("birds.png",)))
    lock, seen = threading.Lock(), {"now": 0, "most": 0, "arrived": 0}
    real = page_images.source_bytes

    def counted(document: kb_core.Document, follow_symlinks: bool = False) -> bytes:
        with lock:
            seen["now"] += 1
            seen["arrived"] += 1
            seen["most"] = max(seen["most"], seen["now"])
        deadline = time.monotonic() + 120  # as many reads as may overlap have begun (however slow this machine)
        while seen["arrived"] < page_images.RENDERS and time.monotonic() < deadline:
            time.sleep(0.01)
        deadline = time.monotonic() + 1.0  # then a moment for the third, which must not begin while these wait
        while seen["arrived"] < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            return real(document, follow_symlinks)
        finally:
            with lock:
                seen["now"] -= 1

    monkeypatch.setattr(page_images, "source_bytes", counted)
    replies: list[httpx.Response] = []

    def fetch() -> None:
        with server.client() as http:
            replies.append(http.get("/documents/birds.png/pages/1.png"))

    workers = [threading.Thread(target=fetch) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert [reply.status_code for reply in replies] == [200, 200, 200]
    assert seen["arrived"] == 3 and seen["most"] == page_images.RENDERS  # a third file is not held while it waits


def test_an_uploaded_image_whose_own_path_ends_in_pages_keeps_its_text(
    start_server: Callable[..., Any], tmp_path: Path
) -> None:
    server = start_with_scans(start_server, write_scans(tmp_path / "scans", ("birds.png",)), token="a-token")
    with server.client() as http:
        report = http.post("/documents", files={"file": ("album/pages/1.png", photo_png(), "image/png")}).json()
        assert report["added"] == ["album/pages/1.png"], report
        text = http.get("/documents/album/pages/1.png")  # the document of that path, not page 1 of "album"
        assert text.json()["schema_version"] == "document_text.v1" and text.json()["path"] == "album/pages/1.png"
        assert png_of(http.get("/documents/album/pages/1.png/pages/1.png")).size == PHOTO  # from the uploads
    with httpx.Client(base_url=server.url) as anonymous:
        refused(anonymous.get("/documents/birds.png/pages/1.png"), 401, "a bearer token is required")


@pytest.mark.slow
@pytest.mark.needs_ocr_data
def test_a_photo_read_by_tesseract_shows_its_page(start_server: Callable[..., Any], tmp_path: Path) -> None:
    page = Image.new("RGB", (1275, 500), "white")
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 36)
    ImageDraw.Draw(page).text((100, 200), "The heron pump was serviced in March.", fill="black", font=font)
    folder = tmp_path / "photos"
    folder.mkdir()
    page.save(folder / "heron.png", dpi=(150, 150))
    server = start_server(overrides={"ingest.ocr": "tesseract"})
    report = server.app.state.service.write(lambda kb: kb_core.ingest_paths(kb, [folder]))
    assert report.added == ["heron.png"], report.failed
    with server.client() as http:
        text = http.get("/documents/heron.png").json()
        assert "heron pump was serviced" in " ".join(line or "" for line in text["lines"])
        (line,) = [entry for entry in text["ocr"]["lines"] if "heron" in (text["lines"][entry["line"] - 1] or "")]
        x, y, w, h = line["box"]
        assert abs(x - 100) < 15 and abs(y - 200) < 25 and w > 500 and h < 60  # where it was written
        assert png_of(http.get("/documents/heron.png/pages/1.png")).size == (1275, 500)
