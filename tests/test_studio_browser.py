"""The studio's page in a real browser: headless Chromium (Debian's `chromium`, driven by
Playwright) on the studio served over a folder with a spec of its own, its prompt and a dataset,
the judge the fake OpenAI server. The whole loop as a user does it: the page shows the spec, a
misspelt key saved shows its problem at its line, the fix shows none, a run of three items, a
prompt edit and a run again, the two runs compared (the item whose verdict changed first, the
prompt's diff), two items labelled by keyboard into the labels file, both runs' agreement with
those labels; no console error, and no request leaves the studio's own address.

Without Chromium this skips, except in CI (``CI`` set), where `.ci/run` installs it."""

from __future__ import annotations

import json

import pytest
from studio_folder import PROMPT, SPEC, served  # noqa: F401  (fixture)
from test_html_report_browser import browser  # noqa: F401  (fixture: the system's Chromium, or a skip)


def strict_judge(request: dict) -> dict:
    """Every item passes, but item 2 fails once the prompt asks the judge to be strict."""
    text = "\n".join(m.get("content") or "" for m in request["messages"] if m["role"] == "user")
    strict = "Be strict." in text and "answer 2" in text
    return {"verdict": "no" if strict else "yes", "reason": "too curt" if strict else "polite"}


@pytest.fixture
def page(browser, served):
    opened = browser.new_page(viewport={"width": 1280, "height": 900})
    opened.set_default_timeout(20_000)
    opened.console_seen, opened.errors_seen, opened.requests_seen = [], [], []
    opened.on("console", lambda m: opened.console_seen.append((m.type, m.text)))
    opened.on("pageerror", lambda e: opened.errors_seen.append(str(e)))
    opened.on("request", lambda r: opened.requests_seen.append(r.url))
    yield opened
    opened.close()


def test_the_loop_in_the_browser_edit_fix_run_compare_and_label_by_keyboard(served, page):
    served.judge.reply = strict_judge
    page.goto(served.url + "/")
    page.wait_for_function("() => document.getElementById('spec-text').value.includes('id: politeness')")
    assert page.locator("#spec-path").inner_text() == SPEC
    good = (served.root / SPEC).read_text()
    line = good.splitlines().index(next(x for x in good.splitlines() if x.startswith("description:"))) + 1

    page.fill("#spec-text", good.replace("description:", "descripton:"))
    page.click("#save-spec")
    problem = page.locator("#problems li").first
    problem.wait_for()
    page.wait_for_function("() => document.querySelector('#problems li').textContent.includes('descripton')")
    assert problem.inner_text().startswith(f"{SPEC}:{line}:1: ")
    assert "descripton:" in (served.root / SPEC).read_text()
    page.fill("#spec-text", good)
    page.keyboard.press("Control+s")
    page.wait_for_function("() => document.querySelector('#problems li').textContent === 'no problems'")

    page.fill("#limit", "3")
    page.click("#run")
    page.wait_for_function("() => document.getElementById('run-summary').textContent.includes('0 cached')")
    assert page.locator("#results tbody tr td:nth-child(2)").all_inner_texts() == ["1", "1", "1"]
    page.locator("#results tbody tr").nth(1).click()
    assert "answer 2" in page.locator("#detail-body").inner_text()

    assert page.input_value("#prompt-file") == PROMPT  # the spec's own prompt opens beside it
    prompt = page.input_value("#prompt-text")
    page.fill("#prompt-text", "Be strict.\n" + prompt)
    page.click("#save-prompt")
    page.wait_for_function("() => document.getElementById('status').textContent.startsWith('saved prompts/')")
    first = page.locator("#run-summary").inner_text()
    page.click("#run")
    page.wait_for_function(f"() => !document.getElementById('run-summary').textContent.startsWith({first[:22]!r})")
    assert "3 judge call(s) · 0 cached" in page.locator("#run-summary").inner_text()
    assert page.locator("#results tbody tr td:nth-child(2)").all_inner_texts() == ["1", "0", "1"]

    page.wait_for_function("() => document.getElementById('run-b').options.length === 2")
    page.click("#compare")
    page.wait_for_function("() => document.getElementById('compare-summary').textContent.includes('changed')")
    assert "1 verdict(s) changed" in page.locator("#compare-summary").inner_text()
    assert page.locator("#compare-items tbody tr").first.inner_text().startswith("item-2")
    assert "+Be strict." in page.locator("#diff").inner_text()

    page.click("#queue")
    page.wait_for_function("() => document.getElementById('label-status').textContent.includes('of 3')")
    page.keyboard.press("y")
    page.wait_for_function("() => document.getElementById('label-status').textContent.startsWith('item 2')")
    page.keyboard.press("n")
    page.wait_for_function("() => document.getElementById('status').textContent.includes(': no')")
    lines = [json.loads(raw) for raw in (served.root / "items.labels.jsonl").read_text().splitlines()]
    assert [(x["id"], x["label"]) for x in lines] == [("item-1", "yes"), ("item-2", "no")]
    page.click("#agreement")
    page.wait_for_function("() => document.querySelectorAll('#agreement-table tbody tr').length === 2")
    first_run, second_run = page.locator("#agreement-table tbody tr").all_inner_texts()
    assert "balanced accuracy 0.50" in first_run and "tp 1 fp 1 tn 0 fn 0" in first_run  # before the edit
    assert "balanced accuracy 1.00" in second_run and "tp 1 fp 0 tn 1 fn 0" in second_run

    assert page.errors_seen == [] and [m for m in page.console_seen if m[0] in ("error", "warning")] == []
    assert {url.split("/", 3)[2] for url in page.requests_seen} == {served.url.split("/", 3)[2]}
