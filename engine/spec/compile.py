"""Compile a spec: document → `Spec` (pydantic) → `ScorerPlan` (typed plans).

Everything a spec author can get wrong is found here, at load time, and reported together:
YAML problems, unknown keys (with did-you-mean), wrong types, option schemas and defaults,
missing template files, template syntax, names and keys an expression or template reads that
its place does not provide (a judge answer's keys come from the stage's output schema), invalid
output schemas (Draft 2020-12), unknown rule functions and their arguments (a rule stage's result
keys come from the function's declared result schema). A problem in a template file is
reported at the template's own line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Union

from jinja2 import TemplateSyntaxError

from .. import functions
from ..core.errors import Problem, SpecError, did_you_mean
from ..core.run_fields import RUN_FIELDS, RUN_NAMES, run_keys
from ..core.schemas import answer_keys, schema_error
from .answer_fields import BOOL_WORDS, keep_first_of, pages_of, probabilities_of, sampled_probabilities_of
from .catalog import builtin_root, prompt_dirs, resolve_spec
from .document import Document, parse_document
from .expressions import Expression, Template, syntax_hint
from .inherit import load_document, resolve_extends
from .models import FIELD_NAME_PATTERN, JudgeSpec, PromptStage, Spec
from .option_plans import checked_cutoff, checked_examples, declared_field, options_plan
from .pairwise import PAIR_KEYS, RESULT_KEYS, one_pairwise_stage, pairwise_of
from .plans import (CheckPlan, FieldPlan, OptionsPlan, PromptStagePlan, ReasonPlan, RuleStagePlan, ScorePlan,
                    ScorerPlan, StagePlan)
from .reasons import reason_plans, reason_text
from .jury import jury_plan
from .sampling import is_expression, sampling_plan
from .score_plans import implied_score, label_plan, sub_score_formulas, sub_score_plans
from .schema_keywords import misspelled
from .scope import Scope
from .validation import validate_document

RESERVED = {"run", "options", "answer", "score", "scale", "loop", "namespace", "each", "each_index", "answer_probs",
            "examples", "listed", "pair", "scores", "label"}
_RUN_KEYWORDS = {"run_id", "answers"}  # keywords of Scorer.run / render besides the fields


class _Compiler:
    """Compiles the pieces of one spec, recording problems in its document."""

    def __init__(self, doc: Document):
        self.doc = doc
        self.dirs = list(doc.prompt_dirs) or prompt_dirs(doc.path)
        self.templates: dict[str, str] = {}

    def expr(self, source: str, key_path: str, scope: Scope) -> Expression | None:
        try:
            compiled = Expression(source)
        except TemplateSyntaxError as exc:
            self.doc.add("expression-syntax", key_path, f"cannot parse expression {source!r}: {exc.message}",
                         syntax_hint(exc.message))
            return None
        except RecursionError:
            self.doc.add("expression-syntax", key_path, "the expression is nested too deeply to compile",
                         "split it into named expressions under score.let")
            return None
        for found in scope.problems(compiled):
            self.doc.add("undefined-name", key_path, f"expression {source!r} uses {found.what}, which is not "
                         "defined here", found.hint)
        return compiled

    def inline_template(self, source: str, key_path: str, scope: Scope) -> Template | None:
        try:
            compiled = Template(source, f"{self.doc.file}:{key_path}")
        except TemplateSyntaxError as exc:
            self.doc.add("template-syntax", key_path, f"cannot parse template: {exc.message}",
                         syntax_hint(exc.message))
            return None
        except RecursionError:
            self.doc.add("template-syntax", key_path, "the template is nested too deeply to compile")
            return None
        for found in scope.problems(compiled):
            self.doc.add("undefined-name", key_path, f"template uses {found.what}, which is not defined here",
                         found.hint)
        return compiled

    def template_file(self, name: str, key_path: str, scope: Scope) -> Template | None:
        """A template file under prompts/; its problems are reported at its own lines."""
        found = next((d / name for d in self.dirs if (d / name).is_file()), None)
        if found is None:
            searched = ", ".join(f"{d}" if d.is_dir() else f"{d} (no such folder)" for d in self.dirs)
            self.doc.add("missing-template", key_path, f"template file {name!r} not found", f"searched {searched}")
            return None
        try:
            source = found.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.doc.add("missing-template", key_path, f"cannot read template {name!r}: {exc}")
            return None
        self.templates[name] = source
        try:
            compiled = Template(source, str(found), prompt=True)
        except TemplateSyntaxError as exc:
            self.doc.problems.append(Problem("template-syntax", f"cannot parse template: {exc.message}", str(found),
                                             exc.lineno or 1, 1, self.doc.written(key_path),
                                             syntax_hint(exc.message)))
            return None
        except RecursionError:
            self.doc.add("template-syntax", key_path, f"template {name!r} is nested too deeply to compile")
            return None
        for problem in scope.problems(compiled):  # at the template's line; the key path names its user
            self.doc.problems.append(Problem("undefined-name", f"template {name!r} uses {problem.what}, which is "
                                             "not defined here", str(found), problem.line, 1,
                                             self.doc.written(key_path), problem.hint))
        return compiled

    def output_schema(self, raw: dict[str, Any], key_path: str,
                      scope: Scope) -> tuple[dict[str, Any], tuple[tuple[tuple[Any, ...], Expression], ...]]:
        """The schema with a placeholder at each ``{$expr: …}`` (checked as JSON Schema with
        those), and the (pointer, expression) pairs to compute per item."""
        exprs: list[tuple[tuple[Any, ...], Expression]] = []

        def where(pointer: tuple[Any, ...]) -> str:
            return key_path + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in pointer)

        def walk(node: Any, pointer: tuple[Any, ...]) -> Any:
            if isinstance(node, dict):
                if set(node) == {"$expr"}:
                    source = node["$expr"]
                    if not isinstance(source, str):
                        self.doc.add("invalid-schema", where(pointer), "$expr must be an expression, written as a "
                                     "string", 'e.g. {$expr: "preprocess | length"}')
                        return 1
                    compiled = self.expr(source, where(pointer), scope)
                    if compiled is not None:
                        exprs.append((pointer, compiled))
                    return ["$expr"] if pointer[-1:] == ("enum",) else 1  # a placeholder checked at load
                return {k: walk(v, pointer + (k,)) for k, v in node.items()}
            if isinstance(node, list):
                return [walk(v, pointer + (i,)) for i, v in enumerate(node)]
            return node

        checked = walk(raw, ())
        for pointer, name, keyword in misspelled(raw):
            self.doc.add("invalid-schema", where(pointer), f"{name!r} is no JSON Schema keyword, so it would be "
                         "ignored", f"did you mean '{keyword}'?")
        exc = schema_error(checked)
        if exc is not None:
            self.doc.add("invalid-schema", where(tuple(exc.path)), f"not a valid JSON Schema: {exc.message}")
        if checked.get("type") != "object":
            self.doc.add("invalid-schema", key_path, "an output schema must have type: object",
                         "wrap the answer in an object, e.g. {type: object, properties: {...}}")
        return checked, tuple(exprs)


# --- the spec, section by section ----------------------------------------------------------------


def _fields(spec: Spec, c: _Compiler, options: OptionsPlan) -> tuple[dict[str, Union[bool, Expression]],
                                                                      dict[str, FieldPlan]]:
    """Each field's `required` (True, or an expression over options) and the fields the spec
    declares: a name that is not a run field needs a `schema`; a run field takes none."""
    required: dict[str, Union[bool, Expression]] = {}
    declared: dict[str, FieldPlan] = {}
    scope = Scope({"options": frozenset(options.defaults)})
    for name, field_spec in spec.fields.items():
        key = f"fields.{name}"
        if name in RUN_FIELDS:
            if field_spec.schema_ is not None:
                c.doc.add("invalid-value", f"{key}.schema", f"{name!r} is a run field, whose shape is the engine's",
                          "schema: is for a field the scorer declares under a name of its own")
        elif name in RUN_NAMES or name in RESERVED or name in _RUN_KEYWORDS or not re.match(FIELD_NAME_PATTERN, name):
            c.doc.add("reserved-name", key, f"{name!r} cannot name a field of this scorer",
                      "use lower case letters, digits and _, and none of: "
                      + ", ".join(sorted(RUN_NAMES | _RUN_KEYWORDS)))
        elif field_spec.schema_ is None:
            hint = did_you_mean(name, RUN_FIELDS)
            c.doc.add("unknown-field", key, f"{name!r} is not a run field; a field of this scorer's own needs a "
                      "schema", hint if hint.startswith("did you mean") else
                      "add schema: {type: string} (any JSON Schema), or use a run field: " + ", ".join(RUN_FIELDS))
        else:
            plan = declared_field(name, field_spec.schema_, field_spec.description, c.doc, options)
            if plan is not None:
                declared[name] = plan
        value = field_spec.required
        if isinstance(value, str) and value.strip().lower() in BOOL_WORDS:
            c.doc.add("wrong-type", f"{key}.required", f"{value!r} is a string here, not a boolean (YAML 1.2 reads "
                      "only true/false as booleans)", "write true or false, or an expression over options")
        elif isinstance(value, str):
            compiled = c.expr(value, f"{key}.required", scope)
            if compiled is not None:
                required[name] = compiled
        elif value:
            required[name] = True
    return required, declared


def _prompt_stage(stage: PromptStage, key: str, c: _Compiler, scope: Scope, judge: JudgeSpec,
                  when: Expression | None) -> tuple[PromptStagePlan | None, frozenset[str] | None]:
    """A prompt stage's plan (None when a part failed) and the keys of its result."""
    outer = scope  # the stage's scope without `each`: where `probabilities` is evaluated
    for_each = c.expr(stage.for_each, f"{key}.for_each", scope) if stage.for_each else None
    if stage.for_each:
        scope = scope.with_names(each=None, each_index=None)
    if stage.pairwise:
        scope = scope.with_names(pair=PAIR_KEYS)
    template = c.template_file(stage.prompt, f"{key}.prompt", scope.with_names(examples=None))
    schema, schema_exprs = c.output_schema(stage.output_schema, f"{key}.output_schema", scope)
    keys = answer_keys(schema)
    answer_scope = scope.with_names(answer=keys)
    checks = []
    for j, check in enumerate(stage.checks):
        expect = c.expr(check.expect, f"{key}.checks[{j}].expect", answer_scope)
        if expect is not None:
            checks.append(CheckPlan(expect, check.message))
    sampling = sampling_plan(stage, key, schema, judge, c.doc,
                             lambda source, where: c.expr(source, where, scope.with_names(samples=None)))
    jury = jury_plan(stage, key, schema, judge, c.doc,
                     lambda source, where: c.expr(source, where, scope.with_names(samples=None)))
    # the answer is what a reduce expression gives: its keys are unknown
    if is_expression(stage.reduce) or (jury and jury.reduction.method == "expression"):
        keys = None
        answer_scope = scope.with_names(answer=None)
    result = c.expr(stage.result, f"{key}.result", answer_scope) if stage.result else None
    collect = c.expr(stage.collect, f"{key}.collect", outer.with_names(results=None)) if stage.collect else None
    if stage.collect and not stage.for_each:
        c.doc.add("invalid-value", f"{key}.collect", "collect gathers the results of a for_each stage, and this "
                  "stage has no for_each", "remove collect, or ask once per element with for_each")
    shape = RESULT_KEYS if stage.pairwise else keys if stage.result is None and stage.for_each is None else None
    probabilities = probabilities_of(stage, key, c.doc, schema, lambda source, where: c.expr(source, where, outer))
    keep_first = keep_first_of(stage, key, c.doc)
    pages = pages_of(stage, key, c.doc)
    if template is None or probabilities is None:
        return None, shape
    plan = PromptStagePlan(
        id=stage.id, template=template, schema=schema,
        temperature=judge.temperature if stage.temperature is None else stage.temperature,
        max_tokens=stage.max_tokens or judge.max_tokens, max_reasks=judge.max_reasks,
        when=when, for_each=for_each, collect=collect, schema_exprs=schema_exprs, checks=tuple(checks), result=result,
        sampling=sampling, probabilities=probabilities, keep_first=keep_first, pages=pages,
        examples=checked_examples(stage, key, schema_exprs, c.doc), family=judge.family,
        reasoning_effort=stage.reasoning_effort or judge.reasoning_effort,
        reasoning_tokens=stage.reasoning_tokens or judge.reasoning_tokens,
        sampled_probabilities=sampled_probabilities_of(stage, key, c.doc, sampling),
        pairwise=pairwise_of(stage, key, c.doc, schema), jury=jury,
    )
    return plan, shape


