"""The package's shape: few modules directly in `engine`, no file or function too long to read,
the public names listed once, entry points with few parameters, and `engine/README.md` mapping
every module."""

from __future__ import annotations

import ast
import re

from test_imports import ENGINE, packages


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
                    evals.arun_evals, calibration.calibrate, calibration.acalibrate,
                    compare.compare, compare.acompare, load.load_scorer, stack.make_judge]
    for function in entry_points:
        named = [p for p in inspect.signature(function).parameters.values()
                 if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
        assert len(named) <= 8, f"{function.__module__}.{function.__qualname__}: {len(named)}"


def test_one_function_is_called_run_evals():
    defined = sorted(path.relative_to(ENGINE).as_posix() for path in ENGINE.rglob("*.py")
                     if re.search(r"^(async )?def run_evals\(", path.read_text(encoding="utf-8"), re.M))
    assert defined == ["api.py"]


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


def test_the_public_run_evals_docstring_names_every_run_setting():
    from dataclasses import fields

    import engine

    doc = engine.run_evals.__doc__
    missing = [f.name for f in fields(engine.RunSettings) if f.name not in doc]
    assert not missing
