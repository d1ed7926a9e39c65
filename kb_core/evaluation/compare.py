"""``kb eval compare``: the deltas of every metric two evaluation reports of one kind share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from kb_core.errors import KbError


@attrs.frozen
class MetricDelta:
    """One metric in two reports."""

    metric: str
    baseline: float | None
    candidate: float | None
    delta: float | None


@attrs.frozen
class ReportComparison:
    """The metric deltas between two reports of the same kind (``report_compare.v1``)."""

    schema: str
    baseline: str
    candidate: str
    deltas: tuple[MetricDelta, ...]


# -- comparing two reports ----------------------------------------------------------------------------------


def _numbers(data: Any, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a report's metrics: ``metrics.*`` and per-mode ``modes.<mode>.*``."""
    out: dict[str, float] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            out.update(_numbers(value, f"{prefix}{key}."))
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        out[prefix.rstrip(".")] = float(data)
    return out


def _metrics_of(report: dict[str, Any]) -> dict[str, float]:
    found: dict[str, float] = {}
    if isinstance(report.get("metrics"), dict):
        found.update(_numbers(report["metrics"]))
    for item in report.get("modes", []) if isinstance(report.get("modes"), list) else []:
        if isinstance(item, dict) and isinstance(item.get("mode"), str):
            found.update(_numbers({k: v for k, v in item.items() if k != "mode"}, f"{item['mode']}."))
    return found


def _load_report(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KbError(f"cannot read report {path}: {exc}", hint="pass report.json files written by kb eval") from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise KbError(
            f"{path} is not a kb report (no schema_version)", hint="pass report.json files written by kb eval"
        )
    return data


def compare_reports(baseline: Path, candidate: Path) -> ReportComparison:
    """The deltas of every metric the two reports share (and those only one of them has)."""
    a, b = _load_report(baseline), _load_report(candidate)
    if a["schema_version"] != b["schema_version"]:
        raise KbError(
            f"cannot compare a {a['schema_version']} report with a {b['schema_version']} report",
            hint="compare two reports of the same kind",
        )
    ma, mb = _metrics_of(a), _metrics_of(b)
    if not ma and not mb:
        raise KbError(f"neither report has metrics to compare ({a['schema_version']})")
    deltas = []
    for name in list(dict.fromkeys([*ma, *mb])):
        x, y = ma.get(name), mb.get(name)
        deltas.append(MetricDelta(name, x, y, round(y - x, 6) if x is not None and y is not None else None))
    return ReportComparison(str(a["schema_version"]), str(baseline), str(candidate), tuple(deltas))
