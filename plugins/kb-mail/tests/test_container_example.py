"""The container parser of docs/plugins.md runs as written: a zip's members are documents under it."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kb_core
from kb_core.plugin.containers import ContainerParser

REPO = Path(__file__).resolve().parents[3]


def test_the_zip_example_of_the_plugin_guide_ingests_and_reingests(
    tmp_path: Path, open_kb: Callable[..., object]
) -> None:
    guide = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = guide[guide.index("### Files that hold documents") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    namespace: dict[str, Any] = {}
    exec(compile(code.group(1), "plugins.md", "exec"), namespace)  # the guide's example, as written
    parser = namespace["ZipParser"]()
    assert isinstance(parser, ContainerParser)

    class Plugin:
        register_parsers = staticmethod(namespace["register_parsers"])

    folder = tmp_path / "notes"
    folder.mkdir()
    with zipfile.ZipFile(folder / "notes.zip", "w") as archive:
        archive.writestr("a.md", "# Herons\n\nThe heron nests by the weir.\n")
        archive.writestr("deep/b.txt", "The bittern booms at dusk.\n")
        archive.writestr("c.bin", b"\x00\x01")
    kb = open_kb(extra=[("zip", Plugin())])
    report = kb_core.ingest_paths(kb, [folder])  # type: ignore[arg-type]
    assert sorted(report.added) == ["notes.zip", "notes.zip/a.md", "notes.zip/deep/b.txt"]
    again = kb_core.ingest_paths(kb, [folder])  # type: ignore[arg-type]
    assert again.unchanged == 3 and again.added == []
    (folder / "notes.zip").write_bytes(b"not a zip")
    broken = kb_core.ingest_paths(kb, [folder])  # type: ignore[arg-type]
    assert [(w.path, w.reason) for w in broken.failed] == [
        ("notes.zip", "not a valid .zip file; the stored earlier version is kept")
    ]
    assert broken.removed == []
