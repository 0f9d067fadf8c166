"""The HTML report of a run (``scorespec report``, and ``--report FILE`` on eval and calibrate):
one self-contained file that opens from disk in a browser and loads nothing from anywhere else.

What it shows (`render_report`):

- a header: the run, its date, model, data file, counts by status, the judge's calls, tokens,
  cache hits and any cost the results carry;
- per scorer: its spec (version, hash, what it extends), a histogram of its scores
  (`engine.report.charts`), mean, median, spread, range, direction when the run records one,
  not scorable and failed counts, its threshold and whether it passed;
- for a calibrate run: per scorer, the ROC curve and the confusion matrix (binary labels) or
  score against label (graded ones), with the stored figures and largest disagreements;
- with a second run (`other`): per scorer label both runs have, a scatter of A's score against
  B's on the same items, the paired difference with its interval and test (`_paired`), status
  changes and the items that moved most; a run of ``scorespec compare`` sets each of its
  versions against the first the same way;
- a table of every result: sortable, filtered by scorer, status, score range and text, paged;
  a row opens the item (its fields, every stage's prompt, raw answer and result, the reason,
  usage, the error with its stage and kind).

How it stays safe and offline: the page is rendered by Jinja2 with autoescaping; the results
travel as one JSON blob in a ``<script type="application/json">`` with ``<``, ``>`` and ``&``
written as JSON escapes (so no text in it can close the element); the table's script inserts
every value with ``textContent``; charts are SVG images (``data:`` URIs); and a
Content-Security-Policy allows only the page's own style and script (by hash) and ``data:``
images, so nothing loads from another host and no injected markup could run.

How it scales: the JSON holds each result once (without the seed's duplicate prompt fields),
charts carry counts rather than points, and the table builds only the rows of the page shown.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from datetime import datetime, timezone
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.result import result_status
from ..run.items import item_key, label_value
from .data import ReportRun, label_summary, spread, usage_totals
from .pairwise_view import inconsistent, pairwise_view

__all__ = ["render_report", "write_report", "report_json"]

MOVERS = 10  # items listed under "items that moved most", per scorer
# the seed's fields that repeat what `stages` holds: left out of the report's data
_DUPLICATES = ("preprocessStepResult", "preprocessPrompt", "analyzeStepResult", "analyzePrompt",
               "generateReasonPrompt")
_LEFT_OUT = {*_DUPLICATES, "id", "label", "runId", "specChain"}


def write_report(path: str | Path, run: ReportRun, other: ReportRun | None = None,
                 agreement: Mapping[str, Any] | None = None) -> int:
    """Write the report of `run` (compared with `other` when given; `agreement` as
    `render_report` takes it) to `path` (UTF-8); return
    its size in bytes. Raises `engine.report.charts.ReportDependencyError` without altair or
    vl-convert, and `OSError` when the file cannot be written."""
    page = render_report(run, other, agreement).encode("utf-8")
    Path(path).write_bytes(page)
    return len(page)


def render_report(run: ReportRun, other: ReportRun | None = None, agreement: Mapping[str, Any] | None = None) -> str:
    """The report's HTML text (see the module docstring). `agreement`: by compared version's
    label, its agreement with the human labels beside the baseline's, as ``scorespec compare``
    computes it: ``{"head": text, "baseline": label, "version": label, "rows": [(figure, baseline
    value, version value)], "notes": [text], "test": text | None}``; shown in that version's
    comparison card (the only card when two runs are compared)."""
    import jinja2

    from .. import __version__

    assets = resources.files("engine.report") / "assets"
    script = (assets / "report.js").read_text("utf-8")
    style = (assets / "report.css").read_text("utf-8")
    if "</" in script or "</" in style:  # they are inlined as they are
        raise AssertionError("report.js and report.css must not contain '</'")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters.update(num=_num, signed=_signed, key=item_key, when=_when)
    template = env.from_string((assets / "report.html.j2").read_text("utf-8"))
    usage, costs = usage_totals(run.lines)
    statuses = Counter(result_status(line) for line in run.lines)
    specs = run.specs()
    scorers = [_scorer_view(run, label, specs[label]) for label in run.labels]
    return template.render(
        run=run, other=other, version=__version__, scorers=scorers,
        any_direction=any(s["direction"] for s in scorers),
        models=sorted({m for s in scorers for m in s["spec"].models}),
        counts={status: statuses.get(status, 0) for status in ("scored", "not_scorable", "failed")},
        usage=usage, costs=costs, calibrations=_calibration_views(run),
        pairs=_pair_views(run, other), agreement=dict(agreement or {}),
        generated=datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        data=report_json(run, other), script=script, style=style,
        script_hash=_csp_hash(script), style_hash=_csp_hash(style))


def report_json(run: ReportRun, other: ReportRun | None = None) -> str:
    """The table's data as JSON text safe inside a ``<script>`` element: ``<``, ``>`` and ``&``
    appear only as ``\\u003c``, ``\\u003e`` and ``\\u0026`` (JSON reads them back unchanged).

    Shape: ``{"runId", "compareRunId", "labels": [label…], "items": {item key: item data},
    "otherItems": {item key: B's item data where it differs}, "rows": [{"key", "id", "label",
    "result", "other"}], "lines": [text…]}``; ``result`` is a result's JSON (`engine.core.result.
    ScoreResult`) whose stages' prompts are lists of positions in ``lines`` (joined with
    newlines they give the prompt back); ``other`` is B's result on the same item and label
    (null when B has none; absent without B)."""
    lines = _Lines()
    pairs = dict(_paired_labels(run, other)) if other is not None else {}
    theirs = {(item_key(line["id"]), line["label"]): line for line in other.lines} if other is not None else {}
    rows = []
    for line in sorted(run.lines, key=lambda line: not inconsistent(line)):  # a pair's orders that disagree first
        key = item_key(line["id"])
        row: dict[str, Any] = {"key": key, "id": key, "label": line["label"], "result": _trim(line, lines)}
        if other is not None:
            found = theirs.get((key, pairs.get(line["label"], line["label"])))
            row["other"] = _trim(found, lines) if found is not None else None
        rows.append(row)
    items = {key: {k: v for k, v in item.items() if k != "id"} for key, item in run.items.items()}
    other_items = {}
    if other is not None:
        for key, item in other.items.items():
            data = {k: v for k, v in item.items() if k != "id"}
            if key in items and items[key] != data:
                other_items[key] = data
    blob = {"runId": run.run_id, "compareRunId": other.run_id if other is not None else None,
            "labels": run.labels, "items": items, "otherItems": other_items, "rows": rows, "lines": lines.texts}
    text = json.dumps(blob, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: ASCII escapes keep the page valid UTF-8
        text = json.dumps(blob, ensure_ascii=True, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


class _Lines:
    """The distinct lines of every prompt, each kept once: a prompt travels as the positions of
    its lines (prompts repeat their instructions and context, item after item)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def positions(self, text: str) -> list[int]:
        out = []
        for line in text.split("\n"):
            index = self._index.get(line)
            if index is None:
                index = self._index[line] = len(self.texts)
                self.texts.append(line)
            out.append(index)
        return out


def _trim(line: Mapping[str, Any], lines: _Lines) -> dict[str, Any]:
    """A result as the table's data holds it: without the fields its row or the header already
    has and the seed's duplicates, each stage's prompt as line positions (`_Lines`), usage
    without its zero counts."""
    result = {k: v for k, v in line.items() if k not in _LEFT_OUT}
    if isinstance(result.get("usage"), Mapping):
        result["usage"] = _nonzero(result["usage"])
    stages = {}
    for sid, record in (result.get("stages") or {}).items():
        if isinstance(record, Mapping):
            record = dict(record)
            if isinstance(record.get("prompt"), str):
                record["prompt"] = lines.positions(record["prompt"])
            if isinstance(record.get("usage"), Mapping):
                record["usage"] = _nonzero(record["usage"])
        stages[sid] = record
    result["stages"] = stages
    return result


def _nonzero(usage: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in usage.items() if v}


def _csp_hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def _svg_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def _num(value: Any) -> str:
    """A figure as text; a ``{value, ci}`` figure with its interval: ``0.9 [0.786, 0.957]``."""
    if isinstance(value, dict) and "value" in value:
        if value.get("value") is None:
            return "—"
        ci = value.get("ci")
        return _num(value["value"]) + (f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else "")
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _when(stamp: str | None) -> str:
    """An ISO 8601 UTC time stamp as ``2026-01-31 12:00:00 UTC`` (anything else as it is)."""
    if not stamp:
        return "—"
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _signed(value: Any) -> str:
    return "—" if value is None else ("+" if value > 0 else "") + _num(value)


# --- per scorer ---------------------------------------------------------------------------------


def _direction(run: ReportRun, label: str, summary: Any) -> str | None:
    """The scorer's direction when the run records one (its configuration, else a summary's)."""
    return run.label_config(label).get("direction") or getattr(summary, "direction", None)


def _scores(run: ReportRun, label: str) -> list[float]:
    return [float(line["score"]) for line in run.lines
            if line["label"] == label and result_status(line) == "scored" and line.get("score") is not None]


def _scorer_view(run: ReportRun, label: str, spec: Any) -> dict[str, Any]:
    from .charts import histogram_svg

    summary = label_summary(run, label)
    scores = _scores(run, label)
    scale = run.label_config(label).get("scale")
    top = float(scale) if isinstance(scale, (int, float)) and scale > 0 else max([1.0, *scores])
    usage, _costs = usage_totals(line for line in run.lines if line["label"] == label)
    from .ci import corrected_text

    corrected = run.corrected.get(label)
    return {"label": label, "summary": summary, "spec": spec, "direction": _direction(run, label, summary),
            "spread": spread(scores), "usage": usage,
            "corrected": corrected_text(corrected) if corrected else None,
            "pairwise": pairwise_view(summary.pairwise, [line for line in run.lines if line["label"] == label]),
            "histogram": _svg_uri(histogram_svg(scores, top, f"{label}: scores of {len(scores)} items")) if scores
            else None}


# --- calibration --------------------------------------------------------------------------------


def _calibration_views(run: ReportRun) -> list[dict[str, Any]]:
    from ..analysis.judge_stats import roc_points
    from .charts import confusion_svg, roc_svg, scatter_svg

    views = []
    for scorer, figures in run.calibrations.items():
        label = figures.get("label") or next((line["label"] for line in run.lines if line.get("scorer") == scorer),
                                             scorer)
        label_field = figures.get("labelField") or "label"
        fill = figures.get("notScorableScore")
        scores, labels = [], []
        for line in run.lines:
            item = run.items.get(item_key(line["id"]))
            human = label_value(item, label_field) if item is not None else None
            status = result_status(line)
            if line["label"] != label or human is None or status == "failed":
                continue
            if status == "not_scorable" and fill is None:
                continue
            scores.append(float(line["score"]) if status == "scored" else float(fill))
            labels.append(human)
        charts, notes = [], []
        if figures.get("kind") == "binary":
            positive = [str(v) for v in figures.get("positiveLabels") or []]
            points = roc_points(scores, [str(v) for v in labels], positive=positive)
            if points:
                charts.append({"src": _svg_uri(roc_svg(points, figures.get("rocAuc"), label)),
                               "alt": f"ROC curve of {label}"})
            else:
                notes.append(f"no ROC curve: the items' labels in {label_field!r} hold one class only, or none")
            for new, old in (("cutoff", "threshold"), ("bestCutoff", "bestThreshold")):  # a run stored before
                figures.setdefault(new, figures.get(old))
            if figures.get("confusion"):
                charts.append({"src": _svg_uri(confusion_svg(figures["confusion"], figures.get("cutoff"), label)),
                               "alt": f"confusion matrix of {label}"})
            names = [("ROC AUC", "rocAuc"), ("accuracy", "accuracy"), ("balanced accuracy", "balancedAccuracy"),
                     ("true-positive rate", "truePositiveRate"), ("true-negative rate", "trueNegativeRate"),
                     ("Cohen's kappa", "cohenKappa"), ("base rate", "baseRate"),
                     ("cut-off", "cutoff"), ("best cut-off", "bestCutoff"),
                     ("balanced accuracy at best (optimistic)", "bestBalancedAccuracy"),
                     ("positives", "positives"), ("negatives", "negatives")]
        else:
            if scores:
                pairs = [(float(v), s) for v, s in zip(labels, scores) if _is_number(v)]
                charts.append({"src": _svg_uri(scatter_svg(pairs, "human label", "score", label)),
                               "alt": f"score against label for {label}"})
            names = [("Spearman", "spearman"), ("Pearson", "pearson")]
        names += [("labelled", "labelled"), ("used", "used"), ("scored", "scored"), ("not scorable", "notScorable"),
                  ("failed", "failed"), ("left out", "leftOut")]
        views.append({"label": label, "label_field": label_field, "figures": figures, "charts": charts,
                      "numbers": [(name, _num(figures.get(key))) for name, key in names if key in figures],
                      "notes": list(figures.get("notes") or []) + notes})
    return views


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, bool)


# --- comparison ---------------------------------------------------------------------------------


def _paired_labels(run: ReportRun, other: ReportRun | None) -> list[tuple[str, str]]:
    """(A's label, B's label) pairs set against each other across two runs: the labels both
    have; when they share none and each has one, those two."""
    if other is None:
        return []
    common = [(label, label) for label in run.labels if label in other.labels]
    if not common and len(run.labels) == 1 and len(other.labels) == 1:
        return [(run.labels[0], other.labels[0])]
    return common


def _is_compare_run(run: ReportRun) -> bool:
    """A run of ``scorespec compare``: versions of a scorer under their labels, the first the baseline."""
    return ((run.config.get("cli") or {}).get("command") == "compare") and len(run.labels) > 1


def _comparisons(run: ReportRun, other: ReportRun | None) -> list[tuple[ReportRun, str, ReportRun, str]]:
    """What the report sets side by side: with `other`, the paired labels of the two runs; in a
    compare run, each version against the first (the baseline)."""
    if other is not None:
        return [(run, a, other, b) for a, b in _paired_labels(run, other)]
    if _is_compare_run(run):
        return [(run, run.labels[0], run, label) for label in run.labels[1:]]
    return []


def _pair_views(run: ReportRun, other: ReportRun | None) -> list[dict[str, Any]]:
    from .charts import scatter_svg

    views = []
    for run_a, label, run_b, label_b in _comparisons(run, other):
        ours = {item_key(line["id"]): line for line in run_a.lines if line["label"] == label}
        theirs = {item_key(line["id"]): line for line in run_b.lines if line["label"] == label_b}
        pairs, changed = [], []
        for key in (key for key in ours if key in theirs):
            a, b = ours[key], theirs[key]
            if result_status(a) == "scored" and result_status(b) == "scored":
                pairs.append((key, float(a["score"]), float(b["score"])))
            elif result_status(a) != result_status(b):
                changed.append(key)
        moved = sorted((p for p in pairs if p[2] != p[1]), key=lambda p: -abs(p[2] - p[1]))
        movers = [_mover(key, ours[key], theirs[key]) for key in changed[:MOVERS]]
        movers += [_mover(key, ours[key], theirs[key]) for key, _a, _b in moved[:max(0, MOVERS - len(movers))]]
        direction = _direction(run_a, label, label_summary(run_a, label))
        name_a = label if run_a is run_b else f"A ({run_a.run_id})"
        name_b = label_b if run_a is run_b else f"B ({run_b.run_id})"
        views.append({
            "label": label, "label_b": label_b, "name_a": name_a, "name_b": name_b, "direction": direction,
            "changed": changed, "movers": movers,
            "only_a": len([k for k in ours if k not in theirs]), "only_b": len([k for k in theirs if k not in ours]),
            **_paired([a for _k, a, _b in pairs], [b for _k, _a, b in pairs], direction),
            "scatter": _svg_uri(scatter_svg([(a, b) for _k, a, b in pairs], name_a, name_b,
                                            f"{label_b if run_a is run_b else label}: {len(pairs)} items"))
            if pairs else None})
    return views


def _paired(a: list[float], b: list[float], direction: str | None) -> dict[str, Any]:
    """The paired figures of B against A (scores of the same items, in order): ``n``, the means,
    ``difference`` (the exact mean of B − A), ``interval`` and ``test`` (text, or None), ``counts``
    (title and three numbers) and ``notes``. The interval and the test are `scorespec compare`'s
    (`engine.analysis.compare_stats`: bootstrap interval, Wilcoxon signed-rank test, wins by direction);
    a scorespec without that module shows the plain mean difference and says so."""
    mean_a, mean_b = _mean(a), _mean(b)
    plain = {"n": len(a), "mean_a": mean_a, "mean_b": mean_b, "interval": None, "test": None,
             "difference": _exact_difference(a, b) if a else None,
             "counts": ("B higher / equal / lower", sum(y > x for x, y in zip(a, b)),
                        sum(y == x for x, y in zip(a, b)), sum(y < x for x, y in zip(a, b))),
             "notes": ["The difference is the plain mean of B − A over the items both scored; no interval or test "
                       "is computed here."] if a else ["No item was scored by both: nothing to pair."]}
    try:
        from ..analysis.compare_stats import p_text, paired_difference
    except ImportError:
        return plain
    stats = paired_difference(a, b, direction or "higher_is_better")
    interval = None
    if stats.ci95 is not None:
        interval = f"{stats.confidence:.0%} interval {_signed(stats.ci95[0])} to {_signed(stats.ci95[1])} (bootstrap)"
    test = None
    if stats.p_value is not None:
        test = f"Wilcoxon signed-rank {p_text(stats.p_value)}: B is {stats.verdict}" if stats.verdict != "unclear" \
            else f"Wilcoxon signed-rank {p_text(stats.p_value)}: unclear"
    return {**plain, "difference": stats.mean_difference, "interval": interval, "test": test,
            "counts": ("B better / tied / worse", stats.wins, stats.ties, stats.losses), "notes": list(stats.notes)}


def _mean(values: list[float]) -> float | None:
    return float(sum(map(Decimal, map(repr, values)), Decimal(0)) / len(values)) if values else None


def _exact_difference(a: list[float], b: list[float]) -> float:
    """The mean of B − A on the scores' decimal forms (0.7 → 0.9 is exactly +0.2)."""
    total = sum((Decimal(repr(y)) - Decimal(repr(x)) for x, y in zip(a, b)), Decimal(0))
    return float(total / len(a))


def _state(line: Mapping[str, Any]) -> str:
    status = result_status(line)
    return _num(line.get("score")) if status == "scored" else status.replace("_", " ")


def _mover(key: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    both = result_status(a) == "scored" and result_status(b) == "scored"
    error = b.get("error")
    why = (f"[{error.get('kind')}] {error.get('message')}" if error else
           (b.get("notScorable") or {}).get("reason") if b.get("notScorable") else b.get("reason")) or ""
    why = " ".join(str(why).split())
    return {"key": key, "id": key, "a": _state(a), "b": _state(b),
            "delta": float(Decimal(repr(b["score"])) - Decimal(repr(a["score"]))) if both else None,
            "why": why[:200] + ("…" if len(why) > 200 else "")}