def _rule_function(name: str, args: dict[str, str], key: str, c: _Compiler) -> functions.RuleFunction | None:
    """The registered function `name`, its `args` checked against what it declares (unknown
    names, missing required ones); None when there is no such function."""
    try:
        function = functions.lookup(name)
    except KeyError as exc:
        c.doc.add("unknown-function", f"{key}.function", f"no rule function named {name!r}", exc.args[0])
        return None
    if not function.open_args:
        for arg in args:
            if arg not in function.args:
                c.doc.add("unknown-argument", f"{key}.args.{arg}", f"{name} has no argument {arg!r}",
                          did_you_mean(arg, function.args) or "it takes no arguments")
    missing = sorted(function.required - args.keys())
    if missing:
        c.doc.add("missing-argument", f"{key}.args", f"{name} needs the argument{'s' if len(missing) > 1 else ''} "
                  f"{', '.join(map(repr, missing))}", f"see `scorespec list --functions`: {function.signature()}")
    return function


def _stages(spec: Spec, c: _Compiler, scope: Scope) -> tuple[list[StagePlan], Scope]:
    """The stage plans in order, and the scope after them (each stage's id in it)."""
    plans: list[StagePlan] = []
    seen: set[str] = set()
    with_probs: set[str] = set()  # the stages `answer_probs` has, so far (in scope after the first)
    with_listed: set[str] = set()  # the stages `listed` has, so far (in scope after the first)
    one_pairwise_stage(spec.stages, c.doc)
    for i, stage in enumerate(spec.stages):
        key = f"stages[{i}]"
        if stage.id in RESERVED or stage.id in spec.vars:
            c.doc.add("reserved-name", f"{key}.id", f"stage id {stage.id!r} clashes with a reserved or vars name")
        if stage.id in seen:
            c.doc.add("duplicate-stage", f"{key}.id", f"stage id {stage.id!r} is used twice")
        seen.add(stage.id)
        when = c.expr(stage.when, f"{key}.when", scope) if stage.when else None
        shape: frozenset[str] | None = None
        plan: StagePlan | None
        if isinstance(stage, PromptStage):
            plan, shape = _prompt_stage(stage, key, c, scope, spec.judge, when)
        else:
            function = _rule_function(stage.function, stage.args, key, c)
            args = {arg: c.expr(source, f"{key}.args.{arg}", scope) for arg, source in stage.args.items()}
            plan = None
            if function is not None:
                shape = function.result_keys
                if all(a is not None for a in args.values()):
                    plan = RuleStagePlan(stage.id, function, stage.function, args, when)  # type: ignore[arg-type]
        if plan is not None:
            plans.append(plan)
        scope = scope.with_names(**{stage.id: shape})
        if isinstance(stage, PromptStage) and stage.probabilities is not False:
            with_probs.add(stage.id)
            scope = scope.with_names(answer_probs=frozenset(with_probs))
        if isinstance(stage, PromptStage) and (stage.keep_first or stage.pages):
            with_listed.add(stage.id)
            scope = scope.with_names(listed=frozenset(with_listed))
    return plans, scope


