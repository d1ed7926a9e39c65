"""Deprecated: moved to :mod:`kb_core.plugin.remote`; this module goes in kb-core 0.3.

Importing it warns (``DeprecationWarning``) and gives the same objects as ``kb_core.plugin.remote``.
"""

import warnings

from kb_core.plugin.remote import *  # noqa: F403 - the same names, as they were
from kb_core.plugin.remote import TIMEOUT_KEYS
from kb_core.plugin.remote import __all__ as _moved

warnings.warn(
    "kb_core.remote moved to kb_core.plugin.remote; the old module goes in kb-core 0.3",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [*_moved, "TIMEOUT_KEYS"]
