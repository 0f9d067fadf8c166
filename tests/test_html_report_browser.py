"""The HTML report in a real browser: headless Chromium (Debian's `chromium`, driven by
Playwright; nothing downloads a browser) opens the report from disk. It loads with no console
error and no request beyond its own file, the table filters, sorts, pages and opens a row's
stages, and the hostile text of `report_runs` (an item id, an output, a judge's reason, an error
message) shows as written while none of it runs.

Without Chromium these tests skip, except in CI (``CI`` set), where `.ci/run` installs it and a
missing browser is a failure."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from report_runs import HOSTILE_CLAIM, HOSTILE_ERROR, HOSTILE_ID, HOSTILE_OUTPUT, HOSTILE_REASON, eval_run

from engine.report.data import load_run
from engine.report.html import write_report
from engine.run.store import Store

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ITEMS = 120  # three pages of 50


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: .ci/run installs Debian's chromium package")
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("reports")
    store = folder / "store.sqlite"
    eval_run(store, ITEMS, run_id="run-a")
    eval_run(store, ITEMS, run_id="run-b", strict=True)
    paths = {"single": folder / "report.html", "compare": folder / "compare.html"}
    with Store(store) as db:
        write_report(paths["single"], load_run("run-a", db))
        write_report(paths["compare"], load_run("run-a", db), load_run("run-b", db))
    return paths


class Page:
    """A report opened in a fresh page, with its console messages, page errors and requests."""

    def __init__(self, browser, path: Path):
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("#items-body tr")

    def rows(self) -> list[str]:
        return self.page.locator("#items-body tr.row td.id").all_inner_texts()

    def statuses(self) -> list[str]:
        return self.page.locator("#items-body tr.row .status").all_inner_texts()

    def pwned(self):
        return self.page.evaluate("() => window.__pwned")


@pytest.fixture
def page(browser, reports):
    opened = Page(browser, reports["single"])
    yield opened
    opened.page.close()


def test_loads_offline_without_errors(page, reports):
    assert page.errors == [] and [m for m in page.console if m[0] in ("error", "warning")] == []
    assert page.requests == [reports["single"].as_uri()]  # the file itself, nothing else
    assert page.page.locator("#items-count").inner_text() == f"results 1–50 of {ITEMS}"
    assert page.page.locator("img.chart").count() == 1
    assert page.page.evaluate("() => Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")


def test_filters_to_the_failed_items(page):
    page.page.select_option("#filter-status", "failed")
    failed = [f"item-{i:03d}" for i in range(1, ITEMS) if i % 5 == 0]
    count = page.page.locator("#items-count").inner_text()
    assert count == f"results 1–{len(failed)} of {len(failed)} ({ITEMS} in all)"
    assert [row.lstrip("▸ ") for row in page.rows()] == failed
    assert set(page.statuses()) == {"failed"}
    # the reason column shows the error as text
    assert page.page.locator("#items-body td.why").first.inner_text() == f"[transport] at preprocess: {HOSTILE_ERROR}"


def test_score_range_search_sort_and_pages(page):
    page.page.fill("#filter-min", "0.6")
    page.page.fill("#filter-max", "0.7")
    scores = page.page.locator("#items-body tr.row td.num").all_inner_texts()
    assert scores and set(scores) == {"0.67"}
    page.page.fill("#filter-min", "")
    page.page.fill("#filter-max", "")
    page.page.fill("#filter-text", "question 42")
    page.page.wait_for_function("() => document.querySelectorAll('#items-body tr.row').length === 1")
    assert page.rows() == ["▸ item-042"]
    page.page.fill("#filter-text", "")
    page.page.wait_for_function(f"() => document.getElementById('items-count').textContent.endsWith('of {ITEMS}')")
    page.page.click("button[data-sort=score]")
    page.page.click("button[data-sort=score]")  # descending: the highest first, results without a score last
    assert page.page.locator("#items-body tr.row td.num").first.inner_text() == "1"
    page.page.click("#page-next")
    page.page.click("#page-next")
    assert page.page.locator("#page-info").inner_text() == "page 3 of 3"
    assert page.page.locator("#items-body tr.row").count() == ITEMS - 100
    assert set(page.statuses()[-5:]) <= {"not scorable", "failed"}


def test_a_row_opens_its_item_and_stages(page):
    page.page.fill("#filter-text", "item-002")
    page.page.wait_for_function("() => document.querySelectorAll('#items-body tr.row').length === 1")
    page.page.click("#items-body button.open")
    detail = page.page.locator("#items-body tr.detail-row")
    assert detail.locator("h3").inner_text() == "item item-002 · faithfulness"
    stages = detail.locator("details.stage")
    assert stages.count() == 2
    analyze = detail.locator("details[data-stage=analyze]")
    assert not analyze.locator("pre.prompt").is_visible()
    analyze.locator("summary").click()
    assert analyze.locator("pre.prompt").is_visible()
    assert "CLAIM:\n<<<\nbad-21\n>>>" in analyze.locator("pre.prompt").inner_text()
    verdicts = analyze.locator("table.records tbody tr").all_inner_texts()
    assert [" ".join(v.split()) for v in verdicts] == ["0 ok-20 yes checked ok-20", "1 bad-21 no checked bad-21",
                                                        "2 ok-22 yes checked ok-22"]
    assert "2 of 3 claims supported" in detail.locator(".field", has_text="reason").first.inner_text()


def test_a_failed_row_shows_its_error_and_stage(page):
    page.page.select_option("#filter-status", "failed")
    page.page.click("#items-body button.open >> nth=0")
    detail = page.page.locator("#items-body tr.detail-row")
    assert detail.locator(".error .field-name").inner_text() == "error at stage preprocess · transport"
    assert detail.locator(".error pre").inner_text() == HOSTILE_ERROR
    failed = detail.locator("details[data-stage=preprocess]")
    assert failed.get_attribute("open") is not None and failed.locator(".stage-failed").inner_text() == "failed"


def test_hostile_text_is_inert_and_shown_as_written(page, tmp_path):
    page.page.fill("#filter-text", "window.__pwned")
    page.page.wait_for_function("() => document.querySelectorAll('#items-body tr.row').length >= 1")
    assert page.rows()[0] == "▸ " + HOSTILE_ID
    page.page.click("#items-body button.open >> nth=0")
    detail = page.page.locator("#items-body tr.detail-row")
    detail.locator("details.stage summary").nth(0).click()
    detail.locator("details.stage summary").nth(1).click()
    assert detail.locator("h3 code").inner_text() == HOSTILE_ID
    assert detail.locator(".item .field", has_text="output").locator("pre").inner_text() == HOSTILE_OUTPUT
    records = detail.locator("details[data-stage=analyze] table.records").inner_text()
    reason = detail.locator(".side .field", has_text="reason").first.inner_text()
    assert HOSTILE_REASON in records and HOSTILE_CLAIM in reason
    # nothing ran and nothing was parsed as markup: no image or bold element came from the data
    assert page.pwned() is None
    assert page.page.evaluate("() => document.querySelectorAll('#items img, #items script, #items b').length") == 0
    assert page.page.evaluate("() => document.scripts.length") == 2
    assert page.errors == [] and [m for m in page.console if m[0] == "error"] == []
    shot = tmp_path / "report.png"
    page.page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_comparison_columns_and_movers(browser, reports):
    opened = Page(browser, reports["compare"])
    try:
        assert opened.errors == [] and opened.requests == [reports["compare"].as_uri()]
        headers = opened.page.locator("#items-head th").all_inner_texts()
        assert headers == ["item", "scorer", "status", "score A", "score B", "Δ (B − A)", "reason or error"]
        opened.page.click("button[data-sort=delta]")  # ascending: the largest drops first
        first = opened.page.locator("#items-body tr.row").first.locator("td.num").all_inner_texts()
        assert first == ["1", "0.5", "-0.5"]
        # a mover's "show" button opens that item in the table, with both runs' results side by side
        opened.page.locator("#comparison button.show").first.click()
        assert opened.page.locator("#items-body tr.row").count() == 1
        sides = opened.page.locator("#items-body tr.detail-row .side h4").all_inner_texts()
        assert sides == ["run A · run-a", "run B · run-b"]
        assert opened.pwned() is None
    finally:
        opened.page.close()
