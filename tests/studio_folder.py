"""A folder as a studio user has it — a spec of its own (``politeness``, scaffolded by
``scorespec new``), its prompt and a dataset of four items — and the studio served over it on
127.0.0.1, its judge the fake OpenAI server (answering every call ``yes``) through the judge-call
cache kept in the folder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.judge.settings import JudgeSettings
from engine.spec.scaffold import new_spec
from engine.testing.fake_openai import FakeOpenAIServer

SPEC = "scorer_specs/politeness.yaml"
PROMPT = "prompts/politeness/judge.j2"
DATA = "items.jsonl"
ITEMS = [{"id": f"item-{n}", "input": f"question {n}", "output": f"answer {n}"} for n in range(1, 5)]
YES = {"verdict": "yes", "reason": "it does"}


def make_folder(root: Path) -> Path:
    """`root` with the spec, its prompt and the dataset written."""
    new_spec("politeness", root=root)
    (root / DATA).write_text("".join(json.dumps(item) + "\n" for item in ITEMS), encoding="utf-8")
    return root


def judge_settings(server: FakeOpenAIServer, root: Path) -> JudgeSettings:
    return JudgeSettings(model="openai/fake-model", base_url=server.base_url, api_key="test",
                         cache=root / ".scorespec" / "cache.sqlite")


@dataclass
class Served:
    """The folder, the fake judge's server and the studio's base URL."""

    root: Path
    judge: FakeOpenAIServer
    url: str


@pytest.fixture
def served(tmp_path) -> Iterator[Served]:
    from engine.studio.server import Studio, running
    from engine.studio.session import Session
    from engine.studio.workspace import Workspace

    root = make_folder(tmp_path / "project")
    with FakeOpenAIServer(YES) as server:
        studio = Studio(Session(Workspace(root), judge_settings(server, root)))
        with running(studio) as url:
            yield Served(root, server, url)
