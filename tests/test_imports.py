"""No import circle in `engine/`, and every subpackage imports only what its docstring allows.

The graph has an edge A → B for every ``from .b import …``, ``from . import b``,
``from engine.b import …`` and ``import engine.b`` in A, at module level or inside a function
(a function-level import still makes a circle, only a later one), and to the packages above the
imported module (importing it runs their ``__init__``), except those above A itself (they ran
before A: a sibling import is no edge to A's own package). ``python tests/test_imports.py`` prints
every circle found.

Each subpackage's ``__init__`` docstring has a "May import:" paragraph naming the packages it may
import (```engine.core```), perhaps adding "and what it (they) may import" (the packages those may
import too), or saying "anything in `engine`" / "nothing else in `engine`". Modules directly inside
`engine` (the public facade) may import any package but `cli`, which only `engine.__main__` imports.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from source_trees import parse_file

ENGINE = Path(__file__).resolve().parent.parent / "engine"

# Circles known when this test was written, each as the set of modules that import one another.
# This list must shrink to empty: remove an entry when its circle is broken, never add one.
KNOWN_CIRCLES: list[frozenset[str]] = [
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ENGINE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def engine_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ENGINE.rglob("*.py"))}


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The engine modules `path` (module `name`) imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}

    def add(target: str) -> None:
        # the module itself if it is one, else the package whose attribute was imported; and the
        # packages above it (importing a submodule runs their __init__), except `engine` itself and
        # the packages above this module (they ran before it: a sibling import adds no edge to them)
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != "engine":
            found.add(target)
        target = target.rpartition(".")[0]
        while target and target != "engine":
            if target not in ancestors:
                found.add(target)
            target = target.rpartition(".")[0]

    for node in ast.walk(parse_file(path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "engine" or alias.name.startswith("engine."):
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            elif node.module and (node.module == "engine" or node.module.startswith("engine.")):
                origin = node.module
            else:
                continue
            for alias in node.names:
                submodule = f"{origin}.{alias.name}"
                add(submodule if submodule in modules else origin)
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = engine_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def describe(circle: frozenset[str], graph: dict[str, set[str]]) -> str:
    edges = sorted(f"{a} → {b}" for a in circle for b in graph[a] if b in circle)
    return "{" + ", ".join(sorted(circle)) + "}: " + "; ".join(edges)


def test_the_graph_sees_function_level_and_relative_imports():
    graph = import_graph()
    assert "engine.judge.provider" in graph["engine.embedded.judge"]  # module level, relative
    assert "engine.bind.stack" in graph["engine.run.runner"]  # inside a function
    assert "engine.testing.fake_openai" in graph["engine.testing"]  # `from . import fake_openai`, in a function
    assert "engine.judge" in graph["engine.run.runner"]  # importing a submodule runs its package
    assert "engine.functions" not in graph["engine.functions.checks"]  # a sibling import: the package ran first
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset({"a", "b", "c"})]


def test_no_new_import_circle_in_engine():
    graph = import_graph()
    new = [c for c in circles(graph) if c not in KNOWN_CIRCLES]
    assert not new, "new import circles:\n" + "\n".join(describe(c, graph) for c in new)


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_the_batch_library_never_imports_the_terminal_output():
    graph = import_graph()
    assert {"engine.run.runner", "engine.run.resume", "engine.run.summary"} <= reachable(graph, "engine.run.evals")
    for library in ("engine.run.evals", "engine.analysis.calibration"):
        assert not {m for m in reachable(graph, library) if m.startswith("engine.cli")}, library


def test_the_judge_modules_import_no_circle():
    graph = import_graph()
    judge_modules = {m for m in graph if "judge" in m or m.startswith("engine.bind.")}
    assert {"engine.bind.stack", "engine.embedded.judge", "engine.judge.provider"} <= judge_modules
    assert not [c for c in circles(graph) if c & judge_modules]


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
        doc = ast.get_docstring(parse_file(ENGINE / package / "__init__.py")) or ""
        statements[package] = stated(doc)
    allowed: dict[str, set[str]] = {}

    def resolve(package: str, seen: tuple[str, ...] = ()) -> set[str]:
        if package in allowed:
            return allowed[package]
        assert package not in seen, f"the docstrings' layering goes round: {seen + (package,)}"
        named, transitive, anything = statements[package]
        # anything: every other subpackage and the modules directly in `engine` (`engine.api`)
        result = (set(packages()) | {"engine"}) - {package} if anything else set(named)
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
    assert allowed["cli"] == set(packages()) - {"cli"} | {"engine"}  # the CLI runs through `engine.api`


def test_each_subpackage_imports_only_what_its_docstring_allows():
    assert layering_violations(import_graph(), may_import()) == []


def test_only_the_console_entry_imports_the_cli():
    graph = import_graph()
    importers = {m for m, targets in graph.items() if layer_of(m) != "cli" and any(layer_of(t) == "cli" for t in targets)}
    assert importers <= {"engine.__main__"}


if __name__ == "__main__":
    graph = import_graph()
    found = circles(graph)
    for circle in found:
        print(("known " if circle in KNOWN_CIRCLES else "NEW   ") + describe(circle, graph))
    print(f"{len(found)} circle(s) among {len(graph)} modules")
    sys.exit(1 if any(c not in KNOWN_CIRCLES for c in found) else 0)
