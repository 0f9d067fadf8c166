"""Label probabilities: how sure the judge was of each enum or boolean field of its answer.

A judge that reports token probabilities (OpenAI-style ``logprobs``: each generated token with
its probability and the top alternatives at that position) lets a stage read, for a field whose
values are a closed set, the probability of each allowed value:

    {"verdict": {"yes": 0.91, "no": 0.02, "unsure": 0.07}}

How it is read, for each top-level property of the answer schema with an ``enum`` of scalars or
``type: boolean`` (`label_fields`):

- **at the field's own token** (case C22): the generated text is walked as JSON, and the value of
  ``"verdict"`` is found where the object's key ``verdict`` is followed by its value; the token
  holding the value's first character is the one read. A word elsewhere in the answer (a reason
  saying "yes") changes nothing; "the first token equal to the label" is never used.
- **alternatives mapped to values**: each alternative at that token (and the token itself) counts
  for the allowed value it spells: what it adds after the text before the value (an opening
  quote, a space) is compared case-insensitively with the values' spellings (strings as written,
  ``true``/``false``, numbers as JSON): a value it completes (its closing quote, or a character
  past a number), else a value that only it begins. An alternative that spells no value, or
  stops at a prefix two values share, counts for none.
- **the value's whole span**: a value is read only where its whole spelling is decided. When the
  generated token stops at a prefix two values share — ``1`` of a 1–10 score written ``1`` +
  ``0``, ``no`` of ``none`` written ``no`` + ``ne`` — the next token decides, its alternatives
  counting for the values they complete after that prefix, weighted by the prefix's probability
  (P(10) = P(``1``) × P(``0`` after ``1``); P(1) = P(``1``) × P(``}`` after ``1``)). The
  generated tokens must themselves spell a value, else the field has no probabilities and the
  stage falls back to its hard label, with the warning that says so: never a probability for a
  value the answer did not write.
- **added up** (case C23): alternatives spelling one value (``"yes"`` and ``" Yes"``) are summed,
  never kept as the last one seen. The values' probabilities are in [0, 1] and sum to at most 1
  (the rest is the mass of tokens that spell none); a total above 1 (a provider repeating an
  alternative) is scaled back to 1.

Probabilities are those of the model before any grammar or sampling: the embedded judge reports
llama.cpp's pre-sampling probabilities, a hosted OpenAI-compatible model its ``top_logprobs``.
Values whose first token is shared (``partially supported`` / ``partially contradicted``) are
told apart at the token that decides between them; an alternative at an earlier token that
stops at a shared prefix (another path than the one generated) counts for none, its
continuations being unknown.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["TOP_ALTERNATIVES", "Token", "LabelProbs", "answer_probs", "label_fields", "mean_probs",
           "probs_from_completion", "tokens_of", "value_key", "with_hard_labels"]

#: Alternatives asked for at each generated token (OpenAI's ``top_logprobs`` allows at most 20).
TOP_ALTERNATIVES = 20

#: A field's probabilities: value key (`value_key`) → probability.
LabelProbs = dict[str, float]

_DECODER = json.JSONDecoder()
_LEADING = " \t\r\n\"':"


@dataclass(frozen=True)
class Token:
    """A generated token: its `text`, its probability `p` in [0, 1], and the `alternatives` the
    provider reported at its position, as (text, probability) pairs (the token itself may be
    among them)."""

    text: str
    p: float
    alternatives: tuple[tuple[str, float], ...] = ()


def value_key(value: Any) -> str:
    """How an allowed value is named in `answer_probs`: a string as is, ``true``/``false``,
    a number as JSON (``1``, ``0.5``)."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def label_fields(schema: Mapping[str, Any]) -> dict[str, tuple[Any, ...]]:
    """The answer's label fields: top-level properties of the object `schema` with an ``enum``
    of strings, numbers or booleans (→ those values) or ``type: boolean`` (→ true, false). A
    schema that is no object, or whose ``properties`` is no mapping, has none."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    found: dict[str, tuple[Any, ...]] = {}
    if not isinstance(props, Mapping):
        return found
    for name, sub in props.items():
        if not isinstance(sub, Mapping):
            continue
        enum = sub.get("enum")
        if isinstance(enum, list) and enum and all(isinstance(v, (str, int, float, bool)) for v in enum):
            found[name] = tuple(enum)
        elif sub.get("type") == "boolean":
            found[name] = (True, False)
    return found


def _spelling(value: Any) -> str:
    """How `value` is written in JSON text, without a string's quotes, case-folded."""
    return (value if isinstance(value, str) else json.dumps(value)).casefold()


