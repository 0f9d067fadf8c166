"""The judge-call cache as a layer of the judge (engine.judge.cache.layer): the tuning loop.

Measured through the real openai + instructor path against the fake OpenAI-compatible server,
which records every request: what is asked of the judge again after an edit, and what is served
from the cache. Each test has its own cache file under tmp_path.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest

from engine.bind.load import load_scorer
from engine.bind.stack import make_judge
from engine.judge.rate_limit import RateLimiter
from engine.judge.retries import RetryPolicy
from engine.judge.stack import JudgeParts
from engine.core.result import Usage
from engine.judge.cache.base import CachedAnswer, JudgeCacheWarning
from engine.judge.cache.layer import CachedJudge, open_cache
from engine.judge.cache.sqlite_backend import SQLiteJudgeCache
from engine.judge.call import JudgeAnswer, JudgeCall
from engine.judge.contract import AnswerContract
from engine.judge.identity import provider_identity
from engine.judge.rate_limit import RateLimitedJudge
from engine import run_evals
from engine.spec.compile import load_spec
from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.fake_replies import Fault

ROOT = Path(__file__).resolve().parent.parent

# Three prompt stages: the claims, a verdict per claim, then a note on the verdicts (its prompt
# shows the claims and the verdicts, so after a verdict edit it changes exactly when they do).
TUNED_SPEC = """
format: 1
id: tuned
name: Tuned
description: Claims, a verdict per claim, a note on the verdicts.
version: 1
fields:
  output: {required: true}
stages:
  - id: preprocess
    prompt: t/claims.j2
    output_schema:
      type: object
      required: [claims]
      properties:
        claims: {type: array, items: {type: string}}
    result: "answer.claims"
  - id: analyze
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
              verdict: {type: string, enum: ["yes", "no"]}
    checks:
      - expect: "%(check)s"
        message: "give exactly one verdict per claim, in order"
  - id: summary
    prompt: t/summary.j2
    output_schema:
      type: object
      required: [note]
      properties:
        note: {type: string}
score:
  let:
    supported: "analyze.verdicts | count('verdict', 'yes')"
  formula: "supported / (preprocess | length)"
  round: 2
reason:
  - template: "{{ summary.note }}"
