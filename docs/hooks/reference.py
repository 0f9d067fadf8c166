"""MkDocs hook: the reference pages, generated from the code at build time.

Registered in ``mkdocs.yml`` (``hooks:``); this folder is left out of the site
(``exclude_docs``). It adds virtual pages (`File.generated`, never written to ``docs/``):
``reference/spec-format.md``, ``reference/functions.md``, ``reference/cli.md``,
``reference/environment.md``,
``reference/scorers/index.md`` and ``reference/scorers/<id>.md`` per shipped scorer, and puts
the scorer pages in the nav under Reference → Scorers. The renderers (``ref_*.py`` beside this
file) are pure functions the tests call directly.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
for _folder in (Path(__file__).resolve().parent, ROOT):  # the renderers beside this file; this checkout's engine
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

import ref_sources  # noqa: E402
from ref_cli import render_cli  # noqa: E402
from ref_environment import render_environment  # noqa: E402
from ref_functions import render_functions  # noqa: E402
from ref_scorers import scorer_index, scorer_page  # noqa: E402
from ref_spec_format import render_spec_format  # noqa: E402

SCORERS_INDEX = "reference/scorers/index.md"


def generated_pages() -> dict[str, str]:
    """Every generated page: its path under ``docs/`` → its Markdown."""
    docs, bases = ref_sources.shipped_scorers()
    pages = {d.spec.id for d in docs}
    base_sections = {b.id for b in bases if b.notes}
    found = {
        "reference/spec-format.md": render_spec_format(*ref_sources.spec_schema()),
        "reference/functions.md": render_functions(*ref_sources.expression_names()),
        "reference/cli.md": render_cli(ref_sources.cli_command()),
        "reference/environment.md": render_environment(*ref_sources.environment_variables()),
        SCORERS_INDEX: scorer_index(docs, bases),
    }
    for doc in docs:
        found[f"reference/scorers/{doc.spec.id}.md"] = scorer_page(doc, pages, base_sections)
    return found


def scorer_nav(paths: list[str]) -> list[Any]:
    """The Scorers section of the nav: the index first, then a page per scorer (titled by its id)."""
    pages = sorted(p for p in paths if p.startswith("reference/scorers/") and p != SCORERS_INDEX)
    return [SCORERS_INDEX, *({Path(p).stem: p} for p in pages)]


def with_scorer_nav(nav: Any, section: list[Any]) -> Any:
    """`nav` with the entry whose value is the scorers' index replaced by `section` (its title kept)."""
    if isinstance(nav, list):
        return [with_scorer_nav(item, section) for item in nav]
    if isinstance(nav, dict):
        return {title: section if value == SCORERS_INDEX else with_scorer_nav(value, section)
                for title, value in nav.items()}
    return nav


_PAGES: dict[str, str] = {}


def on_config(config: Any) -> Any:
    """Generate the pages once per build and put the scorer pages in the nav."""
    _PAGES.clear()
    _PAGES.update(generated_pages())
    if config.nav:
        config.nav = with_scorer_nav(config.nav, scorer_nav(list(_PAGES)))
    return config


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages (replacing a file of the same path, should one exist)."""
    from mkdocs.structure.files import File

    for path, text in _PAGES.items():
        present = files.get_file_from_path(path)
        if present is not None:
            files.remove(present)
        files.append(File.generated(config, path, content=text))
    return files