def _score(spec: Spec, c: _Compiler, scope: Scope) -> tuple[ScorePlan | None, Scope]:
    score = implied_score(spec)
    assert score is not None
    not_scorable = None
    if score.not_scorable is not None:
        when = c.expr(score.not_scorable.when, "score.not_scorable.when", scope)
        reason = reason_text(score.not_scorable.reason, "score.not_scorable.reason", c, scope)
        if when is not None and reason is not None:
            not_scorable = (when, reason)
    let: list[tuple[str, Expression]] = []
    for name, source in score.let.items():
        if name in RESERVED or name in scope:
            c.doc.add("reserved-name", f"score.let.{name}", f"{name!r} is already defined")
        compiled = c.expr(source, f"score.let.{name}", scope)
        if compiled is not None:
            let.append((name, compiled))
        scope = scope.with_names(**{name: None})
    formula = c.expr(score.formula, "score.formula", scope)
    scale_scope = Scope({"options": None, "run": run_keys(n for n in spec.fields if n not in RUN_FIELDS),
                         **{name: None for name in spec.vars}})
    scale = c.expr(score.scale, "score.scale", scale_scope)
    if formula is None or scale is None:
        return None, scope
    return ScorePlan(formula, scale, tuple(let), not_scorable, score.round), scope


def _plan(spec: Spec, doc: Document) -> ScorerPlan | None:
    """The scorer plan, or None when a problem was recorded in `doc`."""
    c = _Compiler(doc)
    options = options_plan(spec, doc)
    required, declared = _fields(spec, c, options)
    own = [name for name in spec.fields if name not in RUN_FIELDS]  # known to `run` even when broken
    scope = Scope({"run": run_keys(own), "options": frozenset(options.defaults)})
    vars_: list[tuple[str, Expression]] = []
    for name, source in spec.vars.items():
        if name in RESERVED:
            doc.add("reserved-name", f"vars.{name}", f"{name!r} is a reserved name")
        compiled = c.expr(source, f"vars.{name}", scope)
        if compiled is not None:
            vars_.append((name, compiled))
        scope = scope.with_names(**{name: None})
    instructions = c.template_file(spec.judge.instructions, "judge.instructions", scope) \
        if spec.judge.instructions else None
    stages, scope = _stages(spec, c, scope)
    label, scope = label_plan(spec, c, stages, scope)
    formulas, scope = sub_score_formulas(spec, c, scope)
    score, scope = _score(spec, c, scope)
    reasons = reason_plans(spec, c, scope)
    default_scale = checked_cutoff(spec, score, options, doc)
    subs = sub_score_plans(spec, formulas, score, default_scale, doc) if score is not None else ()
    if doc.problems or score is None or not _prepare_answers(stages, reasons, doc):
        return None
    return ScorerPlan(
        id=spec.id, name=spec.name or "", description=spec.description or "", version=spec.version or 0,
        path=doc.path, hash=doc.hash(c.templates), chain=doc.chain, options=options, required=required, vars=tuple(vars_),
        instructions=instructions, model=spec.judge.model, stages=tuple(stages), score=score,
        reasons=tuple(reasons), templates=dict(c.templates), declared=declared, sources=doc.sources,
        direction=spec.direction, cutoff=spec.cutoff, default_scale=default_scale, scores=subs, label=label,
    )


