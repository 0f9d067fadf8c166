"""A pairwise scorer in the HTML report: its figures, a win / tie / loss bar and its inconsistent
items.

The bar is a small SVG (three rectangles: output_a's wins, the ties, output_b's wins, each as wide
as its share of the items, with its count as a tooltip), given to the page as a data URI like the
charts, so the page's content security policy needs no inline style. `inconsistent` tells a
result line whose two orders disagreed; the report's table lists those first.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape

from ..run.items import item_key
from ..run.pairwise_stats import pairwise_text

__all__ = ["inconsistent", "pairwise_view", "win_bar_svg"]

WIDTH, HEIGHT = 320, 18
COLOURS = {"A": "#2e7d32", "tie": "#9e9e9e", "B": "#c62828"}


def inconsistent(line: Mapping[str, Any]) -> bool:
    """Whether a result line is a pair whose two orders disagreed (``pairwise.consistent`` false)."""
    pair = line.get("pairwise")
    return isinstance(pair, Mapping) and pair.get("consistent") is False


def win_bar_svg(wins: int, ties: int, losses: int) -> str:
    """The bar as SVG text: output_a's wins (green), ties (grey), output_b's wins (red), left to
    right, each as wide as its share; an empty grey bar for no item."""
    total = wins + ties + losses
    parts, x = [], 0.0
    for name, count, what in (("A", wins, "A wins"), ("tie", ties, "ties"), ("B", losses, "B wins")):
        width = WIDTH * count / total if total else 0.0
        if width:
            parts.append(f'<rect x="{x:.2f}" y="0" width="{width:.2f}" height="{HEIGHT}" fill="{COLOURS[name]}">'
                         f"<title>{escape(f'{what}: {count} of {total}')}</title></rect>")
        x += width
    if not parts:
        parts.append(f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#eeeeee"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img">{"".join(parts)}</svg>')


def pairwise_view(figures: Mapping[str, Any] | None, lines: Sequence[Mapping[str, Any]],
                  shown: int = 20) -> dict[str, Any] | None:
    """What the scorer's card shows (None for a scorer that is not pairwise): ``text`` (the
    figures in one line), ``bar`` (the SVG as a data URI), ``inconsistent`` (the first `shown`
    item keys whose orders disagreed) and ``inconsistent_count``."""
    if not figures:
        return None
    svg = win_bar_svg(figures["wins"], figures["ties"], figures["losses"])
    keys = [item_key(line["id"]) for line in lines if inconsistent(line)]
    return {"text": pairwise_text(figures), "inconsistent": keys[:shown], "inconsistent_count": len(keys),
            "bar": "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")}
