"""Shared fixtures: a fake OpenAI-compatible server, a fast judge against it, spec writers."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from engine.judge import RetryPolicy, make_judge
from engine.testing.fake_openai import FakeOpenAIServer

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SPEC_FIXTURES = TESTS / "specs"


@pytest.fixture
def fake_server():
    """A started `FakeOpenAIServer` with an empty script (unscripted requests answer 400)."""
    with FakeOpenAIServer() as server:
        yield server


def fast_judge(server: FakeOpenAIServer, *, max_retries: int = 3, api_key: str = "test", mode: str | None = None):
    """The real openai + instructor judge against `server`, with millisecond backoff."""
    return make_judge(
        "openai/test-model",
        base_url=server.base_url,
        api_key=api_key,
        mode=mode,
        retry=RetryPolicy(max_retries=max_retries, base_s=0.01),
    )


@pytest.fixture
def http_judge(fake_server):
    return fast_judge(fake_server)


SpecWriter = Callable[..., Path]


@pytest.fixture
def write_spec(tmp_path: Path) -> SpecWriter:
    """Write a spec and its templates into a project-shaped folder under `tmp_path`.

    ``write_spec(name, yaml_text, prompts={"x/ask.j2": "..."})`` writes
    ``tmp_path/scorer_specs/NAME.yaml`` (dedented) and ``tmp_path/prompts/x/ask.j2`` and
    returns the spec's path. Templates resolve from ``tmp_path/prompts`` first.
    """

    def write(name: str, text: str, prompts: Mapping[str, str] | None = None) -> Path:
        spec_dir = tmp_path / "scorer_specs"
        spec_dir.mkdir(exist_ok=True)
        path = spec_dir / f"{name}.yaml"
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        for rel, body in (prompts or {}).items():
            target = tmp_path / "prompts" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(textwrap.dedent(body).lstrip("\n"), encoding="utf-8")
        return path

    return write


# A small three-stage user spec used by the interpreter and HTTP tests: claims → verdicts → score.
VERDICT_SPEC = """
format: 1
id: {id}
name: Verdicts
description: Share of claims judged yes.
version: 1
fields:
  output: {{required: true}}
options:
  scale: {{type: number, exclusiveMinimum: 0, default: 1}}
judge:
  max_reasks: {max_reasks}
stages:
  - id: preprocess
    prompt: t/claims.j2
    output_schema:
      type: object
      required: [claims]
      properties:
        claims: {{type: array, items: {{type: string}}}}
    result: "answer.claims"
  - id: analyze
    when: "preprocess | length > 0"
    prompt: t/verdicts.j2
    output_schema:
      type: object
      required: [verdicts]
      properties:
        verdicts:
          type: array
          items:
            type: object
            required: [verdict]
            properties:
              verdict: {{type: string, enum: ["yes", "no", "unsure"]}}
    checks:
      - expect: "answer.verdicts | length == preprocess | length"
        message: "give exactly one verdict per claim, in order"
score:
  not_scorable:
    when: "preprocess | length == 0"
    reason: "Not scorable: no claims in the output."
  let:
    supported: "analyze.verdicts | count('verdict', 'yes')"
  formula: "{formula}"
  round: 2
reason:
  - template: "{{{{ supported }}}} of {{{{ preprocess | length }}}} claims supported"
"""

VERDICT_PROMPTS = {
    "t/claims.j2": "Extract claims from:\n<<<\n{{ run.output }}\n>>>\n",
    "t/verdicts.j2": "Judge:\n{% for c in preprocess %}{{ loop.index }}. {{ c }}\n{% endfor %}",
}


@pytest.fixture
def verdict_spec(write_spec) -> Callable[..., Path]:
    """``verdict_spec(formula=..., max_reasks=2, id="verdicts")`` writes the small claims →
    verdicts spec (score = supported / claims × scale by default) and returns its path."""

    def make(formula: str = "supported / (preprocess | length) * options.scale", max_reasks: int = 2,
             id: str = "verdicts") -> Path:
        return write_spec(id, VERDICT_SPEC.format(id=id, formula=formula, max_reasks=max_reasks), VERDICT_PROMPTS)

    return make


def verdicts(*values: str) -> dict:
    return {"verdicts": [{"verdict": v} for v in values]}
