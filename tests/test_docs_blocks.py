"""The docs-block reader (tests/docs_blocks.py) and page runner (tests/docs_pages.py) on small
Markdown pages: fences, markers, titles, order, and failures of earlier blocks."""

from __future__ import annotations

import time
from pathlib import Path

import docs_pages
import pytest
from docs_blocks import MarkerWords, doc_pages, page_blocks, parse_marker, stray_markers
from docs_pages import PageRun, _with_addresses, tail


def _page(tmp_path: Path, text: str, name: str = "page.md") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_marker_words_combine_and_unknown_ones_are_problems():
    assert parse_marker(" slow exit 1 ") == MarkerWords(slow=True, exit_code=1)
    assert parse_marker("ray redis") == MarkerWords(ray=True, redis=True)
    assert parse_marker("skip container") == MarkerWords(skip="container")
    assert parse_marker("skip flaky").problems == ("unknown skip reason 'flaky' (only: install, container, bench)",)
    assert parse_marker("exit").problems == ("'exit' needs a number, got None",)
    assert parse_marker("fast").problems[0].startswith("unknown docs-test word 'fast'")
    assert parse_marker("").problems == ("a docs-test comment without words",)


def test_blocks_have_their_fence_line_language_title_and_marker(tmp_path):
    page = _page(tmp_path, 'Intro\n\n<!-- docs-test: exit 1 -->\n```bash\nfalse\n```\n\n'
                           '```yaml title="specs/a.yaml"\nid: a\n```\n\n```text\nout\n```\n')
    blocks = page_blocks(page, tmp_path)
    assert [(b.id, b.lang, b.kind, b.title) for b in blocks] == [
        ("page.md:4", "bash", "run", None), ("page.md:8", "yaml", "file", "specs/a.yaml"),
        ("page.md:12", "text", "shown", None)]
    assert blocks[0].marker.exit_code == 1 and blocks[0].text == "false\n"
    assert blocks[1].text == "id: a\n"


def test_indented_and_longer_fences_keep_their_content(tmp_path):
    page = _page(tmp_path, "- a step:\n\n  ```bash\n  echo one\n    echo two\n  ```\n\n"
                           "````markdown\n```python\nx = 1\n```\n````\n")
    blocks = page_blocks(page, tmp_path)
    assert [(b.lang, b.text) for b in blocks] == [("bash", "echo one\n  echo two\n"),
                                                   ("markdown", "```python\nx = 1\n```\n")]


def test_problems_name_misspelt_languages_and_markers_on_blocks_not_run(tmp_path):
    page = _page(tmp_path, "```sh\nls\n```\n\n<!-- docs-test: slow -->\n```yaml\na: 1\n```\n\n"
                           "<!-- docs-test: exit 1 -->\n```python\nraise SystemExit(1)\n```\n")
    assert [b.problems for b in page_blocks(page, tmp_path)] == [
        ["language 'sh' is never run: write 'bash'"],
        ["a docs-test marker on a block that is not run (shown, language 'yaml')"],
        ["'exit N' applies to bash blocks only"]]


def test_an_unmarked_install_container_or_benchmark_block_is_a_problem_and_never_runs(tmp_path):
    page = _page(tmp_path, "```bash\npip install x && touch ran\n```\n\n```bash\ndocker run img\n```\n\n"
                           "<!-- docs-test: skip bench -->\n```bash\npython tests/bench/run.py\n```\n\n"
                           "```bash\necho pipe install  # or: pip install x\n```\n\n"
                           "```python\nimport os  # pip install os\n```\n")
    blocks = page_blocks(page, tmp_path)
    assert [bool(b.unmarked_exemption()) for b in blocks] == [True, True, False, False, False]
    assert "'pip install'" in blocks[0].problems[0]
    run = PageRun(blocks, tmp_path / "repo", tmp_path / "run")
    assert run.run_through(blocks[0], _no_environment, runs_heavy=False).startswith("block page.md:1 not run: ")
    assert not (run.folder / "ran").exists()


def test_an_unmarked_block_on_the_embedded_judge_is_a_problem_and_never_runs(tmp_path):
    page = _page(tmp_path, "```bash\nscorespec run x --model local\n```\n\n"
                           "```python\nload_scorer('x', model='llamacpp/m.gguf')\n```\n\n"
                           "<!-- docs-test: slow -->\n```bash\nscorespec run x --model local-tiny\n```\n\n"
                           "```bash\nscorespec run x --model openai/local-model\n```\n")
    blocks = page_blocks(page, tmp_path)
    assert [bool(b.unmarked_exemption()) for b in blocks] == [True, True, False, False]
    assert blocks[0].problems == ["'--model local': a block on the embedded judge must be marked <!-- docs-test: slow -->"]


def test_a_bash_block_over_time_is_stopped_with_its_children(tmp_path, monkeypatch):
    monkeypatch.setitem(docs_pages.TIMEOUT_S, False, 1)
    page = _page(tmp_path, "```bash\nsleep 30 &\necho $! > child.pid\nwait\n```\n")
    blocks = page_blocks(page, tmp_path)
    run = PageRun(blocks, tmp_path / "repo", tmp_path / "run")
    assert "ran over 1 s (stopped)" in run.run_through(blocks[0], _no_environment, runs_heavy=False)
    child = int((run.folder / "child.pid").read_text())
    time.sleep(0.2)
    state = Path(f"/proc/{child}/stat").read_text().split()[2] if Path(f"/proc/{child}").exists() else "gone"
    assert state in ("gone", "Z")


