"""Every shipped judge scorer's prompts for one English item, as the judge gets them.

`rendered()` runs each shipped scorer that asks a judge (not the abstract bases) on `ITEM` with a
`FakeJudge` answering every call with a schema-valid answer (`engine.testing.answer_for`), and
returns ``{scorer id: [each call's messages, in order]}``. The language is given (``en``) so
that no detection runs. `tests/snapshots/english_prompts.json` holds what the engine rendered
before the item's language reached the prompts; `tests/test_languages.py` checks that the prompts
render byte for byte as then, so judge-cache keys and published figures hold.

Write the snapshot again (only when an English prompt is meant to change) with
``PYTHONPATH=. python3 tests/english_prompts.py``.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

from engine.bind.load import load_scorer
from engine.spec.catalog import list_specs
from engine.testing import FakeJudge
from engine.testing.schema_answers import answer_for

SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "english_prompts.json"

ITEM: dict[str, Any] = dict(
    input="Tell me about the Eiffel Tower.",
    output="The Eiffel Tower is in Paris. It was finished in 1889 and it is 330 metres tall.",
    ground_truth="The Eiffel Tower, in Paris, was completed in 1889 and is 330 metres tall.",
    context=["The Eiffel Tower, in Paris, was completed in 1889.", "It is 330 metres tall."],
    system="You are a helpful travel guide. Answer in two sentences.",
    tool_calls=[{"name": "search", "arguments": {"query": "Eiffel Tower"}, "result": "Paris, 1889, 330 m"}],
)
#: The two responses a pairwise scorer judges.
PAIR = {"output_a": ITEM["output"], "output_b": "The Eiffel Tower is in Rome. It was finished in 1920."}
#: Values for the fields a scorer declares (by name; the first fitting).
DECLARED = {"criterion": "The answer is accurate.", "criteria": ["The answer is accurate.", "The answer is short."],
            "rubric": "Accurate and short.", "expected_tools": ["search"],
            "expected_trajectory": ["search"], "available_tools": ["search"],
            "baseline_response": "The Eiffel Tower is in Paris; it opened in 1889.",
            "original_query": "Tell me about the Eiffel Tower?", "noise_type": "typo"}


def _reply(call: Any) -> Any:
    return answer_for(call.schema)


def judge_scorers() -> list[str]:
    """The ids of the shipped scorers that ask a judge."""
    ids = []
    for entry in list_specs():
        if entry.abstract or not entry.path.is_file():
            continue
        judge = FakeJudge(default=_reply)
        scorer = load_scorer(entry.id, judge=judge)
        if scorer.plan.uses_judge:
            ids.append(entry.id)
    return sorted(ids)


def rendered(language: str | None = "en") -> dict[str, list[list[dict[str, str]]]]:
    """Each judge scorer's calls' messages for `ITEM` (see the module docstring)."""
    out: dict[str, list[list[dict[str, str]]]] = {}
    for scorer_id in judge_scorers():
        judge = FakeJudge(default=_reply)
        scorer = load_scorer(scorer_id, judge=judge)
        declared = {name: DECLARED[name] for name in scorer.plan.declared if name in DECLARED}
        extra = {"language": language} if language and "language" in inspect.signature(scorer.run).parameters \
            else {}
        pair = PAIR if any(getattr(stage, "pairwise", None) for stage in scorer.plan.stages) else {}
        scorer.run(**ITEM, **declared, **extra, **pair)
        out[scorer_id] = [[{"role": m["role"], "content": m["content"]} for m in call.messages]
                          for call in judge.calls]
    return out


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(rendered(), ensure_ascii=False, indent=1, sort_keys=True) + "\n",
                        encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
