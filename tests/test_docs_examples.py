"""Every code block of README.md and docs/**/*.md (docs/hooks/ left out) does what the docs
conventions say: one test per runnable block, with the id
``PAGE:LINE`` of its fence, and tests that every marker, language and file title follows them.

- A page's blocks run in order in one working folder (a copy of examples/ and datasets/) with a
  store, judge-call cache and home of the page's own; running one block (``-k``) first runs the
  page's earlier blocks, and a failed earlier block fails it, naming that block.
- python blocks: ``exec`` in this process, in one namespace per page, in the page's folder;
  bash blocks: ``bash -euo pipefail -c``, there, with this checkout importable (PYTHONPATH) and a
  ``scorespec`` command running it (a shim first on PATH, whatever console script is installed).
- Not slow: the fake hosted judge (`engine.testing.schema_answers.schema_reply`: a schema-valid
  answer to every call) at ``OPENAI_BASE_URL``, ``OPENAI_API_KEY=test``,
  ``SCORESPEC_MODEL=openai/gpt-4o-mini``. ``slow``: none of them (the embedded judge); marked
  slow and local. ``ray``: marked ray (and slow), on the tests' Ray cluster (``--ray-address X``
  becomes its address; its token in the environment); the judge as for any block unless
  ``slow`` too. ``redis``: the tests' redis-server replaces ``127.0.0.1:6379``/``localhost:6379``.
- ``skip install|container|bench``: collected, reported as skipped with that reason. A block
  that installs (pip/apt-get/npm… install), runs docker or tests/bench|reliability/ without that
  marker, or names the embedded judge (``--model local``…) without ``slow``, fails unrun.
- The page tests/docs_examples_fixture.md uses every convention, so the runner itself is tested.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from docs_blocks import Block, doc_pages, page_blocks, stray_markers
from docs_pages import Environment, PageRun, shim_folder

from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.schema_answers import schema_reply

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_PAGE = "tests/docs_examples_fixture.md"
PAGES = doc_pages(ROOT, extra=(FIXTURE_PAGE,))
BLOCKS = {path.relative_to(ROOT).as_posix(): page_blocks(path, ROOT) for path in PAGES}
FAKE_JUDGE_SETTINGS = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "SCORESPEC_MODEL")


def _runnable_params() -> list:
    """A `pytest.param` for each block of language python or bash, marked as its comment says."""
    params = []
    for blocks in BLOCKS.values():
        for block in blocks:
            if block.kind != "run":
                continue
            marks = []
            if block.marker.skip:
                marks.append(pytest.mark.skip(reason=f"docs-test: skip {block.marker.skip}"))
            if block.marker.slow:
                marks += [pytest.mark.slow, pytest.mark.local]
            if block.marker.ray:
                marks += [pytest.mark.ray, pytest.mark.slow]
            params.append(pytest.param(block, id=block.id, marks=marks))
    return params


@pytest.fixture(scope="session")
def docs_judge():
    """The fake hosted judge of the docs blocks: a valid answer to every call."""
    with FakeOpenAIServer(schema_reply) as server:
        yield server


@pytest.fixture(scope="session")
def docs_bin(tmp_path_factory) -> Path:
    return shim_folder(tmp_path_factory.mktemp("docs-bin"))


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory):
    """``page_runs(page)``: the page's `PageRun`, made on first use, kept for this module. Python
    blocks run in this process: rule functions a page registers are unregistered at the end, so
    no other test sees them."""
    from engine import functions

    registered = dict(functions._REGISTRY)
    runs: dict[str, PageRun] = {}

    def get(page: str) -> PageRun:
        if page not in runs:
            runs[page] = PageRun(BLOCKS[page], ROOT, tmp_path_factory.mktemp("docs-page"))
        return runs[page]

    yield get
    functions._REGISTRY.clear()
    functions._REGISTRY.update(registered)


def block_environment(block: Block, run: PageRun, request, judge: FakeOpenAIServer, bin_folder: Path) -> Environment:
    """What a block's environment sets and removes (see the module docstring); starts the
    Redis server or the Ray cluster a block needs."""
    variables = dict(run.variables)
    variables["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    variables["PATH"] = f"{bin_folder}{os.pathsep}{os.environ.get('PATH', '')}"
    removed: tuple[str, ...] = ()
    if block.marker.slow:
        removed = FAKE_JUDGE_SETTINGS
    else:
        variables.update(OPENAI_BASE_URL=judge.base_url, OPENAI_API_KEY="test", SCORESPEC_MODEL="openai/gpt-4o-mini")
    if block.marker.redis:
        server = request.getfixturevalue("redis_server")
        variables["DOCS_TEST_REDIS"] = f"127.0.0.1:{server.port}"
    if block.marker.ray:
        cluster = request.getfixturevalue("ray_cluster")
        variables.update(cluster.driver_environment(), DOCS_TEST_RAY=cluster.address)
    return variables, removed


@pytest.mark.parametrize("block", _runnable_params())
def test_docs_block(block: Block, request, page_runs, docs_judge, docs_bin):
    run = page_runs(block.page)
    failure = run.run_through(block, lambda b: block_environment(b, run, request, docs_judge, docs_bin),
                              runs_heavy=block.heavy)
    if failure is not None:
        pytest.fail(failure, pytrace=False)


def test_every_marker_language_and_comment_follows_the_conventions():
    problems = [f"{block.id}: {problem}" for blocks in BLOCKS.values() for block in blocks
                for problem in block.problems]
    problems += [found for path in PAGES for found in stray_markers(path, ROOT)]
    assert problems == [], "\n".join(problems)


def test_file_blocks_are_written_inside_the_page_folder():
    problems = [f"{block.id}: {block.title_problem()}" for blocks in BLOCKS.values() for block in blocks
                if block.title_problem()]
    assert problems == [], "\n".join(problems)


def block_counts() -> dict[str, Counter]:
    """Per page: how many blocks run (in the fast suite, or slow), are skipped, files, shown."""
    counts = {}
    for page, blocks in BLOCKS.items():
        count: Counter = Counter()
        for block in blocks:
            if block.kind == "run":
                count["skipped" if block.marker.skip else "slow" if block.heavy else "run"] += 1
            else:
                count[block.kind] += 1
        counts[page] = count
    return counts


def test_the_pages_hold_runnable_blocks(capsys):
    counts = block_counts()
    with capsys.disabled():
        print("\ndocs code blocks (page: run / slow / skipped / files / shown):")
        for page, count in counts.items():
            if sum(count.values()):
                print(f"  {page}: {count['run']} / {count['slow']} / {count['skipped']} / {count['file']} / "
                      f"{count['shown']}")
        total = sum(counts.values(), Counter())
        print(f"  total: {total['run']} / {total['slow']} / {total['skipped']} / {total['file']} / {total['shown']}")
    assert counts["README.md"]["run"] > 0
    assert counts[FIXTURE_PAGE] == Counter(run=8, slow=1, skipped=1, file=2, shown=1)
