"""Spec safety: arbitrary YAML never crashes the loader with anything but a SpecError; sandbox
escapes and size bombs written in a spec are refused at load, naming the file and line; the
same built from data fail the item (never a score); alias bombs stay small and quick."""

from __future__ import annotations

import json
import textwrap
import tracemalloc
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jinja2 import TemplateSyntaxError

from engine.core.errors import SpecError
from engine.interpret.scorer import Scorer
from engine.spec.compile import compile_file, compile_text
from engine.spec.expression_limits import MAX_SIZE
from engine.spec.expressions import Expression, Template
from engine.spec.yamlload import MAX_NODES

# Sandbox escapes and blow-ups, as a spec author could write them. Each is refused at load.
ESCAPES = {
    "class-walk": ("().__class__.__base__", "access to '__base__' is not allowed"),
    "subclasses": ("''.__class__.__mro__[1].__subclasses__()", "access to '__subclasses__' is not allowed"),
    "cycler-globals": ("cycler.__init__.__globals__", "access to '__globals__' is not allowed"),
    "template-reference": ("self._TemplateReference__context", "access to '_TemplateReference__context'"),
    "mro": ("run.output.mro()", "access to 'mro' is not allowed"),
    "built-name": ("run['__cla' ~ 'ss__']", "access to '__class__' is not allowed"),
    "attr-filter": ("run | attr('__class__')", "access to '__class__' is not allowed"),
    "attr-filter-built": ("run | attr('_' ~ '_class__')", "access to '__class__' is not allowed"),
    "format-string": ("'{0.__class__}'.format(run)", "'.format' is not allowed"),
    "format-map": ("'{a.__class__}'.format_map(run)", "'.format_map' is not allowed"),
    "format-width": ("'{0:{1}}'.format(1, 10**9)", "'.format' is not allowed"),
    "range": ("range(10**9) | list | length", "range(1000000000) is larger than the limit of 100,000"),
    "repeat": ("('a' * 10**9) | length", "'*' would build 1,000,000,000 characters"),
    "power": ("((10**1000)**1000)**1000", "'**' would build an integer of about"),
    "center": ("'x' | center(10**9)", "|center(1000000000) would build"),
    "batch": ("[1] | batch(10**9, 0) | list", "|batch(1000000000) would build"),
    "tojson-indent": ("[1] | tojson(indent=10**9)", "|tojson(1000000000) would build"),
}


@pytest.mark.parametrize("source, message", ESCAPES.values(), ids=ESCAPES.keys())
def test_escape_refused_at_load_in_expressions_and_templates(source, message):
    with pytest.raises(TemplateSyntaxError, match=_re(message)):
        Expression(source)
    with pytest.raises(TemplateSyntaxError, match=_re(message)) as info:
        Template("line one\n{{ " + source + " }}", "t.j2")
    assert info.value.lineno == 2


def _re(text: str) -> str:
    import re

    return re.escape(text)


SPEC = """\
format: 1
id: hostile
name: Hostile
description: d
version: 1
vars:
  probe: "{probe}"
stages:
  - id: analyze
    function: textual_difference
    args: {{reference: "run.ground_truth", candidate: "run.output"}}
score:
  formula: "analyze.ratio"
reason:
  - template: "{reason}"
"""


@pytest.mark.parametrize("name", ["class-walk", "cycler-globals", "template-reference", "attr-filter",
                                  "format-string", "range", "repeat", "power"])
