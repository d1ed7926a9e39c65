"""Writing an evaluation's ``report.json``: the versioned JSON of ``kb eval ... --json``, in its folder."""

from __future__ import annotations

from pathlib import Path

from kb_core.errors import KbError
from kb_core.output import dumps


def write_report(folder: Path, schema_version: str, report: object) -> None:
    """Write ``report`` as ``folder/report.json`` (the folder made); a one-line KbError when it cannot be."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.json").write_text(dumps(schema_version, report) + "\n", encoding="utf-8")
    except OSError as exc:
        raise KbError(
            f"cannot write the report to {folder}: {exc.strerror}", hint="choose another --out folder"
        ) from None
