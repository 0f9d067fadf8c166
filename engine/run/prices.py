"""Judge prices, and what the tokens of a result, a run or a version cost.

A **price table** is a YAML file of US dollars per million tokens::

    taken: "2025-10-01"                      # when the prices were taken (shown with every cost)
    models:
      openai/gpt-4o-mini: {input: 0.15, output: 0.60}
      anthropic/claude-3-5-haiku-*: {input: 0.80, output: 4.00, taken: "2025-06-01"}

A key is a model string as the judge is named (``provider/model``); one ending in ``*`` (any
``fnmatch`` pattern) prices every model it matches, the longest matching key winning over
shorter ones and an exact key over any pattern. `load_prices` stacks the user's table (the file
given, else ``$SCORESPEC_PRICES``, else ``prices.yaml`` in the cache folder, ``$SCORESPEC_CACHE``
or ``~/.cache/scorespec``) over the table shipped in ``engine/data/prices.yaml`` (public list
prices of common hosted models, with the date they were taken): a model is priced by the first
table that names it. The embedded judges (``local``, ``local-tiny``, ``llamacpp/…``) cost 0.

**Cost** = tokens in × input price + tokens out × output price, per million. Tokens are what the
provider reported (`engine.core.result.Usage`); a cache hit reports none and so costs nothing. A model
that used tokens and has no price has no cost: `cost_of` lists it as unpriced, with a note, and
never guesses a figure.
"""

from __future__ import annotations

import fnmatch
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import environment
from ..core.errors import Problem, UserError, did_you_mean
from ..core.result import Usage

PRICES_ENV = "SCORESPEC_PRICES"
PRICES_FILE_NAME = "prices.yaml"
SHIPPED_PRICES = Path(__file__).resolve().parent / "data" / PRICES_FILE_NAME
EMBEDDED = "embedded judge"
PER = 1_000_000  # prices are per million tokens

__all__ = ["Cost", "Price", "PriceTable", "PriceTableError", "PRICES_ENV", "SHIPPED_PRICES", "cost_of",
           "default_prices_path", "load_prices", "parse_prices", "priced_result", "result_usage", "usage_by_model",
           "usd_text"]


class PriceTableError(UserError, ValueError):
    """A price table cannot be used: an unreadable file or entries that are not prices. The
    message lists every problem as ``file:line:col: key: message``."""


@dataclass(frozen=True)
class Price:
    """A model's price: `input` and `output` in US dollars per million tokens (≥ 0), the date
    it was `taken` (text, None when not given), the file it came from (`source`) and the key
    that matched (`key`)."""

    input: float
    output: float
    taken: str | None = None
    source: str = ""
    key: str = ""

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        """US dollars for `tokens_in` prompt and `tokens_out` answer tokens."""
        return (tokens_in * self.input + tokens_out * self.output) / PER


FREE = Price(0.0, 0.0, None, EMBEDDED, EMBEDDED)


@dataclass(frozen=True)
class _Table:
    source: str
    taken: str | None
    exact: Mapping[str, Price]
    patterns: tuple[tuple[str, Price], ...]  # longest first

    def find(self, model: str) -> Price | None:
        found = self.exact.get(model)
        if found is not None:
            return found
        return next((price for key, price in self.patterns if fnmatch.fnmatchcase(model, key)), None)


class PriceTable:
    """Prices by model string, from one or more tables (the first that prices a model wins; see
    the module docstring). `sources` names the files, first first."""

    def __init__(self, tables: Sequence[_Table] = ()):
        self._tables = tuple(tables)

    @property
    def sources(self) -> list[str]:
        return [t.source for t in self._tables]

    def price(self, model: str | None) -> Price | None:
        """The price of `model` (free for an embedded judge), or None when no table names it."""
        if not model:
            return None
        from ..judge.model import is_local

        if is_local(model):
            return FREE
        return next((found for t in self._tables if (found := t.find(model)) is not None), None)

    def cost(self, model: str | None, usage: Usage) -> float | None:
        """US dollars for `usage` on `model`: None when a call's tokens are unknown (the provider
        reported no usage: `Usage.unreported`), 0 when it used no tokens, None when it did and the
        model has no price. Reasoning tokens are part of `Usage.tokens_out` and cost as output."""
        if usage.unreported and not (model and self.price(model) is FREE):
            return None
        if not usage.tokens_in and not usage.tokens_out:
            return 0.0
        price = self.price(model)
        return None if price is None else price.cost(usage.tokens_in, usage.tokens_out)

    def describe(self) -> str:
        """Where the prices come from, for a note: ``prices from FILE (taken …), then …``."""
        if not self._tables:
            return "no price table"
        parts = []
        for t in self._tables:
            name = "the shipped table" if Path(t.source) == SHIPPED_PRICES else t.source
            parts.append(name + (f" (taken {t.taken})" if t.taken else ""))
        return "prices from " + ", then ".join(parts)

    def __repr__(self) -> str:
        return f"PriceTable({self.sources!r})"