def test_escape_in_a_spec_is_a_spec_error_naming_file_line_and_key(tmp_path, name):
    source, message = ESCAPES[name]
    path = tmp_path / "hostile.yaml"
    path.write_text(SPEC.format(probe=source.replace('"', "'"), reason="ok"), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        compile_file(path)
    (problem,) = info.value.problems
    assert (problem.code, problem.file, problem.line, problem.key_path) == (
        "expression-syntax", str(path), 7, "vars.probe")
    assert message.replace("'", "") in problem.message.replace("'", "")
    assert problem.render().startswith(f"{path}:7:")


def test_escape_in_a_reason_template_is_a_spec_error(tmp_path):
    path = tmp_path / "hostile.yaml"
    path.write_text(SPEC.format(probe="1", reason="{{ cycler.__init__.__globals__.os }}"), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        compile_file(path)
    (problem,) = info.value.problems
    assert (problem.code, problem.line, problem.key_path) == ("template-syntax", 15, "reason[0].template")
    assert "'__globals__' is not allowed" in problem.message


def test_escape_in_a_prompt_file_names_the_template_file_and_line(write_spec):
    path = write_spec("hostile", """
        format: 1
        id: hostile
        name: H
        description: d
        version: 1
        stages:
          - id: analyze
            prompt: h/ask.j2
            output_schema: {type: object}
        score:
          formula: "1"
    """, {"h/ask.j2": "Judge this:\n<<<\n{{ run.output }}\n>>>\n{{ run | attr('__class__') }}\n"})
    with pytest.raises(SpecError) as info:
        compile_file(path)
    (problem,) = info.value.problems
    assert problem.code == "template-syntax"
    assert problem.file.endswith("prompts/h/ask.j2") and problem.line == 5
    assert problem.key_path == "stages[0].prompt"


@pytest.mark.parametrize("name", ["lipsum", "cycler", "joiner"])
def test_risky_jinja_globals_are_not_defined(tmp_path, name):
    path = tmp_path / "hostile.yaml"
    path.write_text(SPEC.format(probe=f"{name}(1000) | string | length", reason="ok"), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        compile_file(path)
    (problem,) = info.value.problems
    assert (problem.code, problem.key_path) == ("undefined-name", "vars.probe")
    assert f"uses '{name}', which is not defined here" in problem.message


# --- the same built from data: the item fails, nothing is scored, the scorer goes on -----------

RUNTIME = {
    "repeat": ("run.output * (run.input | int)", "'*' would build"),
    "center": ("run.output | center(run.input | int)", "|center("),
    "method": ("run.output.ljust(run.input | int)", ".ljust("),
    "printf-width": ("('%0' ~ run.input ~ 'd') | format(1)", "|format width"),
    "replace": ("(run.output * 1000) | replace('', run.output * 1000) | length", "|replace would build"),
    "replace-method": ("run.output.replace('', run.output * 100000) | length", "|replace would build"),
    "range": ("range(run.input | int) | list | length", "Range too big"),
    "indent": ("((run.output ~ '\\n') * 100000) | indent(999999) | length", "|indent would build"),
    "tojson-indent": ("run.context | tojson(999999)", "|tojson(indent=999999): at most 100 spaces"),
    "replace-non-text": ("(run.context * 1000) | replace('a', run.output * 100000) | length", "|replace would build"),
    "printf-widths": ("('%999999s' * 3) | format(1, 2, 3) | length", "|format widths would build 2,999,997"),
    "mutate": ("run.context.append('x')", "access to attribute 'append' of 'list' object is unsafe"),
    "dynamic-dunder": ("run | attr('_' ~ run.output) | string", "access to attribute '__class__' of 'dict'"),
}


@pytest.mark.parametrize("source, message", RUNTIME.values(), ids=RUNTIME.keys())
def test_blow_up_from_data_fails_the_item_not_the_process(tmp_path, source, message):
    path = tmp_path / "hostile.yaml"
    path.write_text(SPEC.format(probe=source.replace('"', "'"), reason="ok"), encoding="utf-8")
    scorer = Scorer(compile_file(path))
    tracemalloc.start()
    try:
        result = scorer.run(output="_class__", input="1000000000", ground_truth="x", context=["a"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # refused before it is built (each would take a GB or more): what is built before the
    # refusal stays within MAX_SIZE characters, under 1 MB here
    assert peak < 10 * 2**20, peak
    assert result.status == "failed" and result.score is None
    assert (result.error.kind, result.error.stage) == ("expression", None)
    assert result.error.message.startswith("vars.probe: ")
    assert message in result.error.message
    fine = scorer.run(output="ab", input="2", ground_truth="ab", context=["a"])  # the scorer still works
    assert fine.status in ("scored", "failed")
    assert "<class" not in result.model_dump_json()


def test_options_cannot_be_changed_from_an_expression(tmp_path):
    """With a mutable sandbox, `options.update(...)` in one item would change every later item."""
    path = tmp_path / "hostile.yaml"
    path.write_text(SPEC.format(probe="options.update({'scale': 100})", reason="ok"), encoding="utf-8")
    scorer = Scorer(compile_file(path))
    result = scorer.run(output="a", ground_truth="a")
    assert result.status == "failed" and "'update' of 'dict' object is unsafe" in result.error.message
    assert scorer.options == {"scale": 1}


def test_sizes_within_the_limits_still_work():
    assert Expression("('ab' * 3) ~ ('x' | center(5)) ~ ('%05.1f' | format(2.25))")({}) == "ababab  x  002.2"
    assert Expression("2 ** 10 + (range(5) | list | length) + (([0] * 3) | length)")({}) == 1032
    assert Expression("(big * 1) | length")({"big": "y" * MAX_SIZE}) == MAX_SIZE
    assert Expression("('a\\nb' | indent(2)) ~ ([1] | tojson(2)) ~ ('%3s%3s' | format(1, 2))")({}) \
        == "a\n  b[\n  1\n]  1  2"
    assert Expression("0.5 ** 2 * 4")({}) == 1.0


# --- alias bombs and deep nesting -------------------------------------------------------------------


def _laughs(levels: int, width: int = 10) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("levels", [6, 9, 30])
def test_billion_laughs_is_refused_quickly_and_small(tmp_path, levels):
    """10^levels nodes once expanded (10^30 for the last): refused before anything is built,
    in a few MB."""
    tracemalloc.start()
    try:
        with pytest.raises(SpecError) as info:
            compile_text(_laughs(levels), tmp_path / "spec.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [p.code for p in info.value.problems] == ["yaml-too-large"]
    assert f"more than {MAX_NODES} nodes" in info.value.problems[0].message
    assert peak < 20 * 2**20, peak


def test_self_referencing_alias_is_a_spec_error(tmp_path):
    with pytest.raises(SpecError) as info:
        compile_text("a: &a [*a]\n", tmp_path / "spec.yaml")
    assert info.value.problems[0].code in ("yaml-syntax", "yaml-too-large")


@pytest.mark.parametrize("text", [
    "!!python/object/apply:os.system ['echo pwned']",
    "a: !!python/name:os.system\n",
    "a: !!binary aGVsbG8=\n",
    "a: !custom x\n",
    "? [a, b]\n: c\n",
    "a: 1\n---\nb: 2\n",
    "\x00",
    "a: \"\\x00\\uffff\"\n",
    "{" * 200 + "}" * 200,
    "- " * 3000 + "x",
])
def test_hostile_yaml_text_is_a_spec_error(tmp_path, text):
    with pytest.raises(SpecError) as info:
        compile_text(text, tmp_path / "spec.yaml")
    assert info.value.problems and all(p.code and p.message for p in info.value.problems)


# --- property tests: arbitrary YAML text and arbitrary nested structures ---------------------------

YAML_TOKENS = ["a", "&x ", "*x", "!!str ", "!!python/object ", "!t ", "<<: ", "- ", "? ", ": ", "[", "]", "{", "}",
               ",", "'", '"', "|", ">", "#", "%YAML 1.2\n", "---\n", "...\n", "\n", "  ", "\t", "{{ ", " }}",
               "{% ", " %}", "__class__", "1e9", "0x1F", ".nan", "~", "yes", "\x00", "\ufeff", "stages", "formula"]
HOSTILE_SOURCES = list(ESCAPES.values()) + list(RUNTIME.values())
SPEC_KEYS = ["format", "id", "name", "description", "version", "fields", "options", "judge", "vars", "stages",
             "score", "reason", "prompt", "function", "args", "output_schema", "when", "checks", "formula",
             "let", "not_scorable", "template", "round", "scale", "$expr", "type", "properties", "expect"]
LEAVES = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
          | st.sampled_from([s for s, _ in HOSTILE_SOURCES] + ["{% raw %}", "{{", "}}", "{#", "%}", ">>>"]))
NESTED = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(SPEC_KEYS) | st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


def _only_spec_error(text: str, path: Path) -> None:
    try:
        compile_text(text, path)
    except SpecError as exc:
        assert exc.problems and all(p.code and p.message for p in exc.problems)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(YAML_TOKENS), max_size=60).map("".join))
def test_arbitrary_yaml_token_soup_raises_only_spec_error(text):
    _only_spec_error(text, ROOT / "scorer_specs" / "prop.yaml")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NESTED, st.booleans())
def test_arbitrary_nested_structures_raise_only_spec_error(doc, as_json):
    text = json.dumps(doc) if as_json else yaml.safe_dump(doc, allow_unicode=True)
    _only_spec_error(text, ROOT / "scorer_specs" / "prop.yaml")


SKELETON = textwrap.dedent("""\
    format: 1
    id: prop
    name: P
    description: d
    version: 1
    vars:
      probe: {probe}
    stages:
      - id: analyze
        function: textual_difference
        args: {{reference: "run.ground_truth", candidate: "run.output"}}
    score:
      formula: {formula}
    reason:
      - template: {reason}
    """)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([s for s, _ in HOSTILE_SOURCES] + [
    "run.output", "analyze.ratio", "1", "(", ")", " | ", "length", "attr('_", "~", "'", "__", "**", "*", "9" * 12,
    "range(", "format(", ".", "[", "]", "{{", "}}", "{%", "%}", "{% raw %}", "{% endraw %}", "self", "lipsum",
]), min_size=1, max_size=8).map("".join), st.sampled_from(["probe", "formula", "reason"]))
def test_hostile_expressions_in_a_valid_spec_raise_only_spec_error_or_compile(source, where):
    """A well-formed spec with junk made of escape fragments in one expression or template: it
    compiles (then a dry run fails or scores the item, never raising), or it is a SpecError."""
    values = {"probe": json.dumps("1"), "formula": json.dumps("analyze.ratio"), "reason": json.dumps("ok")}
    values[where] = json.dumps(source if where != "reason" else "{{ " + source + " }}")
    path = ROOT / "scorer_specs" / "prop.yaml"
    try:
        compiled = compile_text(SKELETON.format(**values), path)
    except SpecError as exc:
        assert exc.problems and all(p.code and p.message for p in exc.problems)
        return
    result = Scorer(compiled).run(output="abc", ground_truth="abd", input="3")
    assert result.status in ("scored", "failed")
    if result.status == "failed":
        assert result.score is None and result.error.kind in ("expression", "formula", "function")
    assert "<class" not in (result.reason or "") + (result.error.message if result.error else "")
