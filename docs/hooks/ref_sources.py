"""What the reference pages are generated from, read from the engine (imports and file reads;
the renderers themselves are pure). Each function returns the inputs of one renderer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ref_markdown import code
from ref_scorers import ScorerDoc


def spec_schema() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The spec format's JSON Schema and the models' factory defaults (`ref_spec_format`)."""
    from engine.spec import models
    from ref_spec_format import model_defaults

    return models.spec_json_schema(), model_defaults(models)


def expression_names() -> tuple[list[Any], Any]:
    """The registered rule functions and the sandbox's Jinja names (`ref_functions`)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from engine import functions
    from engine.spec.expressions import environment
    from ref_functions import jinja_names

    return functions.all_functions(), jinja_names(environment(), ImmutableSandboxedEnvironment())


def environment_variables() -> tuple[list[Any], list[Any]]:
    """The environment variables scorespec reads and those only its tests read (`ref_environment`)."""
    from engine.core import environment

    return list(environment.VARIABLES), list(environment.TEST_VARIABLES)


def cli_command() -> Any:
    """The whole `scorespec` command tree (the batch commands registered too)."""
    import typer

    import engine.cli.compare  # noqa: F401 - registers compare and, through eval, the batch commands
    import engine.cli.doctor  # noqa: F401 - registers doctor
    import engine.cli.eval  # noqa: F401
    import engine.cli.main  # noqa: F401 - registers the single-item commands and `cache`
    from engine.cli.app import app

    return typer.main.get_command(app)


def _written_by(doc: Any) -> dict[str, str]:
    return {key: Path(pos.file).stem for key, pos in doc.positions.items()}


def _outputs(plan: Any) -> dict[str, str]:
    from engine.spec.plans import RuleStagePlan

    found = {}
    for stage in plan.stages:
        if isinstance(stage, RuleStagePlan):
            found[stage.id] = code(stage.function.result_words())
    return found


def scorer_doc(path: Path) -> ScorerDoc:
    """The `ScorerDoc` of the spec file at `path` (not abstract), merged over what it extends.
    Raises `SpecError` when it does not compile."""
    from engine.spec.compile import check_document, compile_document
    from engine.spec.inherit import load_document

    document = load_document(path)
    plan = compile_document(load_document(path))
    spec = check_document(document)
    return ScorerDoc(spec, tuple(document.chain), plan.uses_judge, _written_by(document), _outputs(plan))


def shipped_scorers() -> tuple[list[ScorerDoc], list[Any]]:
    """(a `ScorerDoc` per shipped spec that is not abstract, the abstract specs as `Spec`s), by id.
    Raises `SpecError` when a shipped spec does not compile."""
    from engine.spec.catalog import builtin_specs_dir, is_abstract
    from engine.spec.compile import check_document
    from engine.spec.inherit import load_document

    docs, bases = [], []
    for path in sorted(builtin_specs_dir().glob("*.yaml")):
        if is_abstract(path):
            bases.append(check_document(load_document(path)))
        else:
            docs.append(scorer_doc(path))
    return docs, bases
