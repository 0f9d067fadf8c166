"""Provider limits reach the right error kind: a provider refusing a prompt longer than its context
is ``prompt_too_long`` (not ``judge``), and an answer its content filter stopped is
``content_filter``, never scored even when what came back parses."""

from __future__ import annotations

import pytest

from engine.bind.load import load_scorer
from engine.core.errors import ERROR_KINDS, ScorerRunError
from engine.core.result import ItemError
from engine.testing.fake_replies import Fault

CLAIMS = {"claims": ["Paris is in France."]}
ITEM = {"output": "Paris is in France.", "context": ["Paris is in France."]}


def openai_error(message: str, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": code}}


@pytest.mark.parametrize("body, said", [
    (openai_error("This model's maximum context length is 8192 tokens. However, your messages resulted in "
                  "9120 tokens. Please reduce the length of the messages.", "context_length_exceeded"),
     "maximum context length is 8192 tokens"),
    (openai_error("Request too large.", "context_length_exceeded"), "Request too large."),
    (openai_error("This model's maximum context length is 4096 tokens."), "maximum context length is 4096"),
    ({"type": "error", "error": {"type": "invalid_request_error",
                                 "message": "prompt is too long: 210931 tokens > 200000 maximum"}},
     "prompt is too long: 210931 tokens > 200000 maximum"),
    (openai_error("The input (9000 tokens) is longer than the model's context length (8192 tokens)."),
     "longer than the model's context length"),
], ids=["openai_code", "code_only", "message_only", "anthropic", "context_length_words"])
def test_a_provider_refusing_a_prompt_over_its_context_is_prompt_too_long(fake_server, http_judge, body, said):
    fake_server.script(Fault.status(400, body=body))
    result = load_scorer("faithfulness", judge=http_judge).run(**ITEM)
    assert (result.status, result.score) == ("failed", None)
    assert (result.error.kind, result.error.stage) == ("prompt_too_long", "preprocess")
    assert result.error.message.startswith("the provider refused the prompt of stage 'preprocess' as longer than "
                                           "the model's context window (")
    assert said in result.error.message
    assert len(fake_server.requests) == 1  # never retried


def test_another_bad_request_stays_a_judge_failure(fake_server, http_judge):
    fake_server.script(Fault.status(400, body=openai_error("Invalid value for 'temperature'.", "invalid_value")))
    result = load_scorer("faithfulness", judge=http_judge).run(**ITEM)
    assert (result.error.kind, result.error.stage) == ("judge", "preprocess")
    assert "Invalid value for 'temperature'." in result.error.message


@pytest.mark.parametrize("mode", [None, "json_schema"])
def test_a_content_filtered_answer_is_never_scored_even_when_it_parses(fake_server, mode):
    from conftest import fast_judge

    fake_server.script(CLAIMS, Fault.content_filter({"verdict": "yes", "reason": "It says so."}))
    result = load_scorer("faithfulness", judge=fast_judge(fake_server, mode=mode)).run(**ITEM)
    assert (result.status, result.score) == ("failed", None)
    assert (result.error.kind, result.error.stage) == ("content_filter", "analyze")
    assert result.error.message == ("element 0: the provider's content filter stopped the answer "
                                    "(finish_reason content_filter); it is not scored")
    assert result.error.raw_answer == '{"verdict": "yes", "reason": "It says so."}'
    assert len(fake_server.requests) == 2  # not asked again: a filtered answer is not the judge's mistake


def test_a_content_filtered_answer_that_does_not_parse_is_content_filter_too(fake_server, http_judge):
    fake_server.script(Fault.content_filter('{"claims": ["Paris'))
    result = load_scorer("faithfulness", judge=http_judge).run(**ITEM)
    assert (result.error.kind, result.error.stage) == ("content_filter", "preprocess")
    assert result.error.raw_answer == '{"claims": ["Paris'


def test_content_filter_is_one_of_the_error_kinds():
    assert ERROR_KINDS.index("content_filter") == ERROR_KINDS.index("truncated") + 1
    assert ScorerRunError("content_filter", "x").kind == "content_filter"
    assert ItemError(kind="content_filter", message="x").kind == "content_filter"
