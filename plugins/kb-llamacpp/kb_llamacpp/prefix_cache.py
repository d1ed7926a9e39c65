"""The evaluated KV state of a fixed prompt prefix, reused across questions and processes.

Every question's prompt starts with the same tokens: the chat template's opening and the
system message. :class:`PrefixCache` evaluates them once, keeps llama.cpp's state in memory and
in a file beside the model cache (``<model>.prefix-<key>.kvstate``, written atomically), and
restores it before each question so only the question's own tokens are prefilled.

Answers stay reproducible: the prefix is *always* evaluated as its own batch before the rest,
whether it was just computed or restored, so the computation that produces the first answer
token is the same on both paths. The file's key covers everything the state depends on (the
llama.cpp build, the model file, the context and batch settings, the prefix tokens); a file
that does not match, or that llama.cpp rejects, is recomputed.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class PrefixCache:
    """Saved llama.cpp states of prompt prefixes, by prefix tokens (in memory) and key (on disk)."""

    def __init__(self, directory: Path | None, model_path: Path, settings_key: str) -> None:
        self.directory = directory
        self.model_path = model_path
        self.settings_key = settings_key
        self._memory: dict[tuple[int, ...], bytes] = {}

    def _key(self, prefix: Sequence[int]) -> str:
        import llama_cpp

        stat = self.model_path.stat()
        parts = [
            llama_cpp.__version__,
            str(self.model_path.resolve()),
            str(stat.st_size),
            str(stat.st_mtime_ns),
            self.settings_key,
            ",".join(map(str, prefix)),
        ]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]

    def _file(self, prefix: Sequence[int]) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / f"{self.model_path.stem}.prefix-{self._key(prefix)}.kvstate"

    def prepare(self, llama: Any, prefix: Sequence[int]) -> bool:
        """Leave exactly ``prefix`` evaluated in ``llama``'s context; True when it was restored, not computed."""
        key = tuple(prefix)
        state = self._memory.get(key)
        path = self._file(prefix)
        if state is None and path is not None and path.is_file():
            try:
                state = path.read_bytes()
            except OSError:
                state = None
        if state is not None and _restore(llama, prefix, state):
            self._memory[key] = state
            return True
        llama.reset()
        llama.eval(list(prefix))
        state = _snapshot(llama)
        self._memory[key] = state
        if path is not None:
            _write_atomically(path, state)
        return False


def _snapshot(llama: Any) -> bytes:
    import llama_cpp

    ctx = llama._ctx.ctx
    size = llama_cpp.llama_state_get_size(ctx)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_get_data(ctx, buffer, size)
    return bytes(buffer[:written])


def _restore(llama: Any, prefix: Sequence[int], state: bytes) -> bool:
    import llama_cpp

    buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
    try:
        read = llama_cpp.llama_state_set_data(llama._ctx.ctx, buffer, len(state))
    except Exception as exc:  # a state from another build: recompute
        log.info("could not restore a prompt prefix state (%s)", exc)
        return False
    if read != len(state):
        llama.reset()
        return False
    llama.n_tokens = len(prefix)
    llama.input_ids[: len(prefix)] = prefix
    llama._requires_eval = True  # the restored logits are not a live decode's: generate evaluates the rest
    return True


def _write_atomically(path: Path, data: bytes) -> None:
    scratch = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch.write_bytes(data)
        os.replace(scratch, path)
    except OSError as exc:  # a read-only cache only costs the saving
        log.info("could not save the prompt prefix state to %s (%s)", path, exc)
        scratch.unlink(missing_ok=True)
