"""The HTML report of ``scorespec align --report FILE``: the candidates with their dev figures, the
test comparison of the parent and the chosen child, and the diff of the child's prompt. One
self-contained page; every value from the data is escaped. Reads an alignment's result by its
attributes (`engine.alignment.result.AlignResult`), so this package does not import `engine.alignment`."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

__all__ = ["render_align_report", "write_align_report"]

_STYLE = ("body{font:14px/1.45 system-ui,sans-serif;margin:2rem;max-width:70rem}table{border-collapse:collapse}"
          "td,th{padding:.25rem .6rem;border-bottom:1px solid #ddd;text-align:left}pre{background:#f6f6f6;"
          "padding:1rem;overflow:auto}.add{color:#0a6b24}.del{color:#a11}.chosen{font-weight:600}")


def _n(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}" if isinstance(value, float) else escape(str(value))


def _figures_row(name: str, strategy: str, change: str, figures: Any, chosen: bool) -> str:
    cells = [name, strategy, change]
    nums = [getattr(figures, k, None) if figures is not None else None
            for k in ("balanced_accuracy", "roc_auc", "spearman", "n")]
    row = "".join(f"<td>{escape(c)}</td>" for c in cells) + "".join(f"<td>{_n(v)}</td>" for v in nums)
    return f"<tr{' class=chosen' if chosen else ''}>{row}</tr>"


def render_align_report(result: Any) -> str:
    """The report page's HTML for an alignment's result."""
    head = "<tr><th>candidate</th><th>strategy</th><th>change</th><th>balanced acc.</th><th>ROC AUC</th>" \
           "<th>Spearman</th><th>n</th></tr>"
    rows = [_figures_row(result.parent, "parent", "—", result.parent_dev, False)]
    rows += [_figures_row(c.name, c.strategy, c.dropped or c.change, c.dev, c.name == result.chosen)
             for c in result.candidates]
    parts = [f"<h1>Alignment of {escape(result.parent)}</h1>",
             f"<p>child {escape(result.child or '—')} · split train {result.split['train']} / dev "
             f"{result.split['dev']} / test {result.split['test']} · seed {result.seed}</p>",
             "<h2>Candidates on the dev split</h2>", f"<table>{head}{''.join(rows)}</table>"]
    test = result.test
    if test is not None:
        parts += ["<h2>The test split</h2>", f"<table>{head}",
                  _figures_row(result.parent, "parent", "—", test.parent, False),
                  _figures_row(result.chosen or "", "child", "", test.child, True), "</table>",
                  f"<p>{escape(test.words)}; p-value {_n(test.p_value)}.</p>"]
    if result.prompt_diff:
        lines = []
        for line in result.prompt_diff.splitlines():
            kind = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
            lines.append(f"<span class='{kind}'>{escape(line)}</span>" if kind else escape(line))
        parts += ["<h2>The child's prompt</h2>", "<pre>" + "\n".join(lines) + "</pre>"]
    if result.notes:
        parts += ["<h2>Notes</h2><ul>", *(f"<li>{escape(n)}</li>" for n in result.notes), "</ul>"]
    return (f"<!doctype html><html><head><meta charset=utf-8><title>align {escape(result.parent)}</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(parts)}</body></html>\n")


def write_align_report(path: str | Path, result: Any) -> Path:
    """Write the report page to `path`; returns it. Raises `OSError` when it cannot be written."""
    target = Path(path)
    target.write_text(render_align_report(result), encoding="utf-8")
    return target