"""
CLAIMS_PROMPT = "Extract claims from:\n<<<\n{{ run.output }}\n>>>\n"
VERDICTS_PROMPT = "Judge each claim:\n{% for c in preprocess %}{{ loop.index }}. {{ c }}\n{% endfor %}"
SUMMARY_PROMPT = ("Verdicts on {{ preprocess | join('; ') }}: "
                  "{% for v in analyze.verdicts %}{{ v.verdict }} {% endfor %}")
ONE_PER_CLAIM = "answer.verdicts | length == preprocess | length"
ITEMS = [{"id": i, "output": f"Output number {i}."} for i in range(3)]
STAGES = ("preprocess", "analyze", "summary")


def stage_of(request: dict) -> str:
    return request["tools"][0]["function"]["name"]


def user_text(request: dict) -> str:
    return "\n".join(m.get("content") or "" for m in request["messages"] if m["role"] == "user")


def answer(request: dict) -> dict:
    """The fake judge: two claims per output; the first claim is "no" when the verdict prompt
    says "strictly"; the note counts the yes verdicts it is shown."""
    stage, text = stage_of(request), user_text(request)
    if stage == "preprocess":
        output = text.split("<<<\n", 1)[1].split("\n>>>", 1)[0]
        return {"claims": [f"{output} (1)", f"{output} (2)"]}
    if stage == "analyze":
        return {"verdicts": [{"verdict": "no" if "strictly" in text else "yes"}, {"verdict": "yes"}]}
    return {"note": f"{text.count('yes')} yes"}


@pytest.fixture
def server():
    with FakeOpenAIServer(answer) as fake:
        yield fake


@pytest.fixture
def tuned(write_spec):
    """``tuned(verdicts=..., check=..., schema_note=...)`` (re)writes the spec and its prompts."""

    def write(verdicts: str = VERDICTS_PROMPT, check: str = ONE_PER_CLAIM, note_schema: str = "") -> Path:
        text = TUNED_SPEC % {"check": check}
        if note_schema:
            text = text.replace("note: {type: string}", f"note: {{type: string, {note_schema}}}")
        return write_spec("tuned", text, {"t/claims.j2": CLAIMS_PROMPT, "t/verdicts.j2": verdicts,
                                           "t/summary.j2": SUMMARY_PROMPT})

    return write


def judge_for(server: FakeOpenAIServer, cache: Path | bool | None, model: str = "openai/test-model",
              refresh: bool = False):
    return make_judge(model, base_url=server.base_url, api_key="test", retry=RetryPolicy(max_retries=2, base_s=0.01),
                      cache=cache, refresh=refresh)


class Run:
    """One eval of `spec` through a fresh judge (a new process would build the same), and what
    it asked the server, per stage."""

    def __init__(self, server: FakeOpenAIServer, spec: Path, cache: Path | bool | None, *, items=ITEMS,
                 model: str = "openai/test-model", refresh: bool = False):
        before = len(server.requests)
        self.results: dict = {}
        scorer = load_scorer(str(spec), judge=judge_for(server, cache, model, refresh))
        self.summary = run_evals(items, [scorer], store=False, concurrency=1,
                                 on_item_complete=lambda item, done: self.results.update({item["id"]: done["tuned"]}))
        self.asked = Counter(stage_of(r) for r in server.requests[before:])
        self.usage = self.summary.usage.get("tuned", Usage())

    @property
    def scores(self) -> dict:
        return {i: r.score for i, r in self.results.items()}


# --------------------------------------------------------------------------- the tuning loop


def test_rerunning_an_unchanged_eval_asks_the_judge_nothing(server, tuned, cache_location):
    spec, cache = tuned(), cache_location
    first = Run(server, spec, cache)
    assert first.asked == {"preprocess": 3, "analyze": 3, "summary": 3}
    assert (first.usage.calls, first.usage.cache_misses, first.usage.cache_hits) == (9, 9, 0)

    again = Run(server, spec, cache)
    assert again.asked == {}
    assert again.scores == first.scores == {0: 1.0, 1: 1.0, 2: 1.0}
    assert (again.usage.calls, again.usage.tokens_in, again.usage.tokens_out) == (0, 0, 0)
    assert (again.usage.cache_hits, again.usage.cache_misses) == (9, 0)
    result = again.results[0]
    assert result.reason == first.results[0].reason == "2 yes"
    for stage in STAGES:  # hits counted per stage; a hit is no attempt
        record = result.stages[stage]
        assert (record.usage.cache_hits, record.usage.calls, record.attempts) == (1, 0, 0)
    assert json.loads(result.stages["analyze"].raw_answer) == {"verdicts": [{"verdict": "yes"}, {"verdict": "yes"}]}


def test_editing_one_stage_template_asks_only_that_stage_and_the_stages_whose_prompts_change(server, tuned,
                                                                                             cache_location):
    """Case C21: stages before the edit are served from the cache, the edited stage asks again,
    a later stage asks again only when its prompt changed; no stale answer is reused."""
    cache = cache_location
    Run(server, tuned(), cache)

    # a wording edit whose answers do not change: the note's prompt (the verdicts) stays the same
    reworded = Run(server, tuned(verdicts="Judge each claim carefully:\n" + VERDICTS_PROMPT.split("\n", 1)[1]), cache)
    assert reworded.asked == {"analyze": 3}
    assert (reworded.usage.cache_hits, reworded.usage.cache_misses) == (6, 3)
    assert [reworded.results[0].stages[s].usage.cache_hits for s in STAGES] == [1, 0, 1]

    # an edit that changes the verdicts: the note is shown other verdicts, so it is asked too
    strict = Run(server, tuned(verdicts="Judge each claim strictly:\n" + VERDICTS_PROMPT.split("\n", 1)[1]), cache)
    assert strict.asked == {"analyze": 3, "summary": 3}
    assert strict.scores == {0: 0.5, 1: 0.5, 2: 0.5}
    assert strict.results[0].reason == "1 yes"

    # back to the first template: every answer is in the cache again
    back = Run(server, tuned(), cache)
    assert back.asked == {}
    assert back.scores == {0: 1.0, 1: 1.0, 2: 1.0}


def test_an_output_schema_change_is_a_miss(server, tuned, tmp_path):
    cache = tmp_path / "cache.sqlite"
    Run(server, tuned(), cache)
    changed = Run(server, tuned(note_schema="maxLength: 200"), cache)
    assert changed.asked == {"summary": 3}


def test_changing_the_model_misses_every_stage(server, tuned, tmp_path):
    spec, cache = tuned(), tmp_path / "cache.sqlite"
    Run(server, spec, cache)
    other = Run(server, spec, cache, model="openai/other-model")
    assert other.asked == {"preprocess": 3, "analyze": 3, "summary": 3}
    assert other.usage.cache_hits == 0
    assert Run(server, spec, cache, model="openai/other-model").asked == {}


def test_a_hit_that_fails_a_changed_check_is_asked_again_and_replaced(server, tuned, cache_location):
    cache = cache_location
    Run(server, tuned(), cache)  # stored: two "yes" verdicts per item
    # the check now wants the first verdict "no"; the prompts (and keys) are unchanged
    strict_check = ONE_PER_CLAIM + " and answer.verdicts[0].verdict == 'no'"
    server.reply = lambda request: ({"verdicts": [{"verdict": "no"}, {"verdict": "yes"}]}
                                    if stage_of(request) == "analyze" else answer(request))
    checked = Run(server, tuned(check=strict_check), cache)
    assert checked.asked == {"analyze": 3, "summary": 3}
    assert checked.scores == {0: 0.5, 1: 0.5, 2: 0.5}
    assert Run(server, tuned(check=strict_check), cache).asked == {}  # the new answers replaced the old


def test_refresh_asks_every_call_again_and_overwrites(server, tuned, cache_location):
    spec, cache = tuned(), cache_location
    Run(server, spec, cache)
    with open_cache(cache) as store:
        before = store.stats()
    refreshed = Run(server, spec, cache, refresh=True)
    assert refreshed.asked == {"preprocess": 3, "analyze": 3, "summary": 3}
    assert (refreshed.usage.cache_misses, refreshed.usage.cache_hits) == (9, 0)
    with open_cache(cache) as store:
        after = store.stats()
    assert after.entries == before.entries == 9
    assert after.oldest > before.newest  # every entry was written again
    assert Run(server, spec, cache).asked == {}


def test_without_a_cache_every_run_asks_and_counts_no_hit(server, tuned):
    spec = tuned()
    for _ in range(2):
        run = Run(server, spec, None)
        assert run.asked == {"preprocess": 3, "analyze": 3, "summary": 3}
        assert (run.usage.cache_hits, run.usage.cache_misses) == (0, 0)


def test_a_faithfulness_rerun_is_served_whole_from_the_cache(server, tmp_path):
    """The shipped faithfulness spec (a for_each stage: one call per claim) re-run: no request,
    and its stages count one hit per call."""
    cache = tmp_path / "cache.sqlite"

    def reply(request: dict) -> dict:
        name = stage_of(request)
        if name == "preprocess":
            return {"claims": ["The tower is in Paris.", "It opened in 1889."]}
        return {"verdict": "yes", "reason": "The context says so."}

    server.reply = reply
    items = [{"id": i, "output": f"The tower is in Paris. It opened in 1889. ({i})", "context": ["Paris; 1889."]}
             for i in range(2)]

    def run():
        before = len(server.requests)
        scorer = load_scorer("faithfulness", judge=judge_for(server, cache))
        kept = {}
        summary = run_evals(items, [scorer], store=False,
                            on_item_complete=lambda item, done: kept.update({item["id"]: done["faithfulness"]}))
        return summary, kept, len(server.requests) - before

    first, _, asked = run()
    assert asked == 4  # the same two claims for both items: their verdicts are asked once
    again, kept, asked = run()
    assert asked == 0
    assert again.scores == first.scores == {"faithfulness": 1.0}
    assert (again.usage["faithfulness"].calls, again.usage["faithfulness"].cache_hits) == (0, 6)
    assert kept[0].stages["analyze"].usage.cache_hits == 2


# --------------------------------------------------------------------------- what is stored


def scored_calls(where: Path | str) -> int:
    """Entries in the cache at `where` (a file path or a Redis URL)."""
    with open_cache(str(where)) as store:
        return store.stats().entries


def test_failures_refusals_and_cut_off_answers_are_never_stored(server, tuned, tmp_path):
    spec, cache = tuned(), tmp_path / "cache.sqlite"
    # preprocess: a refusal (re-asked twice, then the item fails), then a cut-off answer
    server.script("I cannot help with that.", "Still no.", "No.", Fault.truncated({"claims": ["x"]}))
    failed = Run(server, spec, cache, items=ITEMS[:2])
    assert [r.error.kind for r in failed.results.values()] == ["judge", "truncated"]
    assert failed.usage.cache_misses == 2
    assert scored_calls(cache) == 0
    retried = Run(server, spec, cache, items=ITEMS[:2])
    assert retried.asked == {"preprocess": 2, "analyze": 2, "summary": 2}
    assert scored_calls(cache) == 6


# --------------------------------------------------------------------------- single flight


def call_for(stage: str = "summary", check=None) -> JudgeCall:
    schema = {"type": "object", "required": ["note"], "properties": {"note": {"type": "string"}}}
    checks = ((check, "the note must say yes"),) if check is not None else ()
    return JudgeCall(stage, [{"role": "user", "content": "Verdicts: yes yes"}], AnswerContract(schema, checks),
                     max_reasks=0)


def test_identical_calls_in_flight_at_once_are_made_once(tmp_path):
    with FakeOpenAIServer({"note": "2 yes"}, latency_s=0.3) as server:
        judge = judge_for(server, tmp_path / "cache.sqlite")

        async def both():
            return await asyncio.gather(judge.ask(call_for()), judge.ask(call_for()))

        answers = asyncio.run(both())
    assert len(server.requests) == 1
    assert [a.data for a in answers] == [{"note": "2 yes"}] * 2
    assert sorted((a.usage.cache_misses, a.usage.cache_hits, a.usage.calls) for a in answers) == [(0, 1, 0), (1, 0, 1)]


def test_a_call_waiting_for_a_failed_identical_call_asks_itself(tmp_path):
    with FakeOpenAIServer({"note": "2 yes"}, latency_s=0.3) as server:
        server.script("not JSON at all")  # the first call gets a refusal and fails (no re-ask)
        judge = judge_for(server, tmp_path / "cache.sqlite")

        async def both():
            return await asyncio.gather(judge.ask(call_for()), judge.ask(call_for()), return_exceptions=True)

        first, second = asyncio.run(both())
    assert len(server.requests) == 2
    assert first.kind == "judge" and first.usage.cache_misses == 1
    assert second.data == {"note": "2 yes"}


def test_a_shared_answer_that_fails_a_waiting_calls_checks_is_not_served_to_it(tmp_path):
    from engine.spec.expressions import Expression

    replies = iter([{"note": "no"}, {"note": "yes"}])
    with FakeOpenAIServer(lambda request: next(replies), latency_s=0.3) as server:
        judge = judge_for(server, tmp_path / "cache.sqlite")
        check = Expression("answer.note == 'yes'")

        async def both():
            return await asyncio.gather(judge.ask(call_for()), judge.ask(call_for(check=check)))

        plain, checked = asyncio.run(both())
    assert (plain.data, checked.data) == ({"note": "no"}, {"note": "yes"})
    assert len(server.requests) == 2


# --------------------------------------------------------------------------- layers and processes


def test_the_rate_limit_sits_below_the_cache_so_a_hit_takes_no_token(tmp_path):
    class CountingLimiter(RateLimiter):
        taken = 0

        async def acquire(self) -> None:
            CountingLimiter.taken += 1
            await super().acquire()

    with FakeOpenAIServer({"note": "2 yes"}) as server:
        built = make_judge("openai/test-model", base_url=server.base_url, api_key="test", rate_limit=100,
                           cache=tmp_path / "a.sqlite")
        assert isinstance(built, CachedJudge) and isinstance(built.inner, RateLimitedJudge)
        # the batch runner hands its shared limiter to the judge before it is composed: below the cache
        judge = make_judge("openai/test-model", base_url=server.base_url, api_key="test", cache=tmp_path / "b.sqlite",
                           parts=JudgeParts(rate_limit=CountingLimiter(100)))
        assert isinstance(judge, CachedJudge) and isinstance(judge.inner, RateLimitedJudge)
        asyncio.run(judge.ask(call_for()))
        asyncio.run(judge.ask(call_for()))
    assert (CountingLimiter.taken, len(server.requests)) == (1, 1)


CHILD = """
import json, sys
from engine import run_evals
from engine.bind.stack import make_judge
from engine.bind.load import load_scorer
base_url, spec, cache, first, last = sys.argv[1:]
items = [{"id": i, "output": f"Output number {i}."} for i in range(int(first), int(last))]
judge = make_judge("openai/test-model", base_url=base_url, api_key="test", cache=cache)
summary = run_evals(items, [load_scorer(spec, judge=judge)], store=False)
print(json.dumps(summary.scores))
"""


def run_children(server: FakeOpenAIServer, spec: Path, cache: str, *ranges: tuple[str, str]) -> None:
    """One process per (first, last) range of items, all at once, each scoring its items 1.0."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    children = [subprocess.Popen([sys.executable, "-c", CHILD, server.base_url, str(spec), cache, first, last],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for first, last in ranges]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1]) == {"tuned": 1.0}


