"""The scorer catalogue pages: an index of the shipped scorers and one page per scorer, from each
spec merged over the specs it extends.

`scorer_page(doc)` and `scorer_index(docs, bases)` are pure: they read `ScorerDoc`s (a merged
`engine.spec.models.Spec` with what the merge and the compiler know) and return Markdown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ref_markdown import anchor, code, json_value, table

#: What an example item gives for each run field (a declared field gets a value its schema accepts).
EXAMPLE_VALUES: Mapping[str, Any] = {
    "input": "What is the capital of France?",
    "output": "Paris is the capital of France.",
    "ground_truth": "The capital of France is Paris.",
    "context": ["Paris is the capital and largest city of France."],
    "system": "You are a helpful assistant. Answer in one sentence.",
    "tool_calls": [{"name": "search", "arguments": {"query": "capital of France"}, "result": "Paris"}],
    # fields shipped scorers declare
    "tool": "search",
    "order": ["search"],
    "criterion": "The answer names the capital and nothing else.",
    "rubric": ["Names Paris as the capital.", "Answers in one sentence."],
    "available_tools": [{"name": "search", "description": "Search the web."}],
    "expected_trajectory": ["search"],
    "baseline_response": "The capital of France is Paris.",
    "original_query": "What is the capital of France?",
    "noise_type": "typos",
}

#: Said on every page whose notes compare the scorer with "the reference".
REFERENCE_NOTE = ('!!! note "The reference"\n    "The reference" is Mastra\'s scorers (`@mastra/evals` 1.10.2), the '
                  "implementation these scorers were checked against, case by case and side by side "
                  "([Performance](../../benchmarks/performance.md)).\n")


def example_item(spec: Any) -> dict[str, Any]:
    """An item that gives every field `spec` declares: the run fields from `EXAMPLE_VALUES`, a
    declared field a value its JSON Schema accepts (`engine.testing.schema_answers.answer_for`)."""
    from engine.testing.schema_answers import answer_for

    return {name: EXAMPLE_VALUES[name] if name in EXAMPLE_VALUES else answer_for(f.schema_ or {})
            for name, f in spec.fields.items()}


def _use_it(spec: Any) -> list[str]:
    item = json.dumps(example_item(spec), ensure_ascii=False)
    return ["## Use it\n",
            "Each line of a JSONL dataset is an item; one that gives every field this scorer reads:\n",
            f"```json\n{item}\n```\n",
            f"Score a dataset of such lines with `scorespec eval {spec.id} --data items.jsonl --out "
            f"{spec.id}.jsonl`, one item with `scorespec run {spec.id}` and a flag per field, or in Python "
            f"`load_scorer(\"{spec.id}\").run(**item)` ([Evaluating a dataset](../../guides/datasets.md), "
            "[Python](../../guides/python.md)).\n"]


@dataclass(frozen=True)
class ScorerDoc:
    """What a scorer's page shows. spec: the merged `Spec`. chain: its id, then the ids it extends,
    nearest first. judged: whether it asks the judge. written_by: key path (``options.scale``) →
    the id of the spec that wrote it. outputs: stage id → the keys of its result, in words."""

    spec: Any
    chain: tuple[str, ...] = ()
    judged: bool = False
    written_by: Mapping[str, str] = field(default_factory=dict)
    outputs: Mapping[str, str] = field(default_factory=dict)


def direction_words(direction: str) -> str:
    return "higher is better" if direction == "higher_is_better" else "lower is better"


def schema_type(schema: Mapping[str, Any]) -> str:
    """An option's JSON Schema type in words: ``number``, ``"hard" | "probability"``, ``list of string``."""
    if "enum" in schema:
        return " | ".join(code(json.dumps(v)) for v in schema["enum"])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"list of {schema_type(schema['items'])}"
    return str(kind)


def _link(spec_id: str, pages: set[str], base_sections: set[str]) -> str:
    if spec_id in pages:
        return f"[{spec_id}]({spec_id}.md)"
    if spec_id in base_sections:
        return f"[{spec_id}](index.md#{anchor(spec_id)})"
    return code(spec_id)


def _fields_table(spec: Any) -> str:
    rows = []
    for name, f in spec.fields.items():
        required = f.required if isinstance(f.required, str) else ("yes" if f.required else "no")
        rows.append([code(name), code(required) if isinstance(f.required, str) else required, f.description])
    return table(["field", "required", "description"], rows)


def _options_table(doc: ScorerDoc) -> str:
    rows = [[code(name), schema_type(schema), json_value(schema["default"]) if "default" in schema else "—",
             doc.written_by.get(f"options.{name}", doc.spec.id), schema.get("description", "")]
            for name, schema in doc.spec.options.items()]
    return table(["option", "type", "default", "from", "description"], rows)


def _judge_table(judge: Any) -> str:
    rows = [[code(key), json_value(getattr(judge, key))] for key in type(judge).model_fields]
    return table(["key", "value"], rows)


def _stage_row(stage: Any, outputs: Mapping[str, str]) -> list[str]:
    if hasattr(stage, "function"):
        args = ", ".join(f"{k}={v}" for k, v in stage.args.items())
        kind, what = "rule", code(f"{stage.function}({args})")
    else:
        kind, what = "prompt", code(stage.prompt)
        extra = [f"for each of {code(stage.for_each)}" if stage.for_each else "",
                 f"{stage.samples} samples" if stage.samples else ""]
        what += "".join(f"; {e}" for e in extra if e)
    keys = outputs.get(stage.id) or ", ".join(code(k) for k in (getattr(stage, "output_schema", None) or {})
                                                .get("properties", {}))
    return [code(stage.id), kind, what, keys, code(stage.when) if stage.when else "always"]


