"""kb: a local knowledge base you can ask questions.

The core defines the contracts (:mod:`kb_core.contracts`), the hooks plugins implement
(:mod:`kb_core.hookspecs`) and the pipeline: ingest (:mod:`kb_core.ingest`), index sync
(:mod:`kb_core.indexing`), search (:mod:`kb_core.search`), answers (:mod:`kb_core.rag`) and
evaluation (:mod:`kb_core.evaluate`). The CLI (:mod:`kb_core.cli`) is a thin layer over them.
"""

from kb_core.hookspecs import hookimpl

__all__ = ["hookimpl"]
__version__ = "0.1.0"
