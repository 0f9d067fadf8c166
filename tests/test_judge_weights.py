"""An embedded judge's weights in the cache key (engine.judge.weights, engine.judge.identity): the
file's SHA-256, hashed once and remembered by path, size and modification time. No model is
loaded: the files are small and only named like GGUF models."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from engine.judge.call import JudgeCall
from engine.judge.contract import AnswerContract
from engine.judge.identity import provider_identity, schema_as_sent
from engine.judge.weights import SIDECAR_NAME, weights_sha256

ROOT = Path(__file__).resolve().parent.parent


def gguf(path: Path, body: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF" + body)
    return path


def call() -> JudgeCall:
    schema = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}
    return JudgeCall("analyze", [{"role": "user", "content": "Is it so?"}], AnswerContract(schema))


def test_the_digest_is_the_files_sha256_and_is_written_to_the_sidecar(tmp_path):
    weights = gguf(tmp_path / "m" / "model.gguf", b"some weights")
    sidecar = tmp_path / "memo.json"
    digest = weights_sha256(weights, sidecar=sidecar)
    assert digest == hashlib.sha256(b"GGUFsome weights").hexdigest()
    stat = weights.stat()
    assert json.loads(sidecar.read_text())[str(weights.resolve())] == {
        "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}


def test_a_later_run_takes_the_remembered_digest_until_size_or_mtime_change(tmp_path):
    weights = gguf(tmp_path / "model.gguf", b"first weights")
    sidecar = tmp_path / "memo.json"
    remembered = weights_sha256(weights, sidecar=sidecar)
    stat = weights.stat()
    gguf(weights, b"other weights")  # same size; the old modification time put back
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    program = "import sys; from engine.judge.weights import weights_sha256; print(weights_sha256(*sys.argv[1:2], " \
              "sidecar=sys.argv[2]))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def in_a_new_process() -> str:
        done = subprocess.run([sys.executable, "-c", program, str(weights), str(sidecar)], env=env,
                              capture_output=True, text=True, check=True)
        return done.stdout.strip()

    assert in_a_new_process() == remembered  # not hashed again
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert in_a_new_process() == hashlib.sha256(b"GGUFother weights").hexdigest()


def test_the_sidecar_lives_beside_the_embedded_models(tmp_path, monkeypatch):
    monkeypatch.setenv("SCORESPEC_CACHE", str(tmp_path / "models"))
    weights = gguf(tmp_path / "w" / "model.gguf", b"weights for the default sidecar")
    weights_sha256(weights)
    assert str(weights.resolve()) in json.loads((tmp_path / "models" / SIDECAR_NAME).read_text())


def test_an_unreadable_sidecar_only_costs_a_new_hash(tmp_path):
    weights = gguf(tmp_path / "model.gguf", b"weights and a broken memo")
    sidecar = tmp_path / "memo.json"
    sidecar.write_text("{not json")
    assert weights_sha256(weights, sidecar=sidecar) == hashlib.sha256(b"GGUFweights and a broken memo").hexdigest()
    assert str(weights.resolve()) in json.loads(sidecar.read_text())


def test_two_files_of_one_name_key_apart_and_one_file_by_two_paths_keys_alike(tmp_path):
    one = gguf(tmp_path / "a" / "model.gguf", b"weights one")
    two = gguf(tmp_path / "b" / "model.gguf", b"weights two")
    copy = gguf(tmp_path / "c" / "model.gguf", b"weights one")

    def key(path: Path) -> str:
        identity = provider_identity(f"llamacpp/{path}", mode="json_schema_mode", weights=path, seed=0)
        return identity.call_identity(call()).key()

    assert key(one) != key(two)
    assert key(one) == key(copy)
    identity = provider_identity("local", mode="json_schema_mode", weights=one, seed=0)
    assert identity.call_identity(call()).model == hashlib.sha256(b"GGUFweights one").hexdigest()
    assert identity.call_identity(call()).provider == "local"


def test_a_hosted_identity_keeps_the_name_base_url_and_mode():
    identity = provider_identity("openai/gpt-4o-mini", base_url="http://127.0.0.1:9/v1/", mode="tool_call")
    material = identity.call_identity(call(), sample_index=0)
    assert (material.provider, material.model, material.base_url, material.structured_mode, material.seed) == (
        "openai", "gpt-4o-mini", "http://127.0.0.1:9/v1", "tool_call", None)
    other = provider_identity("openai/gpt-4o-mini", base_url="http://127.0.0.1:9/v1/", mode="json_schema_mode")
    assert other.call_identity(call()).key() != material.key()


def test_the_schema_as_sent_is_titled_by_the_stage():
    assert schema_as_sent(call())["title"] == "analyze"
    titled = JudgeCall("analyze", [], AnswerContract({"type": "object", "title": "Verdict"}))
    assert schema_as_sent(titled) == {"type": "object", "title": "Verdict"}


def test_a_stages_calls_share_one_schema_as_sent_and_another_stage_gets_its_own():
    first = call()
    again = JudgeCall("analyze", [{"role": "user", "content": "Is that so?"}], first.contract)
    other_stage = JudgeCall("verify", [], first.contract)
    assert schema_as_sent(again) is schema_as_sent(first)  # the key remembers its JSON by object
    assert schema_as_sent(other_stage)["title"] == "verify" and schema_as_sent(first)["title"] == "analyze"
    assert "title" not in first.schema  # the stage's own schema is never changed
