"""What the command line shows a new user: a repeatable option's value type as its element's
(``<str>``, not Python's ``<list[str]>``), and no run id after `scorespec run`, which stores
nothing `show` could find."""

from __future__ import annotations

import re

from typer.testing import CliRunner

import engine.cli.align  # noqa: F401  (registers the commands)
import engine.cli.calibrate  # noqa: F401
import engine.cli.compare  # noqa: F401
import engine.cli.eval  # noqa: F401
from engine.cli.help_types import element_type
from engine.cli.main import app

ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None, "NO_COLOR": "1"}


def test_help_names_a_repeatable_values_element_type_not_a_python_list():
    for command in ("eval", "run", "calibrate", "compare", "align", "render"):
        shown = CliRunner().invoke(app, [command, "--help"], env=ENV)
        assert shown.exit_code == 0, shown.output
        assert "list[" not in shown.output, command
    assert re.search(r"--field <str>", CliRunner().invoke(app, ["eval", "--help"], env=ENV).output)
    assert element_type("<list[list[int]]>") == "<int>" and element_type("<float range>") == "<float range>"


def test_run_prints_no_run_id_that_show_could_not_find():
    done = CliRunner().invoke(app, ["run", "textual_difference", "--output", "a b", "--ground-truth", "a c"], env=ENV)
    assert done.exit_code == 0, done.output
    footer = done.stdout.strip().splitlines()[-1]
    assert footer.startswith("model - · spec textual_difference v1") and " run " not in footer
