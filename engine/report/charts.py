"""The HTML report's charts: Vega-Lite specs built with `altair`, drawn to static SVG by
`vl-convert` (no browser, no network; both come with ``scorespec[report]``).

Each function takes plain numbers (already counted or binned here, so a chart of 10,000 items
carries a few dozen marks) and returns an SVG document as text. Text in a chart (scorer labels,
axis titles) is escaped by Vega's SVG renderer; the report shows each SVG as an image, so nothing
in one can run. Raises `ReportDependencyError` when altair or vl-convert is not installed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..core.errors import UserError

__all__ = ["ReportDependencyError", "chart_libraries", "count_ticks", "histogram_bins", "histogram_chart",
           "histogram_svg", "roc_svg", "confusion_svg", "scatter_chart", "scatter_svg", "scatter_points"]

WIDTH = 300
HEIGHT = 150
BAR = "#4c78a8"
DISTINCT_BARS = 12  # at most this many distinct scores: one bar per score, else equal-width bins
BINS = 20
SCATTER_CELLS = 2000  # at most this many distinct (x, y) points: else rounded to a 50 × 50 grid


class ReportDependencyError(UserError, ImportError):
    """altair or vl-convert is missing: the HTML report needs ``pip install 'scorespec[report]'``."""


def chart_libraries() -> tuple[Any, Any]:
    """The modules ``altair`` and ``vl_convert``; raises `ReportDependencyError` when one is missing."""
    try:
        import altair
        import vl_convert
    except ImportError as exc:
        raise ReportDependencyError(f"the HTML report draws its charts with altair and vl-convert ({exc.name} is "
                                    "not installed): pip install 'scorespec[report]'") from None
    return altair, vl_convert


def _svg(chart: Any) -> str:
    _alt, vlc = chart_libraries()
    return vlc.vegalite_to_svg(chart.to_dict())


def _number(value: float) -> str:
    return f"{value:.4g}"


def histogram_bins(scores: Sequence[float], top: float) -> list[dict[str, Any]]:
    """Scores counted for a histogram over [0, top]: ``[{"lo", "hi", "n", "name"}]``. Up to
    `DISTINCT_BARS` distinct scores get a bar each (``lo == hi``, the score); more are counted in
    `BINS` equal bins (each ``[lo, hi)``, the last one closed)."""
    counts = Counter(scores)
    if len(counts) <= DISTINCT_BARS:
        return [{"lo": s, "hi": s, "n": n, "name": _number(s)} for s, n in sorted(counts.items())]
    top = max(top, max(counts))
    width = top / BINS if top > 0 else 1.0
    tally = [0] * BINS
    for score, n in counts.items():
        tally[min(int(score / width + 1e-9), BINS - 1) if score > 0 else 0] += n  # 0.15 / 0.05 is 2.999…
    return [{"lo": i * width, "hi": (i + 1) * width, "n": n,
             "name": f"{_number(i * width)}–{_number((i + 1) * width)}"} for i, n in enumerate(tally)]


def count_ticks(top: int, most: int = 5) -> list[int]:
    """Whole-number ticks for a count axis reaching `top` (>= 0): from 0 in a step of 1, 2 or 5
    times a power of ten, at most `most` steps, the last tick at or above `top` (7 → 0, 2, 4, 6,
    8; 2 → 0, 1, 2). Vega's own ticks put 0.5 between 0 and 1 even with ``tickMinStep``."""
    top = max(int(math.ceil(top)), 1)
    step, power = 1, 1
    while math.ceil(top / step) > most:
        step = next((m * power for m in (1, 2, 5) if math.ceil(top / (m * power)) <= most), 10 * power)
        power *= 10
    return list(range(0, math.ceil(top / step) * step + 1, step))


def _count_y(alt: Any, top: int) -> Any:
    """The y encoding of item counts (field ``n``): whole-number ticks only, the scale ending at the last."""
    ticks = count_ticks(top)
    return alt.Y("n:Q", title="items", axis=alt.Axis(values=ticks, format="d"),
                 scale=alt.Scale(domain=[0, ticks[-1]], nice=False))


def histogram_chart(scores: Sequence[float], top: float, title: str) -> Any:
    """A histogram of `scores` (see `histogram_bins`) as an altair chart; `title` names the
    scorer. Its count axis has whole-number ticks only (`count_ticks`)."""
    alt, _ = chart_libraries()
    bins = histogram_bins(scores, top)
    data = alt.Data(values=bins)
    y = _count_y(alt, max((b["n"] for b in bins), default=0))
    if bins and bins[0]["lo"] == bins[0]["hi"]:  # one bar per distinct score, in score order
        x = alt.X("name:N", title="score", sort=[b["name"] for b in bins], axis=alt.Axis(labelAngle=0))
        chart = alt.Chart(data).mark_bar(color=BAR).encode(x=x, y=y)
    else:
        chart = alt.Chart(data).mark_bar(color=BAR).encode(
            x=alt.X("lo:Q", bin="binned", title="score", scale=alt.Scale(domain=[0, bins[-1]["hi"] if bins else 1])),
            x2="hi:Q", y=y)
    return chart.properties(width=WIDTH, height=HEIGHT, title=title)


def histogram_svg(scores: Sequence[float], top: float, title: str) -> str:
    """`histogram_chart` drawn as SVG."""
    return _svg(histogram_chart(scores, top, title))


