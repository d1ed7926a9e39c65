"""Versioned JSON output: every ``--json`` document names its ``schema_version``.

A JSON Schema for each version ships in ``kb_core/schemas/<name>.json`` (``name`` without the
``.vN`` suffix's dot: ``ingest_report.v1`` -> ``ingest_report.v1.json``).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

from kb_core.terminal import UNSAFE_OUTSIDE_C0
from kb_core.types import to_json

_TERMINAL_UNSAFE = re.compile(f"[{UNSAFE_OUTSIDE_C0}]")  # json.dumps escapes C0 controls itself


def envelope(schema_version: str, payload: Any) -> dict[str, Any]:
    """``payload`` (an attrs value or a dict) as a JSON-ready dict carrying its schema version."""
    data = to_json(payload)
    if not isinstance(data, dict):
        data = {"items": data}
    return {"schema_version": schema_version, **data}


def dumps(schema_version: str, payload: Any) -> str:
    """The JSON text of :func:`envelope` (UTF-8 characters kept, one document per call).

    Characters a terminal may act on are written as ``\\uXXXX`` escapes (JSON's own control
    characters already are), so the text is exact JSON and inert on a terminal.
    """
    text = json.dumps(envelope(schema_version, payload), ensure_ascii=False, indent=2, sort_keys=False)
    return _TERMINAL_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def schema(schema_version: str) -> dict[str, Any]:
    """The JSON Schema shipped for ``schema_version``."""
    text = resources.files("kb_core.schemas").joinpath(f"{schema_version}.json").read_text(encoding="utf-8")
    return json.loads(text)


def schema_versions() -> list[str]:
    """Every schema version that ships with this kb."""
    folder = resources.files("kb_core.schemas")
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))
