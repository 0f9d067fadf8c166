"""The screenshots of the studio's guide (docs/guides/studio.md), taken with Playwright in the
system's Chromium on the studio served over the tests' folder (`studio_folder`) with the fake
judge: ``python tests/studio_screenshots.py docs/images`` writes ``studio-edit.png`` (a problem
shown at its line), ``studio-run.png`` (a run and an item's stages) and ``studio-compare.png``
(two runs compared, the label queue)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from studio_folder import SPEC, YES, judge_settings, make_folder

from engine.studio.server import Studio, running
from engine.studio.session import Session
from engine.studio.workspace import Workspace
from engine.testing.fake_openai import FakeOpenAIServer


def strict(request: dict) -> dict:
    text = "\n".join(m.get("content") or "" for m in request["messages"] if m["role"] == "user")
    return {"verdict": "no", "reason": "curt: no greeting"} if "Be strict." in text and "answer 2" in text else YES


def shoot(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    root = make_folder(Path(tempfile.mkdtemp()) / "my-scorers")
    with FakeOpenAIServer(strict) as server, sync_playwright() as playwright, \
            running(Studio(Session(Workspace(root), judge_settings(server, root)))) as url:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 820})
        page.goto(url + "/")
        page.wait_for_function("() => document.getElementById('spec-text').value.includes('id: politeness')")
        good = (root / SPEC).read_text()
        page.fill("#spec-text", good.replace("description:", "descripton:"))
        page.click("#save-spec")
        page.wait_for_function("() => document.querySelector('#problems li').textContent.includes('descripton')")
        page.locator("#problems li").first.click()  # the editor goes to its line
        page.screenshot(path=out / "studio-edit.png")
        page.fill("#spec-text", good)
        page.click("#save-spec")
        page.fill("#limit", "4")
        page.click("#run")
        page.wait_for_function("() => document.getElementById('run-summary').textContent.includes('cached')")
        page.fill("#prompt-text", "Be strict.\n" + page.input_value("#prompt-text"))
        page.click("#save-prompt")
        page.wait_for_function("() => document.getElementById('status').textContent.startsWith('saved')")
        page.click("#run")
        page.wait_for_function("() => document.getElementById('run-b').options.length === 2")
        page.locator("#results tbody tr").nth(1).click()
        page.locator("section.run").screenshot(path=out / "studio-run.png")
        page.click("#compare")
        page.wait_for_function("() => document.getElementById('compare-summary').textContent.includes('changed')")
        page.click("#queue")
        page.wait_for_function("() => document.getElementById('label-status').textContent.includes('queue')")
        page.locator("section.compare").screenshot(path=out / "studio-compare.png")
        browser.close()


if __name__ == "__main__":
    shoot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images").resolve())
