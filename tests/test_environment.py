"""The environment read in one module: every variable declared once, read by `engine.core.environment`
alone, and a judge's settings resolved from it once, with one precedence."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from engine.core import environment
from engine.judge.settings import OLLAMA_DEFAULT_URL, JudgeSettings

from source_trees import parse_file

ENGINE = Path(__file__).resolve().parents[1] / "engine"
DECLARED = {v.name for v in environment.VARIABLES}

# modules that touch os.environ for variables of other programs, and those variables
OTHER_PROGRAMS = {"cli/output.py": {"COLUMNS"}, "ray/cluster.py": {"PYTHONPATH", "LOCAL_ONLY_VARIABLE"},
                  "functions/segment.py": {"PYTHAINLP_READ_ONLY", "PYTHAINLP_OFFLINE"}}


def _environ_reads(tree: ast.AST) -> list[str]:
    """What each use of ``os.environ`` / ``os.getenv`` in `tree` names: the key's literal text or
    constant's name, ``?`` when it is neither (e.g. the whole mapping iterated)."""
    found = []
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and \
                isinstance(node.value, ast.Name) and node.value.id == "os":
            target = node
        if target is None:
            continue
        found.append("?")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args and \
                isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "environ":
            found.append(_name(node.args[0]))
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "environ":
            found.append(_name(node.slice))
        elif isinstance(node, ast.Compare) and any(isinstance(c, ast.Attribute) and c.attr == "environ"
                                                    for c in node.comparators):
            found.append(_name(node.left))
    return found


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return node.id
    return "?"


def test_no_engine_module_but_the_environment_one_reads_the_environment():
    offenders = {}
    for path in ENGINE.rglob("*.py"):
        relative = path.relative_to(ENGINE).as_posix()
        if relative == "core/environment.py":
            continue
        reads = _environ_reads(parse_file(path))
        if not reads:
            continue
        named = {r for r in reads if r != "?"}
        if relative not in OTHER_PROGRAMS or not named <= OTHER_PROGRAMS[relative] or named & DECLARED:
            offenders[relative] = sorted(set(reads))
    assert offenders == {}


def test_every_scorespec_variable_the_engine_names_is_declared():
    named = set()
    for path in ENGINE.rglob("*"):
        if path.suffix in (".py", ".yaml") and path.name != "environment.py":
            named |= set(re.findall(r"SCORESPEC_[A-Z][A-Z_]*[A-Z]", path.read_text(encoding="utf-8")))
    test_only = {v.name for v in environment.TEST_VARIABLES}
    assert named - DECLARED == set() and not (named & test_only)
    assert len(DECLARED) == len(environment.VARIABLES)  # each declared once


def test_an_undeclared_variable_is_refused_and_an_empty_one_is_unset(monkeypatch):
    with pytest.raises(KeyError, match="SCORESPEC_MODLE is not a variable scorespec reads"):
        environment.value("SCORESPEC_MODLE")
    monkeypatch.setenv("SCORESPEC_MODE", "")
    assert environment.value("SCORESPEC_MODE") is None
    assert environment.value("SCORESPEC_MODE", {"SCORESPEC_MODE": "json"}) == "json"


def test_every_provider_key_and_endpoint_variable_is_declared():
    assert set(environment.KEY_VARIABLES.values()) | set(environment.ENDPOINT_VARIABLES.values()) <= DECLARED


# --- a judge's settings, resolved once ---------------------------------------------------------------