def test_two_processes_sharing_the_cache_at_once_lose_nothing(server, tuned, cache_location):
    spec = tuned()
    run_children(server, spec, cache_location, ("0", "6"), ("3", "9"))  # items 3-5 asked by both, maybe at once
    items = [{"id": i, "output": f"Output number {i}."} for i in range(9)]
    assert scored_calls(cache_location) == 27
    assert Run(server, spec, cache_location, items=items).asked == {}


def test_a_second_process_is_served_the_first_ones_answers(server, tuned, cache_location):
    spec = tuned()
    run_children(server, spec, cache_location, ("0", "3"))
    assert len(server.requests) == 9
    run_children(server, spec, cache_location, ("0", "3"))
    assert len(server.requests) == 9


# --------------------------------------------------------------------------- a cache problem is no failure


def test_an_unusable_cache_file_is_reported_once_and_the_run_goes_on_uncached(server, tuned, tmp_path):
    spec, broken = tuned(), tmp_path / "cache.sqlite"
    broken.write_bytes(b"this is not a database" * 100)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = Run(server, spec, broken)
    assert run.scores == {0: 1.0, 1: 1.0, 2: 1.0}
    assert run.asked == {"preprocess": 3, "analyze": 3, "summary": 3}
    assert len([w for w in caught if issubclass(w.category, JudgeCacheWarning)]) == 1
    assert broken.read_bytes() == b"this is not a database" * 100


