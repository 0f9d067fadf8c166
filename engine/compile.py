"""Load, validate and compile a spec: YAML file → `Spec` (pydantic) → `CompiledSpec`.

Everything a spec author can get wrong is found here, at load time, and reported together:
YAML problems, unknown keys (with did-you-mean), wrong types, option schemas and defaults,
missing template files, template syntax, variables a template or expression uses that its
place does not provide, invalid output schemas (Draft 2020-12), unknown rule functions.
"""

from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from jinja2 import TemplateSyntaxError
from pydantic import BaseModel, ValidationError

from . import functions
from .catalog import prompt_dirs, resolve_spec
from .errors import Problem, ProblemList, SpecError, did_you_mean
from .expressions import Expression, Template
from .schemas import OptionValidator, schema_error
from .spec import PromptStage, RuleStage, Spec
from .yamlload import load_yaml

RESERVED = {"run", "options", "answer", "score", "scale", "loop", "namespace", "each", "each_index"}
RUN_KEYS = ("input", "output", "ground_truth", "context", "given")
REASON_SCHEMA = {
    "type": "object",
    "required": ["reason"],
    "properties": {"reason": {"type": "string", "minLength": 1, "maxLength": 800}},
    "additionalProperties": False,
}


@dataclass
class CompiledStage:
    id: str
    kind: str  # "prompt" | "rule"
    when: Expression | None = None
    # prompt stages
    template: Template | None = None
    schema: dict[str, Any] | None = None
    schema_exprs: list[tuple[tuple[Any, ...], Expression]] = field(default_factory=list)
    checks: list[tuple[Expression, str]] = field(default_factory=list)
    result: Expression | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    for_each: Expression | None = None
    # rule stages
    function: Any = None
    function_name: str = ""
    args: dict[str, Expression] = field(default_factory=dict)


@dataclass
class CompiledReason:
    when: Expression | None
    template: Template | None
    prompt: Template | None


@dataclass
class CompiledSpec:
    """A validated, compiled spec: what the interpreter runs. `spec` is the validated model,
    `path` its file, `hash` a sha256 of the spec and every template it uses."""

    spec: Spec
    path: Path
    hash: str
    option_defaults: dict[str, Any]
    option_validators: dict[str, OptionValidator]
    required: dict[str, Union[bool, Expression]]
    vars: list[tuple[str, Expression]]
    instructions: Template | None
    stages: list[CompiledStage]
    not_scorable: tuple[Expression, Template] | None
    let: list[tuple[str, Expression]]
    formula: Expression
    scale: Expression
    reasons: list[CompiledReason]
    templates: dict[str, str]

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def uses_judge(self) -> bool:
        return any(s.kind == "prompt" for s in self.stages) or any(r.prompt for r in self.reasons)


# --- pydantic error mapping ----------------------------------------------------------------


def _unwrap(tp: Any) -> list[Any]:
    """The concrete types behind Annotated/Optional/Union."""
    origin = get_origin(tp)
    if origin is Union or str(origin) in {"typing.Union", "<class 'types.UnionType'>"}:
        return [t for arg in get_args(tp) for t in _unwrap(arg)]
    if str(origin) == "typing.Annotated" or hasattr(tp, "__metadata__"):
        return _unwrap(get_args(tp)[0])
    return [tp]


def _keys_at(loc: tuple[Any, ...]) -> list[str]:
    """Allowed keys of the model at `loc` (for did-you-mean on unknown keys)."""
    types: list[Any] = [Spec]
    for i, part in enumerate(loc):
        if _is_stage_tag(loc, i):  # the discriminator's tag, not the stage's `prompt` field
            types = [PromptStage] if part == "prompt" else [RuleStage]
            continue
        nxt: list[Any] = []
        for tp in types:
            for t in _unwrap(tp):
                if isinstance(t, type) and issubclass(t, BaseModel):
                    if isinstance(part, str) and part in t.model_fields:
                        nxt.append(t.model_fields[part].annotation)
                elif get_origin(t) in (list, dict):
                    args = get_args(t)
                    nxt.append(args[-1] if args else Any)
        types = nxt or types
    keys: set[str] = set()
    for tp in types:
        for t in _unwrap(tp):
            if isinstance(t, type) and issubclass(t, BaseModel):
                keys.update(t.model_fields)
    return sorted(keys)


