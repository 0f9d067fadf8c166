"""Runs for the HTML report's tests: faithfulness over scripted items with a `FakeJudge`, stored
in a store of the test's own, with hostile text in an item id, an output, a judge's reason and
an error message (each one, if it ever ran, would set ``window.__pwned``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from engine import load_scorer
from engine.analysis.calibration import calibrate
from engine.core.errors import ScorerRunError
from engine import run_evals
from engine.testing import FakeJudge

HOSTILE_ID = "<img src=x onerror=\"window.__pwned='id'\">"
HOSTILE_CLAIM = "<script>window.__pwned='output'</script><img src=x onerror=\"window.__pwned='output2'\">"
HOSTILE_OUTPUT = "ok-1 " + HOSTILE_CLAIM
HOSTILE_REASON = "</pre><img src=x onerror=\"window.__pwned='reason'\"><script>window.__pwned='reason2'</script>"
HOSTILE_ERROR = "<script>window.__pwned='error'</script> & <b>bold</b>"


def _text(call: Any) -> str:
    return call.messages[-1]["content"].split("TEXT:")[-1]


def _claims(call: Any) -> dict:
    text = _text(call)
    if "FAIL" in text:
        raise ScorerRunError("transport", HOSTILE_ERROR)
    found = re.findall(r"\b(?:ok|bad)-\d+\b", text)
    if "<script>" in text:
        found.append(HOSTILE_CLAIM)
    return {"claims": found}


def _verdicts(strict: bool):
    def answer(call: Any) -> dict:
        claim = re.search(r"CLAIM:\n<<<\n(.*?)\n>>>", call.messages[-1]["content"], re.S).group(1)
        if claim == HOSTILE_CLAIM:
            return {"verdict": "yes", "reason": HOSTILE_REASON}
        yes = claim.startswith("ok") and not (strict and claim.endswith("1"))
        return {"verdict": "yes" if yes else "no", "reason": f"checked {claim}"}
    return answer


def items(n: int = 12) -> list[dict]:
    """n items: the first hostile (scored 1, labelled hallucinated: a disagreement), every 5th
    from the 5th failing (hostile error), every 7th from the 7th not scorable (no claim), the
    rest scored from their ok/bad claims."""
    out = [{"id": HOSTILE_ID, "input": "Say something <b>bold</b>.", "output": HOSTILE_OUTPUT, "context": ["c"],
            "label": "hallucinated"}]
    for i in range(1, n):
        if i % 5 == 0:
            output = f"FAIL ok-{i}"
        elif i % 7 == 0:
            output = "nothing here"
        else:
            output = " ".join(f"{'ok' if (i + k) % 3 else 'bad'}-{i}{k}" for k in range(1 + i % 3))
        out.append({"id": f"item-{i:03d}", "input": f"question {i}", "output": output, "context": ["c"],
                    "label": "faithful" if i % 2 else "hallucinated"})
    return out


def faithfulness_judge(strict: bool = False) -> FakeJudge:
    """The scripted judge; a `strict` one finds claims ending in 1 unsupported."""
    return FakeJudge({"preprocess": _claims, "analyze": _verdicts(strict)})


def eval_run(store: Path, n: int = 12, *, run_id: str | None = None, strict: bool = False, out: Path | None = None,
             **options: Any) -> str:
    """A faithfulness eval over `items(n)` stored in `store`; returns its run id."""
    scorer = load_scorer("faithfulness", judge=faithfulness_judge(strict))
    summary = run_evals(items(n), [scorer], store=store, run_id=run_id, out=out, **options)
    return summary.run_id


def calibrate_run(store: Path, n: int = 12) -> str:
    """A faithfulness calibration over `items(n)` (positive label: faithful) stored in `store`."""
    report = calibrate(load_scorer("faithfulness", judge=faithfulness_judge()), items(n), positive=["faithful"],
                       store=store)
    return report.run_id
