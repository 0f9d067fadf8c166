"""The environment-variables reference page, from `engine.core.environment.VARIABLES`.

`render_environment(variables, test_variables)` is pure given the declarations: a table per
group (the judge, the embedded models, files, providers), a row per variable with its meaning,
default and where it applies, and the variables only the test suite reads at the end.
"""

from __future__ import annotations

from typing import Any

from ref_markdown import code, table

INTRO = """\
# Environment variables

Every environment variable scorespec reads, generated from the one module that reads them
(`engine.core.environment`). A variable set to the empty string counts as not set. Where a
setting can also be given as a flag or an argument, the flag or argument wins; a spec's own
`judge.model` comes after `SCORESPEC_MODEL`, which stands for `--model`.
"""

GROUPS = {"judge": "The judge", "embedded": "The embedded models", "files": "Files and folders",
          "provider": "Providers"}

PROVIDER_NOTE = """\
Providers reached through instructor's `from_provider` (`google/…`, `groq/…`, `mistral/…`, …) read
their own variables inside their clients. Every variable whose name ends in `_API_KEY` is kept out
of messages, raw answers and logs.
"""


def _rows(variables: list[Any]) -> list[list[str]]:
    return [[code(v.name), v.meaning, v.default, v.applies] for v in variables]


def render_environment(variables: list[Any], test_variables: list[Any]) -> str:
    """The page's Markdown: a section per group of `variables` (in `GROUPS` order), then the
    `test_variables`."""
    header = ["variable", "meaning", "when not set", "applies to"]
    parts = [INTRO]
    for group, title in GROUPS.items():
        chosen = [v for v in variables if v.group == group]
        if chosen:
            parts.append(f"## {title}\n\n" + table(header, _rows(chosen)))
            if group == "provider":
                parts.append(PROVIDER_NOTE)
    if test_variables:
        parts.append("## The test suite\n\nRead by scorespec's own tests, never by the engine.\n\n"
                     + table(header, _rows(test_variables)))
    return "\n".join(parts)
