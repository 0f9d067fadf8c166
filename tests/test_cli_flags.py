"""One flag, one meaning across commands: `--option` (``ID.key=value`` everywhere, plain
``key=value`` where one scorer runs) and calibrate's `--cutoff` (`--threshold` a deprecated
alias there; eval's `--threshold` bounds a mean)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli.main import app

SPECS = Path(__file__).resolve().parent / "specs"
NUMERIC = str(SPECS / "numeric.yaml")  # rule-only: score = the output read as a number × scale
ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None}


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path, monkeypatch):
    monkeypatch.setenv("SCORESPEC_STORE", str(tmp_path / "store.sqlite"))
    monkeypatch.chdir(tmp_path)


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env=ENV)


@pytest.fixture
def data(tmp_path) -> str:
    path = tmp_path / "data.jsonl"
    rows = [{"id": "a", "output": "0.5", "ground_truth": "0.5"}, {"id": "b", "output": "1", "ground_truth": "0"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _means(result) -> dict:
    assert result.exit_code == 0, result.output
    return {sid: s["mean"] for sid, s in json.loads(result.stdout)["scorers"].items()}


@pytest.mark.parametrize("option", ["scale=10", "numeric.scale=10"])
def test_eval_of_one_scorer_takes_plain_and_prefixed_options(data, option):
    assert _means(invoke("eval", NUMERIC, "--data", data, "--option", option, "--json", "--quiet")) == {"numeric": 7.5}


def test_eval_of_several_scorers_takes_prefixed_options(data):
    result = invoke("eval", NUMERIC, "textual_difference", "--data", data, "--option", "numeric.scale=10",
                    "--option", "textual_difference.scale=2", "--json", "--quiet")
    # textual_difference: "0.5" vs "0.5" scores 1, "1" vs "0" scores 0; × 2
    assert _means(result) == {"numeric": 7.5, "textual_difference": 1.0}


def test_eval_of_several_scorers_refuses_a_plain_option_naming_it(data):
    result = invoke("eval", NUMERIC, "textual_difference", "--data", data, "--option", "scale=10", "--quiet")
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: --option 'scale=10': 2 scorers run (numeric, textual_difference): say "
                                     "whose option it is, as ID.key=value (e.g. numeric.scale=10)")


@pytest.mark.parametrize("command", [["run", "textual_difference", "--output", "a"],
                                     ["eval", "textual_difference", "--data", "data.jsonl"]])
def test_an_option_for_a_scorer_that_is_not_running_is_an_error(data, command):
    result = invoke(*command, "--option", "faithfulness.scale=10")
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: --option 'faithfulness.scale=10': 'faithfulness' is not among the "
                                     "scorers (textual_difference); write ID.key=value (e.g. "
                                     "textual_difference.scale=10)")


@pytest.mark.parametrize("option", ["scale=10", "textual_difference.scale=10"])
def test_run_takes_plain_and_prefixed_options(option):
    result = invoke("run", "textual_difference", "--output", "hello there world", "--ground-truth", "hello world",
                    "--option", option, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["score"] == pytest.approx(5.08403, abs=1e-5)


def test_render_takes_prefixed_options():
    result = invoke("render", "faithfulness", "--output", "x", "--option", 'faithfulness.context=["Passage P."]')
    assert result.exit_code == 0, result.output
    answer = json.dumps({"claims": ["c"]})
    shown = invoke("render", "faithfulness", "--output", "x", "--option", 'faithfulness.context=["Passage P."]',
                   "--answer", f"preprocess={answer}")
    assert "Passage P." in shown.stdout


def test_an_option_without_a_value_names_both_forms():
    result = invoke("run", "textual_difference", "--output", "a", "--option", "scale")
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: --option 'scale': expected key=value or ID.key=value (e.g. "
                                     "textual_difference.scale=10)")


# --- calibrate: --cutoff, --threshold deprecated ---------------------------------------------------------


@pytest.fixture
def labelled(tmp_path) -> str:
    path = tmp_path / "labelled.jsonl"
    rows = [("a", "0.95", "good"), ("b", "0.7", "good"), ("c", "0.6", "bad"), ("d", "0.1", "bad")]
    path.write_text("".join(json.dumps({"id": i, "output": o, "label": lab}) + "\n" for i, o, lab in rows))
    return str(path)


def _figures(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_calibrate_cutoff_sets_the_score_cut_off(labelled):
    figures = _figures(invoke("calibrate", NUMERIC, "--data", labelled, "--positive", "good", "--cutoff", "0.65",
                              "--json", "--quiet"))
    assert figures["cutoff"] == 0.65
    assert figures["confusion"] == {"tp": 2, "fp": 0, "tn": 2, "fn": 0}
    default = _figures(invoke("calibrate", NUMERIC, "--data", labelled, "--positive", "good", "--json", "--quiet"))
    assert default["cutoff"] == 0.5 and default["confusion"] == {"tp": 2, "fp": 1, "tn": 1, "fn": 0}


def test_calibrate_threshold_still_works_and_warns(labelled):
    result = invoke("calibrate", NUMERIC, "--data", labelled, "--positive", "good", "--threshold", "0.65",
                    "--json", "--quiet")
    figures = _figures(result)
    assert figures["cutoff"] == 0.65 and figures["confusion"] == {"tp": 2, "fp": 0, "tn": 2, "fn": 0}
    assert result.stderr.splitlines()[0] == ("warning: calibrate --threshold is deprecated and will be removed: use "
                                             "--cutoff 0.65 (a score cut-off; eval's --threshold bounds a mean)")


def test_calibrate_refuses_cutoff_and_threshold_together(labelled):
    result = invoke("calibrate", NUMERIC, "--data", labelled, "--positive", "good", "--threshold", "0.6",
                    "--cutoff", "0.7")
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: --threshold is the old name of --cutoff: give only --cutoff"


@pytest.mark.parametrize("option", ["scale=10", "numeric.scale=10"])
def test_calibrate_takes_plain_and_prefixed_options(labelled, option):
    figures = _figures(invoke("calibrate", NUMERIC, "--data", labelled, "--positive", "good", "--option", option,
                              "--json", "--quiet"))
    assert figures["cutoff"] == 5.0  # half the scale of 10
    assert figures["confusion"] == {"tp": 2, "fp": 1, "tn": 1, "fn": 0}


# --- every help text is true for its command ----------------------------------------------------

_FLAG = __import__("re").compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]")


def _flags_and_texts(name: str) -> tuple[set[str], list[str]]:
    import typer.main

    command = typer.main.get_command(app).get_command(None, name)  # the group loads the command's module
    flags = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}
    texts = [command.help or ""] + [getattr(param, "help", None) or "" for param in command.params]
    return flags, texts


@pytest.mark.parametrize("command", ["eval", "calibrate", "compare", "run", "align"])
def test_every_flag_a_help_text_names_is_a_flag_of_its_command(command):
    flags, texts = _flags_and_texts(command)
    named = {flag for text in texts for flag in _FLAG.findall(text)}
    assert _FLAG.findall("per actor with --executor ray, not --item-cutoff.") == ["--executor", "--item-cutoff"]
    assert named <= flags, f"{command} --help names flags it does not have: {sorted(named - flags)}"


@pytest.mark.parametrize("command", ["calibrate", "compare"])
def test_help_texts_name_no_other_command_and_show_one_default(command):
    other = {"calibrate": "compare", "compare": "calibrate"}[command]
    result = invoke(command, "--help")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"({other})" not in text and f"{other}:" not in text
    assert "summary, figures or comparison" not in text
    _, texts = _flags_and_texts(command)
    assert all(t.count("[default") <= 1 for t in texts)


def test_run_usage_names_its_argument_scorer():
    result = invoke("run", "--help")
    assert result.exit_code == 0, result.output
    assert "SCORER" in result.output.splitlines()[0] or "SCORER" in result.output.split("Arguments")[0]
    assert "{spec}" not in result.output


@pytest.mark.parametrize("command", ["eval", "compare"])
def test_a_negative_rate_limit_or_a_budget_not_above_zero_is_a_usage_error(data, command):
    versions = [NUMERIC] if command == "eval" else [NUMERIC, f"b={NUMERIC}"]
    for flag, bad, message in (("--rate-limit", "-1", "a number ≥ 0 is needed"),
                               ("--max-cost", "0", "a number > 0 is needed"),
                               ("--max-cost", "-1", "a number > 0 is needed")):
        result = invoke(command, *versions, "--data", data, flag, bad)
        assert result.exit_code == 2, result.output
        assert message in " ".join(result.output.split())


def test_a_rate_limit_of_zero_means_no_limit(data):
    result = invoke("eval", NUMERIC, "--data", data, "--rate-limit", "0", "--store", str(Path(data).parent / "s.sqlite"))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("flag", ["--concurrency", "--junit", "--json", "--resume", "--label-field", "--top"])
def test_an_option_whose_help_differs_by_command_is_still_declared_once(flag):
    """The variants `engine.cli.options.with_help` makes change the help text only."""
    import typer.main

    group = typer.main.get_command(app)
    commands = [name for name in ("eval", "calibrate", "compare")
                if any(flag in p.opts for p in group.commands[name].params)]
    params = [next(p for p in group.commands[name].params if flag in p.opts) for name in commands]
    assert len(params) >= 2
    shape = {(tuple(p.opts), p.type_descriptor.annotation, p.min, p.max, p.is_flag, p.metavar, p.multiple,
              p.callback) for p in params}
    assert len(shape) == 1, shape
    assert all(p.help for p in params)


@pytest.mark.parametrize("command, whose", [("calibrate", "the scorer's"), ("compare", "the baseline's"),
                                            ("align", "the scorer's")])
def test_the_cutoff_help_names_the_spec_cutoff_as_the_default(command, whose):
    text = " ".join(invoke(command, "--help").output.split())
    assert f"[default: the cut-off {whose} spec documents (its cutoff key), else half" in text
    assert "[default: half the scale]" not in text


def test_align_report_help_says_what_the_alignment_page_holds():
    text = " ".join(invoke("align", "--help").output.split())
    assert ("Write an HTML page of the alignment: the candidates with their dev figures, the comparison with the "
            "scorer on the test split, and the diff of the child's prompt.") in text
    assert "every item's prompts and answers" not in text
