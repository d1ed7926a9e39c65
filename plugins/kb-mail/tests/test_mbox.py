"""The mbox reader: messages split as mail clients write them, in bounded memory, every odd file one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_core import KbError
from kb_mail.mbox import HEAD_BYTES, read_mbox


def _read(tmp_path: Path, data: bytes, cap: int = 1_000_000) -> list[tuple[bytes, str]]:
    path = tmp_path / "box.mbox"
    path.write_bytes(data)
    return [(m.data, m.problem) for m in read_mbox(path, cap)]


def test_messages_start_at_from_lines_after_a_blank_line_and_escaped_froms_lose_a_mark(tmp_path: Path) -> None:
    data = (
        b"From a@x Mon Jan 1 00:00:00 2024\nSubject: one\n\n"
        b"Hello.\nFrom the start (no blank line before).\n>From here\n\n"
        b"From b@x Mon Jan 1 00:00:00 2024\r\nSubject: two\r\n\r\nbody two\r\n"
    )
    assert _read(tmp_path, data) == [
        (b"Subject: one\n\nHello.\nFrom the start (no blank line before).\nFrom here\n", ""),
        (b"Subject: two\n\nbody two\n", ""),
    ]


def test_an_empty_file_holds_no_messages_and_a_file_of_other_text_is_no_mbox(tmp_path: Path) -> None:
    assert _read(tmp_path, b"") == [] and _read(tmp_path, b"\n\n") == []
    with pytest.raises(KbError, match="not an mbox file: it does not start with a 'From ' line"):
        _read(tmp_path, b"Subject: not a mailbox\n")


def test_a_message_over_the_cap_is_skipped_and_keeps_its_head_to_be_named(tmp_path: Path) -> None:
    big = b"From a@x\nMessage-ID: <big@x>\n\n" + b"y" * 5000 + b"\n\nFrom b@x\nSubject: small\n\nok\n"
    path = tmp_path / "box.mbox"
    path.write_bytes(big)
    first, second = read_mbox(path, cap=1000)
    assert first.data == b"" and first.problem.startswith("the message is over 1,000 bytes")
    assert first.head.startswith(b"Message-ID: <big@x>") and len(first.head) <= HEAD_BYTES
    assert second.data == b"Subject: small\n\nok\n" and second.end == len(big)


def test_a_line_without_end_is_read_in_pieces_and_a_file_cut_short_fails_its_last_message(tmp_path: Path) -> None:
    endless = b"From a@x\nSubject: s\n\n" + b"z" * (3 << 20)  # 3 MB on one line, and no line end at the end
    ((data, problem),) = _read(tmp_path, endless, cap=1 << 20)
    assert data == b"" and problem.startswith("the message is over")
    ((data, problem),) = _read(tmp_path, b"From a@x\nSubject: s\n\nhalf a li")
    assert problem == "the mailbox ends inside this message (the file is cut short); skipped"