def test_a_redis_server_lost_mid_run_is_reported_once_and_fails_no_item(tuned, own_redis_server):
    """The Redis server is killed while the judge answers the run's fourth call: the calls before
    were stored, every later one is asked uncached, every item is scored."""

    def killing(request: dict) -> dict:
        if len(fake.requests) == 4:
            own_redis_server.kill()
        return answer(request)

    spec = tuned()
    with FakeOpenAIServer(killing) as fake, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = Run(fake, spec, own_redis_server.url)
    assert run.scores == {0: 1.0, 1: 1.0, 2: 1.0}
    assert run.asked == {"preprocess": 3, "analyze": 3, "summary": 3}
    messages = [str(w.message) for w in caught if issubclass(w.category, JudgeCacheWarning)]
    assert len(messages) == 1 and "cannot be reached" in messages[0], messages
    # misses are counted while the cache is used: the four calls up to the one the server died in
    assert (run.usage.cache_hits, run.usage.cache_misses) == (0, 4)


def test_a_cache_that_raises_is_reported_once_and_never_fails_an_item(server, tuned):
    class Raising:
        disabled_reason = None

        def get(self, key):
            raise OSError("disk on fire")

        def put(self, key, value):
            raise AssertionError("never reached")

        def stats(self): ...
        def clear(self, older_than_s=None, model=None): ...
        def close(self): ...

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = Run(server, tuned(), Raising())
    assert run.scores == {0: 1.0, 1: 1.0, 2: 1.0}
    messages = [str(w.message) for w in caught if issubclass(w.category, JudgeCacheWarning)]
    assert len(messages) == 1 and "disk on fire" in messages[0]


