"""The one percentile every kb report uses, so that a p95 means the same in each of them."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` percentile of ``values`` by linear interpolation between ranks (0.0 for none).

    >>> percentile([10, 20, 30, 40], 0.5)
    25.0
    """
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (position - low), 3)
