"""Anthropic's extended thinking through the anthropic SDK, against a local fake Messages server.

The fake enforces what Anthropic's "Building with extended thinking" docs say of a request with
``thinking: {type: enabled, budget_tokens: B}``: B at least 1,024 and below ``max_tokens``;
``temperature`` only 1 (left out here); ``tool_choice`` only ``auto`` or ``none`` (a forced tool
is refused); the answer's content starts with a ``thinking`` block, and ``usage.output_tokens``
counts the thinking.
"""

from __future__ import annotations

import http.server
import json
import threading

import pytest

pytest.importorskip("anthropic")

from engine.bind.load import load_scorer  # noqa: E402
from engine.bind.stack import make_judge  # noqa: E402
from engine.judge.retries import RetryPolicy  # noqa: E402
from engine.testing.schema_answers import answer_for  # noqa: E402

FAITHFUL = {"output": "Paris is in France.", "context": ["Paris is the capital of France."]}


def refusal(request: dict) -> str | None:
    thinking = request.get("thinking")
    if not (isinstance(thinking, dict) and thinking.get("type") == "enabled"):
        return None
    budget = thinking.get("budget_tokens", 0)
    if budget < 1024:
        return "thinking.budget_tokens: must be at least 1024"
    if request.get("max_tokens", 0) <= budget:
        return "max_tokens must be greater than thinking.budget_tokens"
    if "temperature" in request and request["temperature"] != 1:
        return "temperature may only be set to 1 when thinking is enabled"
    choice = request.get("tool_choice") or {}
    if choice.get("type") not in (None, "auto", "none"):
        return "Thinking may not be enabled when tool_choice forces tool use."
    return None


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(request)
        said = refusal(request)
        if said:
            body = {"type": "error", "error": {"type": "invalid_request_error", "message": said}}
            status = 400
        else:
            tool = request["tools"][0]
            content = [{"type": "tool_use", "id": "toolu_1", "name": tool["name"],
                        "input": answer_for(tool["input_schema"])}]
            thinking = "thinking" in request
            if thinking:
                content.insert(0, {"type": "thinking", "thinking": "Let me check.", "signature": "sig"})
            body = {"id": "msg_1", "type": "message", "role": "assistant", "model": request["model"],
                    "content": content, "stop_reason": "tool_use", "stop_sequence": None,
                    "usage": {"input_tokens": 40, "output_tokens": 30 + (200 if thinking else 0)}}
            status = 200
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def messages_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def judge_for(server):
    return make_judge("anthropic/claude-sonnet-4-6", base_url=f"http://127.0.0.1:{server.server_port}",
                      api_key="test", retry=RetryPolicy(max_retries=0))


def test_claude_with_a_reasoning_effort_thinks_within_its_rules(messages_server):
    scorer = load_scorer("faithfulness", judge=judge_for(messages_server),
                         options={"judge.reasoning_effort": "medium"})
    result = scorer.run(**FAITHFUL)
    assert result.status == "scored", result.error
    limits = {request["max_tokens"] for request in messages_server.requests}
    for request in messages_server.requests:
        assert request["thinking"] == {"type": "enabled", "budget_tokens": 4096}
        assert "temperature" not in request and request["tool_choice"] == {"type": "auto"}
    assert limits == {2048 + 4096, 1024 + 4096}  # each stage's answer room (preprocess, verify) plus the budget
    assert result.usage.tokens_out == 230 * result.usage.calls  # thinking counted as output


def test_claude_without_an_effort_is_asked_as_before(messages_server):
    result = load_scorer("faithfulness", judge=judge_for(messages_server)).run(**FAITHFUL)
    assert result.status == "scored", result.error
    assert {request["max_tokens"] for request in messages_server.requests} == {2048, 1024}
    for request in messages_server.requests:
        assert "thinking" not in request and request["tool_choice"]["type"] == "tool"
        assert request.get("temperature", 0.0) == 0.0  # sent when the installed SDK takes it