@pytest.fixture
def clean(monkeypatch):
    for name in ("SCORESPEC_MODEL", "SCORESPEC_MODE", "SCORESPEC_CONTEXT_WINDOW", "OPENAI_BASE_URL",
                 "OLLAMA_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_callers_setting_wins_then_the_spec_then_the_environment_then_the_default(clean):
    assert JudgeSettings().resolved().model == "local"
    assert JudgeSettings().resolved("openai/spec-model").model == "openai/spec-model"
    clean.setenv("SCORESPEC_MODEL", "openai/env-model")  # it stands for the caller's model
    assert JudgeSettings().resolved("openai/spec-model").model == "openai/env-model"
    assert JudgeSettings(model="openai/given").resolved("openai/spec-model").model == "openai/given"
    clean.setenv("SCORESPEC_MODE", "md_json")
    clean.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    clean.setenv("SCORESPEC_CONTEXT_WINDOW", "4000")
    resolved = JudgeSettings().resolved()
    assert (resolved.mode, resolved.base_url, resolved.context_window) == ("md_json", "http://127.0.0.1:9/v1", 4000)
    given = JudgeSettings(mode="tools", base_url="http://h/v1", context_window=0).resolved()
    assert (given.mode, given.base_url, given.context_window) == ("tools", "http://h/v1", 0)
    assert resolved.resolved() == resolved  # resolving again changes nothing


def test_the_environment_gives_an_embedded_model_no_mode_and_ollama_its_endpoint(clean):
    clean.setenv("SCORESPEC_MODE", "md_json")
    clean.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    local = JudgeSettings(model="local").resolved()
    assert (local.mode, local.base_url) == (None, None)
    assert JudgeSettings(model="ollama/qwen2.5:7b").resolved().base_url == OLLAMA_DEFAULT_URL
    clean.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:8/v1")
    assert JudgeSettings(model="ollama/qwen2.5:7b").resolved().base_url == "http://127.0.0.1:8/v1"
    assert JudgeSettings(model="openai/m").key_variable == "OPENAI_API_KEY"
    assert JudgeSettings(model="local").key_variable is None


def test_a_bad_value_from_the_environment_names_its_variable(clean):
    clean.setenv("SCORESPEC_CONTEXT_WINDOW", "lots")
    with pytest.raises(ValueError, match="SCORESPEC_CONTEXT_WINDOW='lots'"):
        JudgeSettings().resolved()
    clean.delenv("SCORESPEC_CONTEXT_WINDOW")
    clean.setenv("OPENAI_BASE_URL", "127.0.0.1:9/v1")
    with pytest.raises(ValueError, match=r"\$OPENAI_BASE_URL='127.0.0.1:9/v1': expected an http"):
        JudgeSettings(model="openai/m").resolved()


def test_the_recipe_records_what_the_environment_gave_where_the_judge_was_built(clean):
    from engine.bind.stack import make_judge

    clean.setenv("SCORESPEC_MODE", "json_schema")
    clean.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    clean.setenv("SCORESPEC_CONTEXT_WINDOW", "5000")
    recipe = make_judge("openai/m", api_key="k").provider.recipe
    assert (recipe.base_url, recipe.mode, recipe.context_window) == ("http://127.0.0.1:9/v1", "json_schema", 5000)
    for name in ("SCORESPEC_MODE", "OPENAI_BASE_URL", "SCORESPEC_CONTEXT_WINDOW"):
        clean.delenv(name)
    again = make_judge(recipe.model, api_key="k", **recipe.keywords())  # another process, another environment
    assert again.provider.cache_identity == make_judge("openai/m", api_key="k", base_url="http://127.0.0.1:9/v1",
                                                 mode="json_schema").provider.cache_identity
    assert again.provider.window.window == 5000


# --- the docs' reference page --------------------------------------------------------------------------


def test_the_reference_page_lists_every_variable_from_the_module():
    import sys

    hooks = Path(__file__).resolve().parents[1] / "docs" / "hooks"
    sys.path.insert(0, str(hooks))
    try:
        from ref_environment import render_environment
    finally:
        sys.path.remove(str(hooks))
    page = render_environment(list(environment.VARIABLES), list(environment.TEST_VARIABLES))
    missing = [v.name for v in (*environment.VARIABLES, *environment.TEST_VARIABLES) if f"| `{v.name}` |" not in page]
    assert missing == []
    assert "| `SCORESPEC_MODE` | instructor's structured-output mode" in page