def _prepare_answers(stages: list[StagePlan], reasons: list[ReasonPlan], doc: Document) -> bool:
    """Derive once what every call of a prompt stage needs from its answer schema (validator,
    label fields, JSON text, the schema as sent and its canonical JSON: `AnswerSchema.prepare`);
    False after recording a schema the validator cannot compile."""
    keyed = [(f"stages[{i}].output_schema", s) for i, s in enumerate(stages)]
    keyed += [(f"reason[{i}]", r.prompt) for i, r in enumerate(reasons) if r.prompt is not None]
    for key, stage in keyed:
        if isinstance(stage, PromptStagePlan) and stage.answer is not None:
            try:
                stage.answer.prepare()
            except Exception as exc:  # a schema Draft 2020-12 accepts and jsonschema-rs cannot compile
                doc.add("invalid-schema", key, f"the output schema cannot be compiled: {exc}")
    return not doc.problems


# --- entry points ------------------------------------------------------------------------------


def load_spec(name_or_path: str | Path, *, cwd: Path | None = None) -> ScorerPlan:
    """Load, validate and compile a spec by id (``faithfulness``) or path: its `ScorerPlan`.

    Raises `SpecError` with every problem found (each with code, file, line, column, key path,
    message, hint) and `FileNotFoundError` when no such spec exists."""
    return compile_file(resolve_spec(name_or_path, cwd))


