"""The JSONL out file: whole lines written, torn last lines repaired, compaction, and the
resume scan of what a file holds."""

from __future__ import annotations

import json

from engine.run.outfile import OutWriter, compact_out_file, repair_last_line
from engine.run.resume import scan_out_file


def test_out_writer_finishes_short_writes(tmp_path):
    class Short:  # a raw file whose writes stop after 7 bytes (as a signal or a full disk may)
        def __init__(self, f):
            self.f, self.closed, self.calls = f, False, 0

        def write(self, data):
            self.calls += 1
            return self.f.write(bytes(data[:7]))

        def fileno(self):
            return self.f.fileno()

        def close(self):
            self.closed = True
            self.f.close()

    writer = OutWriter(tmp_path / "out.jsonl")
    writer._f = Short(writer._f)
    writer.write({"id": 1, "scorer": "x", "score": 0.5})
    writer.write({"id": 2, "scorer": "x", "score": 1.0})
    assert writer._f.calls > 2
    writer.close()
    assert (tmp_path / "out.jsonl").read_text("utf-8") == (
        '{"id": 1, "scorer": "x", "score": 0.5}\n{"id": 2, "scorer": "x", "score": 1.0}\n')
    assert scan_out_file(tmp_path / "out.jsonl").records == {("1", "x"): ("scored", 0.5), ("2", "x"): ("scored", 1.0)}


def test_scan_out_file_keeps_a_whole_last_line_without_newline(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": 1, "scorer": "x", "score": 1.0}\n{"id": 2, "scorer": "x", "score": 0.5}', "utf-8")
    prior = scan_out_file(out)
    assert prior.records == {("1", "x"): ("scored", 1.0), ("2", "x"): ("scored", 0.5)}
    assert out.read_text("utf-8").endswith('0.5}\n')


def test_a_torn_last_line_is_removed_and_a_long_one_found(tmp_path):
    out = tmp_path / "out.jsonl"
    whole = json.dumps({"id": 1, "scorer": "x", "score": 1.0, "reason": "r" * 100_000}) + "\n"
    torn = '{"id": 2, "scorer": "x", "reason": "' + "t" * 150_000  # longer than one read from the end
    out.write_text(whole + torn, "utf-8")
    assert repair_last_line(out) == f"{out}: removed a torn last line ({len(torn)} bytes) left by an interrupted run"
    assert out.read_text("utf-8") == whole
    assert repair_last_line(out) is None  # a clean end is left alone
    out.write_text(torn, "utf-8")  # the only line, torn
    assert repair_last_line(out) is not None and out.read_bytes() == b""
    assert repair_last_line(out) is None


def test_compaction_keeps_the_last_line_per_item_and_scorer_in_file_order(tmp_path):
    out = tmp_path / "out.jsonl"
    lines = [{"id": 1, "scorer": "x", "score": None}, {"id": 2, "scorer": "x", "score": 0.5},
             {"id": 1, "scorer": "y", "score": 0.25}, {"id": 1, "scorer": "x", "score": 1.0}]
    out.write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json\n", "utf-8")
    prior = scan_out_file(out)
    assert prior.untidy and prior.records[("1", "x")] == ("scored", 1.0)
    compact_out_file(out)
    assert [json.loads(line) for line in out.read_text("utf-8").splitlines()] == lines[1:]
