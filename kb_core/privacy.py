"""Nothing kb runs phones home: the telemetry switches of kb's dependencies, set before they load.

onnxruntime (the embedders' engine) otherwise writes a device id and a queue of usage events
under ``~/.cache/Microsoft/DeveloperTools/`` for its vendor on every run; its switch must be set
before the library is imported. Each switch is set only when the user has not set it.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

#: Environment switches that turn off a dependency's telemetry or network look-ups.
QUIET_ENVIRONMENT = {
    "ORT_DISABLE_TELEMETRY": "1",  # onnxruntime >= 1.29: no device id, no events
    "ORT_TELEMETRY_DISABLED": "1",  # its other spelling, in some releases
    "HF_HUB_OFFLINE": "1",  # any Hugging Face library: never reach the hub
    "HF_HUB_DISABLE_TELEMETRY": "1",
}


def quiet_dependencies(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set every switch of :data:`QUIET_ENVIRONMENT` that ``environ`` does not set already."""
    for name, value in QUIET_ENVIRONMENT.items():
        environ.setdefault(name, value)
