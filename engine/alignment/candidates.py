"""Candidate child specs as text: each extends the parent and changes one thing.

- `with_instructions`: the stage's prompt with new text in place of the body of its
  ``{% block instructions %}`` (everything else, the part that shows the judge the item included,
  kept verbatim). The new text is written inside ``{% raw %}`` when it holds template syntax or
  would form it at a seam with the block's tags (a text ending in ``{`` before ``{% endblock %}``),
  so a proposal is only ever literal text, never template code. `pasted_item` finds a proposal
  that copies a train item's text (it would teach the judge that item, not a rule).
- `worked_examples`: examples from train items for the stage's ``examples`` key: balanced by label,
  the judge's largest disagreements first, each with the answer the label calls for.
- `child_spec`: the YAML of a child: ``extends``, the stage's ``prompt`` and ``examples``,
  ``cutoff``, a ``scoring`` option default, under a comment block.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["INSTRUCTIONS_BLOCK", "PASTE_MINIMUM", "answer_values", "child_spec", "instructions_of", "pasted_item",
           "with_instructions", "worked_examples"]

INSTRUCTIONS_BLOCK = re.compile(r"(\{%-?\s*block\s+instructions\s*-?%\})(.*?)(\{%-?\s*endblock(?:\s+instructions)?\s*-?%\})",
                                re.S)
_SYNTAX = re.compile(r"\{[{%#]|[}%#]\}|\{\Z")  # a trailing "{" meets the "{%" of the endblock tag
_POSITIVE = ("yes", "true", "pass", "supported", "faithful", "met", "correct", "relevant")
_NEGATIVE = ("no", "false", "fail", "unsupported", "hallucinated", "not_met", "incorrect", "irrelevant")
_TEXT_LIMIT = 2000
PASTE_MINIMUM = 20
"""An item's text shorter than this (in characters, spaces collapsed) may appear in general
instructions by chance ("yes", a name); from this length on, its presence is a paste."""


def instructions_of(source: str) -> str | None:
    """The instruction text of a prompt (the body of its ``{% block instructions %}``, stripped),
    or None when the prompt has no such block."""
    found = INSTRUCTIONS_BLOCK.search(source)
    return found.group(2).strip() if found else None


def with_instructions(source: str, text: str) -> str:
    """`source` with `text` as its instructions block's body (kept on the lines the body took).
    Raises `ValueError` when the prompt has no instructions block or the text is empty."""
    found = INSTRUCTIONS_BLOCK.search(source)
    if found is None:
        raise ValueError("the prompt has no {% block instructions %}")
    text = text.strip().replace("\r\n", "\n")
    if not text:
        raise ValueError("the proposed instructions are empty")
    if _SYNTAX.search(text):
        text = "{% raw %}" + text.replace("{% endraw %}", "") + "{% endraw %}"
    body = found.group(2)
    lead = body[: len(body) - len(body.lstrip())]
    tail = body[len(body.rstrip()):]
    return source[: found.start(2)] + lead + text + tail + source[found.end(2):]


def _collapsed(text: str) -> str:
    return " ".join(text.split()).casefold()


def pasted_item(text: str, items: Sequence[Mapping[str, Any]]) -> str | None:
    """Which train item's text `text` (a proposal) holds verbatim — spaces collapsed, case
    folded, a text of `PASTE_MINIMUM` characters at least: its input, output, ground truth or a
    context passage — as ``"item ID's FIELD"``; None when it holds none."""
    proposal = _collapsed(text)
    for item in items:
        for name in ("input", "output", "ground_truth", "context"):
            value = item.get(name)
            for piece in value if isinstance(value, list) else [value]:
                if isinstance(piece, str) and len(found := _collapsed(piece)) >= PASTE_MINIMUM and found in proposal:
                    return f"item {item.get('id')}'s {name.replace('_', ' ')}"
    return None


def answer_values(schema: Mapping[str, Any]) -> tuple[str, Any, Any] | None:
    """(field, value for a positive label, value for a negative one) of an answer schema's first
    label field: a boolean (true / false) or an enum with a yes-like and a no-like value; None
    when the answer has none."""
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, Mapping):
            continue
        if prop.get("type") == "boolean":
            return name, True, False
        values = [v for v in prop.get("enum") or () if isinstance(v, str)]
        pos = next((v for v in values if v.strip().lower() in _POSITIVE), None)
        neg = next((v for v in values if v.strip().lower() in _NEGATIVE), None)
        if pos is not None and neg is not None:
            return name, pos, neg
    return None


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + " …"


def example_of(item: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """An item as a worked example: its input, output and context passages (texts, each cut at
    2,000 characters) and the `answer`."""
    example: dict[str, Any] = {}
    if item.get("input"):
        example["input"] = _text(item["input"])
    example["output"] = _text(item.get("output") or "")
    context = item.get("context")
    if context:
        example["context"] = [_text(p) for p in (context if isinstance(context, list) else [context])]
    example["answer"] = dict(answer)
    return example


def worked_examples(rows: Sequence[tuple[Mapping[str, Any], bool, float]], count: int,
                    values: tuple[str, Any, Any]) -> list[dict[str, Any]]:
    """Up to `count` examples from `rows` (item, positive?, gap between score and label in [0, 1]):
    half from each class (the rest from the other when one runs short), largest gap first; ties
    keep the rows' order."""
    field, yes, no = values
    ranked = {flag: sorted((r for r in rows if r[1] is flag), key=lambda r: -r[2]) for flag in (True, False)}
    half = (count + 1) // 2
    chosen = ranked[True][:half] + ranked[False][:count - half]
    if len(chosen) < count:
        extra = ranked[True][half:] + ranked[False][count - half:]
        chosen += extra[:count - len(chosen)]
    return [example_of(item, {field: yes if positive else no}) for item, positive, _ in chosen]


def _yaml(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def child_spec(spec_id: str, parent_ref: str, name: str, comment: Sequence[str], *, stage: str | None = None,
               prompt: str | None = None, examples: Sequence[Mapping[str, Any]] | None = None,
               cutoff: float | None = None, scoring: str | None = None) -> str:
    """A child spec's YAML (see the module docstring); values are written as JSON, which YAML
    reads as written."""
    lines = [f"# {line}".rstrip() for line in comment]
    lines += ["format: 1", f"id: {spec_id}", f"extends: {_yaml(parent_ref)}", f"name: {_yaml(name)}", "version: 1"]
    if cutoff is not None:
        lines.append(f"cutoff: {round(float(cutoff), 6)!r}")
    if scoring is not None:
        lines += ["options:", "  scoring:", f"    default: {_yaml(scoring)}"]
    if stage is not None and (prompt is not None or examples):
        lines += ["stages:", f"  - id: {stage}"]
        if prompt is not None:
            lines.append(f"    prompt: {_yaml(prompt)}")
        if examples:
            lines.append("    examples:")
            lines += [f"      - {_yaml(example)}" for example in examples]
    return "\n".join(lines) + "\n"
