"""Loading a GGUF file so that it runs on every CPU: weight repacking off where it crashes.

llama.cpp may copy a model's weights into "extra buffer types" laid out for the CPU's matrix
units (``use_extra_bufts``, on by default). On CPUs with AMX, a build compiled for the machine
(``-march=native``, what ``pip install llama-cpp-python`` does) packs Q4_K weights for AMX and
crashes with a segmentation fault in ``ggml_backend_amx_mul_mat`` on every decode of more than
one token (ggml-org/llama.cpp#20824). Loading without extra buffer types avoids it; on other
CPUs the repacking stays on, since it speeds up their prompt evaluation.

``[backends.llamacpp] weight_repacking``: ``"auto"`` (the default: off when the build uses AMX),
``"on"`` or ``"off"``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Literal, cast

from kb_core import KbError
from kb_core.plugin.options import Option

WeightRepacking = Literal["auto", "on", "off"]
WEIGHT_REPACKING: tuple[WeightRepacking, ...] = ("auto", "on", "off")

#: What to try when generation crashes the process: the setting, then a build without AMX.
CRASH_HINT = (
    "set [backends.llamacpp] weight_repacking = 'off' in the config file (KB_BACKENDS__LLAMACPP__WEIGHT_REPACKING=off),"
    " or rebuild llama.cpp for any x86-64 CPU with AVX2:"
    " CMAKE_ARGS=-DGGML_NATIVE=OFF pip install --force-reinstall --no-cache-dir llama-cpp-python"
)

#: The options of ``[backends.llamacpp]``, declared to kb (``register_options``): checked at start.
OPTIONS: dict[str, Option] = {
    "model": Option.path("", "a GGUF file to use when [models.llm] model is not set ('': the embedded model)"),
    "weight_repacking": Option.text(
        "auto",
        "auto: off where the build uses AMX (whose repacked weights crash); on or off force it",
        choices=WEIGHT_REPACKING,
    ),
}

_loading = threading.Lock()


def weight_repacking(value: object) -> WeightRepacking:
    """The ``weight_repacking`` option checked (a one-line KbError for anything but auto/on/off)."""
    text = str(value).strip().lower() if value is not None else "auto"
    text = {"true": "on", "false": "off", "": "auto"}.get(text, text)
    if text not in WEIGHT_REPACKING:
        raise KbError(
            f"[backends.llamacpp] weight_repacking must be auto, on or off (got {str(value)[:40]!r})",
            hint="auto turns it off where llama.cpp uses AMX, whose repacked weights crash",
        )
    return cast(WeightRepacking, text)


def build_uses_amx() -> bool:
    """Whether the installed llama.cpp was compiled with AMX matrix kernels (``AMX_INT8 = 1``)."""
    import llama_cpp

    return b"AMX_INT8 = 1" in llama_cpp.llama_print_system_info()


def use_extra_buffers(setting: WeightRepacking) -> bool:
    """Whether to load with extra buffer types (weight repacking) under ``setting``."""
    if setting == "auto":
        return not build_uses_amx()
    return setting == "on"


@contextlib.contextmanager
def model_parameters(extra_buffers: bool) -> Iterator[None]:
    """While open, ``llama_cpp.Llama(...)`` loads its model with ``use_extra_bufts = extra_buffers``.

    ``Llama`` takes its model parameters from ``llama_model_default_params()`` and has no argument
    for this field, so the defaults are amended for the duration of one load (under a lock).
    """
    import llama_cpp.llama_cpp as bindings

    if extra_buffers:
        yield
        return
    original = bindings.llama_model_default_params

    def amended() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    with _loading:
        bindings.llama_model_default_params = amended
        try:
            yield
        finally:
            bindings.llama_model_default_params = original
