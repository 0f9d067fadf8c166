"""The package's shape: each subpackage of `engine` imports only what its docstring's
"May import:" paragraph allows, few modules sit directly in `engine`, and no file is too long.

A docstring names the packages it may import (```engine.core```), may add "and what it (they)
may import" (the packages those may import too), or says "anything in `engine`" or "nothing else
in `engine`". Modules directly inside `engine` (the public facade) may import any package but
`cli`, which only `engine.__main__` imports.
"""

from __future__ import annotations

import ast
import re

from test_imports import ENGINE, import_graph


def packages() -> list[str]:
    return sorted(p.parent.name for p in ENGINE.glob("*/__init__.py"))


def stated(doc: str) -> tuple[set[str], bool, bool]:
    """(packages named, whether "what it may import" follows, whether "anything") of a docstring's
    "May import:" paragraph; AssertionError when it has none."""
    found = re.search(r"May import:(.*?)(?:\n\s*\n|\Z)", doc, re.S)
    assert found, "no 'May import:' paragraph"
    text = " ".join(found.group(1).split())
    named = set(re.findall(r"`engine\.([a-z_]+)`", text))
    return named, "may import" in text, "anything in `engine`" in text


def may_import() -> dict[str, set[str]]:
    """Each subpackage's allowed packages, as the docstrings state them (closed over "and what it
    may import")."""
    statements = {}
    for package in packages():
        doc = ast.get_docstring(ast.parse((ENGINE / package / "__init__.py").read_text(encoding="utf-8"))) or ""
        statements[package] = stated(doc)
    allowed: dict[str, set[str]] = {}

    def resolve(package: str, seen: tuple[str, ...] = ()) -> set[str]:
        if package in allowed:
            return allowed[package]
        assert package not in seen, f"the docstrings' layering goes round: {seen + (package,)}"
        named, transitive, anything = statements[package]
        result = set(packages()) - {package} if anything else set(named)
        if transitive:
            for other in named:
                result |= resolve(other, seen + (package,))
        allowed[package] = result
        return result

    for package in statements:
        resolve(package)
    return allowed


def layer_of(module: str) -> str:
    """``engine.judge.cache.base`` → ``judge``; a module directly inside `engine` → ``engine``."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (ENGINE / parts[1] / "__init__.py").exists()):
        return parts[1]
    return "engine"


def layering_violations(graph: dict[str, set[str]], allowed: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        source = layer_of(module)
        for target in sorted(targets):
            layer = layer_of(target)
            if layer == source:
                continue
            if source == "engine":
                ok = layer != "cli" or module == "engine.__main__"
            else:
                ok = layer in allowed.get(source, set())
            if not ok:
                found.append(f"{module} → {target}")
    return found


def test_a_docstring_states_named_and_transitive_layers():
    assert stated('x\n\nMay import: `engine.core`,\n`engine.judge`.\n') == ({"core", "judge"}, False, False)
    assert stated("May import: `engine.run` and what it may import.") == ({"run"}, True, False)
    assert stated("May import: anything in `engine`.") == (set(), False, True)


def test_the_layering_finds_an_import_against_it():
    allowed = {"core": set(), "spec": {"core"}, "run": {"core", "spec"}}
    assert layering_violations({"engine.core.errors": {"engine.spec.compile"}}, allowed) == [
        "engine.core.errors → engine.spec.compile"]
    assert layering_violations({"engine.spec.compile": {"engine.core.errors"}}, allowed) == []
    assert layering_violations({"engine.run.evals": {"engine.cli.app"}}, allowed) == ["engine.run.evals → engine.cli.app"]


def test_the_docstrings_layer_the_packages_from_core_to_cli():
    allowed = may_import()
    assert allowed["core"] == set()
    assert "run" not in allowed["spec"] and "cli" not in allowed["run"]
    assert allowed["cli"] == set(packages()) - {"cli"}


def test_each_subpackage_imports_only_what_its_docstring_allows():
    assert layering_violations(import_graph(), may_import()) == []


def test_only_the_console_entry_imports_the_cli():
    graph = import_graph()
    importers = {m for m, targets in graph.items() if layer_of(m) != "cli" and any(layer_of(t) == "cli" for t in targets)}
    assert importers <= {"engine.__main__"}


def test_the_package_has_few_modules_at_its_top_and_no_long_file():
    top = [p.name for p in ENGINE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(top) <= 15, top
    assert len(packages()) >= 6
    long = [f"{p.relative_to(ENGINE)}: {n}" for p in ENGINE.rglob("*.py")
            if (n := p.read_text(encoding="utf-8").count("\n")) > 500]
    assert not long


def test_no_function_is_longer_than_80_lines():
    long = []
    for path in ENGINE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{path.relative_to(ENGINE)}:{node.lineno} {node.name}")
    assert not long


def test_the_public_names_are_listed_once_for_importers_and_type_checkers():
    import engine

    source = (ENGINE / "__init__.py").read_text(encoding="utf-8")
    checked = set(re.findall(r"^    from \.[\w.]+ import (.+)$", source, re.M))
    names_for_checkers = {name.strip() for line in checked for name in line.split(",")}
    assert set(engine.__all__) == set(engine._EXPORTS) == names_for_checkers
    for name in engine.__all__:
        assert getattr(engine, name) is not None, name


def test_the_entry_points_take_at_most_eight_named_parameters():
    import inspect

    from engine import api
    from engine.analysis import calibration, compare
    from engine.bind import load, stack
    from engine.run import evals

    entry_points = [api.run_evals, api.arun_evals, api.calibrate, api.acalibrate, api.compare, api.acompare,
                    evals.run_evals, evals.arun_evals, calibration.calibrate, calibration.acalibrate,
                    compare.compare, compare.acompare, load.load_scorer, stack.make_judge]
    for function in entry_points:
        named = [p for p in inspect.signature(function).parameters.values()
                 if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
        assert len(named) <= 8, f"{function.__module__}.{function.__qualname__}: {len(named)}"


def test_the_engine_readme_maps_every_subpackage_and_module():
    readme = (ENGINE / "README.md").read_text(encoding="utf-8")
    for package in packages():
        assert f"### `{package}/`" in readme, package
    missing = []
    for path in ENGINE.rglob("*.py"):
        relative = path.relative_to(ENGINE)
        if path.name in ("__init__.py", "__main__.py") or len(relative.parts) == 1:
            continue
        section = readme.split(f"### `{relative.parent.as_posix()}/`", 1)[-1].split("\n### ", 1)[0]
        if f"`{path.name}`" not in section:
            missing.append(relative.as_posix())
    assert not missing