def test_a_marker_not_right_before_a_fence_is_stray_but_one_inside_a_block_is_text(tmp_path):
    page = _page(tmp_path, "<!-- docs-test: slow -->\n\n```bash\nls\n```\n\n"
                           "```markdown\n<!-- docs-test: slow -->\n```\n<!--docs-test: slow--> trailing\n")
    assert stray_markers(page, tmp_path) == [
        "page.md:1: a docs-test marker must sit on the line right before a fence",
        "page.md:10: write a marker alone on its line as <!-- docs-test: WORDS -->"]


@pytest.mark.parametrize(("title", "problem"), [
    ("a/b.yaml", None), ("./b.yaml", None), ("/etc/x", "an absolute path"), ("../x.yaml", "leaves the page's folder"),
    ("a/../../x", "leaves the page's folder"), (" x", "empty or padded with spaces"), ("C:/x", "an absolute path")])
def test_file_titles_must_stay_inside_the_page_folder(tmp_path, title, problem):
    block = page_blocks(_page(tmp_path, f'```yaml title="{title}"\na: 1\n```\n'), tmp_path)[0]
    found = block.title_problem()
    assert (found is None) if problem is None else (problem in found)


def test_pages_are_the_readme_then_docs_without_hooks_then_extra_ones(tmp_path):
    for name in ("README.md", "docs/index.md", "docs/guides/a.md", "docs/hooks/x.md", "tests/f.md"):
        _page(tmp_path, "# x\n", name)
    assert [p.relative_to(tmp_path).as_posix() for p in doc_pages(tmp_path, extra=("tests/f.md",))] == [
        "README.md", "docs/guides/a.md", "docs/index.md", "tests/f.md"]


def _no_environment(block):
    return {}, ()


def test_running_a_later_block_first_runs_the_earlier_ones_once(tmp_path):
    page = _page(tmp_path, '```python\nfrom pathlib import Path\nPath("n.txt").write_text("1")\n```\n\n'
                           '```text title="greeting.txt"\nhello\n```\n\n'
                           '```bash\ntest "$(cat greeting.txt)" = hello\necho 2 >> n.txt\n```\n\n'
                           '```python\nassert Path("n.txt").read_text() == "12\\n", Path("n.txt").read_text()\n```\n')
    blocks = page_blocks(page, tmp_path)
    run = PageRun(blocks, tmp_path / "repo", tmp_path / "run")
    assert run.run_through(blocks[3], _no_environment, runs_heavy=False) is None
    assert run.run_through(blocks[2], _no_environment, runs_heavy=False) is None  # kept, not run again
    assert list(run.outcomes) == ["page.md:1", "page.md:6", "page.md:10", "page.md:15"]


def test_a_failed_earlier_block_fails_the_later_ones_naming_it(tmp_path):
    page = _page(tmp_path, "```bash\necho out; echo err >&2; exit 3\n```\n\n```bash\ntrue\n```\n")
    blocks = page_blocks(page, tmp_path)
    run = PageRun(blocks, tmp_path / "repo", tmp_path / "run")
    failure = run.run_through(blocks[1], _no_environment, runs_heavy=False)
    assert failure.startswith("an earlier block of the page failed: page.md:1\nbash block page.md:1 exited 3, "
                              "expected 0\n--- stdout ---\nout\n\n--- stderr ---\nerr\n")


def test_a_slow_earlier_block_is_left_out_of_the_fast_suite_and_named_when_a_later_one_fails(tmp_path):
    page = _page(tmp_path, "<!-- docs-test: slow -->\n```bash\necho x > made.txt\n```\n\n```bash\ncat made.txt\n```\n")
    blocks = page_blocks(page, tmp_path)
    run = PageRun(blocks, tmp_path / "repo", tmp_path / "run")
    failure = run.run_through(blocks[1], _no_environment, runs_heavy=False)
    assert "earlier slow blocks not run in this suite: page.md:2" in failure


def test_a_python_block_failure_shows_its_page_line_and_output(tmp_path):
    page = _page(tmp_path, "text\n\n```python\nprint('before')\nraise ValueError('bad')\n```\n")
    blocks = page_blocks(page, tmp_path)
    failure = PageRun(blocks, tmp_path / "repo", tmp_path / "run").run_through(blocks[0], _no_environment, False)
    assert 'File "page.md", line 5' in failure and "ValueError: bad" in failure
    assert "--- stdout ---\nbefore\n" in failure


def test_redis_and_ray_blocks_get_the_test_servers_addresses(tmp_path):
    page = _page(tmp_path, "<!-- docs-test: redis -->\n```bash\nx --cache redis://localhost:6379/0 127.0.0.1:6379\n```\n"
                           "<!-- docs-test: ray -->\n```bash\nx --ray-address auto --ray-address=10.0.0.1:6379\n```\n")
    redis, ray = page_blocks(page, tmp_path)
    addresses = {"DOCS_TEST_REDIS": "127.0.0.1:7001", "DOCS_TEST_RAY": "127.0.0.1:8001"}
    assert _with_addresses(redis, addresses) == "x --cache redis://127.0.0.1:7001/0 127.0.0.1:7001\n"
    assert _with_addresses(ray, addresses) == "x --ray-address 127.0.0.1:8001 --ray-address=127.0.0.1:8001\n"


def test_long_output_is_cut_to_its_end():
    assert tail("abcdef", 3) == "[… 3 characters cut]\ndef"
    assert tail("abc", 3) == "abc"