def _score_block(score: Any) -> str:
    lines = []
    if score.not_scorable is not None:
        lines.append(f"not scorable when: {score.not_scorable.when}")
    lines += [f"{name} = {expr}" for name, expr in score.let.items()]
    lines.append(f"score = {score.formula}")
    lines.append(f"scale = {score.scale}" + (f"; rounded to {score.round} places" if score.round is not None else ""))
    return "```text\n" + "\n".join(lines) + "\n```\n"


def _sub_scores(spec: Any) -> list[str]:
    """The sections of a spec's named sub-scores and its label result (none without them)."""
    out = []
    if spec.scores:
        rows = [[code(name), code(sub.formula), (sub.direction or spec.direction).replace("_", " "),
                 "—" if sub.cutoff is None else f"{sub.cutoff:g}", sub.description] for name, sub in spec.scores.items()]
        out += ["## Sub-scores\n", "Each in [0, scale], in the result's `scores` map; `--threshold "
                f"{spec.id}.NAME=V` gates on one.\n", table(["name", "formula", "better", "cut-off", "what"], rows)]
    if spec.label is not None:
        values = spec.label.values if isinstance(spec.label.values, str) else ", ".join(spec.label.values or [])
        out += ["## Label\n", f"The result's `labelValue` is {code(f'{spec.label.stage}.{spec.label.field}')}"
                + (f", one of {code(values)}" if values else "") + ".\n"]
    return out


def _english(template: Any) -> tuple[str, list[str]]:
    """A reason template's English text and the other languages it is given in (a mapping of
    ISO 639-1 codes to templates, or one template: English)."""
    if isinstance(template, dict):
        return template.get("en", ""), [code for code in template if code.lower() != "en"]
    return template, []


def _reasons(cases: Sequence[Any]) -> str:
    out = []
    for i, case in enumerate(cases):
        label = code(case.id) if case.id else f"case {i + 1}"
        when = f"when {code(case.when)}" if case.when else "otherwise"
        if case.prompt:
            out.append(f"- {label}, {when}: the judge writes it from {code(case.prompt)}.")
        else:
            english, others = _english(case.template)
            also = f" (also given in {', '.join(others)})" if others else ""
            out.append(f"- {label}, {when}: written from the template below{also}.\n\n"
                       + "    ```jinja\n" + "\n".join("    " + ln for ln in english.strip().splitlines())
                       + "\n    ```")
    return "\n\n".join(out) + "\n"


def scorer_page(doc: ScorerDoc, pages: set[str] = frozenset(), base_sections: set[str] = frozenset()) -> str:
    """A scorer's reference page (Markdown). `pages`: ids with a page; `base_sections`: abstract
    ids with a section on the index page (for the links of what it extends)."""
    spec = doc.spec
    kind = "asks the judge" if doc.judged else "rule-only (no judge)"
    out = [f"# {spec.name}\n", f"`{spec.id}` · {direction_words(spec.direction)} · {kind} · version "
           f"{spec.version}\n", f"{spec.description}\n"]
    if spec.notes:
        out.append(spec.notes.strip() + "\n")
        if "the reference" in spec.notes.lower():
            out.append(REFERENCE_NOTE)
    if len(doc.chain) > 1:
        out.append("**Extends**: " + " → ".join(_link(i, set(pages), set(base_sections))
                                                for i in doc.chain[1:])
                   + f". `scorespec render {spec.id} --resolved` shows the merged spec, each value with the "
                   "file and line that wrote it.\n")
    out += _use_it(spec)
    out += ["## Inputs\n", _fields_table(spec) or "No fields.\n", "## Options\n", _options_table(doc) or "None.\n"]
    if doc.judged:
        out += ["## Judge defaults\n", _judge_table(spec.judge)]
    out += ["## Stages\n", table(["stage", "kind", "prompt or function", "result keys", "runs"],
                                 [_stage_row(s, doc.outputs) for s in spec.stages or ()])]
    if spec.score is not None:
        out += ["## Score\n", f"Scores lie in [0, scale]; {direction_words(spec.direction)}.\n",
                _score_block(spec.score)]
    out += _sub_scores(spec)
    if spec.reason:
        out += ["## Reason\n", "The first case whose condition holds explains the score.\n", _reasons(spec.reason)]
    return "\n".join(out)


def scorer_index(docs: Sequence[ScorerDoc], bases: Sequence[Any]) -> str:
    """The catalogue's index page: a table of `docs` (shipped, not abstract), then a section per
    abstract base spec in `bases` that has notes."""
    rows = [[f"[{d.spec.id}]({d.spec.id}.md)", d.spec.name, d.spec.description,
             "judged" if d.judged else "rule-only", direction_words(d.spec.direction)] for d in docs]
    out = ["# Scorers\n",
           "Every scorer shipped with scorespec, generated from its spec (merged over the specs it "
           "extends). `scorespec list` prints the same catalogue; a spec of your own with the same id "
           "in `scorer_specs/` shadows a built-in ([Extending a built-in](../../guides/extending.md)).\n",
           table(["scorer", "name", "what it measures", "judge", "direction"], rows)]
    noted = [b for b in bases if b.notes]
    if noted:
        out.append("## Base specs\n\nAbstract specs the scorers above extend; never run themselves.\n")
        for base in noted:
            out += [f"### {base.id}\n", f"{base.description}\n" if base.description else "", base.notes.strip() + "\n"]
    return "\n".join(part for part in out if part)
