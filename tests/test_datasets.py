"""Reading datasets: JSONL, CSV, JSON arrays, lists, DataFrames; malformed records as FILE:LINE."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from engine.bind.load import load_scorer
from engine.run.datasets import iter_items
from engine.run.items import DatasetError, DatasetProblem, label_value, parse_fields, to_item
from engine.run.readers import count_records, read_file


def read(path: Path, fields=None) -> tuple[list[dict], list[str]]:
    problems: list[DatasetProblem] = []
    items = list(read_file(path, fields, problems.append))
    return items, [p.render() for p in problems]


def test_jsonl_malformed_lines_are_reported_and_the_rest_loads(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_bytes(
        b'{"output": "one", "context": "a passage"}\n'           # 1
        b'{"output": "two", \n'                                  # 2 bad JSON
        b'\n'                                                    # 3 blank: skipped silently
        b'{"output": "caf\xe9"}\n'                               # 4 invalid UTF-8
        b'[1, 2]\n'                                              # 5 not an object
        b'{"output": "nul \x00 raw and \\u0000 escaped"}\n'      # 6 NUL bytes are text
        b'{"id": "q7", "output": "seven", "extra": 7}'           # 7 no final newline
    )
    items, problems = read(path)
    assert problems == [
        f"{path}:2: invalid JSON: Expecting property name enclosed in double quotes (column 19)",
        f"{path}:4: not valid UTF-8 (byte 0xe9 at column 16)",
        f"{path}:5: expected a JSON object, got an array",
    ]
    assert [i["id"] for i in items] == [1, 6, "q7"]
    assert items[0]["context"] == ["a passage"]
    assert items[1]["output"] == "nul \x00 raw and \x00 escaped"
    assert items[2] == {"id": "q7", "input": None, "output": "seven", "ground_truth": None, "context": None,
                        "extra": 7}


def test_a_pretty_printed_json_object_is_said_once_to_be_neither_items_nor_traces(tmp_path):
    from engine.run.readers import read_stream

    data = json.dumps({"results": [{"output": "a"}, {"output": "b"}], "meta": {"n": 2}}, indent=2)
    for name in ("report.json", "report.jsonl", "report"):
        path = tmp_path / name
        path.write_text(data)
        items, problems = read(path)
        assert items == [] and problems == [f"{path}:1: the file is one JSON object over many lines, neither "
                                            "items nor traces: a JSON file must be an array of items ([{…}, …]), "
                                            "JSON Lines (one item per line) or an OTLP JSON document "
                                            '({"resourceSpans": …}, --format otlp); the file was not read']
        assert count_records(path) is None  # its lines are no items to count
    streamed: list[DatasetProblem] = []
    assert list(read_stream(io.BytesIO(data.encode()),
                            "s3://b/report.json", on_problem=streamed.append)) == []
    assert [p.line for p in streamed] == [1] and "neither items nor traces" in streamed[0].message


def test_a_jsonl_whose_first_line_is_cut_still_reads_its_other_lines(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text('{"output": "one",\n{"output": "two"}\n')
    items, problems = read(path)
    assert problems == [f"{path}:1: invalid JSON: Expecting property name enclosed in double quotes (column 18)"]
    assert [i["output"] for i in items] == ["two"]


def test_jsonl_fields_aliases_and_nested_mapping(tmp_path):
    path = tmp_path / "items.jsonl"
    rows = [{"qid": 10, "question": "Q?", "answer": "A.", "groundTruth": "GT", "meta": {"passages": ["p1", "p2"]}}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    items, problems = read(path, parse_fields(["id=qid", "input=question", "output=answer",
                                               "context=meta.passages"]))
    assert problems == []
    assert items == [{"id": 10, "input": "Q?", "output": "A.", "ground_truth": "GT", "context": ["p1", "p2"],
                      "meta": {"passages": ["p1", "p2"]}}]


def test_duplicate_ids_are_reported(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text('{"id": "a", "output": "x"}\n{"id": "b", "output": "y"}\n{"id": "a", "output": "z"}\n')
    items, problems = read(path)
    assert [i["id"] for i in items] == ["a", "b"]
    assert problems == [f"{path}:3: duplicate id 'a' (first at line 1); skipped"]


def test_csv_mapping_multiline_cells_and_bad_rows(tmp_path):
    path = tmp_path / "items.csv"
    path.write_bytes(
        b'id,question,answer,passages\n'                                  # 1
        b'a,Q1,"A1 spans\ntwo lines","[""p1"", ""p2""]"\n'                # 2-3
        b',Q2,A2,just one passage\n'                                      # 4: no id -> line number
        b'c,Q3,A3\n'                                                      # 5: too few cells
        b'd,Q4,"caf\xe9",x\n'                                             # 6: invalid UTF-8
        b'e,Q5,,\n'                                                       # 7: empty cells -> not given
    )
    items, problems = read(path, {"input": "question", "output": "answer", "context": "passages"})
    assert problems == [f"{path}:5: 3 cell(s), the header has 4",
                        f"{path}:6: not valid UTF-8 (byte 0xe9 at column 10)"]
    assert [(i["id"], i["input"], i["output"], i["context"]) for i in items] == [
        ("a", "Q1", "A1 spans\ntwo lines", ["p1", "p2"]),
        (4, "Q2", "A2", ["just one passage"]),
        ("e", "Q5", None, None),
    ]
    assert count_records(path) == 5  # an estimate for progress: data rows, good or bad


def test_a_csv_quote_never_closed_is_an_error_naming_its_line_not_one_cell_of_every_later_row(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text('id,output\na,one\nb,"two\nc,three\nd,four\n', encoding="utf-8")
    items, problems = read(path)
    assert [i["id"] for i in items] == ["a"]
    assert problems == [f"{path}:3: malformed CSV: a quoted cell opened on this line is never closed; "
                        "lines 3 to 5 (the end of the file) were not read"]


def test_a_csv_header_with_two_byte_order_marks_keeps_its_id_column(tmp_path):
    path = tmp_path / "items.csv"
    path.write_bytes(b"\xef\xbb\xbf\xef\xbb\xbfid,output\nq1,one\nq2,two\n")
    items, problems = read(path)
    assert problems == [] and [(i["id"], i["output"]) for i in items] == [("q1", "one"), ("q2", "two")]


def test_csv_mapping_to_an_absent_column_is_an_error(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("question,response\nq,r\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"--field output=answer: no such column \(columns: question, response\)"):
        read(path, {"output": "answer"})


def test_json_array_items_get_their_positions_and_problems_their_lines(tmp_path):
    path = tmp_path / "items.json"
    path.write_text('[\n  {"output": "one"},\n  "not an object",\n  {"output": "three",\n   "input": "q"}\n]\n',
                    encoding="utf-8")
    items, problems = read(path)
    assert problems == [f"{path}:3: expected a JSON object, got a string"]
    assert [(i["id"], i["output"]) for i in items] == [(1, "one"), (3, "three")]


def test_a_one_line_json_array_without_ids_keeps_every_item(tmp_path):
    import json

    path = tmp_path / "items.json"
    path.write_text(json.dumps([{"output": "a"}, {"output": "b"}, {"output": "c"}]), encoding="utf-8")
    items, problems = read(path)
    assert problems == []
    assert [(i["id"], i["output"]) for i in items] == [(1, "a"), (2, "b"), (3, "c")]


def test_json_array_syntax_error_keeps_what_came_before(tmp_path):
    path = tmp_path / "items.json"
    path.write_text('[{"output": "one"},\n {"output": "two"},\n {"output": oops}\n]', encoding="utf-8")
    items, problems = read(path)
    assert [i["output"] for i in items] == ["one", "two"]
    assert problems == [f"{path}:3: invalid JSON: Expecting value (column 13); the rest of the array was not read"]


def test_list_of_dicts_positions_context_and_bad_records():
    problems: list[DatasetProblem] = []
    items = list(iter_items([{"output": "a", "context": "one"}, "oops", {"output": "c", "context": None,
                                                                          "score_hint": float("nan")}],
                            on_problem=problems.append))
    assert [p.render() for p in problems] == ["<data>:2: expected a dict, got str"]
    assert [(i["id"], i["context"]) for i in items] == [(1, ["one"]), (3, None)]
    assert items[1]["score_hint"] is None  # NaN is "missing"


def test_to_item_keeps_the_rest_and_never_copies_mapped_columns():
    item = to_item({"answer": "A", "output": "ignored?", "other": 1}, 5, {"output": "answer"})
    assert item["output"] == "A"
    assert item["other"] == 1
    assert "answer" not in item  # consumed by the mapping
    assert item["id"] == 5


def test_parse_fields_rejects_unknown_names():
    assert parse_fields(["output=answer", "groundTruth=gold"]) == {"output": "answer", "ground_truth": "gold"}
    with pytest.raises(ValueError, match="'label' is not one of"):
        parse_fields(["label=x"])
    with pytest.raises(ValueError, match="expected name=column"):
        parse_fields(["output"])


def test_missing_file():
    with pytest.raises(DatasetError, match="no such file"):
        read_file("/nonexistent/items.jsonl")


def test_dataframe():
    import pandas as pd  # a test dependency: run_evals accepts a DataFrame
    frame = pd.DataFrame({"answer": ["A", "B"], "passages": [["p"], None], "n": [1.0, float("nan")]})
    items = list(iter_items(frame, {"output": "answer", "context": "passages"}))
    assert [(i["id"], i["output"], i["context"], i["n"]) for i in items] == [(1, "A", ["p"], 1.0),
                                                                             (2, "B", None, None)]


def test_an_object_passage_is_its_json_text_from_scorer_run_and_from_a_dataset_item(write_spec, tmp_path):
    path = write_spec("show_context", """
        format: 1
        id: show_context
        name: Show context
        description: Shows the context it was given.
        version: 1
        stages:
          - id: analyze
            function: textual_difference
            args: {reference: "run.context | join('|')", candidate: "run.context | join('|')"}
        score:
          formula: "1"
        reason:
          - template: "{{ run.context | join('|') }}"
    """)
    scorer = load_scorer(str(path))
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps({"output": "x", "context": [{"doc": "Paris"}]}) + "\n", encoding="utf-8")
    (item,) = read_file(data)
    assert item["context"] == ['{"doc": "Paris"}']
    direct = scorer.run(output="x", context=[{"doc": "Paris"}]).reason
    assert direct == scorer.run(output="x", context=item["context"]).reason == '{"doc": "Paris"}'


def test_a_label_is_read_at_a_dotted_path_and_is_none_where_the_path_ends():
    item = {"id": 1, "label": "yes", "meta": {"human": {"grade": 3}}}
    assert label_value(item, "label") == "yes"
    assert label_value(item, "meta.human.grade") == 3
    assert label_value(item, "meta.missing") is None
    assert label_value(item, "label.deeper") is None  # a text has no keys
    assert label_value({"meta": None}, "meta.grade") is None


def test_a_parquet_file_without_pyarrow_names_the_extra_to_install(tmp_path, monkeypatch):
    import sys

    path = tmp_path / "items.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # as if pyarrow were not installed
    with pytest.raises(DatasetError) as refused:
        list(iter_items(path))
    assert "reading Parquet needs pyarrow (pip install 'scorespec[parquet]')" in str(refused.value)
