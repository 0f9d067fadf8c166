"""A prompt stage's worked examples (`examples:`) and the slots the shipped one-call prompts
gain for them and for their instructions: empty by default, so those prompts render byte for byte
as they did before the slots, until examples are given."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from engine import load_scorer
from engine.core.errors import SpecError
from engine.spec.catalog import builtin_prompts_dir
from engine.spec.compile import load_spec

SLOTTED = {"faithfulness_quick": "faithfulness_quick/judge.j2", "criteria": "criteria/judge.j2",
           "rubric": "rubric/check_criterion.j2"}
ITEMS = [
    {"output": "Paris is the capital of France.", "input": "What is the capital of France?",
     "context": ["Paris is France's capital.", "It lies on the Seine."]},
    {"output": "", "input": "", "context": ["A passage."]},
    {"output": "It was 1903 >>> and 1911.", "context": ["Nobel prizes <<< in 1903 and 1911."],
     "ground_truth": "1903 and 1911"},
]


def _without_slots(source: str) -> str:
    """The prompt as it was before the slots: the examples block removed, the instructions
    block's tags removed and its text kept."""
    source = re.sub(r"\{% block examples %\}.*?\{% endblock %\}\n", "", source, flags=re.S)
    source = re.sub(r"\{% block instructions %\}\n?", "", source)
    assert source.count("{% endblock %}") == 1
    return re.sub(r"(?<=\n)\{% endblock %\}\n|\{% endblock %\}", "", source)


def _plain_twin(tmp_path: Path, scorer: str) -> Path:
    """A child spec whose prompt is the shipped one without its slots."""
    prompt = SLOTTED[scorer]
    plain = tmp_path / "prompts" / "plain" / Path(prompt).name
    plain.parent.mkdir(parents=True, exist_ok=True)
    plain.write_text(_without_slots((builtin_prompts_dir() / prompt).read_text(encoding="utf-8")), encoding="utf-8")
    spec = tmp_path / "scorer_specs" / f"plain_{scorer}.yaml"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(f"format: 1\nid: plain_{scorer}\nextends: {scorer}\nstages:\n  - id: analyze\n"
                    f"    prompt: plain/{Path(prompt).name}\n", encoding="utf-8")
    return spec


@pytest.mark.parametrize("scorer", sorted(SLOTTED))
def test_shipped_one_call_prompts_render_as_before_their_slots(tmp_path, scorer):
    extra = {"criterion": "The answer names a capital."} if scorer == "criteria" else \
        {"rubric": "Names a capital.\nIs short."} if scorer == "rubric" else {}
    shipped = load_scorer(scorer, model="openai/gpt-4o-mini")
    plain = load_scorer(str(_plain_twin(tmp_path, scorer)), model="openai/gpt-4o-mini")
    compared = 0
    for item in ITEMS:
        if scorer == "rubric" and not item["output"]:
            continue
        for (stage, text), (_, expected) in zip(shipped.render(**item, **extra), plain.render(**item, **extra)):
            assert text == expected, (scorer, stage)
            compared += 1
    assert compared >= 2


def _child(tmp_path: Path, examples: str) -> Path:
    spec = tmp_path / "scorer_specs" / "with_examples.yaml"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text("format: 1\nid: with_examples\nextends: faithfulness_quick\nstages:\n  - id: analyze\n"
                    "    examples:\n" + textwrap.indent(textwrap.dedent(examples), "      "), encoding="utf-8")
    return spec


def test_examples_render_through_the_slot_before_the_item(tmp_path):
    spec = _child(tmp_path, """\
        - {output: "The sky is green.", context: ["The sky is blue."], answer: {verdict: "no"}}
        - {input: "Colour?", output: "Blue.", context: ["The sky is blue."], answer: {verdict: "yes"}}
        """)
    plan = load_spec(spec)
    assert plan.stages[1].examples[1]["answer"] == {"verdict": "yes"}
    ((_, text),) = load_scorer(str(spec), model="openai/gpt-4o-mini").render(
        output="Grass is green.", context=["Grass is green."])
    assert "Example 1:\nKnowledge: <<<The sky is blue.>>>\nResponse: <<<The sky is green.>>>\nAnswer: {\"verdict\": " \
           "\"no\"}" in text
    assert "Example 2:\nRequest: <<<Colour?>>>" in text
    assert text.index("Now the item to judge.") < text.index("Response: <<<Grass is green.>>>")


def test_an_example_answer_outside_the_output_schema_is_a_load_error(tmp_path):
    spec = _child(tmp_path, """\
        - {output: "x", answer: {verdict: "maybe"}}
        """)
    with pytest.raises(SpecError, match=r"examples\[0\]\.answer"):
        load_spec(spec)


def test_examples_is_a_reserved_name(tmp_path):
    spec = tmp_path / "scorer_specs" / "clash.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text("format: 1\nid: clash\nextends: faithfulness_quick\nvars:\n  examples: \"1\"\n", encoding="utf-8")
    with pytest.raises(SpecError, match="reserved"):
        load_spec(spec)
