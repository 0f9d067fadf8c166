"""The docs site: its reference pages are generated from the code at build time (the MkDocs hook
``docs/hooks/reference.py`` and its renderers ``docs/hooks/ref_*.py``).

The fast tests call the renderers directly: every shipped scorer, command, spec key, rule function
and public name has its entry, and the renderers give the expected text for small inputs written
here. The slow ones build the site once (``mkdocs build --strict``) and read the HTML.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / "docs" / "hooks"
sys.path.insert(0, str(HOOKS))

import ref_cli  # noqa: E402
import ref_functions  # noqa: E402
import ref_markdown  # noqa: E402
import ref_scorers  # noqa: E402
import ref_sources  # noqa: E402
import ref_spec_format  # noqa: E402


def _hook():
    spec = importlib.util.spec_from_file_location("scorespec_reference_hook", HOOKS / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def hook():
    return _hook()


@pytest.fixture(scope="module")
def pages(hook):
    return hook.generated_pages()


def _section(page: str, heading: str) -> str:
    """The text of `page` from the line `heading` to the next heading of the same level."""
    level = heading.split(" ", 1)[0]
    start = page.index(heading + "\n")
    following = re.search(rf"^{level} ", page[start + len(heading):], re.M)
    return page[start:start + len(heading) + following.start()] if following else page[start:]


def _shipped_ids() -> list[str]:
    from engine.spec.catalog import builtin_specs_dir, is_abstract

    return sorted(p.stem for p in builtin_specs_dir().glob("*.yaml") if not is_abstract(p))


# --- every thing has its entry ----------------------------------------------------------------------------


def test_every_spec_key_at_every_level_has_a_row_in_its_models_section(pages):
    from engine.spec.models import spec_json_schema

    schema = spec_json_schema()
    page = pages["reference/spec-format.md"]
    models = {"Spec": schema, **schema["$defs"]}
    missing = []
    for title, model in models.items():
        shown = title[: -len("Patch")] if title.endswith("Patch") else title  # a patch's keys: its stage's
        section = _section(page, f"## {shown}")
        missing += [f"{title}.{key}" for key in model.get("properties", {}) if f"| `{key}` |" not in section]
    assert not missing
    assert len(models) >= 10


def test_every_property_name_anywhere_in_the_schema_is_on_the_spec_format_page(pages):
    from engine.spec.models import spec_json_schema

    def names(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    yield from value
                yield from names(value)
        elif isinstance(node, list):
            for value in node:
                yield from names(value)

    page = pages["reference/spec-format.md"]
    found = set(names(spec_json_schema()))
    assert {"format", "not_scorable", "for_each", "max_reasks", "expect", "template"} <= found
    assert not [name for name in found if f"| `{name}` |" not in page]


def test_every_shipped_scorer_has_a_page_an_index_row_and_a_nav_entry(hook, pages):
    ids = _shipped_ids()
    assert len(ids) >= 30
    index = pages["reference/scorers/index.md"]
    assert not [i for i in ids if f"reference/scorers/{i}.md" not in pages]
    assert not [i for i in ids if f"| [{i}]({i}.md) |" not in index]
    nav = hook.scorer_nav(list(pages))
    assert nav[0] == "reference/scorers/index.md"
    assert [next(iter(entry)) for entry in nav[1:]] == ids


def test_every_scorer_page_example_item_is_one_the_scorer_accepts():
    """The item each scorer page shows under "Use it" gives what the scorer needs: scored through a
    judge that answers every stage validly (the fake OpenAI server), it is scored or not scorable,
    never failed."""
    from engine import load_scorer
    from engine.testing.fake_openai import FakeOpenAIServer
    from engine.testing.schema_answers import schema_reply

    docs, _ = ref_sources.shipped_scorers()
    failed = {}
    with FakeOpenAIServer(schema_reply) as server:
        for doc in docs:
            item = ref_scorers.example_item(doc.spec)
            scorer = load_scorer(doc.spec.id, model="openai/fake-model", base_url=server.base_url, api_key="test",
                                 cache=False)
            result = scorer.run(**item)
            if result.status == "failed":
                failed[doc.spec.id] = (result.error.kind, result.error.message[:200])
    assert len(docs) >= 30 and not failed, failed


def test_a_page_comparing_with_the_reference_names_it():
    docs, _ = ref_sources.shipped_scorers()
    page = ref_scorers.scorer_page(next(d for d in docs if d.spec.id == "trajectory_accuracy"))
    assert "Unlike the reference" in page and "`@mastra/evals` 1.10.2" in page
    page = ref_scorers.scorer_page(next(d for d in docs if d.spec.id == "equals"))
    assert "Use it" in page and '"output": "Paris is the capital of France."' in page


def test_every_command_of_the_typer_app_has_its_heading_and_every_option_its_row(pages):
    command = ref_sources.cli_command()
    page = pages["reference/cli.md"]

    def walk(cmd, path):
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, f"{path} {name}")

    walked = list(walk(command, "scorespec"))
    assert {"scorespec eval", "scorespec cache stats", "scorespec cache clear", "scorespec compare"} <= {
        p for p, _ in walked}
    missing = []
    for path, cmd in walked:
        if f"## {path}\n" not in page:
            missing.append(path)
            continue
        section = _section(page, f"## {path}")
        missing += [f"{path} {opt}" for param in cmd.params if not getattr(param, "hidden", False)
                    for opt in getattr(param, "opts", ()) if opt.startswith("-") and f"`{opt}`" not in section]
    assert not missing


def test_every_rule_function_filter_test_and_global_is_on_the_functions_page(pages):
    from engine import functions

    page = pages["reference/functions.md"]
    rule_functions, jinja = ref_sources.expression_names()
    assert not [n for n in functions.names() if f"### {n}\n" not in page]
    listed = [*jinja.filters, *jinja.tests, *jinja.globals_added]
    assert {"count", "distinct", "copied", "num", "average_precision", "finite"} <= set(listed)
    assert not [n for n in listed if f"| `{n}` |" not in page]


def test_every_public_name_has_a_python_api_entry_that_is_that_object():
    import importlib

    import engine
    import engine.testing

    text = (ROOT / "docs" / "reference" / "python.md").read_text(encoding="utf-8")
    targets = re.findall(r"^::: ([\w.]+)$", text, re.M)
    by_name = {t.rsplit(".", 1)[1]: t for t in targets}
    public = [(engine, n) for n in engine.__all__] + [(engine.testing, n) for n in engine.testing.__all__]
    assert not [n for _, n in public if n not in by_name]
    for owner, name in public:
        module, _, attribute = by_name[name].rpartition(".")
        assert getattr(importlib.import_module(module), attribute) is getattr(owner, name), name


# --- the renderers give the expected text ---------------------------------------------------------------


def test_a_small_spec_renders_its_inputs_inherited_options_stages_score_and_reasons(tmp_path):
    folder = tmp_path / "scorer_specs"
    folder.mkdir()
    (folder / "shouty.yaml").write_text(
        "format: 1\nid: shouty\nextends: scorer_base\nname: Shouty\n"
        "description: Whether the output says the word.\nversion: 3\ndirection: lower_is_better\n"
        "notes: |\n  Counts **shouting**.\n"
        "fields:\n  output: {required: true, description: The text.}\n"
        "options:\n  word: {type: string, default: HEY, description: The word.}\n"
        "stages:\n  - id: check\n    function: includes\n    args: {text: run.output, expected: options.word}\n"
        "score:\n  formula: \"options.scale if check.found else 0\"\n  round: 2\n"
        "reason:\n  - id: found\n    when: check.found\n    template: \"It says {{ options.word }}.\"\n"
        "  - template: Quiet.\n", encoding="utf-8")
    doc = ref_sources.scorer_doc(folder / "shouty.yaml")
    page = ref_scorers.scorer_page(doc, pages={"shouty"})
    assert page.startswith("# Shouty\n\n`shouty` · lower is better · rule-only (no judge) · version 3\n")
    assert "Counts **shouting**." in page
    assert "**Extends**: `scorer_base`." in page
    assert "| `output` | yes | The text. |" in page
    assert "| `scale` | number | `1` | scorer_base | The score's upper bound. |" in page
    assert "| `word` | string | `\"HEY\"` | shouty | The word. |" in page
    assert ("| `check` | rule | `includes(text=run.output, expected=options.word)` "
            "| `{found: boolean, position: integer | null}` | always |") in page
    assert "score = options.scale if check.found else 0\nscale = options.scale; rounded to 2 places\n" in page
    assert "- `found`, when `check.found`: written from the template below." in page
    assert "- case 2, otherwise: written from the template below." in page
    assert "## Judge defaults" not in page
    index = ref_scorers.scorer_index([doc], [])
    assert "| [shouty](shouty.md) | Shouty | Whether the output says the word. | rule-only | lower is better |" in index


def test_an_abstract_base_with_notes_gets_its_section_on_the_index():
    from engine.spec.models import Spec

    base = Spec.model_validate({"format": 1, "id": "my_base", "abstract": True, "description": "Shared.",
                                "notes": "Every child asks **twice**."})
    bare = Spec.model_validate({"format": 1, "id": "bare_base", "abstract": True})
    index = ref_scorers.scorer_index([], [base, bare])
    assert "### my_base\n\nShared.\n\nEvery child asks **twice**.\n" in index
    assert "bare_base" not in index


def test_a_small_schema_renders_types_defaults_and_required_keys():
    schema = {
        "title": "Spec", "description": "Top.", "required": ["id"], "else": {"required": ["name"]},
        "properties": {
            "id": {"type": "string", "description": "The id."},
            "name": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "description": "A name."},
            "judge": {"$ref": "#/$defs/Judge", "description": "How."},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags."},
        },
        "$defs": {"Judge": {"title": "Judge", "description": "The judge.", "properties": {
            "temperature": {"type": "number", "minimum": 0, "maximum": 2, "default": 0.0, "description": "T."},
            "mode": {"enum": ["a", "b"], "default": "a", "description": "M."}}}},
    }
    page = ref_spec_format.render_spec_format(schema, {"Spec": {"judge": {}, "tags": []}})
    assert "| `id` | string | — | yes | The id. |" in page
    assert "| `name` | string | `null` | yes, unless abstract or given by the spec it extends | A name. |" in page
    assert "| `judge` | [Judge](#judge) | `{}` | no | How. |" in page
    assert "| `tags` | list of string | `[]` | no | Tags. |" in page
    assert "## Judge\n\nThe judge.\n\nWritten at `judge`.\n" in page
    assert "| `temperature` | number (0 to 2) | `0.0` | no | T. |" in page
    assert '| `mode` | `"a"` \\| `"b"` | `"a"` | no | M. |' in page
    assert ref_spec_format.model_paths(schema) == {"Spec": [""], "Judge": ["judge"]}


def test_the_spec_format_page_says_where_each_model_is_written(pages):
    page = pages["reference/spec-format.md"]
    assert "## Check\n\nA condition on a judge's answer" in page
    assert "Written at `stages[].checks[]`." in _section(page, "## Check")
    assert "Written at `score.not_scorable`." in _section(page, "## NotScorable")
    assert "Written at `fields.NAME`." in _section(page, "## FieldSpec")


def test_a_small_typer_app_renders_a_heading_usage_arguments_and_options_per_command():
    import typer

    app = typer.Typer(help="A tool.")
    group = typer.Typer(help="Things in [bold]groups[/bold].")
    app.add_typer(group, name="things")

    @app.command("greet")
    def greet(name: str = typer.Argument(..., help="Who."),
              times: int = typer.Option(2, "--times", "-n", help="How often."),
              loud: bool = typer.Option(False, "--loud", help="Shout.")) -> None:
        """Say hello <name>."""

    @group.command("count")
    def count() -> None:
        """Count them."""

    page = ref_cli.render_cli(typer.main.get_command(app), prog="tool")
    assert ref_cli.command_paths(typer.main.get_command(app), prog="tool") == ["tool", "tool greet", "tool things",
                                                                               "tool things count"]
    greet_section = _section(page, "## tool greet")
    assert "Say hello &lt;name>." in greet_section  # not read as an HTML tag
    assert "```text\ntool greet [OPTIONS] {name}\n```" in greet_section
    assert "| `NAME` | `<str>` | required | Who. |" in greet_section
    assert "| `--times`, `-n` | `<int>` | `2` | How often. |" in greet_section
    assert "| `--loud` | flag | `false` | Shout. |" in greet_section
    assert "Things in groups." in _section(page, "## tool things")
    assert "## tool things count\n\nCount them.\n" in page


def test_functions_are_shown_as_expressions_call_them():
    from engine.spec.expressions import _num

    assert ref_functions.call_text("num", _num, "filter") == "value | num(places=4)"
    assert ref_functions.call_text("divisibleby", lambda value, num: True, "test") == "value is divisibleby(num)"
    assert ref_functions.call_text("min", min, "global").startswith("min(iterable")


def test_google_style_docstring_sections_become_markdown():
    doc = ("Compare two texts.\n\nArgs:\n    reference: the expected\n        text.\n    candidate: the other.\n\n"
           "Returns:\n    ``{\"ratio\": float}``, in [0, 1].\n\nRaises:\n    TypeError: if not a ``str``.\n")
    assert ref_markdown.docstring_markdown(doc) == (
        "Compare two texts.\n\n**Args**\n\n- `reference`: the expected text.\n- `candidate`: the other.\n\n"
        "**Returns**: ``{\"ratio\": float}``, in [0, 1].\n\n**Raises**\n\n- `TypeError`: if not a ``str``.")


def test_table_cells_escape_pipes_only_outside_code():
    assert ref_markdown.cell("a | `b | c`\n d") == "a \\| `b | c` d"
    assert ref_markdown.cell("") == "—"
    assert ref_markdown.anchor("scorespec cache stats") == "scorespec-cache-stats"


def test_the_scorers_nav_entry_becomes_a_section_in_place(hook):
    nav = [{"Home": "index.md"}, {"Reference": [{"Spec format": "reference/spec-format.md"},
                                                {"Scorers": "reference/scorers/index.md"}]}]
    section = hook.scorer_nav(["reference/scorers/index.md", "reference/scorers/b.md", "reference/scorers/a.md",
                               "reference/cli.md"])
    assert section == ["reference/scorers/index.md", {"a": "reference/scorers/a.md"}, {"b": "reference/scorers/b.md"}]
    assert hook.with_scorer_nav(nav, section) == [
        {"Home": "index.md"}, {"Reference": [{"Spec format": "reference/spec-format.md"}, {"Scorers": section}]}]


def test_no_generated_page_is_committed_and_no_field_description_points_at_the_readme():
    from engine.spec.models import spec_json_schema

    for stub in ("spec-format.md", "functions.md", "cli.md", "scorers/index.md"):
        assert not (ROOT / "docs" / "reference" / stub).exists(), stub
    assert "README" not in str(spec_json_schema())


# --- the built site ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built once, strictly: its folder."""
    if importlib.util.find_spec("mkdocs") is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocs is not installed (the docs extra) and CI is set: the site must build in CI")
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.mark.slow
def test_the_site_builds_strictly_without_publishing_the_hooks(site):
    assert (site / "index.html").is_file()
    assert not (site / "hooks").exists()


@pytest.mark.slow
def test_the_built_site_has_every_reference_page_and_entry(site):
    import engine
    import engine.testing

    out = site
    for page in ("spec-format", "functions", "cli", "python", "scorers"):
        assert (out / "reference" / page / "index.html").is_file(), page
    assert not [i for i in _shipped_ids() if not (out / "reference" / "scorers" / i / "index.html").is_file()]
    cli = (out / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert not [p for p in ref_cli.command_paths(ref_sources.cli_command())
                if f'id="{ref_markdown.anchor(p)}"' not in cli]
    python = (out / "reference" / "python" / "index.html").read_text(encoding="utf-8")
    names = [*engine.__all__, *engine.testing.__all__]
    assert not [n for n in names if not re.search(rf'id="engine\.[\w.]*\b{n}"', python)]
    home = (out / "reference" / "scorers" / "faithfulness" / "index.html").read_text(encoding="utf-8")
    assert "href=\"../answer_relevancy/\"" in home  # the scorer pages are in the nav