def test_a_judge_without_a_provider_identity_is_not_cached(tmp_path):
    class Plain:
        model = "plain"
        asked = 0

        async def ask(self, call):
            Plain.asked += 1
            return JudgeAnswer(call.validate({"note": "x"}), "{}", 1, Usage(calls=1))

    judge = CachedJudge(Plain(), SQLiteJudgeCache(tmp_path / "c.sqlite"))
    for _ in range(2):
        answer = asyncio.run(judge.ask(call_for()))
        assert (answer.usage.cache_hits, answer.usage.cache_misses) == (0, 0)
    assert Plain.asked == 2
    assert not (tmp_path / "c.sqlite").exists()


# --------------------------------------------------------------------------- the embedded model's key


class Embedded:
    """A provider judge on a GGUF file (no model is loaded): answers and counts its calls."""

    model = "llamacpp/model.gguf"

    def __init__(self, weights: Path):
        self.cache_identity = provider_identity(self.model, mode="json_schema_mode", weights=weights, seed=0)
        self.calls = 0

    async def ask(self, call):
        self.calls += 1
        return JudgeAnswer(call.validate({"note": f"from {self.cache_identity.weights.parent.name}"}), "{}", 1,
                           Usage(calls=1))


def gguf(folder: Path, body: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.gguf"
    path.write_bytes(b"GGUF" + body)
    return path


def test_two_gguf_files_of_one_name_are_two_models(tmp_path):
    cache = SQLiteJudgeCache(tmp_path / "cache.sqlite")
    a, b = Embedded(gguf(tmp_path / "a", b"weights one")), Embedded(gguf(tmp_path / "b", b"weights two"))
    keys = {j.cache_identity.call_identity(call_for()).key() for j in (a, b)}
    assert len(keys) == 2
    for embedded in (a, b, a, b):
        answer = asyncio.run(CachedJudge(embedded, cache).ask(call_for()))
        assert answer.data == {"note": f"from {embedded.cache_identity.weights.parent.name}"}
    assert (a.calls, b.calls) == (1, 1)
    # one file by another path (a copy of the same weights) is the same model
    same = Embedded(gguf(tmp_path / "c", b"weights one"))
    assert asyncio.run(CachedJudge(same, cache).ask(call_for())).data == {"note": "from a"}
    assert same.calls == 0


def test_a_cache_hit_is_served_even_when_the_cached_answer_was_made_by_another_process(tmp_path):
    """The stored value, not the process's memory, is served: an entry written directly is read."""
    store = SQLiteJudgeCache(tmp_path / "cache.sqlite")
    embedded = Embedded(gguf(tmp_path / "a", b"weights"))
    key = embedded.cache_identity.call_identity(call_for()).key()
    store.put(key, CachedAnswer({"note": "stored"}, "{}", model="llamacpp/model.gguf"))
    answer = asyncio.run(CachedJudge(embedded, store).ask(call_for()))
    assert (answer.data, answer.raw, answer.attempts, embedded.calls) == ({"note": "stored"}, "{}", 0, 0)


def test_load_scorer_caches_through_a_file_path(server, tuned, tmp_path):
    spec, cache = tuned(), tmp_path / "cache.sqlite"
    scorer = load_scorer(str(spec), model="openai/test-model", base_url=server.base_url, api_key="test", cache=cache)
    first = scorer.run(output="Output number 0.")
    again = load_scorer(str(spec), model="openai/test-model", base_url=server.base_url, api_key="test",
                        cache=cache).run(output="Output number 0.")
    assert (first.usage.cache_misses, again.usage.cache_hits, again.usage.calls) == (3, 3, 0)
    assert len(server.requests) == 3
    assert load_spec(str(spec)).uses_judge


def test_run_evals_cache_argument_puts_every_scorer_under_one_cache(server, tuned, tmp_path):
    spec, cache = tuned(), tmp_path / "cache.sqlite"
    scorer = load_scorer(str(spec), judge=judge_for(server, None))
    run_evals(ITEMS, [scorer], store=False, cache=cache)
    before = len(server.requests)
    summary = run_evals(ITEMS, [scorer], store=False, cache=cache)
    assert len(server.requests) == before
    assert summary.usage["tuned"].cache_hits == 9
    # False takes the cache off again
    summary = run_evals(ITEMS, [load_scorer(str(spec), judge=judge_for(server, cache))], store=False, cache=False)
    assert len(server.requests) == before + 9 and summary.usage["tuned"].cache_hits == 0


def test_api_keys_are_neither_in_the_key_nor_stored(server, tmp_path):
    one = judge_for(server, tmp_path / "c.sqlite")
    other = make_judge("openai/test-model", base_url=server.base_url, api_key="another-key",
                       retry=RetryPolicy(max_retries=2, base_s=0.01), cache=tmp_path / "c.sqlite")
    server.reply = {"note": "2 yes"}
    asyncio.run(one.ask(call_for()))
    answer = asyncio.run(other.ask(call_for()))
    assert answer.usage.cache_hits == 1  # the other key is served the same entry
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("c.sqlite*"))
    assert b"2 yes" in stored and not re.search(b"another-key|Bearer", stored)


def test_a_child_spec_overriding_one_prompt_asks_only_that_stage(server, tuned, write_spec, tmp_path):
    """Issue 17 with the cache: a spec that `extends` the tuned one and overrides the verdict
    prompt asks the judge only for that stage (and the stage whose prompt it changes); the
    parent's other stages are served from the cache."""
    cache = tmp_path / "cache.sqlite"
    parent = tuned()
    Run(server, parent, cache)
    child = write_spec("strict", f"format: 1\nid: strict\nextends: {parent.name}\n"
                                 "stages:\n  - id: analyze\n    prompt: s/verdicts.j2\n",
                       {"s/verdicts.j2": "Judge each claim strictly:\n" + VERDICTS_PROMPT.split("\n", 1)[1]})
    before = len(server.requests)
    scorer = load_scorer(str(child), judge=judge_for(server, cache), label="tuned")
    summary = run_evals(ITEMS, [scorer], store=False, concurrency=1)
    assert Counter(stage_of(r) for r in server.requests[before:]) == {"analyze": 3, "summary": 3}
    assert summary.scores == {"tuned": 0.5}
    assert (summary.usage["tuned"].cache_hits, summary.usage["tuned"].cache_misses) == (3, 6)
