"""A first run that joins the embedded model's parts says so on stderr (it takes minutes, and
without a terminal there is no progress bar to show it); a second run, reusing the file, does not."""

from __future__ import annotations

import hashlib

from engine.embedded.files import join_parts


def test_joining_the_model_parts_is_said_on_stderr_once(tmp_path, capsys):
    parts = [tmp_path / "p1", tmp_path / "p2"]
    parts[0].write_bytes(b"GGUF" + b"a" * 96)
    parts[1].write_bytes(b"b" * 100)
    whole = parts[0].read_bytes() + parts[1].read_bytes()
    dest = tmp_path / "cache" / "model.gguf"
    join_parts(parts, dest, expected_size=len(whole), expected_sha256=hashlib.sha256(whole).hexdigest())
    said = capsys.readouterr().err
    assert said.startswith(f"scorespec: joining the embedded model's 2 parts into {dest} (0.0 GB, checked by SHA-256)")
    join_parts(parts, dest, expected_size=len(whole), expected_sha256=hashlib.sha256(whole).hexdigest())
    assert capsys.readouterr().err == ""  # reused as it is: nothing to say
    assert dest.read_bytes() == whole
