"""Engine measurements for the suite (`tests/bench/run.py`): spec load + compile, engine
overhead per item, whole-process timings (CLI cold start).

- load + compile: every shipped spec compiled from its files (templates parsed, schemas
  checked, expressions compiled), median of several runs, in a fresh process each time;
- engine overhead per item: `Scorer.arun` with an instant in-process judge (answers
  precomputed, validation included), so the figure is the interpreter's own cost;
- CLI cold start: whole-process wall time of `scorespec --help` and `scorespec validate`.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.bind.load import load_scorer
from engine.judge.call import JudgeAnswer, JudgeCall
from engine.core.result import Usage  # noqa: E402


class InstantJudge:
    """Answers each stage from a table at once; validates like a real judge."""

    model = "bench/instant"

    def __init__(self, answers: dict[str, object]):
        self.answers = answers
        self.calls = 0

    async def ask(self, call: JudgeCall) -> JudgeAnswer:
        self.calls += 1
        answer = self.answers[call.stage]
        data = call.validate(answer(call) if callable(answer) else answer)
        return JudgeAnswer(data, "", 1, Usage(calls=1))


def _verify_claim(call: JudgeCall) -> dict:
    """Faithfulness asks one claim per call: "yes" to the first two claims, "unsure" to the third."""
    claim = call.messages[-1]["content"].split("CLAIM:", 1)[-1]
    return {"verdict": "unsure" if "330 m" in claim else "yes", "reason": "r"}


# Canned judge answers per LLM spec, by stage id (a new LLM spec needs an entry here); an answer
# may be a function of the call (a for_each stage asks once per element).
FAITHFULNESS = {
    "preprocess": {"claims": ["The tower is in Paris.", "It opened in 1889.", "It is 330 m tall."]},
    "analyze": _verify_claim,
    "reason": {"reason": "Two of three claims are supported."},
}
UNITS = ["Paris", "capital of France", "on the Seine"]
ANSWER_SIMILARITY = {
    "preprocess": {"outputUnits": UNITS, "groundTruthUnits": UNITS},
    "analyze": {
        "matches": [{"groundTruthUnit": u, "outputUnit": u, "match": "exact", "reason": "same"} for u in UNITS],
        "contradictions": [],
        "extraUnits": [],
    },
    "reason": {"reason": "Identical."},
}
ANSWERS = {"faithfulness": FAITHFULNESS, "answer_similarity": ANSWER_SIMILARITY}
VERDICT = {"verdict": "yes", "reason": "r"}
ALIGNMENT = {"intent": 0.9, "requirements": 0.8, "completeness": 0.7, "appropriateness": 0.6, "unmet": [],
             "reason": "r"}
IMPACT = {"impact": "minimal", "change": "Wording only."}
NOISE_SENSITIVITY = {"analyze": {
    "dimensions": {name: IMPACT for name in ("accuracy", "completeness", "relevance", "consistency", "hallucination")},
    "majorIssues": [], "robustness": 0.9, "assessment": "Barely changed."}}
ANSWERS.update({
    "criteria": {"analyze": VERDICT},
    "faithfulness_quick": {"analyze": {"verdict": "yes"}},
    "multi_turn_judge": {"analyze": VERDICT},
    "rubric": {"analyze": VERDICT},
    "noise_sensitivity": NOISE_SENSITIVITY,
    "prompt_alignment": {"user_alignment": ALIGNMENT, "system_alignment": ALIGNMENT},
    "tool_call_accuracy": {"analyze": VERDICT, "missing": {"verdict": "no", "tools": [], "reason": "r"}},
    "trajectory_accuracy": {"analyze": {"necessary": "yes", "in_order": "yes", "reason": "r"},
                            "missing": {"missing": [], "reason": "r"}},
})
# Item fields beyond the common item, for the specs that read them (declared fields, a system
# prompt, tool calls); a spec gets those of its own id.
CALLS = [{"name": "look_up", "arguments": {"q": "tower"}, "result": "Paris"},
         {"name": "look_up", "arguments": {"q": "tower height"}, "result": "330 m"}]
FIELDS = {
    "criteria": {"criterion": "The answer says where the tower is."},
    "multi_turn_judge": {"criterion": "The answer says where the tower is."},
    "rubric": {"rubric": "Says where the tower is.\nSays when it opened.\nStays under 50 words."},
    "noise_sensitivity": {"baseline_response": "The tower is in Paris and opened in 1889."},
    "prompt_alignment": {"system": "You answer questions about landmarks in two sentences."},
    "tool_call_accuracy": {"available_tools": [{"name": "look_up", "description": "Looks a fact up."}],
                           "tool_calls": CALLS},
    "trajectory_accuracy": {"tool_calls": CALLS},
    # the tool-call rule scorers (issue 22)
    "called_tool": {"tool_calls": CALLS, "tool": "look_up"},
    "did_not_call": {"tool_calls": CALLS, "tool": "delete"},
    "tool_order": {"tool_calls": CALLS, "order": ["look_up"]},
    "max_tool_calls": {"tool_calls": CALLS},
    "used_no_tools": {"tool_calls": CALLS},
    "no_tool_errors": {"tool_calls": CALLS},
    "tool_call_accuracy_rule": {"tool_calls": CALLS},  # with OPTIONS below
    "trajectory": {"tool_calls": CALLS, "expected_trajectory": ["look_up"]},
}

# Options a spec needs to score the bench item.
OPTIONS = {"tool_call_accuracy_rule": {"expectedTool": "look_up"}}

# The statement and context scorers (issue 21): the bench item's two statements, one passage.
TWO_STATEMENTS = {"statements": ["The tower is in Paris.", "The tower opened in 1889."]}
YES, NO = {"verdict": "yes", "reason": "r"}, {"verdict": "no", "reason": "r"}
ANSWERS.update({
    "answer_relevancy": {"preprocess": TWO_STATEMENTS, "analyze": YES},
    "hallucination": {"preprocess": TWO_STATEMENTS, "analyze": YES},
    "bias": {"preprocess": {"statements": ["The tower is the finest sight in Paris."]}, "analyze": NO},
    "toxicity": {"preprocess": TWO_STATEMENTS, "analyze": NO},
    "context_recall": {"preprocess": TWO_STATEMENTS, "analyze": YES},
    "summarization": {"preprocess": TWO_STATEMENTS, "analyze": YES,
                      "questions": {"questions": ["Is the tower in Paris?", "Did the tower open in 1889?"]},
                      "coverage": YES},
    "context_precision": {"analyze": YES},
    "context_relevance": {"analyze": {"relevance": "high", "reason": "r"}, "usage": YES, "missing": {"missing": []}},
    # one call of four ratings; one call of a label; a pairwise judge asked in both orders
    "response_quality": {"rate": {"correctness": 5, "completeness": 4, "clarity": 4, "concision": 3, "reason": "r"}},
    "classify": {"classify": {"label": "relevant", "reason": "r"}},
    **{spec: {"judge": {"winner": "A", "reason": "r"}} for spec in (
        "pairwise_preference", "pairwise_reference", "pairwise_faithfulness")},
})
PAIR = {"output_a": "The tower is in Paris. It opened in 1889.", "output_b": "The tower is in Rome."}
FIELDS.update({spec: PAIR for spec in ("pairwise_preference", "pairwise_reference", "pairwise_faithfulness")})


def per_item_us(scorer_id: str, answers: dict | None, n: int) -> tuple[float, int]:
    """(µs per item over `n` items after a warm-up, judge calls per item) for a shipped spec;
    `answers` None for a rule-only spec."""
    judge = InstantJudge(answers or {})
    options = OPTIONS.get(scorer_id, {})
    scorer = load_scorer(scorer_id, judge=judge, options=options) if answers else load_scorer(scorer_id, options=options)
    item = dict(output="The tower is in Paris. It opened in 1889.", input="Tell me about the tower.",
                ground_truth="The tower is in Paris, the capital of France.",
                context=["The Eiffel Tower, in Paris, opened in 1889."], **FIELDS.get(scorer_id, {}))

    async def loop() -> None:
        for _ in range(n):
            await scorer.arun(**item)

    first = scorer.run(**item)
    assert first.error is None and first.score is not None, first.error
    if answers:
        asyncio.run(loop())  # warm-up (caches)
        judge.calls = 0
        start = time.perf_counter()
        asyncio.run(loop())
    else:
        for _ in range(min(n, 200)):
            scorer.run(**item)
        start = time.perf_counter()
        for _ in range(n):
            scorer.run(**item)
    elapsed = time.perf_counter() - start
    return elapsed / n * 1e6, judge.calls // n if answers else 0


#: Child processes run as on a user's machine: bytecode cached (pip compiles installed packages;
#: an editable checkout's modules are cached on first import), even where the calling
#: environment sets PYTHONDONTWRITEBYTECODE, which would recompile every module on every start.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def whole_process(args: list[str], runs: int) -> dict[str, float]:
    """Run a command `runs` times from this checkout, after one untimed warm-up run (which
    writes the bytecode cache); the medians of its wall time (s) and peak RSS (MiB, from the
    child's own rusage via os.wait4, as ``/usr/bin/time -v`` reports it). Raises if the command
    fails."""
    subprocess.run(args, cwd=ROOT, env=CHILD_ENV, capture_output=True)
    walls, peaks = [], []
    for _ in range(runs):
        with tempfile.TemporaryFile() as err:
            start = time.perf_counter()
            proc = subprocess.Popen(args, cwd=ROOT, env=CHILD_ENV, stdout=subprocess.DEVNULL, stderr=err)
            _pid, status, usage = os.wait4(proc.pid, 0)
            walls.append(time.perf_counter() - start)
            if os.waitstatus_to_exitcode(status) != 0:
                err.seek(0)
                raise RuntimeError(f"{' '.join(args)} failed: {err.read().decode(errors='replace')[-500:]}")
        peaks.append(usage.ru_maxrss / 1024)
    return {"s": statistics.median(walls), "peak_mib": statistics.median(peaks)}


def cli(*args: str) -> list[str]:
    """This checkout's command line (the `scorespec` console script runs the same `main`)."""
    return [sys.executable, "-m", "engine", *args]


def load_compile_s(runs: int) -> tuple[float, int]:
    """Median seconds to import the engine and compile every shipped spec, in a fresh process
    each run; and the number of specs."""
    subprocess.run([sys.executable, "-c", LOAD_SNIPPET], check=True, capture_output=True, cwd=ROOT, env=CHILD_ENV)
    loads = [json.loads(subprocess.run([sys.executable, "-c", LOAD_SNIPPET], check=True, capture_output=True,
                                       text=True, cwd=ROOT, env=CHILD_ENV).stdout) for _ in range(runs)]
    return statistics.median(x["s"] for x in loads), loads[0]["n"]


LOAD_SNIPPET = """
import time, json
t = time.perf_counter()
from engine.spec.catalog import builtin_specs_dir, is_abstract
from engine.spec.compile import compile_file
files = [f for f in sorted(builtin_specs_dir().glob('*.yaml')) if not is_abstract(f)]
for f in files:
    compile_file(f)
print(json.dumps({"n": len(files), "s": time.perf_counter() - t}))
"""
