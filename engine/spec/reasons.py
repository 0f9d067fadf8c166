"""A spec's reasons compiled: its reason cases → `ReasonPlan`s, and each engine-written reason (a
case's `template`, the not-scorable reason) → a `ReasonText`, its template per language.

An engine-written reason is one Jinja template, read as English, or a mapping of ISO 639-1 codes
(any case) to templates, English (``en``) required: the interpreter renders the template of the
item's language, else the English one. Each template is checked against the names of its place,
as any inline template; problems go to the compiler's document (`engine.spec.compile`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from ..core.language import LanguageError, check_language
from .document import Document
from .expressions import Expression, Template
from .models import Spec
from .plans import ENGLISH, REASON_SCHEMA, PromptStagePlan, ReasonPlan, ReasonText
from .scope import Scope

__all__ = ["reason_plans", "reason_text"]


class Compiler(Protocol):
    """What this module needs of `engine.spec.compile`'s compiler: its document, and expressions,
    inline templates and template files compiled with their problems recorded (None after one)."""

    doc: Document

    def expr(self, source: str, key_path: str, scope: Scope) -> Expression | None: ...

    def inline_template(self, source: str, key_path: str, scope: Scope) -> Template | None: ...

    def template_file(self, name: str, key_path: str, scope: Scope) -> Template | None: ...


def reason_text(value: Any, key_path: str, c: Compiler, scope: Scope) -> ReasonText | None:
    """An engine-written reason at `key_path`: `value` is one template (English) or a mapping of
    ISO 639-1 codes (any case) to templates. None after a problem, each recorded at its key and
    line: a mapping without ``en``, a key that is no language code or names a language twice, a
    template that does not compile or reads a name its place lacks."""
    given = value if isinstance(value, dict) else {ENGLISH: value}
    templates: dict[str, Template] = {}
    seen: set[str] = set()
    for written, source in given.items():
        where = f"{key_path}.{written}" if isinstance(value, dict) else key_path
        try:
            code = check_language(written, "a reason's language", auto=False)
        except LanguageError as exc:
            c.doc.add("invalid-value", where, str(exc), "the keys of a reason given per language are the "
                      "languages its templates are written in: en (required), fr, de, es, zh, ja, …")
            continue
        if code in seen:
            c.doc.add("invalid-value", where, f"the language {code!r} is given twice")
            continue
        seen.add(code)
        compiled = c.inline_template(source, where, scope)
        if compiled is not None:
            templates[code] = compiled
    if ENGLISH not in seen:
        c.doc.add("missing-key", f"{key_path}.{ENGLISH}", "a reason given per language needs its English template "
                  "(en), which every other language falls back to", f"add en: \"…\" beside {', '.join(map(str, given))}",
                  at=key_path)
    if len(templates) != len(given) or ENGLISH not in templates:
        return None
    return ReasonText(templates)


def reason_plans(spec: Spec, c: Compiler, scope: Scope) -> list[ReasonPlan]:
    """The spec's reason cases in order (a template case's text per language, a prompt case's judge
    stage with id ``reason``); a case after one without `when` is reported as never used."""
    scope = scope.with_names(score=None, scale=None)
    judge = spec.judge
    reasons = []
    catch_all: int | None = None  # the first case without `when`: the cases after it are never used
    for i, case in enumerate(spec.reason):
        key = f"reason[{i}]"
        if catch_all is not None:  # the earlier case named as its file writes it
            earlier, there = c.doc.written(f"reason[{catch_all}]"), c.doc.position(f"reason[{catch_all}]").file
            earlier += f" of {Path(there).name}" if there != c.doc.position(key).file else ""
            c.doc.add("unreachable-reason", key, f"this reason case is never used: {earlier} before it has no "
                      "`when`", "give that case a `when`, or place this one before it (in a child spec: `after:`, "
                      "or override the earlier case by its id)")
        elif not case.when:
            catch_all = i
        when = c.expr(case.when, f"{key}.when", scope) if case.when else None
        if case.template is not None:
            text = reason_text(case.template, f"{key}.template", c, scope)
            if text is not None:
                reasons.append(ReasonPlan(when, template=text))
            continue
        template = c.template_file(case.prompt, f"{key}.prompt", scope) if case.prompt else None
        if template is not None:
            prompt = PromptStagePlan("reason", template, REASON_SCHEMA, judge.temperature, judge.max_tokens,
                                     judge.max_reasks, reasoning_effort=judge.reasoning_effort,
                                     reasoning_tokens=judge.reasoning_tokens, family=judge.family)
            reasons.append(ReasonPlan(when, prompt=prompt))
    return reasons
