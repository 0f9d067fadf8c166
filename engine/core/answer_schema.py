"""An answer schema compiled once: what every judge call of a prompt stage needs from its schema.

A prompt stage's plan (`engine.spec.plans.PromptStagePlan.answer`) holds one `AnswerSchema`,
built and filled when the spec is compiled: the compiled validator, the label fields, the schema's
JSON text as the provider sends it, and the schema as sent titled with the stage id together with
its canonical JSON (the judge-call cache key's schema section, `engine.judge.cache.base`). Every
call of the stage carries that same object (`engine.judge.contract.AnswerContract.compiled`), so
judges read it rather than derive it again per call.

A schema computed per item (a ``{$expr: …}`` value in it) cannot be compiled ahead: the
interpreter builds an `AnswerSchema` for each such call; its parts are then derived on first use
by that call (a validator, ~20 µs) and shared by the call's re-asks and cache look-ups.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .answer_probs import label_fields

__all__ = ["AnswerSchema", "SentSchema", "canonical_json"]

# one encoder for every key and schema (json.dumps would build one per call)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any) -> bytes:
    """`value` as canonical JSON bytes: keys sorted, no whitespace, non-ASCII text as UTF-8
    (lone surrogates kept through ``surrogatepass``). Raises ValueError for NaN or infinity,
    non-text dict keys, or values JSON cannot hold (sets, bytes, objects)."""
    try:
        text = _CANONICAL.encode(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(str(exc)) from None
    return text.encode("utf-8", "surrogatepass")


class SentSchema(dict):
    """An answer schema as a provider judge sends it (a dict, titled with its stage id), which
    computes its canonical JSON (`canonical_json`) once: the judge-call cache key's schema section
    (`engine.judge.cache.base.key_material`). Never mutate it."""

    __slots__ = ("_canonical",)

    def canonical_json(self) -> bytes:
        """The schema's canonical JSON bytes, computed on first use. Raises ValueError when the
        schema is not JSON data."""
        try:
            return self._canonical
        except AttributeError:
            self._canonical: bytes = canonical_json(self)
            return self._canonical


class AnswerSchema:
    """One answer schema (a JSON Schema, type object) and what is derived from it, each part
    computed once per object (`prepare` computes them all, as the compiler does).

    schema: the schema (never mutated). title: the stage id it was compiled for (None: not yet
    known, e.g. a contract made by hand). Parts: `validator` (jsonschema-rs, Draft 2020-12),
    `labels` (`engine.core.answer_probs.label_fields`), `json_text` (the schema's JSON in its own key
    order, as the provider sends it), and per title `as_sent` (the schema titled with the stage id
    unless it has a title, with its canonical JSON: `SentSchema`).
    """

    __slots__ = ("_json_text", "_labels", "_sent", "_validator", "schema", "title")

    def __init__(self, schema: Mapping[str, Any], title: str | None = None):
        self.schema = schema
        self.title = title
        self._validator: Any = None
        self._labels: dict[str, tuple[Any, ...]] | None = None
        self._json_text: str | None = None
        self._sent: dict[str, Mapping[str, Any]] = {}  # title → the schema as sent

    def prepare(self) -> AnswerSchema:
        """Compute every part now (the validator, labels, JSON text and, when `title` is set, the
        schema as sent and its canonical JSON); returns self. Raises ValueError for a schema that
        is not JSON data, and what jsonschema-rs raises for one it cannot compile."""
        _ = self.validator, self.labels, self.json_text
        if self.title is not None:
            sent = self.as_sent(self.title)
            if isinstance(sent, SentSchema):
                sent.canonical_json()
        return self

    @property
    def validator(self) -> Any:
        """The compiled validator (jsonschema-rs: about 1 µs per verdict list, against ~190 µs for
        the pure-Python validator). The schema was checked against Draft 2020-12 at load."""
        if self._validator is None:
            import jsonschema_rs

            self._validator = jsonschema_rs.Draft202012Validator(self.schema)
        return self._validator

    @property
    def labels(self) -> dict[str, tuple[Any, ...]]:
        """The answer's label fields: name → allowed values (`label_fields`); never mutate it."""
        if self._labels is None:
            self._labels = label_fields(self.schema)
        return self._labels

    @property
    def json_text(self) -> str:
        """The schema as JSON text in its own key order (the order of the answer's properties the
        provider is shown and a grammar-constrained judge must write)."""
        if self._json_text is None:
            self._json_text = json.dumps(self.schema)
        return self._json_text

    def as_sent(self, title: str) -> Mapping[str, Any]:
        """The schema a provider judge sends for a call of stage `title`: titled with it unless
        the schema has a title (instructor names the tool, and the description it derives, after
        the title); a `SentSchema`, which keeps its canonical JSON, when the schema is a dict. The
        same object for every call of one stage (never mutate it)."""
        sent = self._sent.get(title)
        if sent is None:
            schema = self.schema
            if isinstance(schema, dict):
                schema = SentSchema(schema if "title" in schema else {**schema, "title": title})
            sent = self._sent.setdefault(title, schema)
        return sent

    def __repr__(self) -> str:
        return f"AnswerSchema({self.schema!r}, title={self.title!r})"
