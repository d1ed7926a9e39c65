"""A test plugin (``KB_PLUGIN_MODULES=crashing_backend``) whose language model kills its process.

``crashing`` stands for a native engine that dies with SIGSEGV when it generates, as llama.cpp's
AMX kernels did; it says what to try, as kb-llamacpp does.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

from kb_core.plugin import GenerateRequest, ModelRef, Problem, RegisterLanguageModel, StreamEvent, hookimpl

HINT = "set [backends.crashing] safe = true"


class CrashingModel:
    """Crashes the process on the first generation."""

    context_tokens = 4096
    model_ref = ModelRef(id="crash-1b", provider="crashing")
    crash_hint = HINT

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def generate_stream(self, request: GenerateRequest) -> Iterator[StreamEvent]:
        os.kill(os.getpid(), signal.SIGSEGV)
        yield from ()

    def check(self) -> list[Problem]:
        return []


@hookimpl
def register_language_models(register: RegisterLanguageModel) -> None:
    """Register the ``crashing`` backend."""
    register("crashing", lambda _ctx: CrashingModel())
