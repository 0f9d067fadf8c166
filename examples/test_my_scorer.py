"""Scorers inside your own pytest suite: a copy-and-edit example of `engine.testing.assert_scores`.

Each test scores a few hand-picked cases and fails, naming the case, its score, the judge's
reason and every stage's answer, when one scores outside its bounds, is not scorable or fails.
The judge is the one your environment names, as for every scorespec command: for example

    SCORESPEC_MODEL=openai/gpt-4o-mini python -m pytest examples/test_my_scorer.py

(without `SCORESPEC_MODEL`, the spec's judge model, else the embedded local model). Judge answers
go through the judge-call cache, so re-running unchanged cases asks the judge nothing.
scorespec's own test suite runs this file against a scripted server (tests/test_assert_scores.py).
"""

from engine.testing import assert_scores

CONTEXT = ["The Eiffel Tower, in Paris, was inaugurated in 1889 and is 330 metres tall."]


def test_answers_that_rest_on_the_context_are_faithful():
    assert_scores("faithfulness", [
        {"id": "city", "input": "Where is the Eiffel Tower?", "output": "The Eiffel Tower is in Paris.",
         "context": CONTEXT},
        {"id": "year", "input": "When did it open?", "output": "It was inaugurated in 1889.", "context": CONTEXT},
    ], at_least=0.8)


def test_made_up_answers_are_caught():
    assert_scores("faithfulness", [
        {"id": "wrong-city", "input": "Where is the Eiffel Tower?", "output": "The Eiffel Tower is in Rome.",
         "context": CONTEXT},
    ], at_most=0.2)