def _path(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _is_stage_tag(loc: tuple[Any, ...], i: int) -> bool:
    """Whether loc[i] is the stage union's tag (``stages[0].prompt``) that pydantic inserts."""
    return loc[i] in ("prompt", "rule") and i > 0 and isinstance(loc[i - 1], int) and "stages" in loc[: i - 1]


def _strip_tags(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(part for i, part in enumerate(loc) if not _is_stage_tag(loc, i))


def _pydantic_problems(exc: ValidationError, plist: ProblemList, bool_like: set[str]) -> None:
    for err in exc.errors():
        loc = _strip_tags(tuple(err["loc"]))
        path = _path(loc)
        kind = err["type"]
        if kind == "extra_forbidden":
            hint = did_you_mean(str(loc[-1]), _keys_at(tuple(err["loc"][:-1])))
            plist.add("unknown-key", path, "unknown key", hint)
        elif kind == "missing":
            plist.add("missing-key", path, "required key is missing", at=_path(loc[:-1]))
        elif kind == "literal_error" and loc == ("format",):
            plist.add("format-version", path, f"unsupported format {err.get('input')!r}", "this engine reads format: 1")
        elif kind.endswith("_type") or kind.endswith("_parsing") or kind in ("model_type", "dict_type", "list_type"):
            hint = "quote it, or use true/false for a boolean" if path in bool_like else ""
            got = type(err.get("input")).__name__
            plist.add("wrong-type", path, f"{err['msg'].lower()} (got {got})", hint)
        else:
            plist.add("invalid-value", path, err["msg"])


# --- compiling -------------------------------------------------------------------------------


class _Compiler:
    def __init__(self, path: Path, plist: ProblemList):
        self.path = path
        self.plist = plist
        self.dirs = prompt_dirs(path)
        self.templates: dict[str, str] = {}
        # keys of the mappings whose shape is known at load: `run` and `options`
        self.known_keys: dict[str, set[str]] = {"run": set(RUN_KEYS), "options": set()}

    def expr(self, source: str, key_path: str, names: set[str]) -> Expression | None:
        try:
            compiled = Expression(source)
        except TemplateSyntaxError as exc:
            self.plist.add("expression-syntax", key_path, f"cannot parse expression {source!r}: {exc.message}",
                           _syntax_hint(exc.message))
            return None
        except RecursionError:
            self.plist.add("expression-syntax", key_path, "the expression is nested too deeply to compile",
                           "split it into named expressions under score.let")
            return None
        self._check_names(compiled, names, key_path, f"expression {source!r}")
        return compiled

    def inline_template(self, source: str, key_path: str, names: set[str]) -> Template | None:
        try:
            compiled = Template(source, f"{self.path}:{key_path}")
        except TemplateSyntaxError as exc:
            self.plist.add("template-syntax", key_path, f"cannot parse template: {exc.message}",
                           _syntax_hint(exc.message))
            return None
        except RecursionError:
            self.plist.add("template-syntax", key_path, "the template is nested too deeply to compile")
            return None
        self._check_names(compiled, names, key_path, "template")
        return compiled

    def template_file(self, name: str, key_path: str, names: set[str]) -> Template | None:
        found = next((d / name for d in self.dirs if (d / name).is_file()), None)
        if found is None:
            searched = ", ".join(str(d) for d in self.dirs)
            self.plist.add("missing-template", key_path, f"template file {name!r} not found", f"searched {searched}")
            return None
        try:
            source = found.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.plist.add("missing-template", key_path, f"cannot read template {name!r}: {exc}")
            return None
        self.templates[name] = source
        try:
            compiled = Template(source, str(found), prompt=True)
        except TemplateSyntaxError as exc:
            self.plist.problems.append(
                Problem("template-syntax", f"cannot parse template: {exc.message}", str(found), exc.lineno or 1, 1,
                        "", "; ".join(filter(None, (_syntax_hint(exc.message), f"used by {key_path}"))))
            )
            return None
        except RecursionError:
            self.plist.add("template-syntax", key_path, f"template {name!r} is nested too deeply to compile")
            return None
        self._check_names(compiled, names, key_path, f"template {name!r}")
        return compiled

    def _check_names(self, compiled: Expression | Template, names: set[str], key_path: str, what: str) -> None:
        for name in sorted(compiled.names - names):
            self.plist.add(
                "undefined-name", key_path, f"{what} uses {name!r}, which is not defined here",
                did_you_mean(name, names),
            )
        for base, key in sorted(compiled.attrs):
            known = self.known_keys.get(base)
            if base in names and known is not None and key not in known:
                hint = did_you_mean(key, known)
                self.plist.add(
                    "undefined-name", key_path, f"{what} uses '{base}.{key}', which is not defined here",
                    hint.replace("'", f"'{base}.", 1) if hint.startswith("did you mean") else hint,
                )

    def output_schema(self, raw: dict[str, Any], key_path: str, names: set[str]) -> tuple[dict, list]:
        exprs: list[tuple[tuple[Any, ...], Expression]] = []

        def walk(node: Any, pointer: tuple[Any, ...]) -> Any:
            if isinstance(node, dict):
                if set(node) == {"$expr"}:
                    sub = key_path + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in pointer)
                    if not isinstance(node["$expr"], str):
                        self.plist.add("invalid-schema", sub, "$expr must be an expression, written as a string",
                                       'e.g. {$expr: "preprocess | length"}')
                    compiled = self.expr(node["$expr"], sub, names) if isinstance(node["$expr"], str) else None
                    if compiled is not None:
                        exprs.append((pointer, compiled))
                    return 1  # placeholder for checking the schema at load
                return {k: walk(v, pointer + (k,)) for k, v in node.items()}
            if isinstance(node, list):
                return [walk(v, pointer + (i,)) for i, v in enumerate(node)]
            return node

        checked = walk(raw, ())
        exc = schema_error(checked)
        if exc is not None:
            where = key_path + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.path)
            self.plist.add("invalid-schema", where, f"not a valid JSON Schema: {exc.message}")
        if checked.get("type") != "object":
            self.plist.add("invalid-schema", key_path, "an output schema must have type: object",
                           "wrap the answer in an object, e.g. {type: object, properties: {...}}")
        return checked, exprs


