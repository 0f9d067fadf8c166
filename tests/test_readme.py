"""The README is a short front page: its two commands are the ones CI runs and a new user types."""

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAIN_COMMAND = "scorespec eval faithfulness --data examples/begin_wow.jsonl --out results.jsonl"


def _pip_and_pytest(command: str) -> list[list[str]]:
    """The steps of an install-and-test command, with `python3 -m pip` and `pip` read alike."""
    steps = []
    for part in command.split("&&"):
        words = shlex.split(part)
        while words[:2] in (["python3", "-m"], ["python", "-m"]):
            words = words[2:]
        steps.append([w for w in words if w != "-q"])
    return steps


def test_readme_is_a_short_front_page():
    assert len(README.splitlines()) <= 320


def test_readme_keeps_the_main_command_verbatim():
    assert MAIN_COMMAND in README


def test_readme_test_command_is_the_one_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    ci_command = next(line for line in ci.splitlines() if "pytest" in line and not line.startswith("#"))
    readme_commands = [line for line in README.splitlines() if line.startswith("pip install") and "pytest" in line]
    assert len(readme_commands) == 1, readme_commands
    assert _pip_and_pytest(readme_commands[0]) == _pip_and_pytest(ci_command)


def test_readme_links_resolve_to_files_of_the_repository():
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        assert (ROOT / target).exists(), target
