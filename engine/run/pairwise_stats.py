"""A pairwise scorer's figures over a run: win rate, its interval, the sign test, position
consistency and length bias.

Each scored item of a pairwise scorer has an outcome (`engine.core.result.PairOutcome`): output_a
won (a win), output_b won (a loss) or neither (a tie: the judge said so, or the two orders
disagreed). Over the run's `n` such items:

- ``winRate``: (wins + ties / 2) / n, output_a's share, ties counted as half a win each;
- ``winRateCi``: the Wilson score interval at 95 % of that share over the n items (Wilson 1927,
  with the half-counted ties in the count; ``method: "wilson"``);
- ``signTestP``: the two-sided exact sign test of wins against losses, ties left out (a binomial
  test of wins in wins + losses against 0.5: `scipy.stats.binomtest`); None without a decided item;
- ``positionConsistency``: the share of the items asked in both orders whose two orders agreed
  (None when no item was asked in both);
- ``lengthBias``: among the decided items whose responses differ in length, the share the longer
  response won (``longerWon`` of ``decided``; 0.5 is no bias); None without such an item.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["PairwiseStats", "pairwise_text", "wilson_interval"]

Z95 = 1.959963984540054
"""The standard normal quantile of 0.975: a two-sided 95 % interval."""


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of the proportion successes / n (successes may be fractional:
    ties counted as half), clipped to [0, 1]; (0, 1) for n = 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


class PairwiseStats:
    """The counts of one pairwise scorer's outcomes in a run (see the module); `add` takes an
    outcome in its JSON form (``{winner, consistent, longer, …}``, as the out file holds it)."""

    def __init__(self) -> None:
        self.wins = self.ties = self.losses = 0
        self.both_orders = self.consistent = 0
        self.decided_by_length = self.longer_won = 0

    def add(self, outcome: Mapping[str, Any] | None) -> None:
        """Count one scored item's outcome (None or an unreadable one is not counted)."""
        if not isinstance(outcome, Mapping) or outcome.get("winner") not in ("A", "B", "tie"):
            return
        winner = outcome["winner"]
        if winner == "A":
            self.wins += 1
        elif winner == "B":
            self.losses += 1
        else:
            self.ties += 1
        if isinstance(outcome.get("consistent"), bool):
            self.both_orders += 1
            self.consistent += outcome["consistent"]
        longer = outcome.get("longer")
        if winner != "tie" and longer in ("A", "B"):
            self.decided_by_length += 1
            self.longer_won += longer == winner

    @property
    def items(self) -> int:
        return self.wins + self.ties + self.losses

    def to_json_dict(self) -> dict[str, Any] | None:
        """The summary's ``pairwise`` figures (see the module); None when no item was counted."""
        n = self.items
        if not n:
            return None
        share = (self.wins + self.ties / 2) / n
        low, high = wilson_interval(self.wins + self.ties / 2, n)
        decided = self.wins + self.losses
        p_value = None
        if decided:
            from scipy.stats import binomtest

            p_value = float(binomtest(self.wins, decided, 0.5).pvalue)
        return {
            "items": n, "wins": self.wins, "ties": self.ties, "losses": self.losses,
            "winRate": share, "winRateCi": {"low": low, "high": high, "level": 0.95, "method": "wilson"},
            "signTestP": p_value,
            "positionConsistency": self.consistent / self.both_orders if self.both_orders else None,
            "bothOrders": self.both_orders,
            "lengthBias": {"longerWon": self.longer_won, "decided": self.decided_by_length,
                           "share": self.longer_won / self.decided_by_length if self.decided_by_length else None},
        }


def _figure(value: float | None, places: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{places}f}"


def pairwise_text(figures: Mapping[str, Any]) -> str:
    """A pairwise scorer's figures (`PairwiseStats.to_json_dict`) in one line of plain text, as
    the console, the Markdown summary and JUnit give it: ``A 15 · tie 0 · B 5 of 20 · win rate
    0.75 (95 % Wilson 0.53–0.89) · sign test p 0.041 · position consistency 1.00 of 20 · longer
    won 0 of 20 (0.00)``."""
    ci = figures["winRateCi"]
    bias = figures["lengthBias"]
    p_value = figures["signTestP"]
    consistency = (f"position consistency {_figure(figures['positionConsistency'])} of {figures['bothOrders']}"
                   if figures["bothOrders"] else "position consistency not measured (one order asked)")
    return (f"A {figures['wins']} · tie {figures['ties']} · B {figures['losses']} of {figures['items']} · "
            f"win rate {_figure(figures['winRate'])} (95 % Wilson {_figure(ci['low'])}–{_figure(ci['high'])}) · "
            f"sign test p {'n/a' if p_value is None else f'{p_value:.3g}'} · {consistency} · "
            f"longer won {bias['longerWon']} of {bias['decided']} ({_figure(bias['share'])})")