def roc_svg(points: Sequence[tuple[float, float]], auc: float | None, title: str) -> str:
    """The ROC curve through `points` ((false positive rate, true positive rate) pairs), with
    the chance diagonal, as SVG."""
    alt, _ = chart_libraries()
    curve = alt.Chart(alt.Data(values=[{"fpr": f, "tpr": t, "order": i} for i, (f, t) in enumerate(points)]))
    line = curve.mark_line(color=BAR, point=True, interpolate="linear").encode(
        x=alt.X("fpr:Q", title="false positive rate", scale=alt.Scale(domain=[0, 1], padding=0)),
        y=alt.Y("tpr:Q", title="true positive rate", scale=alt.Scale(domain=[0, 1], padding=0)), order="order:Q")
    chance = alt.Chart(alt.Data(values=[{"fpr": 0, "tpr": 0}, {"fpr": 1, "tpr": 1}])).mark_line(
        color="#999999", strokeDash=[4, 4]).encode(x="fpr:Q", y="tpr:Q")
    heading = title + (f" · ROC AUC {auc:.3f}" if auc is not None else "")
    return _svg((chance + line).properties(width=220, height=220, title=heading))


def confusion_svg(confusion: dict[str, int], cutoff: float | None, title: str) -> str:
    """The confusion matrix ``{"tp", "fp", "tn", "fn"}`` as a 2 × 2 grid of counts (rows: the
    human label; columns: the prediction at `cutoff`), as SVG."""
    alt, _ = chart_libraries()
    cells = [{"label": "positive", "predicted": "positive", "n": confusion.get("tp", 0)},
             {"label": "positive", "predicted": "negative", "n": confusion.get("fn", 0)},
             {"label": "negative", "predicted": "positive", "n": confusion.get("fp", 0)},
             {"label": "negative", "predicted": "negative", "n": confusion.get("tn", 0)}]
    order = ["positive", "negative"]
    predicted = "predicted" + (f" (score ≥ {_number(cutoff)})" if cutoff is not None else "")
    base = alt.Chart(alt.Data(values=cells)).encode(
        x=alt.X("predicted:N", title=predicted, sort=order, axis=alt.Axis(labelAngle=0, orient="top")),
        y=alt.Y("label:N", title="human label", sort=order))
    rects = base.mark_rect().encode(color=alt.Color("n:Q", scale=alt.Scale(scheme="blues"), legend=None))
    top = max((c["n"] for c in cells), default=0)
    text = base.mark_text(fontSize=16).encode(
        text="n:Q", color=alt.condition(f"datum.n > {top / 2}", alt.value("white"), alt.value("black")))
    return _svg((rects + text).properties(width=180, height=140, title=title))


def scatter_points(pairs: Sequence[tuple[float, float]]) -> list[dict[str, Any]]:
    """(x, y) pairs counted by position: ``[{"x", "y", "n"}]``; when they fall on more than
    `SCATTER_CELLS` distinct positions, positions are first rounded to a 50 × 50 grid of their range."""
    counts = Counter((float(x), float(y)) for x, y in pairs)
    if len(counts) > SCATTER_CELLS:
        xs = [x for x, _ in counts] + [y for _, y in counts]
        low, high = min(xs), max(xs)
        step = (high - low) / 50 or 1.0
        grid: Counter[tuple[float, float]] = Counter()
        for (x, y), n in counts.items():
            grid[(low + round((x - low) / step) * step, low + round((y - low) / step) * step)] += n
        counts = grid
    return [{"x": x, "y": y, "n": n} for (x, y), n in sorted(counts.items())]


def scatter_chart(pairs: Sequence[tuple[float, float]], x_title: str, y_title: str, title: str) -> Any:
    """One circle per distinct (x, y) position, its area the number of items there (see
    `scatter_points`; the legend names whole numbers of items only), with the diagonal y = x,
    as an altair chart (layers: the diagonal, the circles)."""
    alt, _ = chart_libraries()
    points = scatter_points(pairs)
    values = [p["x"] for p in points] + [p["y"] for p in points]
    low, high = (min(values + [0.0]), max(values + [1.0]))
    domain = alt.Scale(domain=[low, high])
    most = max((p["n"] for p in points), default=1)
    sizes = [t for t in count_ticks(most) if 1 <= t <= most] or [most]
    dots = alt.Chart(alt.Data(values=points)).mark_circle(color=BAR, opacity=0.6).encode(
        x=alt.X("x:Q", title=x_title, scale=domain), y=alt.Y("y:Q", title=y_title, scale=domain),
        size=alt.Size("n:Q", title="items", scale=alt.Scale(range=[15, 250]),
                      legend=alt.Legend(values=sizes, format="d")))
    diagonal = alt.Chart(alt.Data(values=[{"x": low, "y": low}, {"x": high, "y": high}])).mark_line(
        color="#999999", strokeDash=[4, 4]).encode(x="x:Q", y="y:Q")
    return (diagonal + dots).properties(width=220, height=220, title=title)


def scatter_svg(pairs: Sequence[tuple[float, float]], x_title: str, y_title: str, title: str) -> str:
    """`scatter_chart` drawn as SVG."""
    return _svg(scatter_chart(pairs, x_title, y_title, title))