def compile_document(doc: Document) -> ScorerPlan:
    """Compile a document (its `extends:` resolved); see `load_spec`. Raises `SpecError`, with
    code ``abstract-spec`` for a spec that is only a base for others."""
    spec = check_document(doc)
    if spec is not None and spec.abstract and not doc.problems:
        where = doc.position("abstract")
        raise SpecError([Problem("abstract-spec", f"{spec.id} is a base for other specs (abstract: true); it "
                                 "cannot be run", where.file, where.line, where.column, "abstract",
                                 f"write a spec with extends: {spec.id}, or run one that does")])
    complete = spec is not None and not spec.abstract and spec.stages is not None and implied_score(spec) is not None
    plan = _plan(spec, doc) if complete else None
    if doc.problems or plan is None:
        raise SpecError(in_the_users_spec(doc.problems, doc))
    return plan


def in_the_users_spec(problems: list[Problem], doc: Document) -> list[Problem]:
    """`problems` of a spec that extends a built-in, each one found in a built-in's own file (its
    spec or a template) placed in the spec being loaded instead: a built-in is valid alone, so
    what fails there fails because of what this spec changed, and this spec is the file to edit.
    It is placed at the key of this spec that writes the section the problem is in (``stages``,
    ``reason``, …), else for a name not defined there at its ``vars`` when it writes them, else at
    its ``extends:``; the message names the built-in's file, line and key path. Problems of a
    built-in loaded by itself, and of other files, are as found."""
    if len(doc.chain) < 2 or not doc.sources:
        return problems
    root = builtin_root().resolve()
    own_file, own_text = doc.sources[0]
    if _under(Path(own_file), root):
        return problems
    own = parse_document(own_text, Path(own_file))
    written = own.data if isinstance(own.data, dict) else {}
    placed = []
    for problem in problems:
        if not problem.file or not _under(Path(problem.file), root):
            placed.append(problem)
            continue
        section = re.split(r"[.\[]", problem.key_path, maxsplit=1)[0]
        key = section if section and section in written else \
            "vars" if problem.code == "undefined-name" and "vars" in written else "extends"
        at = own.position(key)
        shown = Path(problem.file).resolve().relative_to(root).as_posix()
        origin = f"{shown}:{problem.line}" + (f" ({problem.key_path})" if problem.key_path else "")
        cause = "changes" if key == "extends" else f"{key!r}"
        placed.append(Problem(problem.code, f"{problem.message} — in the built-in {origin}, which fails with this "
                              f"spec's {cause}", at.file, at.line, at.column, key, problem.hint, problem.severity))
    return placed


