"""Reassembling a model from chunk packages: order, verification, one-time cost, clear errors."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from kb_core import ModelUnavailableError
from kb_llamacpp.packaged import PackagedModel, materialize


def _install_parts(root: Path, prefix: str, chunks: list[bytes]) -> None:
    for number, data in enumerate(chunks, start=1):
        package = root / f"{prefix}{number}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{number:02d}.bin").write_bytes(data)


@pytest.fixture
def chunked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> tuple[PackagedModel, bytes]:
    prefix = f"kbtest_{request.node.name.replace('[', '_').replace(']', '_')}_part"
    chunks = [b"GGUF" + bytes(range(256)) * 3, b"middle" * 100, b"tail"]
    _install_parts(tmp_path / "site", prefix, chunks)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(chunks)
    spec = PackagedModel(
        "toy",
        "toy.gguf",
        prefix.replace("_", "-"),
        prefix,
        len(chunks),
        len(whole),
        hashlib.sha256(whole).hexdigest(),
        "MIT",
    )
    return spec, whole


def test_reassembles_in_order_and_verifies(chunked: tuple[PackagedModel, bytes], tmp_path: Path) -> None:
    spec, whole = chunked
    path = materialize(spec, tmp_path / "cache")
    assert path.read_bytes() == whole
    assert (tmp_path / "cache" / "toy.gguf.sha256").read_text().strip() == spec.sha256
    assert [p.name for p in (tmp_path / "cache").iterdir() if "partial" in p.name] == []


def test_second_call_reuses_the_file(chunked: tuple[PackagedModel, bytes], tmp_path: Path) -> None:
    spec, _ = chunked
    first = materialize(spec, tmp_path / "cache")
    stamp = first.stat().st_mtime_ns
    for name in list(sys.modules):
        if name.startswith(spec.module_prefix):
            del sys.modules[name]
    assert materialize(spec, tmp_path / "cache").stat().st_mtime_ns == stamp


def test_wrong_hash_is_refused_and_leaves_nothing(chunked: tuple[PackagedModel, bytes], tmp_path: Path) -> None:
    spec, _ = chunked
    bad = PackagedModel(
        spec.id,
        spec.file_name,
        spec.distribution_prefix,
        spec.module_prefix,
        spec.parts,
        spec.size,
        "0" * 64,
        spec.licence,
    )
    with pytest.raises(ModelUnavailableError, match="do not reassemble"):
        materialize(bad, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_missing_part_names_the_package(tmp_path: Path) -> None:
    spec = PackagedModel("ghost", "ghost.gguf", "kbtest-ghost-part", "kbtest_ghost_part", 2, 10, "0" * 64, "MIT")
    with pytest.raises(ModelUnavailableError, match="kbtest-ghost-part1, kbtest-ghost-part2 not installed"):
        materialize(spec, tmp_path / "cache")
