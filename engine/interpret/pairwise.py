"""A pairwise stage on one item: the two responses shown in positions, each order its own call.

The item's responses, ``output_a`` and ``output_b``, are read as texts (`engine.core.responses`).
The stage's plan (`engine.spec.plans.PairwisePlan`) says which orders are asked:

- ``both``: ``AB`` (output_a shown first) and ``BA`` (output_b first), one call each;
- ``random``: one of them, drawn from the item's content (SHA-256 of both responses and the input
  text: the same order on every run and every resume);
- ``fixed``: ``AB`` only.

The prompt reads ``pair.first``, ``pair.second`` and ``pair.order``. Each answer's winner field
names a position (``A``: the response shown first, ``B``: the one shown second, or ``tie``),
mapped back to a response: under ``BA`` position A is output_b. The item's winner is the response
every order chose; when the orders disagree (or one said tie and the other did not) it is
``tie`` and the item is inconsistent. Each call carries its order (`JudgeCall.order`), which the
judge-call cache keys apart.

The stage's record joins the calls' prompts (``[AB]\\n…\\n\\n[BA]\\n…``), lists their raw answers
as a JSON list and sums their attempts and usage; its result is ``{winner, consistent, orders:
[{order, position, winner, answer}]}``, and the item's result gets the `PairOutcome`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Generator
from typing import Any

from ..core.errors import ScorerRunError
from ..core.messages import MessageError
from ..core.responses import response_text
from ..core.result import PairOutcome
from ..spec.plans import PairwisePlan, PromptStagePlan
from .fan_out import FanOut

__all__ = ["orders_for", "run_pair", "winner_of"]

Steps = Generator[Any, Any, Any]


def orders_for(plan: PairwisePlan, text_a: str, text_b: str, input_text: str) -> tuple[str, ...]:
    """The orders a pair is asked in (see the module): ``("AB", "BA")``, ``("AB",)`` or, for
    ``random``, the one the item's content draws."""
    if plan.order == "both":
        return ("AB", "BA")
    if plan.order == "fixed":
        return ("AB",)
    seed = "\0".join((text_a, text_b, input_text)).encode("utf-8", "surrogatepass")
    return ("AB",) if hashlib.sha256(seed).digest()[0] % 2 == 0 else ("BA",)


def winner_of(order: str, position: str) -> str:
    """The response a `position` (``A``, ``B`` or ``tie``) names under `order` (``AB`` or ``BA``):
    ``winner_of("BA", "A") == "B"``; ``tie`` stays ``tie``."""
    if position == "A":
        return order[0]
    if position == "B":
        return order[1]
    return "tie"


def _texts(stage: PromptStagePlan, run: Any) -> dict[str, str]:
    try:
        return {"A": response_text(run.get("output_a") or None, "output_a"),
                "B": response_text(run.get("output_b") or None, "output_b")}
    except MessageError as exc:
        raise ScorerRunError("input", f"{stage.id}: {exc}", stage=stage.id) from None


def _longer(texts: dict[str, str]) -> str | None:
    a, b = len(texts["A"].strip()), len(texts["B"].strip())
    return None if a == b else "A" if a > b else "B"


def run_pair(runner: Any, stage: PromptStagePlan, ns: dict[str, Any], work: Any) -> Steps:
    """The stage's result for this item (see the module), its `PairOutcome` in ``work.pair``;
    raises `ScorerRunError` (a failed order's message prefixed ``order BA: ``)."""
    plan = stage.pairwise
    assert plan is not None
    texts = _texts(stage, ns["run"])
    orders = orders_for(plan, texts["A"], texts["B"], str(ns["run"].get("input_text") or ""))
    parts = [type(work)() for _ in orders]
    scopes = [{**ns, "pair": {"first": texts[order[0]], "second": texts[order[1]], "order": order}}
              for order in orders]
    outcomes = yield FanOut([runner.ask(stage, stage.answer_for(scope), scope, part, order=order)
                             for scope, part, order in zip(scopes, parts, orders)])
    record = work.record
    prompts, raws, answers = [], [], []
    failure: ScorerRunError | None = None
    for order, part, outcome in zip(orders, parts, outcomes):
        if not outcome.started:
            break
        prompts.append(f"[{order}]\n{part.record.prompt or ''}")
        raws.append(part.record.raw_answer or "")
        record.attempts += part.record.attempts
        record.usage.add(part.record.usage)
        if outcome.error is not None and failure is None:
            failure = outcome.error
            failure.message = f"order {order}: {failure.message}"
        answers.append(outcome.value)
    record.prompt = "\n\n".join(prompts) if prompts else None
    record.raw_answer = json.dumps(raws, ensure_ascii=False) if raws else None
    if failure is not None:
        raise failure
    positions = [str(answer[plan.field]) for answer in answers]
    winners = [winner_of(order, position) for order, position in zip(orders, positions)]
    agreed = len(set(winners)) == 1
    winner = winners[0] if agreed else "tie"
    consistent = agreed if len(orders) > 1 else None
    work.pair = PairOutcome(winner=winner, consistent=consistent, orders=list(orders), positions=positions,
                            winners=winners, longer=_longer(texts))
    return {"winner": winner, "consistent": consistent,
            "orders": [{"order": order, "position": position, "winner": won, "answer": answer}
                       for order, position, won, answer in zip(orders, positions, winners, answers)]}