def _under(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except (ValueError, OSError):
        return False
    return True


def check_document(doc: Document) -> Spec | None:
    """The document validated as a `Spec` (None when it cannot be); problems in `doc.problems`."""
    if doc.data is None and doc.problems:
        return None
    return validate_document(doc)


def compile_file(path: Path) -> ScorerPlan:
    """Compile one spec file; see `load_spec`. Raises `SpecError`."""
    return compile_document(load_document(path))


def compile_text(text: str, path: Path) -> ScorerPlan:
    """Compile spec source `text` as if read from `path` (the id must equal the path's stem)."""
    return compile_document(resolve_extends(parse_document(text, path)))


def validate_specs(paths: list[Path], *, warnings: bool = False) -> dict[Path, list[Problem]]:
    """Compile every spec under `paths` (files or folders): each spec file → its problems
    (empty when it is valid; a problem may be in a template or a parent spec's file). With
    `warnings`, a spec that compiles also gets its warnings (`engine.spec.field_reads`)."""
    from .field_reads import unread_fields

    found: dict[Path, list[Problem]] = {}
    for path in paths:
        for file in sorted(path.glob("*.yaml")) if path.is_dir() else [path]:
            try:
                doc = load_document(file)
                if isinstance(doc.data, dict) and doc.data.get("abstract") is True:  # a base: checked as far as it goes
                    check_document(doc)
                    found[file] = list(doc.problems)
                else:
                    plan = compile_document(doc)  # raises on a problem, warnings or not
                    found[file] = unread_fields(plan, doc) if warnings else []
            except SpecError as exc:
                found[file] = list(exc.problems)
    return found


def validate_directory(paths: list[Path]) -> list[Problem]:
    """Compile every spec under `paths` (files or folders); all problems of all files."""
    return [problem for problems in validate_specs(paths).values() for problem in problems]


__all__ = ["load_spec", "compile_document", "compile_file", "compile_text", "validate_directory", "validate_specs"]
