"""A run's settings as one object (`RunSettings`): built from keywords, recorded whole with the run,
read back whole on ``--resume`` (runs recorded before, in the CLI's old argument list, too); the
executor chosen through the `Executor` protocol; the CLI's shared options declared once."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engine
import engine.cli.compare  # noqa: F401  (registers compare)
import engine.cli.align  # noqa: F401  (registers align)
import engine.cli.calibrate  # noqa: F401  (registers calibrate)
import engine.cli.eval  # noqa: F401  (registers eval, runs, show)
from engine.cli.main import app
from engine import run_evals
from engine.run.executor import Executor, LocalExecutor, executor_of
from engine.run.settings import RunSettings
from engine.run.store import Store

SPECS = Path(__file__).resolve().parent / "specs"
NUMERIC = str(SPECS / "numeric.yaml")  # rule-only: score = the output read as a number × scale
ENV = {"COLUMNS": "250", "SCORESPEC_MODEL": None}


def invoke(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args], env=ENV)


def items(*outputs: str) -> list[dict]:
    return [{"id": i, "output": o} for i, o in enumerate(outputs, 1)]


def stored_config(store: Path, run_id: str) -> dict:
    with Store(store) as db:
        return db.get_run(run_id)["config"]


def test_settings_are_frozen_and_built_from_keywords():
    settings = RunSettings.build(concurrency=2, thresholds=["numeric=0.5"], fields=["output=answer"])
    assert settings.thresholds == ("numeric=0.5",) and settings.fields == ("output=answer",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.concurrency = 3  # type: ignore[misc]
    assert RunSettings.build(settings, limit=4) == dataclasses.replace(settings, limit=4)
    with pytest.raises(TypeError, match="concurency"):
        RunSettings.build(concurency=2)
    with pytest.raises(TypeError, match="concurency"):
        run_evals(items("1"), [NUMERIC], store=False, concurency=2)


def test_settings_go_to_json_and_back_whole(tmp_path):
    settings = RunSettings(concurrency=3, rate_limit=5.0, thresholds={"n": (0.2, 0.9), "m": 0.5},
                           fields=("output=answer",), samples=3, prices=tmp_path / "prices.yaml", max_cost=2.5,
                           limit=7, executor="ray", ray={"actors": 4}, refresh=True, out=tmp_path / "out.jsonl",
                           resume=True, run_id="r1", item_cutoffs={"n": 0.4})
    as_json = json.loads(json.dumps(settings.to_json_dict()))
    back = RunSettings.from_json_dict(as_json)
    assert back == dataclasses.replace(settings, prices=str(tmp_path / "prices.yaml"),
                                       out=str(tmp_path / "out.jsonl"))
    assert RunSettings.from_stored({"settings": as_json}) == back


def test_a_run_records_its_settings_whole_and_they_read_back_whole(tmp_path):
    store = tmp_path / "store.sqlite"
    settings = RunSettings(concurrency=2, thresholds={"numeric": 0.3}, limit=2, fields={"output": "answer"},
                           out=tmp_path / "out.jsonl", run_id="whole")
    summary = run_evals([{"id": i, "answer": str(i / 10)} for i in range(1, 4)], [NUMERIC], settings, store=store)
    assert summary.items == 2 and summary.verdict == "below_threshold"  # mean 0.15 < 0.3
    config = stored_config(store, "whole")
    assert config["settings"] == settings.to_json_dict()
    assert RunSettings.from_stored(config) == dataclasses.replace(settings, out=str(tmp_path / "out.jsonl"))
    # keywords build the same settings
    again = run_evals([{"id": i, "answer": str(i / 10)} for i in range(1, 4)], [NUMERIC], store=store,
                      concurrency=2, thresholds={"numeric": 0.3}, limit=2, fields={"output": "answer"},
                      out=tmp_path / "again.jsonl", run_id="keywords")
    assert again.verdict == summary.verdict
    assert stored_config(store, "keywords")["settings"] == dataclasses.replace(
        settings, out=tmp_path / "again.jsonl", run_id="keywords").to_json_dict()


def test_the_cli_records_its_settings_and_resumes_them_by_run_id(tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in items("0.1", "0.2", "0.3")), encoding="utf-8")
    store = tmp_path / "store.sqlite"
    first = invoke("eval", NUMERIC, "--data", data, "--option", "numeric.scale=10", "--threshold", "numeric=2.5",
                   "--limit", "2", "--run-id", "cli-run", "--store", store, "--quiet")
    assert first.exit_code == 1, first.stderr  # mean 1.5 < 2.5
    config = stored_config(store, "cli-run")
    assert config["cli"] == {"command": "eval", "scorers": [NUMERIC], "data": str(data.resolve()),
                             "options": ["numeric.scale=10"], "model": None, "base_url": None}
    assert RunSettings.from_stored(config).thresholds == ("numeric=2.5",)
    resumed = invoke("eval", "--resume", "--run-id", "cli-run", "--store", store, "--quiet", "--json")
    summary = json.loads(resumed.stdout)
    assert resumed.exit_code == 1 and summary["items"] == 3 and summary["resumed"] == 2  # the limit is per attempt
    assert summary["scorers"]["numeric"]["mean"] == pytest.approx(2.0)  # scale 10, read back
    assert summary["scorers"]["numeric"]["threshold"]["min"] == 2.5


def _old_shape(store: Path, run_id: str, cli: dict) -> None:
    """Rewrite a run's config as runs recorded it before settings were stored whole: the CLI's
    arguments one by one in ``config["cli"]``, no ``config["settings"]``."""
    with sqlite3.connect(store) as db:
        (text,) = db.execute("SELECT config FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        config = json.loads(text)
        del config["settings"]
        config["cli"] = cli
        db.execute("UPDATE runs SET config = ? WHERE run_id = ?", (json.dumps(config), run_id))


def test_a_run_recorded_in_the_old_shape_still_resumes(tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps({"id": i, "answer": o}) + "\n" for i, o in enumerate(["0.1", "0.2", "0.3"], 1)),
                    encoding="utf-8")
    store = tmp_path / "store.sqlite"
    first = invoke("eval", NUMERIC, "--data", data, "--field", "output=answer", "--option", "numeric.scale=10",
                   "--threshold", "numeric=1.5", "--limit", "2", "--run-id", "old-run", "--store", store, "--quiet")
    assert first.exit_code == 0, first.stderr  # mean 1.5 ≥ 1.5
    _old_shape(store, "old-run", {
        "scorers": [NUMERIC], "data": str(data.resolve()), "fields": ["output=answer"],
        "options": ["numeric.scale=10"], "thresholds": ["numeric=1.5"], "model": None, "base_url": None,
        "samples": None, "prices": None, "limit": 2, "executor": None, "ray_address": None, "actors": None,
        "cpus_per_actor": None})
    old = RunSettings.from_stored(stored_config(store, "old-run"))
    assert old.fields == ("output=answer",) and old.thresholds == ("numeric=1.5",) and old.limit == 2
    resumed = invoke("eval", "--resume", "--run-id", "old", "--store", store, "--quiet", "--json")
    summary = json.loads(resumed.stdout)
    assert resumed.exit_code == 0, resumed.stderr
    assert summary["runId"] == "old-run" and summary["items"] == 3 and summary["resumed"] == 2
    assert summary["scorers"]["numeric"]["mean"] == pytest.approx(2.0)  # fields, options read back
    assert summary["scorers"]["numeric"]["threshold"]["min"] == 1.5
    assert "settings" in stored_config(store, "old-run")  # the resumed attempt records the new shape


def test_the_old_shape_gives_the_ray_flags_as_ray_settings():
    old = RunSettings.from_stored({"cli": {"executor": "ray", "ray_address": "auto", "actors": 3,
                                           "cpus_per_actor": None}})
    assert old.executor == "ray" and old.ray == {"address": "auto", "actors": 3}
    given = RunSettings(ray={"actors": 5})
    assert given.resumed_from(old).ray == {"address": "auto", "actors": 5} and given.resumed_from(old).executor == "ray"
    assert RunSettings.from_stored({}) == RunSettings()


def test_the_executor_is_chosen_through_its_protocol():
    assert isinstance(executor_of(RunSettings()), LocalExecutor)
    assert isinstance(LocalExecutor(), Executor)
    with pytest.raises(ValueError, match="engine.api"):
        executor_of(RunSettings(executor="ray"))
    with pytest.raises(ValueError, match="ray settings are for executor='ray'"):
        executor_of(RunSettings(ray={"actors": 2}))

    class Counting(LocalExecutor):
        name = "counting"
        attempts = 0

        def prepare(self, attempt):
            Counting.attempts += 1
            return super().prepare(attempt)

    summary = run_evals(items("0.5", "0.25"), [NUMERIC], store=False, executor=Counting())
    assert Counting.attempts == 1 and summary.scores == {"numeric": 0.375}


def test_the_public_facade_resolves_ray_and_the_run_package_does_not_import_it():
    import engine.api

    assert engine.run_evals is engine.api.run_evals and engine.RunSettings is RunSettings
    source = (Path(engine.__file__).parent / "run").rglob("*.py")
    assert not [p.name for p in source if "..ray" in p.read_text(encoding="utf-8")]


def _option_help(command: str, flag: str):
    import typer.main

    group = typer.main.get_command(app)
    params = group.commands[command].params  # type: ignore[attr-defined]
    return next(p for p in params if flag in getattr(p, "opts", ())).help


@pytest.mark.parametrize("flag", ["--model", "--base-url", "--option", "--out", "--store",
                                  "--cache", "--no-cache", "--refresh", "--samples", "--prices", "--max-cost",
                                  "--summary-md", "--report", "--quiet", "--field"])
def test_each_shared_option_is_declared_once(flag):
    """(--concurrency, --junit and --json: one declaration, a help text per command, see
    tests/test_cli_flags.py.)"""
    helps = [_option_help(command, flag) for command in ("eval", "calibrate", "compare")]
    assert helps[0] and all(h is helps[0] for h in helps)  # the same text object: one declaration
    if flag in ("--model", "--base-url", "--cache", "--no-cache", "--refresh"):
        assert _option_help("run", flag) is helps[0]
