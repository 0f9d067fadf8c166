"""How every command reports an error: a user error (every class deriving from
`engine.core.errors.UserError`) as ``error: MESSAGE`` with exit 2, anything else as an internal
error that names the file keeping its traceback; and the command group that loads a command's
module only when the command is asked for."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

import engine.cli.main as cli_main
from engine.analysis.labelled import LabelError
from engine.cli.app import declared_commands
from engine.cli.flags import JudgeFlags, OutFlags, RayRunFlags, RunFlags, StoredRunFlags, build_settings
from engine.cli.main import app
from engine.core.errors import Problem, SpecError, UserError
from engine.core.language import LanguageError
from engine.core.messages import MessageError
from engine.core.patterns import PatternError
from engine.interpret.scorer import OptionError
from engine.judge.model import ModelError
from engine.ray.cluster import RayMissing, RayRunError
from engine.report.charts import ReportDependencyError
from engine.report.data import ReportError
from engine.run.budget import UnpricedModelError
from engine.run.items import DatasetError
from engine.run.prices import PriceTableError
from engine.run.store_schema import StoreVersionError
from engine.spec.scaffold import StageChoiceError
from engine.spec.snapshot import SpecHashMismatch, SpecNotKept
from engine.traces.otlp_export import OtlpExportError
from engine.traces.phoenix import PhoenixError

ROOT = Path(__file__).resolve().parent.parent

#: Each user-facing error class and the built-in error it has always been.
USER_ERRORS = [
    (DatasetError, ValueError), (ModelError, ValueError), (OptionError, ValueError), (LabelError, ValueError),
    (PriceTableError, ValueError), (UnpricedModelError, ValueError), (ReportError, ValueError),
    (ReportDependencyError, ImportError), (LanguageError, ValueError), (PatternError, ValueError),
    (MessageError, ValueError), (RayMissing, ImportError), (RayRunError, RuntimeError),
    (PhoenixError, ConnectionError), (OtlpExportError, RuntimeError), (StoreVersionError, RuntimeError),
    (StageChoiceError, ValueError), (SpecHashMismatch, ValueError), (SpecNotKept, LookupError),
]


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "250", "SCORESPEC_MODEL": None})


@pytest.mark.parametrize(("error", "builtin"), USER_ERRORS, ids=[e.__name__ for e, _ in USER_ERRORS])
def test_a_user_error_keeps_its_builtin_base(error, builtin):
    assert issubclass(error, UserError) and issubclass(error, builtin)


@pytest.mark.parametrize(("error", "builtin"), USER_ERRORS, ids=[e.__name__ for e, _ in USER_ERRORS])
def test_a_user_error_in_a_command_prints_its_message_and_exits_2(monkeypatch, error, builtin):
    def raising(as_json: bool) -> None:
        raise error("data.jsonl:3: what is wrong, and where")

    monkeypatch.setattr(cli_main, "_list_functions", raising)
    result = invoke("list", "--functions")
    assert (result.exit_code, result.stderr.strip()) == (2, "error: data.jsonl:3: what is wrong, and where")


def test_a_spec_error_prints_every_problem():
    problems = [Problem("unknown-key", "unknown key", "a.yaml", 3, 5, "stages[0].temprature")]
    assert issubclass(SpecError, UserError)

    def raising(as_json: bool) -> None:
        raise SpecError(problems)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli_main, "_list_functions", raising)
        result = invoke("list", "--functions")
    assert (result.exit_code, result.stderr.strip()) == (
        2, "error: a.yaml:3:5: stages[0].temprature: unknown key [unknown-key]")


def test_an_unexpected_exception_is_an_internal_error_with_its_traceback_kept(monkeypatch):
    def broken(as_json: bool) -> None:
        raise KeyError("surprise")

    monkeypatch.setattr(cli_main, "_list_functions", broken)
    result = invoke("list", "--functions")
    assert result.exit_code == 2
    found = re.fullmatch(r"error: internal error \(KeyError: 'surprise'\); please report it, with the traceback "
                         r"kept in (\S+scorespec-traceback-\S+\.txt)", result.stderr.strip())
    assert found, result.stderr
    kept = Path(found.group(1))
    text = kept.read_text(encoding="utf-8")
    kept.unlink()
    assert "Traceback (most recent call last)" in text and "in broken" in text and "KeyError: 'surprise'" in text


def test_a_real_user_error_from_a_batch_run_is_printed_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text(json.dumps({"id": "a", "output": "x", "ground_truth": "x"}) + "\n")
    result = CliRunner().invoke(app, ["eval", "textual_difference", "--data", "data.jsonl", "--quiet",
                                      "--threshold", "nobody=0.5"],
                                env={"SCORESPEC_STORE": str(tmp_path / "s.sqlite"), "SCORESPEC_MODEL": None})
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: threshold for 'nobody', which is not among the scorers "
                                     "(textual_difference)")


# --- the command group -----------------------------------------------------------------------

BATCH = {"eval", "runs", "show", "calibrate", "calibrations", "compare", "report", "align"}


def test_help_lists_every_command_its_modules_declare():
    declared = declared_commands()
    assert BATCH | {"list", "schema", "validate", "run", "render", "new"} <= set(declared)
    assert declared["show"] == "engine.cli.runs" and declared["calibrations"] == "engine.cli.calibrate"
    result = invoke("--help")
    assert result.exit_code == 0
    listed = set(re.findall(r"^  ([a-z]+)  ", result.stdout, re.M))
    assert listed == set(declared) | {"cache"}


def test_a_single_item_command_imports_no_batch_command():
    code = ("import sys\nfrom engine.cli.main import main\ntry:\n    main(['run', '--help'])\nexcept SystemExit:\n"
            "    pass\nprint(sorted(m for m in sys.modules if m.startswith('engine.cli.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    loaded = set(eval(done.stdout.strip().splitlines()[-1]))
    assert "engine.cli.main" in loaded
    assert not loaded & {"engine.cli.eval", "engine.cli.calibrate", "engine.cli.compare", "engine.cli.align",
                         "engine.cli.runs"}


# --- one set of run flags, one settings builder ---------------------------------------------------


def _flags(command: str) -> set[str]:
    found = typer.main.get_command(app).get_command(None, command)
    return {opt for param in found.params for opt in param.opts}


def _group_flags(*groups: type) -> set[str]:
    return {"--" + name.replace("_", "-") for group in groups for name in group.names()}


@pytest.mark.parametrize("command", ["eval", "calibrate", "compare", "align"])
def test_every_batch_command_has_every_judge_and_run_flag(command):
    assert _group_flags(JudgeFlags, RunFlags) <= _flags(command)
    assert {"--samples", "--language", "--rate-limit", "--limit", "--max-cost", "--prices"} <= _flags(command)


def test_eval_has_the_ray_and_stored_run_flags():
    assert _group_flags(RayRunFlags, StoredRunFlags) <= _flags("eval")
    assert {"--out", "--resume", "--run-id"} <= _flags("compare") and {"--out", "--resume"} <= _flags("calibrate")


def test_the_flags_become_the_run_and_judge_settings():
    run, judge = build_settings(JudgeFlags(model="openai/m", base_url="http://127.0.0.1:9/v1", no_cache=True),
                                RayRunFlags(field=["output=answer"], concurrency=3, samples=3, language="FR",
                                            executor="ray", actors=2),
                                StoredRunFlags(out=Path("o.jsonl"), resume=True, run_id="r1"),
                                thresholds=["x=0.5"], item_cutoffs={})
    assert (run.fields, run.concurrency, run.samples, run.language, run.executor, run.ray) == (
        ("output=answer",), 3, 3, "fr", "ray", {"actors": 2})
    assert (run.out, run.resume, run.run_id, run.thresholds, run.item_cutoffs) == (
        Path("o.jsonl"), True, "r1", ("x=0.5",), None)
    assert (judge.model, judge.base_url, judge.cache) == ("openai/m", "http://127.0.0.1:9/v1", None)
    calibrate_run, _ = build_settings(JudgeFlags(no_cache=True), RunFlags(samples=2), OutFlags())
    assert (calibrate_run.samples, calibrate_run.executor, calibrate_run.run_id) == (2, None, None)


def test_a_flag_group_keeps_its_order_defaults_and_values():
    assert RayRunFlags.names()[:3] == ["field", "concurrency", "rate_limit"]
    assert RayRunFlags.names()[-4:] == ["executor", "ray_address", "actors", "cpus_per_actor"]
    first, second = JudgeFlags(), JudgeFlags()
    first.option.append("scale=10")  # a list default is each group's own
    assert second.option == [] and JudgeFlags(model="m").replace(base_url="u") == JudgeFlags(model="m", base_url="u")
    with pytest.raises(AttributeError):
        first.model = "other"
    with pytest.raises(TypeError, match="unexpected flag"):
        JudgeFlags(modle="m")