def parse_prices(text: str, source: str) -> _Table:
    """One price table from its YAML `text` (read from `source`). Raises `PriceTableError`
    listing every problem with its line."""
    from ..spec.yamlload import load_yaml

    loaded = load_yaml(text, source)
    problems = list(loaded.problems)

    def add(key: str, message: str, hint: str = "") -> None:
        line, column = loaded.positions.get(key, (0, 0))
        problems.append(Problem("price-table", message, source, line, column, key, hint))

    data = loaded.data
    if problems:
        raise _error(problems)
    if not isinstance(data, Mapping) or not isinstance(data.get("models"), Mapping):
        add("models" if isinstance(data, Mapping) else "", "a price table is a mapping with `models:` (model → "
            "{input: USD, output: USD} per million tokens)")
        raise _error(problems)
    for key in data:
        if key not in ("taken", "models"):
            add(key, "unknown key", did_you_mean(str(key), ["taken", "models"]))
    taken = _taken(data.get("taken"), "taken", add)
    exact: dict[str, Price] = {}
    patterns: list[tuple[str, Price]] = []
    for model, entry in data["models"].items():
        where = f"models.{model}"
        if not isinstance(entry, Mapping):
            add(where, "expected {input: USD, output: USD} per million tokens")
            continue
        for key in entry:
            if key not in ("input", "output", "taken"):
                add(f"{where}.{key}", "unknown key", did_you_mean(str(key), ["input", "output", "taken"]))
        amounts = []
        for side in ("input", "output"):
            value = entry.get(side)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
                and value >= 0
            if not ok:
                add(f"{where}.{side}" if side in entry else where, f"{side}: a price in US dollars per million "
                    f"tokens (a number ≥ 0) is needed, not {value!r}")
            amounts.append(float(value) if ok else 0.0)
        price = Price(amounts[0], amounts[1], _taken(entry.get("taken"), f"{where}.taken", add) or taken, source,
                      str(model))
        if any(c in str(model) for c in "*?["):
            patterns.append((str(model), price))
        else:
            exact[str(model)] = price
    if problems:
        raise _error(problems)
    patterns.sort(key=lambda kv: -len(kv[0]))
    return _Table(source, taken, exact, tuple(patterns))


def _error(problems: list[Problem]) -> PriceTableError:
    ordered = sorted(problems, key=lambda p: (p.line, p.column, p.key_path))
    return PriceTableError("\n".join(p.render() for p in ordered))