def _value_starts(text: str) -> dict[str, tuple[int, bool]]:
    """Top-level keys of the first JSON object in `text` → (offset of the value's first
    character — after the opening quote for a string — and whether the value is a string).
    Keys after a part that does not parse are left out; an empty string value has no start."""
    found: dict[str, tuple[int, bool]] = {}
    i = text.find("{") + 1
    while i > 0:
        i = _skip_space(text, i)
        if not text.startswith('"', i):
            return found
        try:
            key, i = _DECODER.raw_decode(text, i)
        except ValueError:
            return found
        i = _past(text, i, ":")
        if i < 0:
            return found
        i = _skip_space(text, i)
        if i >= len(text):
            return found
        quoted = text[i] == '"'
        start = i + 1 if quoted else i
        if key not in found and not (quoted and text.startswith('"', start)):
            found[key] = (start, quoted)
        try:
            _, i = _DECODER.raw_decode(text, i)
        except ValueError:
            return found
        i = _past(text, i, ",")
    return found


def _skip_space(text: str, i: int) -> int:
    """The first offset from `i` that is not whitespace (or the text's length)."""
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _past(text: str, i: int, char: str) -> int:
    """The offset just past `char` when it comes next after whitespace from `i`, else -1."""
    i = _skip_space(text, i)
    return i + 1 if text.startswith(char, i) else -1


_OPEN = "\x00open"
"""What `_reading` gives for a value's text that two or more allowed values still begin with."""


def _first_rest(alternative: str, before: str) -> str:
    """What an alternative at a value's first token writes of the value: its text past `before`
    (the generated token's text before the value's first character, e.g. an opening quote) when
    it starts so, without leading quotes, spaces and colons."""
    rest = alternative[len(before):] if before and alternative.startswith(before) else alternative
    return rest.lstrip(_LEADING)


def _reading(written: str, quoted: bool, spellings: Mapping[str, str]) -> str | None:
    """The value key the value's text so far (`written`, from its first character) decides:
    the value it completes (a closing quote, or for a number, a character past it), or the only
    value it begins; `_OPEN` while two or more values still begin with it (``1`` of ``1`` and
    ``10``, ``no`` of ``no`` and ``none``: only the tokens after it decide); None when it spells
    no allowed value."""
    rest = written.casefold()
    if quoted:
        core, complete = rest.split('"', 1)[0], '"' in rest
    else:
        match = re.match(r"[^\s,}\]\"]*", rest)
        core = match.group(0) if match else ""
        complete = len(core) < len(rest)
    core = core.rstrip() if complete else core
    if not core:
        return None
    if complete:
        exact = [key for key, spelled in spellings.items() if spelled == core]
        return exact[0] if len(exact) == 1 else None
    prefixed = [key for key, spelled in spellings.items() if spelled.startswith(core)]
    if len(prefixed) == 1:
        return prefixed[0]
    return _OPEN if prefixed else None


def _field_probs(tokens: Sequence[Token], starts: list[int], start: int, quoted: bool,
                 spellings: Mapping[str, str]) -> LabelProbs | None:
    """The probability of each value (key → p) of the field whose value starts at character
    `start`, read over the value's whole span: from the token holding its first character on,
    each token's alternatives that decide a value count for it, weighted by the probability of
    the tokens generated before them in the span (P(``10``) = P(``1``) × P(``0`` after ``1``)),
    until the generated tokens decide the value written. None when they spell no allowed value
    or the answer ends before the value is decided."""
    index = _token_at(starts, start)
    before = tokens[index].text[: start - starts[index]]
    probs = dict.fromkeys(spellings, 0.0)
    written, weight = "", 1.0
    for i in range(index, len(tokens)):
        token = tokens[i]

        def text_of(alternative: str) -> str:
            return _first_rest(alternative, before) if i == index else written + alternative

        chosen = _reading(text_of(token.text), quoted, spellings)
        if chosen is None:
            return None
        candidates = list(token.alternatives)
        if all(text_ != token.text for text_, _ in candidates):
            candidates.append((token.text, token.p))
        for alternative, p in candidates:
            key = _reading(text_of(alternative), quoted, spellings)
            if key is not None and key != _OPEN and math.isfinite(p) and p > 0:
                probs[key] += weight * p
        if chosen != _OPEN:
            return probs
        if not math.isfinite(token.p) or token.p < 0:
            return None
        written, weight = text_of(token.text), weight * min(token.p, 1.0)
    return None


