"""What the Office formats (.docx, .xlsx: zip archives of XML parts) share: their zip-bomb checks.

Before a part is inflated, :func:`check_archive` checks the archive as its central directory
declares it: the member count (``max_docx_entries``), the main part's presence, and each part kb
reads for its compression ratio (``max_docx_ratio``) and their total size
(``max_docx_inflated_bytes``). zipfile never inflates a member past its declared size, so these
declared sizes bound what reading costs.
"""

from __future__ import annotations

import zipfile
from collections.abc import Collection

from kb_core import KbError
from kb_documents.limits import Limits

#: Word and Excel encrypt a file into an OLE container (an old .doc or .xls file is one too).
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
BOMB_HINT = "it may be a zip bomb; if you trust it, raise the [backends.documents] limits"


def check_archive(
    archive: zipfile.ZipFile,
    limits: Limits,
    kind: str,
    *,
    main: str,
    missing: str,
    missing_hint: str,
    parts: Collection[str] | None = None,
) -> dict[str, zipfile.ZipInfo]:
    """The members kb reads (``parts``; None: every member) by name, once the archive passes the limits.

    ``kind`` names the format in messages (``.docx``); an archive without its ``main`` part is
    ``not {missing} (the archive has no {main})``. Every problem is a one-line KbError.
    """
    infos = archive.infolist()
    if len(infos) > limits.max_docx_entries:
        raise KbError(f"the {kind} has {len(infos)} parts, over the limit of {limits.max_docx_entries}", hint=BOMB_HINT)
    if main not in {info.filename for info in infos}:
        raise KbError(f"not {missing} (the archive has no {main})", hint=missing_hint)
    read = {info.filename: info for info in infos if parts is None or info.filename in parts}
    total = 0
    for info in read.values():
        ratio = info.file_size / max(info.compress_size, 1)
        if ratio > limits.max_docx_ratio:
            raise KbError(
                f"{info.filename} in the {kind} would inflate {ratio:.0f} times "
                f"({info.file_size} bytes), over the limit of {limits.max_docx_ratio}",
                hint=BOMB_HINT,
            )
        total += info.file_size
    if total > limits.max_docx_inflated_bytes:
        raise KbError(
            f"the {kind} would inflate to {total} bytes, over the limit of {limits.max_docx_inflated_bytes}",
            hint=BOMB_HINT,
        )
    return read
