"""The package's shape: few modules directly in `engine`, no file or function too long to read,
the public names listed once, one import path per name, few parameters per function, subpackage
docstrings naming only modules that exist, and `engine/README.md` mapping every module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_imports import ENGINE, engine_modules, module_name, packages

from source_trees import parse_file

# Names that modules list in `__all__`, or that importers take from them, without the module
# defining them, known when this test was written. This list must shrink to empty: remove a name
# when its shim goes, never add one.
KNOWN_REEXPORTS: dict[str, set[str]] = {
    # the typer app with every command registered on it (importing engine.cli.main registers them)
    "engine.cli.main": {"app"},
}

# The functions that may take more than `MAX_PARAMETERS` (known when the test was written; this
# list must shrink to empty too).
KNOWN_LONG_SIGNATURES = {"engine.judge.provider.InstructorJudge.__init__"}
MAX_PARAMETERS = 10


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
        for node in ast.walk(parse_file(path)):
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


def defined_names(path: Path) -> set[str]:
    """The names a module defines at its top level (functions, classes, assigned names, also
    under a top-level ``if`` or ``try``); imported names are not defined there."""
    names: set[str] = set()
    todo = list(parse_file(path).body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try)):
            todo.extend(node.body + node.orelse + getattr(node, "finalbody", []))
            todo.extend(stmt for handler in getattr(node, "handlers", []) for stmt in handler.body)
    return names


def listed_names(path: Path) -> list[str]:
    for node in parse_file(path).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return [element.value for element in node.value.elts]
    return []


def reexported(module: str, names: list[str] | set[str], defined: set[str]) -> list[str]:
    return sorted(n for n in names if n not in defined and n not in KNOWN_REEXPORTS.get(module, set()))


def test_a_module_lists_in_all_only_the_names_it_defines():
    found = {}
    for module, path in engine_modules().items():
        if path.name != "__init__.py":
            shims = reexported(module, listed_names(path), defined_names(path))
            if shims:
                found[module] = shims
    assert not found, "re-exported (import each from the module that defines it): " + repr(found)


def test_the_package_and_its_tests_import_each_name_from_the_module_that_defines_it():
    modules = engine_modules()
    defined = {name: defined_names(path) for name, path in modules.items() if path.name != "__init__.py"}
    roots = [ENGINE, ENGINE.parent / "tests", ENGINE.parent / "docs" / "hooks"]
    wrong = []
    for path in sorted(p for root in roots for p in root.rglob("*.py")):
        here = module_name(path) if path.is_relative_to(ENGINE) else ""
        package = here if path.name == "__init__.py" else here.rpartition(".")[0]
        for node in ast.walk(parse_file(path)):
            if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
                continue
            origin = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            if origin not in defined:
                continue
            for alias in node.names:
                if f"{origin}.{alias.name}" not in modules and reexported(origin, [alias.name], defined[origin]):
                    wrong.append(f"{path.relative_to(ENGINE.parent)}:{node.lineno}: {alias.name} from {origin}")
    assert not wrong, "\n".join(wrong)


def test_the_name_checks_find_a_reexport_and_a_definition(tmp_path):
    module = tmp_path / "shim.py"
    module.write_text("from os import sep\nfrom typing import Any\nif True:\n    LIMIT = 3\n"
                      "try:\n    import json\nexcept ImportError:\n    json = None\n"
                      "def own(): ...\n__all__ = ['own', 'LIMIT', 'json', 'sep']\n", encoding="utf-8")
    assert reexported("shim", listed_names(module), defined_names(module)) == ["sep"]


def parameter_counts(path: Path, module: str) -> dict[str, int]:
    """Each function of a module (by qualified name) and how many parameters it takes, its
    ``self`` or ``cls`` and its ``*args`` / ``**kwargs`` not counted."""
    counts: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", True)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = child.args
                named = args.posonlyargs + args.args + args.kwonlyargs
                if in_class and named and named[0].arg in ("self", "cls"):
                    named = named[1:]
                counts[f"{prefix}{child.name}"] = len(named)
                visit(child, f"{prefix}{child.name}.", False)

    visit(parse_file(path), f"{module}.", False)
    return counts


def test_no_function_outside_the_cli_and_the_rule_functions_takes_more_than_ten_parameters():
    long = {}
    for module, path in engine_modules().items():
        if module.startswith(("engine.cli", "engine.functions")):
            continue
        for name, count in parameter_counts(path, module).items():
            if count > MAX_PARAMETERS and name not in KNOWN_LONG_SIGNATURES:
                long[name] = count
    assert not long, "pass a record whole instead: " + repr(long)


def test_the_parameter_count_skips_self_and_star_arguments(tmp_path):
    module = tmp_path / "wide.py"
    module.write_text("class A:\n    def f(self, a, /, b, *rest, c, **more): ...\n"
                      "def g(a, b=1, *, c):\n    def inner(x): ...\n", encoding="utf-8")
    assert parameter_counts(module, "wide") == {"wide.A.f": 3, "wide.g": 3, "wide.g.inner": 1}


def named_in_docstring(init: Path) -> list[str]:
    """The names a subpackage's docstring writes in single backticks that are neither one of its
    modules or subpackages nor a name its modules define (spec keys and other literal text are
    written in double backticks), and the ``engine.…`` paths in it that lead to no module or
    name."""
    doc = ast.get_docstring(parse_file(init)) or ""
    folder = init.parent
    known = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    for path in folder.rglob("*.py"):
        known |= defined_names(path)
    words = re.findall(r"(?<!`)`([a-z_][a-z0-9_]*)`(?!`)", doc)
    unknown = [w for w in words if w not in known and w not in ("engine", "scorespec")]
    modules = engine_modules()
    for path in re.findall(r"`(engine(?:\.\w+)+)`", doc):
        module, _, name = path.rpartition(".")
        if path not in modules and not (module in modules and name in defined_names(modules[module])):
            unknown.append(path)
    return unknown


def test_every_subpackage_docstring_names_only_modules_that_exist():
    stale = {init.parent.relative_to(ENGINE).as_posix(): found for init in sorted(ENGINE.rglob("*/__init__.py"))
             if (found := named_in_docstring(init))}
    assert not stale


def test_a_docstring_naming_a_removed_module_is_found(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "split.py").write_text("def stratified_split(): ...\n", encoding="utf-8")
    init = tmp_path / "pkg" / "__init__.py"
    init.write_text('"""`split` (`stratified_split`), `examples` (gone), ``for_each`` (a key)."""\n',
                    encoding="utf-8")
    assert named_in_docstring(init) == ["examples"]


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