def answer_probs(tokens: Sequence[Token], fields: Mapping[str, Sequence[Any]]) -> dict[str, LabelProbs]:
    """Each of `fields` (name → allowed values, `label_fields`) found in the JSON answer the
    `tokens` spell → the probability of each allowed value, read over the value's own tokens (see
    the module docstring). A field whose value cannot be located, whose generated tokens spell no
    allowed value, or whose value the answer leaves undecided, is left out."""
    text = "".join(t.text for t in tokens)
    starts, offset = [], 0
    for token in tokens:
        starts.append(offset)
        offset += len(token.text)
    found: dict[str, LabelProbs] = {}
    for name, (start, quoted) in _value_starts(text).items():
        values = fields.get(name)
        if values is None or start >= len(text):
            continue
        spellings = {value_key(v): _spelling(v) for v in values}
        probs = _field_probs(tokens, starts, start, quoted, spellings)
        if probs is None:
            continue
        total = sum(probs.values())
        scale = 1.0 / total if total > 1.0 else 1.0
        found[name] = {key: round(min(1.0, p * scale), 6) for key, p in probs.items()}
    return found


def _token_at(starts: list[int], offset: int) -> int:
    """The index of the token whose text holds character `offset` (`starts`: each token's first)."""
    low, high = 0, len(starts) - 1
    while low < high:
        mid = (low + high + 1) // 2
        if starts[mid] <= offset:
            low = mid
        else:
            high = mid - 1
    return low


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _probability(entry: Any) -> float:
    """An OpenAI-style entry's probability: from ``logprob``, or ``prob`` (llama.cpp's
    post-sampling form)."""
    logprob = _get(entry, "logprob")
    if isinstance(logprob, (int, float)) and not isinstance(logprob, bool):
        return math.exp(logprob) if math.isfinite(logprob) else 0.0
    prob = _get(entry, "prob")
    return float(prob) if isinstance(prob, (int, float)) and not isinstance(prob, bool) else 0.0


def tokens_of(completion: Any) -> list[Token] | None:
    """The generated tokens of a chat completion's first choice, with their alternatives
    (``choices[0].logprobs.content``, objects or dicts); None when it carries none."""
    try:
        choice = _get(completion, "choices")[0]
    except (TypeError, IndexError, KeyError):
        return None
    content = _get(_get(choice, "logprobs"), "content")
    if not isinstance(content, Sequence) or isinstance(content, str) or not content:
        return None
    tokens = []
    for entry in content:
        text = _get(entry, "token")
        if not isinstance(text, str):
            return None
        alternatives = tuple((alt_text, _probability(alt)) for alt in (_get(entry, "top_logprobs") or ())
                             if isinstance(alt_text := _get(alt, "token"), str))
        tokens.append(Token(text, _probability(entry), alternatives))
    return tokens


def probs_from_completion(completion: Any, schema: Mapping[str, Any], *,
                          fields: Mapping[str, Sequence[Any]] | None = None) -> dict[str, LabelProbs] | None:
    """`answer_probs` of a chat completion for the answer `schema`; None when the completion has
    no token probabilities or the schema no label field. `fields`: the schema's label fields when
    known (a compiled stage's, `engine.core.answer_schema.AnswerSchema.labels`), else derived here."""
    if fields is None:
        fields = label_fields(schema)
    tokens = tokens_of(completion) if fields else None
    return answer_probs(tokens, fields) if tokens else None


def with_hard_labels(answer: Any, reported: Mapping[str, LabelProbs] | None,
                     fields: Mapping[str, Sequence[Any]]) -> tuple[dict[str, LabelProbs], list[str]]:
    """The probabilities a formula sees for one answer: the `reported` ones, and for each label
    field they lack, the answer's hard label (1 for the value given, 0 for the others). Returns
    them and the names of the fields filled so (in `fields` order)."""
    used: dict[str, LabelProbs] = {}
    filled: list[str] = []
    for name, values in fields.items():
        given = (reported or {}).get(name)
        if given is not None:
            used[name] = dict(given)
            continue
        chosen = answer.get(name) if isinstance(answer, Mapping) else None
        used[name] = {value_key(v): 1.0 if chosen is not None and _same(v, chosen) else 0.0 for v in values}
        filled.append(name)
    return used, filled


def _same(value: Any, chosen: Any) -> bool:
    """Whether the answer's `chosen` value is the allowed `value` (true is not 1)."""
    if isinstance(value, bool) or isinstance(chosen, bool):
        return value is chosen
    return value == chosen


def mean_probs(items: Sequence[Mapping[str, LabelProbs]]) -> dict[str, LabelProbs]:
    """The field-by-field mean of several answers' probabilities (a sampled question), over the
    answers that have the field."""
    sums: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    for probs in items:
        for name, values in probs.items():
            into = sums.setdefault(name, {})
            counts[name] = counts.get(name, 0) + 1
            for key, p in values.items():
                into[key] = into.get(key, 0.0) + p
    return {name: {key: round(p / counts[name], 6) for key, p in values.items()} for name, values in sums.items()}