def _syntax_hint(message: str | None) -> str:
    """Did-you-mean for Jinja's "No filter named 'lenght'." / "No test named …" errors."""
    match = re.search(r"No (filter|test) named '([^']+)'", message or "")
    if not match:
        return ""
    from .expressions import environment

    env = environment()
    return did_you_mean(match.group(2), env.filters if match.group(1) == "filter" else env.tests)


def _hash(spec_text: str, templates: dict[str, str]) -> str:
    digest = hashlib.sha256(spec_text.encode("utf-8"))
    for name in sorted(templates):
        digest.update(b"\0" + name.encode() + b"\0" + templates[name].encode("utf-8"))
    return digest.hexdigest()


def load_spec(name_or_path: str | Path, *, cwd: Path | None = None) -> CompiledSpec:
    """Load, validate and compile a spec by id (``faithfulness``) or path.

    Returns a `CompiledSpec` (its `.spec` is the validated `engine.spec.Spec`). Raises
    `SpecError` with every problem found (each with code, file, line, column, key path,
    message, hint) and `FileNotFoundError` when no such spec exists.
    """
    path = resolve_spec(name_or_path, cwd)
    return compile_file(path)


def compile_file(path: Path) -> CompiledSpec:
    """Compile one spec file; see `load_spec`. Raises `SpecError`."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError([Problem("encoding", f"not UTF-8 text: {exc.reason} at byte {exc.start}", file, 1, 1)]) from None
    except OSError as exc:
        raise SpecError([Problem("unreadable", f"cannot read: {exc.strerror or exc}", file)]) from None
    return compile_text(text, path)


def compile_text(text: str, path: Path) -> CompiledSpec:
    """Compile spec source `text` as if read from `path` (the id must equal the path's stem)."""
    file = str(path)
    loaded = load_yaml(text, file)
    plist = ProblemList(file, loaded.positions, list(loaded.problems))
    if loaded.problems and loaded.data is None:
        raise SpecError(plist.problems)
    data = loaded.data
    if not isinstance(data, dict):
        plist.add("not-a-mapping", "", "a spec is a YAML mapping of keys (format, id, name, stages, …)")
        raise SpecError(plist.problems)
    if "id" in data and isinstance(data["id"], str) and data["id"] != path.stem:
        plist.add("id-mismatch", "id", f"id {data['id']!r} differs from the file name",
                  f"a spec's id is its file's stem: rename the file or set id: {path.stem}")
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        _pydantic_problems(exc, plist, loaded.bool_like)
        spec = _without_unknown_keys(data, exc)
        if spec is None:
            raise SpecError(plist.problems) from None
    compiled = _compile(spec, path, plist)
    if plist.problems:
        raise SpecError(plist.problems)
    assert compiled is not None
    compiled.hash = _hash(text, compiled.templates)
    return compiled


def _without_unknown_keys(data: dict[str, Any], exc: ValidationError) -> Spec | None:
    """When unknown keys are a spec's only structural problems, the spec without them, so
    compiling can go on and report the file's other problems in the same run; else None."""
    errors = exc.errors()
    if any(e["type"] != "extra_forbidden" for e in errors):
        return None
    pruned = copy.deepcopy(data)
    for error in errors:
        node: Any = pruned
        loc = _strip_tags(tuple(error["loc"]))
        for part in loc[:-1]:
            node = node[part]
        node.pop(loc[-1], None)
    try:
        return Spec.model_validate(pruned)
    except ValidationError:
        return None


def _compile(spec: Spec, path: Path, plist: ProblemList) -> CompiledSpec | None:
    c = _Compiler(path, plist)

    # options: a JSON Schema each, with a default that satisfies it
    defaults: dict[str, Any] = {}
    validators: dict[str, Any] = {}
    for name, schema in spec.options.items():
        key = f"options.{name}"
        exc = schema_error(schema)
        if exc is not None:
            plist.add("option-schema", key, f"not a valid JSON Schema: {exc.message}")
            continue
        if "default" not in schema:
            plist.add("option-default", key, "an option needs a default", "add default: …")
            continue
        validator = OptionValidator(schema)
        error = validator.error(schema["default"])
        if error is not None:
            hint = "quote it, or use true/false for a boolean" if f"{key}.default" in plist.positions and str(
                schema["default"]).lower() in {"yes", "no", "on", "off"} else ""
            plist.add("option-default", f"{key}.default", f"the default does not satisfy the option's schema: {error}", hint)
        defaults[name] = schema["default"]
        validators[name] = validator
    if "scale" not in spec.options and spec.score.scale == "options.scale":
        defaults["scale"] = 1
        validators["scale"] = OptionValidator({"type": "number", "exclusiveMinimum": 0})
    c.known_keys["options"] = set(spec.options) | set(defaults)

    names = {"run", "options"}
    required: dict[str, Union[bool, Expression]] = {}
    for fname, fspec in spec.fields.items():
        if isinstance(fspec.required, str) and fspec.required.strip().lower() in {"yes", "no", "on", "off", "y", "n"}:
            plist.add("wrong-type", f"fields.{fname}.required",
                      f"{fspec.required!r} is a string here, not a boolean (YAML 1.2 reads only true/false as booleans)",
                      "write true or false, or an expression over options")
        elif isinstance(fspec.required, str):
            compiled_req = c.expr(fspec.required, f"fields.{fname}.required", {"options"})
            if compiled_req is not None:
                required[fname] = compiled_req
        elif fspec.required:
            required[fname] = True

    vars_: list[tuple[str, Expression]] = []
    for name, source in spec.vars.items():
        if name in RESERVED:
            plist.add("reserved-name", f"vars.{name}", f"{name!r} is a reserved name")
        compiled_var = c.expr(source, f"vars.{name}", set(names))
        if compiled_var is not None:
            vars_.append((name, compiled_var))
        names.add(name)

    instructions = (
        c.template_file(spec.judge.instructions, "judge.instructions", set(names)) if spec.judge.instructions else None
    )

    stages: list[CompiledStage] = []
    for i, stage in enumerate(spec.stages):
        key = f"stages[{i}]"
        if stage.id in RESERVED or stage.id in spec.vars:
            plist.add("reserved-name", f"{key}.id", f"stage id {stage.id!r} clashes with a reserved or vars name")
        if any(s.id == stage.id for s in stages):
            plist.add("duplicate-stage", f"{key}.id", f"stage id {stage.id!r} is used twice")
        when = c.expr(stage.when, f"{key}.when", names) if stage.when else None
        if isinstance(stage, PromptStage):
            for_each = c.expr(stage.for_each, f"{key}.for_each", names) if stage.for_each else None
            stage_names = set(names) | ({"each", "each_index"} if stage.for_each else set())
            template = c.template_file(stage.prompt, f"{key}.prompt", set(stage_names))
            schema, schema_exprs = c.output_schema(stage.output_schema, f"{key}.output_schema", set(stage_names))
            answer_names = set(stage_names) | {"answer"}
            checks = []
            for j, check in enumerate(stage.checks):
                compiled_check = c.expr(check.expect, f"{key}.checks[{j}].expect", answer_names)
                if compiled_check is not None:
                    checks.append((compiled_check, check.message))
            result = c.expr(stage.result, f"{key}.result", answer_names) if stage.result else None
            stages.append(CompiledStage(
                stage.id, "prompt", when, template, schema, schema_exprs, checks, result,
                stage.temperature, stage.max_tokens, for_each,
            ))
        else:
            try:
                fn = functions.lookup(stage.function)
            except KeyError as exc:
                plist.add("unknown-function", f"{key}.function", f"no rule function named {stage.function!r}", exc.args[0])
                fn = None
            args = {}
            for arg, source in stage.args.items():
                compiled_arg = c.expr(source, f"{key}.args.{arg}", names)
                if compiled_arg is not None:
                    args[arg] = compiled_arg
            stages.append(CompiledStage(stage.id, "rule", when, function=fn, function_name=stage.function, args=args))
        names.add(stage.id)

    score = spec.score
    not_scorable = None
    if score.not_scorable is not None:
        ns_when = c.expr(score.not_scorable.when, "score.not_scorable.when", names)
        ns_reason = c.inline_template(score.not_scorable.reason, "score.not_scorable.reason", names)
        if ns_when is not None and ns_reason is not None:
            not_scorable = (ns_when, ns_reason)
    let: list[tuple[str, Expression]] = []
    for name, source in score.let.items():
        if name in RESERVED or name in names:
            plist.add("reserved-name", f"score.let.{name}", f"{name!r} is already defined")
        compiled_let = c.expr(source, f"score.let.{name}", set(names))
        if compiled_let is not None:
            let.append((name, compiled_let))
        names.add(name)
    formula = c.expr(score.formula, "score.formula", names)
    scale = c.expr(score.scale, "score.scale", {"options"} | set(spec.vars) | {"run"})

    reason_names = names | {"score", "scale"}
    reasons = []
    for i, case in enumerate(spec.reason):
        key = f"reason[{i}]"
        when = c.expr(case.when, f"{key}.when", reason_names) if case.when else None
        template = c.inline_template(case.template, f"{key}.template", reason_names) if case.template is not None else None
        prompt = c.template_file(case.prompt, f"{key}.prompt", reason_names) if case.prompt is not None else None
        reasons.append(CompiledReason(when, template, prompt))

    if plist.problems or formula is None or scale is None:
        return None
    return CompiledSpec(
        spec=spec, path=path, hash="", option_defaults=defaults, option_validators=validators,
        required=required, vars=vars_, instructions=instructions, stages=stages,
        not_scorable=not_scorable, let=let, formula=formula, scale=scale, reasons=reasons,
        templates=c.templates,
    )


def resolve_schema(stage: CompiledStage, namespace: dict[str, Any]) -> dict[str, Any]:
    """The stage's output schema with its `$expr` values computed for one item."""
    assert stage.schema is not None
    if not stage.schema_exprs:
        return stage.schema
    schema = dict(stage.schema)
    for pointer, expression in stage.schema_exprs:
        node: Any = schema
        for part in pointer[:-1]:  # copy only the containers on the way to each value
            child = node[part]
            node[part] = child = dict(child) if isinstance(child, dict) else list(child)
            node = child
        node[pointer[-1]] = expression(namespace)
    return schema


def validate_directory(paths: list[Path]) -> list[Problem]:
    """Compile every spec under `paths` (files or folders); all problems of all files."""
    problems: list[Problem] = []
    for path in paths:
        files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
        for file in files:
            try:
                compile_file(file)
            except SpecError as exc:
                problems.extend(exc.problems)
    return problems


__all__ = ["CompiledSpec", "load_spec", "compile_file", "compile_text", "resolve_schema", "validate_directory"]
