"""kb-watch's tests import their helpers from this folder; the environment is isolated by kb_core.testing's
pytest plugin (``kb_isolated_environment`` in the repository's pyproject.toml)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
