"""llama-cpp-python's OpenAI-compatible server, loading models the way kb-llamacpp does.

    python -m kb_llamacpp.server --model /path/model.gguf --port 8000   # the arguments of llama_cpp.server

``python -m llama_cpp.server`` loads a model with llama.cpp's weight repacking, which crashes on
CPUs with AMX (see :mod:`kb_llamacpp.loading`); this runs the same server with kb-llamacpp's
choice: ``weight_repacking`` from ``KB_BACKENDS__LLAMACPP__WEIGHT_REPACKING`` (default ``auto``:
off where the build uses AMX). For kb-openai's users and tests, and anyone serving a GGUF model
to kb over HTTP on such a machine. Needs ``llama-cpp-python[server]``.
"""

from __future__ import annotations

import os
import runpy

from kb_llamacpp.loading import model_parameters, use_extra_buffers, weight_repacking


def main() -> None:
    """Run ``llama_cpp.server`` as ``__main__`` with kb-llamacpp's load parameters."""
    setting = weight_repacking(os.environ.get("KB_BACKENDS__LLAMACPP__WEIGHT_REPACKING", "auto"))
    with model_parameters(use_extra_buffers(setting)):
        runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
