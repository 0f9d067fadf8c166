"""Sampled prompt stages: `samples: N` and `reduce:` (majority with a tie rule, mean, median, an
expression over `samples`), the agreement recorded per stage, per result and per scorer, the
load-time checks, `for_each` × `samples`, `--samples` on a run, and each sample cached under its
own sample index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.bind.load import load_scorer
from engine.bind.stack import make_judge
from engine.judge.retries import RetryPolicy
from engine.core.errors import SpecError
from engine.interpret.reduce import agreeing_share, central, majority
from engine.interpret.scorer import Scorer
from engine import run_evals
from engine.spec.compile import compile_file
from engine.spec.sampling import DEFAULT_SAMPLE_TEMPERATURE
from engine.testing import FakeJudge
from engine.testing.fake_openai import FakeOpenAIServer

VERDICT = '{type: string, enum: ["yes", "no", "unsure"]}'
PROMPTS = {"t/ask.j2": "Is this right?\n{{ run.output }}\n", "t/each.j2": "Is this claim right? {{ each }}\n"}


def spec(write_spec, stage: str, *, props: str = f"verdict: {VERDICT}", formula: str = "1",
         judge: str = "", name: str = "sampled") -> Path:
    """A spec with one prompt stage `a` (its extra keys in `stage`, one per line) answering an
    object with `props`."""
    extra = "".join(f"    {line}\n" for line in stage.strip().splitlines())
    text = (f"format: 1\nid: {name}\nname: Sampled\ndescription: d\nversion: 1\n{judge}"
            "stages:\n  - id: a\n    prompt: t/ask.j2\n    output_schema:\n      type: object\n"
            f"      properties:\n        {props}\n{extra}score:\n  formula: \"{formula}\"\n")
    return write_spec(name, text, PROMPTS)


def problems(path: Path) -> list[tuple[str, int, str, str]]:
    with pytest.raises(SpecError) as info:
        compile_file(path)
    return [(p.key_path, p.line, p.code, p.message) for p in info.value.problems]


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# --- reductions ------------------------------------------------------------------------------------


def test_majority_picks_the_most_common_verdict_and_its_share():
    reduced = majority([{"verdict": "no", "reason": "a"}, {"verdict": "yes", "reason": "b"},
                        {"verdict": "yes", "reason": "c"}], ["verdict"])
    assert reduced.answer == {"verdict": "yes", "reason": "b"}  # the first sample that gave it
    assert reduced.agreement == pytest.approx(2 / 3)


def test_majority_tie_goes_to_the_named_value_even_when_no_sample_gave_it():
    samples = [{"verdict": "yes", "reason": "a"}, {"verdict": "no", "reason": "b"}]
    reduced = majority(samples, ["verdict"], ("unsure",))
    assert reduced.answer == {"verdict": "unsure", "reason": "a"}
    assert reduced.agreement == 0.0
    given = majority(samples + [{"verdict": "unsure", "reason": "c"}], ["verdict"], ("unsure",))
    assert given.answer == {"verdict": "unsure", "reason": "c"} and given.agreement == pytest.approx(1 / 3)


def test_majority_tie_without_a_rule_goes_to_the_earliest_sample():
    reduced = majority([{"ok": False}, {"ok": True}, {"ok": True}, {"ok": False}], ["ok"])
    assert reduced.answer == {"ok": False} and reduced.agreement == 0.5


def test_majority_votes_on_the_combination_of_several_fields():
    reduced = majority([{"a": True, "b": "x"}, {"a": True, "b": "y"}, {"a": True, "b": "y"}], ["a", "b"])
    assert reduced.answer == {"a": True, "b": "y"} and reduced.agreement == pytest.approx(2 / 3)


def test_mean_and_median_with_spread_and_agreement_on_the_bounded_range():
    schema = {"properties": {"rating": {"type": "integer", "minimum": 1, "maximum": 5}, "why": {"type": "string"}}}
    samples = [{"rating": 4, "why": "a"}, {"rating": 5, "why": "b"}, {"rating": 2, "why": "c"}]
    mean = central(samples, ["rating"], "mean", schema)
    assert mean.answer == {"rating": pytest.approx(11 / 3), "why": "a"}
    assert mean.spread == {"rating": 3.0}
    assert mean.agreement == pytest.approx(1 - 3 / 4)
    median = central(samples, ["rating"], "median", schema)
    assert median.answer == {"rating": 4, "why": "a"} and isinstance(median.answer["rating"], int)
    assert central([{"rating": 3}] * 3, ["rating"], "mean", schema).agreement == 1.0


def test_numbers_without_bounds_have_a_spread_and_no_agreement():
    reduced = central([{"x": 0.25}, {"x": 0.75}], ["x"], "median", {"properties": {"x": {"type": "number"}}})
    assert reduced.answer == {"x": 0.5} and reduced.spread == {"x": 0.5} and reduced.agreement is None


def test_agreeing_share_compares_json_values():
    assert agreeing_share([{"a": 1}, {"a": 1}, {"a": 2}, {"a": True}], {"a": 1}) == 0.5


# --- a sampled stage in a run -------------------------------------------------------------------------


def test_sampled_stage_records_every_sample_the_agreement_and_the_reduced_answer(write_spec):
    path = spec(write_spec, "samples: 5\ntie: unsure", formula="1 if a.verdict == 'yes' else 0")
    judge = FakeJudge({"a": [{"verdict": v} for v in ("yes", "no", "yes", "unsure", "yes")]})
    result = load_scorer(str(path), judge=judge).run(output="x")
    assert result.score == 1.0
    record = result.stages["a"]
    assert record.samples == [{"verdict": v} for v in ("yes", "no", "yes", "unsure", "yes")]
    assert record.agreement == pytest.approx(3 / 5) and result.agreement == pytest.approx(3 / 5)
    assert record.result == {"verdict": "yes"}
    assert record.usage.calls == 5 and record.attempts == 5
    assert [json.loads(raw) for raw in json.loads(record.raw_answer)] == record.samples
    assert [(c.sample_index, c.temperature) for c in judge.calls] == [(i, DEFAULT_SAMPLE_TEMPERATURE) for i in range(5)]
    data = result.to_json_dict()
    assert data["agreement"] == pytest.approx(0.6) and data["stages"]["a"]["agreement"] == pytest.approx(0.6)


def test_a_tie_goes_to_the_spec_value(write_spec):
    path = spec(write_spec, "samples: 4\nreduce: majority\ntie: unsure", formula="1 if a.verdict == 'yes' else 0")
    judge = FakeJudge({"a": [{"verdict": v} for v in ("yes", "no", "no", "yes")]})
    result = load_scorer(str(path), judge=judge).run(output="x")
    assert result.stages["a"].result == {"verdict": "unsure"} and result.score == 0
    assert result.agreement == 0.0


def test_mean_reduces_a_rating_before_the_result_expression(write_spec):
    path = spec(write_spec, "samples: 3\nreduce: mean\nresult: \"answer.rating / 5\"",
                props="rating: {type: integer, minimum: 1, maximum: 5}", formula="a")
    judge = FakeJudge({"a": [{"rating": 4}, {"rating": 5}, {"rating": 3}]})
    result = load_scorer(str(path), judge=judge).run(output="x")
    assert result.score == pytest.approx(0.8)
    assert result.stages["a"].spread == {"rating": 2.0}
    assert result.agreement == pytest.approx(0.5)


def test_an_expression_over_samples_is_the_answer(write_spec):
    path = spec(write_spec, "samples: 3\nreduce: \"samples | map(attribute='verdict') | select('eq', 'yes') | list "
                "| length\"", formula="a / 3")
    judge = FakeJudge({"a": [{"verdict": "yes"}, {"verdict": "no"}, {"verdict": "yes"}]})
    result = load_scorer(str(path), judge=judge).run(output="x")
    assert result.stages["a"].result == 2 and result.score == pytest.approx(2 / 3)
    assert result.agreement == 0.0  # no sample equals the count


def test_samples_at_the_judge_temperature_when_it_is_above_zero(write_spec):
    path = spec(write_spec, "samples: 2", judge="judge:\n  temperature: 0.3\n")
    judge = FakeJudge({"a": {"verdict": "yes"}})
    load_scorer(str(path), judge=judge).run(output="x")
    assert [c.temperature for c in judge.calls] == [0.3, 0.3]


def test_a_failed_sample_fails_the_item_naming_it(write_spec):
    path = spec(write_spec, "samples: 3", judge="judge:\n  max_reasks: 0\n")
    judge = FakeJudge({"a": [{"verdict": "yes"}, {"verdict": "maybe"}]})
    result = load_scorer(str(path), judge=judge).run(output="x")
    assert result.status == "failed" and result.error.stage == "a" and result.error.kind == "judge"
    assert result.error.message.startswith("sample 1: ")
    assert result.stages["a"].samples == [{"verdict": "yes"}]


def test_for_each_times_samples(write_spec):
    text = (f"format: 1\nid: each\nname: E\ndescription: d\nversion: 1\nstages:\n  - id: a\n"
            f"    prompt: t/each.j2\n    for_each: \"['p', 'q']\"\n    samples: 3\n    output_schema:\n"
            f"      type: object\n      properties:\n        verdict: {VERDICT}\n"
            "score:\n  formula: \"(a | count('verdict', 'yes')) / 2\"\n")
    path = write_spec("each", text, PROMPTS)
    judge = FakeJudge({"a": [{"verdict": v} for v in ("yes", "yes", "yes", "no", "yes", "no")]})
    result = load_scorer(str(path), judge=judge).run(output="x")
    record = result.stages["a"]
    assert record.result == [{"verdict": "yes"}, {"verdict": "no"}] and result.score == 0.5
    assert record.samples == [[{"verdict": "yes"}] * 3, [{"verdict": "no"}, {"verdict": "yes"}, {"verdict": "no"}]]
    assert record.agreements == [1.0, pytest.approx(2 / 3)]
    assert record.agreement == pytest.approx(2 / 3) and result.agreement == pytest.approx(2 / 3)
    assert [(judge.prompts("a")[i].strip(), c.sample_index) for i, c in enumerate(judge.calls)] == [
        ("Is this claim right? p", 0), ("Is this claim right? p", 1), ("Is this claim right? p", 2),
        ("Is this claim right? q", 0), ("Is this claim right? q", 1), ("Is this claim right? q", 2)]
    assert record.usage.calls == 6


def test_unsampled_stage_json_has_no_sampling_keys(write_spec):
    path = spec(write_spec, "")
    result = load_scorer(str(path), judge=FakeJudge({"a": {"verdict": "yes"}})).run(output="x")
    data = result.to_json_dict()
    assert "agreement" not in data and "samples" not in data["stages"]["a"]
    assert result.agreement is None


def test_render_shows_a_sampled_question_once(write_spec):
    path = spec(write_spec, "samples: 4")
    shown = load_scorer(str(path), judge=FakeJudge()).render(output="x", answers={"a": {"verdict": "yes"}})
    assert [stage for stage, _ in shown] == ["a"]


# --- --samples on a run --------------------------------------------------------------------------------


def test_samples_override_samples_every_reducible_stage_and_names_the_others(write_spec):
    text = (f"format: 1\nid: two\nname: T\ndescription: d\nversion: 1\nstages:\n"
            "  - id: claims\n    prompt: t/ask.j2\n    output_schema:\n      type: object\n      properties:\n"
            "        claims: {type: array, items: {type: string}}\n    result: answer.claims\n"
            f"  - id: a\n    prompt: t/ask.j2\n    output_schema:\n      type: object\n      properties:\n"
            f"        verdict: {VERDICT}\nscore:\n  formula: \"1 if a.verdict == 'yes' else 0\"\n")
    path = write_spec("two", text, PROMPTS)
    scorer = Scorer(compile_file(path), judge=FakeJudge({"claims": {"claims": ["c"]}, "a": {"verdict": "yes"}}),
                    samples=3)
    assert scorer.unsampled == ["claims"]
    assert [s.samples for s in scorer.plan.stages] == [1, 3]
    result = scorer.run(output="x")
    assert result.stages["claims"].usage.calls == 1 and result.stages["a"].usage.calls == 3
    assert result.agreement == 1.0
    once = scorer.with_samples(1)
    assert [s.samples for s in once.plan.stages] == [1, 1] and scorer.plan.stages[1].samples == 3
    with pytest.raises(ValueError, match="samples"):
        scorer.with_samples(0)


def test_run_evals_samples_and_mean_agreement_per_scorer(write_spec):
    path = spec(write_spec, "", formula="1 if a.verdict == 'yes' else 0")
    # items alternate: all three samples agree, then two of three
    replies = [{"verdict": v} for v in ("yes", "yes", "yes", "yes", "no", "yes")]
    judge = FakeJudge({"a": replies * 2})
    summary = run_evals([{"id": i, "output": f"o{i}"} for i in range(4)], [load_scorer(str(path), judge=judge)],
                        samples=3, concurrency=1, store=False, prices=False)
    stats = summary.scorers["sampled"]
    assert stats.scored == 4 and stats.mean == 1.0
    assert stats.agreement == pytest.approx((1 + 2 / 3 + 1 + 2 / 3) / 4)
    assert summary.to_json_dict()["scorers"]["sampled"]["agreement"] == pytest.approx(stats.agreement)
    assert summary.usage["sampled"].calls == 12


# --- load-time checks --------------------------------------------------------------------------------


def test_majority_on_an_answer_without_enum_or_boolean_is_an_error_at_its_line(write_spec):
    path = spec(write_spec, "samples: 3\nreduce: majority", props="claims: {type: array, items: {type: string}}")
    [(key, line, code, message)] = problems(path)
    assert (key, line, code) == ("stages[0].reduce", line_of(path, "reduce: majority"), "sampling")
    assert "needs an enum or boolean field" in message


def test_tie_value_not_in_the_enum_is_an_error_at_its_line(write_spec):
    path = spec(write_spec, "samples: 3\ntie: maybe")
    [(key, line, code, message)] = problems(path)
    assert (key, line, code) == ("stages[0].tie", line_of(path, "tie: maybe"), "sampling")
    assert message == 'tie "maybe" is not a value \'verdict\' can take ("yes", "no", "unsure")'


def test_tie_needs_majority_and_a_value_per_voting_field(write_spec):
    mean = spec(write_spec, "samples: 3\nreduce: mean\ntie: 2", props="rating: {type: integer}", name="tie_mean")
    assert [(k, c) for k, _, c, _ in problems(mean)] == [("stages[0].tie", "sampling")]
    two = spec(write_spec, "samples: 3\ntie: unsure", props=f"verdict: {VERDICT}\n        ok: {{type: boolean}}",
               name="tie_two")
    [(key, _, _, message)] = problems(two)
    assert key == "stages[0].tie" and message == "2 fields vote (verdict, ok): say the tie value of each"
    mapped = spec(write_spec, "samples: 3\ntie: {verdict: unsure, ok: false}",
                  props=f"verdict: {VERDICT}\n        ok: {{type: boolean}}", name="tie_mapped")
    assert compile_file(mapped).stages[0].sampling.tie == ("unsure", False)


def test_samples_without_anything_to_reduce_and_samples_at_temperature_zero(write_spec):
    text = spec(write_spec, "samples: 3", props="claims: {type: array, items: {type: string}}", name="nothing")
    [(key, _, code, message)] = problems(text)
    assert (key, code) == ("stages[0].samples", "sampling") and "cannot be reduced" in message
    cold = spec(write_spec, "samples: 3\ntemperature: 0", name="cold")
    [(key, line, _, message)] = problems(cold)
    assert (key, line) == ("stages[0].temperature", line_of(cold, "temperature: 0"))
    assert "at temperature 0" in message


def test_reduce_expression_names_are_checked(write_spec):
    path = spec(write_spec, "samples: 3\nreduce: \"sampels | first\"")
    [(key, _, code, message)] = problems(path)
    assert (key, code) == ("stages[0].reduce", "undefined-name") and "'sampels'" in message


# --- per-sample caching ------------------------------------------------------------------------------


def test_each_sample_is_cached_under_its_own_index(write_spec, tmp_path):
    path = spec(write_spec, "samples: 3")
    counter = {"n": 0}

    def reply(request: dict) -> dict:
        counter["n"] += 1
        return {"verdict": "yes" if counter["n"] % 2 else "no"}

    cache = tmp_path / "cache.sqlite"
    with FakeOpenAIServer(reply) as server:
        def scorer(samples: int | None = None) -> Scorer:
            judge = make_judge("openai/test-model", base_url=server.base_url, api_key="test", cache=cache,
                               retry=RetryPolicy(max_retries=0, base_s=0.01))
            return Scorer(compile_file(path), judge=judge, samples=samples)

        first = scorer().run(output="x")
        assert len(server.requests) == 3
        assert first.stages["a"].samples == [{"verdict": "yes"}, {"verdict": "no"}, {"verdict": "yes"}]
        assert all(r["temperature"] == DEFAULT_SAMPLE_TEMPERATURE for r in server.requests)
        again = scorer().run(output="x")
        assert len(server.requests) == 3  # every sample served from the cache, each its own answer
        assert again.stages["a"].samples == first.stages["a"].samples
        assert (again.usage.cache_hits, again.usage.calls, again.usage.tokens_in) == (3, 0, 0)
        more = scorer(5).run(output="x")
        assert len(server.requests) == 5  # samples 3 and 4 are new questions
        assert more.stages["a"].samples[:3] == first.stages["a"].samples
        assert (more.usage.cache_hits, more.usage.cache_misses) == (3, 2)


def test_a_judge_with_sample_seeds_sends_the_sample_index_as_seed(write_spec):
    path = spec(write_spec, "samples: 3")
    with FakeOpenAIServer({"verdict": "yes"}) as server:
        judge = make_judge("openai/test-model", base_url=server.base_url, api_key="test")
        judge.provider.sample_seeds = True  # what the embedded judges do: their default seed is fixed
        Scorer(compile_file(path), judge=judge).run(output="x")
        assert [r.get("seed") for r in server.requests] == [None, 1, 2]


def test_run_command_shows_a_stages_samples_and_agreement(write_spec):
    from typer.testing import CliRunner

    from engine.cli.main import app

    path = spec(write_spec, "samples: 4")
    replies = iter([{"verdict": v} for v in ("yes", "no", "yes", "yes")])
    with FakeOpenAIServer(lambda request: next(replies)) as server:
        result = CliRunner().invoke(app, ["run", str(path), "--output", "x", "--no-cache", "--model",
                                          "openai/test-model", "--base-url", server.base_url],
                                    env={"COLUMNS": "250", "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None})
    assert result.exit_code == 0, result.output
    header, row = [line.split() for line in result.stdout.splitlines()[1:3]]
    assert header[-3:] == ["seconds", "samples", "agreement"]
    assert row[0] == "a" and row[-2:] == ["4", "0.75"]
