"""Verdict figures of an answer evaluation: how often kb states "Yes"/"No" and how often it is right.

For a golden set with yes/no/maybe labels (``expected_verdict``), a question *gets a verdict* when
its answer is grounded and opens with "Yes." or "No." (not withheld). ``precision`` is the share
of stated verdicts that match the label, ``coverage`` the share of labelled questions given one.
The *risk-coverage curve* replays the recorded confidences: at each threshold, the verdicts whose
confidence reaches it are stated, the rest withheld. :func:`plot_curve` draws it as a PNG
(matplotlib, from the ``kb-core[evaluation]`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import attrs

#: The confidence thresholds the curve is replayed at.
CURVE_THRESHOLDS = tuple(round(i / 20, 2) for i in range(21))


class VerdictResult(Protocol):
    """What the figures read of one question's result (``QuestionResult`` has it)."""

    @property
    def grounded(self) -> bool: ...
    @property
    def verdict(self) -> str | None: ...
    @property
    def verdict_right(self) -> bool | None: ...
    @property
    def verdict_confidence(self) -> float | None: ...
    @property
    def verdict_withheld(self) -> bool: ...


@attrs.frozen
class VerdictPoint:
    """The verdicts one confidence threshold would state: how many, their precision, their coverage."""

    threshold: float
    stated: int
    precision: float | None
    coverage: float | None


@attrs.frozen
class VerdictFigures:
    """Stated, withheld and right verdicts over the labelled questions, and the risk-coverage curve."""

    labelled: int = 0
    stated: int = 0
    right: int = 0
    withheld: int = 0
    precision: float | None = None
    coverage: float | None = None
    curve: tuple[VerdictPoint, ...] = ()


def _rate(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def _yes_no(result: VerdictResult) -> bool:
    return result.grounded and result.verdict in ("yes", "no")


def verdict_figures(results: Sequence[VerdictResult]) -> VerdictFigures:
    """The figures over the results that carry a label (``verdict_right`` not None)."""
    labelled = [r for r in results if r.verdict_right is not None]
    if not labelled:
        return VerdictFigures()
    stated = [r for r in labelled if _yes_no(r) and not r.verdict_withheld]
    right = sum(bool(r.verdict_right) for r in stated)
    curve = []
    for threshold in CURVE_THRESHOLDS:
        chosen = [r for r in labelled if _yes_no(r) and (r.verdict_confidence or 0.0) >= threshold]
        hits = sum(bool(r.verdict_right) for r in chosen)
        curve.append(VerdictPoint(threshold, len(chosen), _rate(hits, len(chosen)), _rate(len(chosen), len(labelled))))
    return VerdictFigures(
        labelled=len(labelled),
        stated=len(stated),
        right=right,
        withheld=sum(r.verdict_withheld for r in labelled),
        precision=_rate(right, len(stated)),
        coverage=_rate(len(stated), len(labelled)),
        curve=tuple(curve),
    )


def plot_curve(figures: VerdictFigures, path: Path, title: str = "") -> Path | None:
    """Draw the risk-coverage curve into ``path`` (PNG); None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, never a window
        from matplotlib import pyplot
    except ImportError:
        return None
    points = [(p.threshold, p.coverage, p.precision) for p in figures.curve if p.precision is not None]
    xs, ys = [x or 0.0 for _, x, _ in points], [y or 0.0 for _, _, y in points]
    figure, axes = pyplot.subplots(figsize=(5.5, 4), dpi=100)
    axes.plot(xs, ys, marker="o", markersize=3)
    for (threshold, _, _), x, y in list(zip(points, xs, ys, strict=True))[::4]:
        axes.annotate(f"{threshold:.2f}", (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    if figures.coverage is not None and figures.precision is not None:
        axes.plot([figures.coverage], [figures.precision], marker="*", markersize=12, label="as configured")
        axes.legend(loc="lower left")
    axes.set(
        xlabel="coverage (questions given a verdict)",
        ylabel="precision of stated verdicts",
        xlim=(0, 1),
        ylim=(0, 1),
        title=title or "Verdicts: precision against coverage",
    )
    axes.grid(alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    pyplot.close(figure)
    return path