def _taken(value: Any, key: str, add: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        add(key, f"taken: a date such as \"2025-10-01\" is needed, not {value!r}")
        return None
    return str(value)


def _read(path: Path) -> _Table:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PriceTableError(f"{path}: cannot read the price table ({exc})") from None
    return parse_prices(text, str(path))


def default_prices_path() -> Path | None:
    """The user's price table: ``$SCORESPEC_PRICES`` (which must exist), else ``prices.yaml`` in
    the cache folder when there is one; None otherwise."""
    env = environment.value(PRICES_ENV)
    if env:
        return Path(env).expanduser()
    from ..core.paths import cache_dir

    found = cache_dir() / PRICES_FILE_NAME
    return found if found.is_file() else None


def load_prices(path: str | os.PathLike[str] | None = None, *, shipped: bool = True) -> PriceTable:
    """The price table of a run: `path` (else `default_prices_path()`) over the shipped table
    (left out with ``shipped=False``). Raises `PriceTableError` for a file that is missing (when
    named by `path` or ``$SCORESPEC_PRICES``), unreadable or not a price table."""
    tables = []
    user = Path(path).expanduser() if path is not None else default_prices_path()
    if user is not None:
        if not user.is_file():
            named = "--prices" if path is not None else f"${PRICES_ENV}"
            raise PriceTableError(f"{named} {user}: no such file")
        tables.append(_read(user))
    if shipped:
        tables.append(_read(SHIPPED_PRICES))
    return PriceTable(tables)


@dataclass(frozen=True)
class Cost:
    """What some usage cost, in US dollars.

    usd: the sum over the priced models (None when usage had tokens and no model of it has a
    price). by_model: model → its cost, None for a model that used tokens and has no price.
    unpriced: those models. prices: where the prices came from (`PriceTable.describe`).
    """

    usd: float | None
    by_model: dict[str, float | None] = field(default_factory=dict)
    unpriced: tuple[str, ...] = ()
    prices: str = ""
    unreported: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """True when every model that used tokens has a price and reported every call's usage."""
        return not self.unpriced and not self.unreported

    @property
    def note(self) -> str | None:
        """Why the cost is incomplete (None when it is complete)."""
        notes = []
        if self.unreported:
            notes.append(f"{', '.join(self.unreported)} reported no token usage for some calls: their tokens and "
                         "cost are unknown, not counted")
        if self.unpriced:
            notes.append(f"no price for {', '.join(self.unpriced)} in {self.prices}: tokens only (add the model to "
                         "a price table: --prices FILE, $SCORESPEC_PRICES or prices.yaml in the cache folder)")
        return "; ".join(notes) or None

    def to_json_dict(self) -> dict[str, Any]:
        out = {"usd": self.usd, "byModel": dict(self.by_model), "unpriced": list(self.unpriced),
               "complete": self.complete, "prices": self.prices, "note": self.note}
        if self.unreported:
            out["unreported"] = list(self.unreported)
        return out


def cost_of(usage_by_model: Mapping[str | None, Usage], prices: PriceTable) -> Cost:
    """The cost of usage per model string (e.g. a run's `EvalSummary.usage_by_model`, or one
    version's in a comparison) under `prices`. Models None or empty (no judge) are skipped."""
    by_model: dict[str, float | None] = {}
    for model, usage in usage_by_model.items():
        if model:
            by_model[model] = prices.cost(model, usage)
    unreported = tuple(m for m, usage in usage_by_model.items() if m and usage.unreported and by_model[m] is None)
    unpriced = tuple(m for m, usd in by_model.items() if usd is None and m not in unreported)
    known = [usd for usd in by_model.values() if usd is not None]
    usd = sum(known) if known or not (unpriced or unreported) else None
    return Cost(usd, by_model, unpriced, prices.describe(), unreported)


def usd_text(usd: float | None) -> str:
    """A cost for people: ``$1.23`` from a dollar up, else four significant digits
    (``$0.001234``), ``$0`` for nothing, ``—`` for unknown."""
    if usd is None:
        return "—"
    if usd == 0:
        return "$0"
    if usd >= 1:
        return f"${usd:,.2f}"
    places = max(2, 3 - math.floor(math.log10(usd)))  # four significant digits
    whole, _, cents = f"{usd:.{places}f}".partition(".")
    return f"${whole}.{cents[:2] + cents[2:].rstrip('0')}"


def result_usage(result: Any) -> dict[str, Usage]:
    """A result's judge usage per model string: each juror's (`ScoreResult.jurors`), and the rest
    of its usage (its calls to the scorer's own model: a judge-written reason) on its `model`;
    {} for a result without a model (a rule-only scorer)."""
    if not result.model:
        return {}
    jurors = result.jurors or {}
    rest = result.usage.model_copy(deep=True)
    for total in jurors.values():
        for name in type(rest).model_fields:
            setattr(rest, name, getattr(rest, name) - getattr(total.usage, name))
    out = {model: total.usage for model, total in jurors.items()}
    if rest.calls or rest.tokens_in or rest.tokens_out or not jurors:
        out.setdefault(result.model, Usage()).add(rest)
    return out


def priced_result(result: Any, prices: PriceTable) -> None:
    """`result`'s cost (``costUsd``) from `prices`: the sum over its models (`result_usage`), None
    when any is unknown; each juror's own cost set on its `JurorTotals`."""
    costs = {model: prices.cost(model, usage) for model, usage in result_usage(result).items()}
    for model, total in (result.jurors or {}).items():
        total.cost_usd = costs.get(model)
    known = list(costs.values())
    result.cost_usd = None if not known or any(c is None for c in known) else sum(known)


def usage_by_model(pairs: Iterable[tuple[str | None, Usage]]) -> dict[str, Usage]:
    """(model, usage) pairs summed per model (None models left out)."""
    out: dict[str, Usage] = {}
    for model, usage in pairs:
        if model:
            out.setdefault(model, Usage()).add(usage)
    return out
