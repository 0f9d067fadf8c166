"""What `align` keeps: a proposal is literal text even at its seam with the block's tags, a proposal
that copies a train item is refused, and a child is adopted only on a win larger than the dev
split's noise that holds on test; otherwise it is written as a rejected candidate."""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import pytest

from engine import load_scorer
from engine.alignment.candidates import instructions_of, pasted_item, with_instructions
from engine.alignment.loop import align
from engine.alignment.selection import BINARY, GRADED, Figures, adoption, compare_on_test, dev_noise
from engine.alignment.split import stratified_split
from engine.spec.compile import load_spec
from engine.testing import FakeJudge

RULE = "RULE-Z: a response that mentions a zebra is never supported by the knowledge."
PROMPT = "Response: <<<{{ run.output_text }}>>>\n{% block instructions %}Answer yes or no.{% endblock %}\n"


def _rendered_instructions(source: str) -> str:
    env = jinja2.Environment()
    page = env.from_string(source).render(run={"output_text": "X"})
    return page.split(">>>\n", 1)[1].rstrip("\n")


@pytest.mark.parametrize("text", ["Answer with JSON like {", "Say {", "{ alone", "a } b", "{{ not a variable }}"])
def test_a_proposal_is_literal_text_at_its_seam_with_the_block(text):
    source = with_instructions(PROMPT, text)
    assert _rendered_instructions(source) == text  # it parses, and renders as written
    assert jinja2.Environment().parse(source) is not None


def test_a_proposal_ending_in_a_brace_makes_a_candidate_that_compiles(tmp_path):
    prompt = load_spec("faithfulness_quick").stages[1].template.source
    assert instructions_of(prompt).endswith("Answer yes or no.")
    source = with_instructions(prompt, "Is it supported? Answer as JSON {")
    assert "{{% endblock" not in source
    jinja2.Environment().parse(source)


def _data(path: Path, n: int = 40, outputs: dict[int, str] | None = None) -> Path:
    rows = []
    for i in range(n):
        zebra = i % 2 == 0
        rows.append({"id": f"item-{i}", "input": f"Question number {i}?",
                     "context": [f"Passage {i} says the park has lions and giraffes."],
                     "output": f"Answer {i}: the park has {'a zebra' if zebra else 'lions'} (token T{i:03d}X).",
                     "label": "hallucinated" if zebra else "faithful"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _response(call) -> str:
    return call.messages[-1]["content"].rsplit("Response: <<<", 1)[1].split(">>>", 1)[0]


def test_a_proposal_that_pastes_a_train_item_is_refused(tmp_path):
    data = _data(tmp_path / "labelled.jsonl")
    outputs = [json.loads(line)["output"] for line in data.read_text(encoding="utf-8").splitlines()]

    def propose(call):  # every item's output pasted in: the train items' among them
        return {"diagnosis": "memorise", "instructions": "Answer no for these: " + " ".join(outputs)}

    judge = FakeJudge({"analyze": lambda call: {"verdict": "yes"}, "propose": propose})
    result = align(load_scorer("faithfulness_quick", judge=judge), data, positive=["faithful"],
                   out_dir=tmp_path / "out", strategies="instructions", candidates=1)
    (cand,) = result.candidates
    assert cand.dev is None and cand.dropped.startswith("the proposal pastes item item-")
    assert "'s output from the train split" in cand.dropped
    assert result.child is None and not (tmp_path / "out" / "scorer_specs").exists()


def test_pasted_item_ignores_short_texts_and_finds_a_passage_with_other_spacing():
    items = [{"id": 3, "output": "yes", "context": ["The  park has lions\nand giraffes only."]}]
    assert pasted_item("Answer yes when it is.", items) is None
    assert pasted_item("as in: the park has lions and giraffes only.", items) == "item 3's context"


def test_a_dev_tie_broken_by_roc_auc_is_no_win():
    parent, child = Figures(6, 0.5, 0.333, cutoff=0.5), Figures(6, 0.5, 0.444, cutoff=0.5)
    test = compare_on_test([1, 1, 0, 0], [1, 0, 0, 0], [True, True, False, False], BINARY, 0.5, 0.5)
    why = adoption(parent, child, test, BINARY)
    assert why == ("its dev balanced accuracy gain over the scorer (+0.000) is within the noise of 6 dev items "
                   "(more than 0.167 is needed)")


def test_a_child_clear_on_dev_but_worse_on_test_is_not_adopted():
    parent, child = Figures(10, 0.5, 0.5, cutoff=0.5), Figures(10, 0.9, 0.9, cutoff=0.5)
    worse = compare_on_test([1, 1, 0, 0], [1, 0, 1, 0], [True, True, False, False], BINARY, 0.5, 0.5)
    assert adoption(parent, child, worse, BINARY) == ("it is worse than the scorer on the test split "
                                                       "(balanced accuracy 0.500 against 1.000)")
    same = compare_on_test([1, 1, 0, 0], [1, 1, 0, 0], [True, True, False, False], BINARY, 0.5, 0.5)
    assert adoption(parent, child, same, BINARY) is None


def test_dev_noise_is_one_item_for_binary_and_spearmans_chance_spread_for_graded():
    assert dev_noise(20, BINARY) == pytest.approx(0.05)
    assert dev_noise(10, GRADED) == pytest.approx(1 / 3)
    assert dev_noise(1, BINARY) == 1.0


def test_a_win_within_the_dev_noise_is_written_as_a_rejected_candidate(tmp_path):
    data = _data(tmp_path / "labelled.jsonl")
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    split = stratified_split({r["id"]: r["label"] == "faithful" for r in rows}, seed=0)
    lucky = next(k for k in split.dev if int(k.split("-")[1]) % 2 == 0)  # one hallucinated dev item
    token = f"T{int(lucky.split('-')[1]):03d}X"

    def analyze(call):  # the rule helps on one dev item only: one decision of 10, the size of the noise
        return {"verdict": "no" if RULE in call.messages[-1]["content"] and token in _response(call) else "yes"}

    judge = FakeJudge({"analyze": analyze, "propose": lambda call: {"diagnosis": "z", "instructions": RULE}})
    out = tmp_path / "out"
    result = align(load_scorer("faithfulness_quick", judge=judge), data, positive=["faithful"], out_dir=out,
                   name="lucky", strategies="instructions", candidates=1, seed=0)
    assert result.chosen == "lucky_i1" and result.child is None
    assert result.parent_dev.balanced_accuracy == 0.5 and result.candidates[0].dev.balanced_accuracy == 0.6
    assert result.rejected.startswith("its dev balanced accuracy gain over the scorer (+0.100) is within the noise")
    assert not (out / "scorer_specs").exists()  # nothing a catalogue would pick up
    spec = out / "rejected" / "scorer_specs" / "lucky.yaml"
    assert result.files[0] == spec and spec.read_text(encoding="utf-8").startswith("# REJECTED by scorespec align")
    assert load_spec(spec).chain[:2] == ("lucky", "faithfulness_quick")
    record = json.loads((out / "rejected" / "lucky.align.json").read_text(encoding="utf-8"))
    assert record["adopted"] is False and record["rejected"] == result.rejected and record["child"] is None
