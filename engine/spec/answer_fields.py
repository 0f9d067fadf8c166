"""What a prompt stage says about its answer's fields, checked at load against its output schema.

- ``probabilities``: the label probabilities of the answer's enum and boolean fields are asked
  for (`engine.core.answer_probs`); the answer needs such a field at its top level.
- ``keep_first``: lists of the answer whose first ``maxItems`` items are kept when the judge
  lists more, instead of asking again (`engine.judge.contract.AnswerContract.kept`); each must be a
  top-level property of type array with ``maxItems``.
- ``pages``: lists of the answer asked for page by page while a page is full
  (`engine.interpret.pages`); each must be such a property too, and not also kept first.
- ``sampled_probabilities``: with a judge that reports no label probabilities, a question is asked
  this many times and the shares of its answers' labels are the probabilities; it needs
  ``probabilities`` and an answer that votes (`engine.spec.sampling`), and is not combined with
  ``samples``.

Problems are recorded in the spec's `Document` at the key that wrote them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.answer_probs import label_fields
from ..core.errors import did_you_mean
from .document import Document
from .expressions import Expression
from .models import PromptStage

__all__ = ["BOOL_WORDS", "DEFAULT_SAMPLED_PROBABILITIES", "keep_first_of", "pages_of", "probabilities_of",
           "sampled_probabilities_of"]

BOOL_WORDS = {"yes", "no", "on", "off", "y", "n"}
"""Strings YAML 1.1 read as booleans; specs are read as YAML 1.2, which keeps them strings, so a key
that wants a boolean refuses them with a hint."""


def probabilities_of(stage: PromptStage, key: str, doc: Document, schema: dict[str, Any],
                     compile_expr: Callable[[str, str], Expression | None]) -> bool | Expression | None:
    """A prompt stage's `probabilities` (False, True or an expression compiled by `compile_expr`
    over the names in scope); None after a problem: an expression that does not compile, or an
    answer with no label field."""
    value = stage.probabilities
    if value is False:
        return False
    if isinstance(value, str) and value.strip().lower() in BOOL_WORDS:
        doc.add("wrong-type", f"{key}.probabilities", f"{value!r} is a string here, not a boolean (YAML 1.2 reads "
                "only true/false as booleans)", "write true or false, or an expression such as "
                "options.scoring == 'probability'")
        return None
    if not label_fields(schema):
        doc.add("invalid-value", f"{key}.probabilities", "label probabilities are read from the answer's enum "
                "and boolean fields, and this stage's output schema has none at its top level",
                "give the answer a field such as verdict: {enum: [\"yes\", \"no\"]}")
        return None
    if value is True:
        return True
    return compile_expr(value, f"{key}.probabilities")


DEFAULT_SAMPLED_PROBABILITIES = 5
"""How many answers ``sampled_probabilities: true`` asks for in all: shares in steps of 0.2."""


def sampled_probabilities_of(stage: PromptStage, key: str, doc: Document, sampling: Any) -> int | None:
    """How many answers a question of the stage asks for when the judge reports no label
    probabilities (None: it counts the hard labels). `sampling`: the stage's `SamplingPlan` (its
    answers must reduce by majority). Problems (no ``probabilities``, nothing to vote on,
    ``samples`` too) go to `doc`."""
    value = stage.sampled_probabilities
    voting = sampling is not None and sampling.method == "majority"
    if value is False:
        return None
    where = f"{key}.sampled_probabilities"
    if stage.probabilities is False:
        doc.add("invalid-value", where, "sampled_probabilities stands in for label probabilities the judge does not "
                "report, and this stage asks for none", "add probabilities: true (or an expression), or remove "
                "sampled_probabilities")
    elif not voting:
        doc.add("invalid-value", where, "the samples' labels are counted by majority, and this stage's answers do "
                "not reduce by majority", "remove sampled_probabilities, or reduce: majority")
    elif (stage.samples or 1) > 1:
        doc.add("invalid-value", where, f"the stage is sampled already (samples: {stage.samples}): its label "
                "probabilities are the shares of those samples", "remove sampled_probabilities")
    else:
        return DEFAULT_SAMPLED_PROBABILITIES if value is True else int(value)
    return None


def keep_first_of(stage: PromptStage, key: str, doc: Document) -> tuple[str, ...]:
    """A prompt stage's `keep_first` fields, each checked against its output schema as written: a
    top-level property of type array with ``maxItems`` (a number, or ``{$expr}`` computed per
    item); a field named twice counts once. Problems are recorded at ``keep_first[i]``."""
    return _list_fields(stage, stage.keep_first, f"{key}.keep_first", doc,
                        "keep_first keeps the first items of a list the judge writes")


def pages_of(stage: PromptStage, key: str, doc: Document) -> tuple[str, ...]:
    """A prompt stage's `pages` fields, checked as `keep_first_of` checks its fields, and none also
    in `keep_first` (a list either has its first items kept or is asked for whole). Problems are
    recorded at ``pages[i]``."""
    fields = _list_fields(stage, stage.pages, f"{key}.pages", doc,
                          "pages asks for the rest of a list the judge writes, page by page")
    for i, name in enumerate(stage.pages):
        if name in stage.keep_first and name in fields:
            doc.add("invalid-value", f"{key}.pages[{i}]", f"{name!r} is in keep_first too: a list either has its "
                    "first items kept or is asked for whole", "name it in pages or in keep_first, not both")
    return tuple(name for name in fields if name not in stage.keep_first)


def _list_fields(stage: PromptStage, names: list[str], where: str, doc: Document, why: str) -> tuple[str, ...]:
    """`names` that are top-level properties of type array with ``maxItems`` in the stage's output
    schema as written, each once; a problem for each other one at ``WHERE[i]``."""
    properties = stage.output_schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    kept: list[str] = []
    for i, name in enumerate(names):
        at = f"{where}[{i}]"
        node = properties.get(name)
        if not isinstance(node, dict):
            doc.add("invalid-value", at, f"{name!r} is not a property of the stage's output schema",
                    did_you_mean(name, properties) or "name a list field of the answer")
        elif node.get("type") != "array":
            doc.add("invalid-value", at, f"{name!r} is not a list: its schema has no type: array", why)
        elif "maxItems" not in node:
            doc.add("invalid-value", at, f"{name!r} has no maxItems, so there is no bound to keep the first "
                    "items of" if where.endswith("keep_first") else f"{name!r} has no maxItems, so there is no "
                    "page size", "give it maxItems: the longest list whose answer fits the stage's max_tokens")
        elif name not in kept:
            kept.append(name)
    return tuple(kept)
