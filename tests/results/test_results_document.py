"""The one-pass reading of results.json (results.document, store.record_from_bytes) against the general
way (store.record_from_json: json.loads, then the models): the same record, or the same refusal."""

import gc
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from committed_runs import committed_record, committed_results, results_bytes

from launchbench.errors import ResultsFileError
from launchbench.results.document import kept_to_the_end, parsed_document, paused_collector
from launchbench.results.schema import RunRecord
from launchbench.results.store import load_run, record_from_bytes, record_from_json

ROOT = Path(__file__).parents[2]
COMMITTED = committed_results()
V5 = ROOT / "results" / "quickstart-h200-v5" / "results.json"


def _outcome(read: Callable[[bytes, str], RunRecord], raw: bytes) -> RunRecord | str:
    try:
        return read(raw, "results.json")
    except ResultsFileError as err:
        return str(err)


def _assert_same(raw: bytes) -> RunRecord | str:
    """Both ways read ``raw`` into equal records (fields, the fields given, the dump) or refuse it alike."""
    fast, general = _outcome(record_from_bytes, raw), _outcome(record_from_json, raw)
    if isinstance(general, str) or isinstance(fast, str):
        assert fast == general
        return fast
    assert fast == general
    assert fast.model_dump() == general.model_dump()
    assert fast.model_fields_set == general.model_fields_set
    assert fast.environment.model_fields_set == general.environment.model_fields_set
    return fast


def test_the_committed_runs_are_there():
    assert len(COMMITTED) >= 30
    assert V5 in COMMITTED


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.parent.relative_to(ROOT / "results")))
def test_every_committed_results_file_reads_the_same_both_ways(path):
    raw = results_bytes(path)
    written = re.match(rb'\{"schema_version":(\d+),', raw)  # launchbench writes it first
    assert written is not None
    version = int(written.group(1))
    assert (parsed_document(raw) is not None) == (version >= 2)  # v1 files are migrated as JSON
    record = _assert_same(raw)
    assert isinstance(record, RunRecord) and record.cases
    assert committed_record(path) == record.model_copy(update={"journal_bytes": None})


def _edited(edit: Callable[[dict[str, Any]], object]) -> bytes:
    data = json.loads(V5.read_bytes())
    edit(data)
    return json.dumps(data).encode()


def _first_pass(data: dict[str, Any]) -> dict[str, Any]:
    mode: dict[str, Any] = next(iter(data["cases"][0]["modes"].values()))
    return mode["passes"][0]["samples"]


def _text(old: str, new: str) -> bytes:
    return re.sub(old, new, V5.read_text(encoding="utf-8"), count=1).encode()


EDGE_DOCUMENTS: dict[str, Callable[[], bytes]] = {
    "as written": lambda: V5.read_bytes(),
    "a UTF-8 byte order mark": lambda: b"\xef\xbb\xbf" + V5.read_bytes(),
    "a key given twice": lambda: _text(r'"case_id":', '"case_id":"first","case_id":'),
    "cases given twice": lambda: V5.read_bytes()[:-1] + b',"cases":[]}',
    "a lone surrogate in a name": lambda: _text(r'"chain":"', r'"chain":"\\ud800'),
    "NaN in params": lambda: _edited(lambda d: d["cases"][0]["params"].update(x=float("nan"))),
    "NaN in a series": lambda: _text(r'"wall_s_per_iter":\[', '"wall_s_per_iter":[NaN,'),
    "1e400 in a series": lambda: _text(r'"wall_s_per_iter":\[', '"wall_s_per_iter":[1e400,'),
    "a zero in a series": lambda: _edited(lambda d: _first_pass(d)["wall_s_per_iter"].__setitem__(0, 0.0)),
    "30 digits in params": lambda: _edited(lambda d: d["cases"][0]["params"].update(x=10**30)),
    "a float for a count": lambda: _edited(lambda d: d["cases"][0].update(launches_per_iter=3.0)),
    "a whole number for seconds": lambda: _edited(lambda d: d["cases"][0].update(elapsed_s=3)),
    "text for seconds": lambda: _edited(lambda d: d["cases"][0].update(elapsed_s="3")),
    "-0.0 seconds": lambda: _edited(lambda d: d["cases"][0].update(elapsed_s=-0.0)),
    "seconds of 21 digits": lambda: _text(r'"elapsed_s":[0-9.eE+-]+', '"elapsed_s":0.30000000000000004441'),
    "a GPU given as its name": lambda: _edited(lambda d: d["environment"].update(gpu="H200")),
    "schema version 2": lambda: _edited(lambda d: d.update(schema_version=2)),
    "schema version 6": lambda: _edited(lambda d: d.update(schema_version=6)),
    "schema version true": lambda: _edited(lambda d: d.update(schema_version=True)),
    "no tool": lambda: _edited(lambda d: d.pop("tool")),
    "no schema version": lambda: _edited(lambda d: d.pop("schema_version")),
    "an unknown top-level key": lambda: _edited(lambda d: d.update(extra=1)),
    "a case given twice": lambda: _edited(lambda d: d["cases"].append(d["cases"][0])),
    "a control character in a name": lambda: _text(r'"chain":"', r'"chain":"\\n'),
    "text after the document": lambda: V5.read_bytes() + b" x",
    "white space after the document": lambda: V5.read_bytes() + b" \n",
    "a list at the top": lambda: b"[1, 2]",
    "nested too deeply": lambda: b"[" * 100_000 + b"]" * 100_000,
    "not UTF-8": lambda: V5.read_bytes().replace(b'"chain":"', b'"chain":"\xff', 1),
}


@pytest.mark.parametrize("name", EDGE_DOCUMENTS)
def test_edge_documents_read_or_are_refused_alike(name):
    _assert_same(EDGE_DOCUMENTS[name]())


def test_a_number_beyond_the_digit_limit_is_refused_alike():
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # to write it
    try:
        raw = _edited(lambda d: d["cases"][0]["params"].update(x=10**5000))
    finally:
        sys.set_int_max_str_digits(limit)
    assert "not valid JSON" in str(_assert_same(raw))


def test_the_one_pass_reads_what_it_can_and_leaves_the_rest():
    assert parsed_document(V5.read_bytes()) is not None
    assert parsed_document(_edited(lambda d: d.update(schema_version=1))) is None
    assert parsed_document(b"[1, 2]") is None
    assert parsed_document(b'{"cases": [{"case_id": 3}]}') is None
    document = parsed_document(V5.read_bytes())
    assert document is not None and {"tool", "schema_version", "environment"} <= set(document)


def test_reading_pauses_the_collector_and_restores_it():
    assert gc.isenabled()
    with paused_collector():
        assert not gc.isenabled()
        with paused_collector():
            assert not gc.isenabled()
        assert not gc.isenabled()  # an inner block leaves the outer one's pause
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_collector():
            pass
        assert not gc.isenabled()  # a collector that was off stays off
    finally:
        gc.enable()


def test_a_refused_file_restores_the_collector():
    with pytest.raises(ResultsFileError):
        record_from_bytes(b"[1, 2]", "results.json")
    assert gc.isenabled()


def test_kept_to_the_end_moves_what_was_read_out_of_the_collectors_view():
    before = gc.get_freeze_count()
    try:
        with kept_to_the_end():
            record = load_run(V5.parent)
            assert not gc.isenabled()
        assert gc.isenabled()
        assert gc.get_freeze_count() >= before + len(record.cases)
    finally:
        gc.unfreeze()


def test_a_printable_name_holds_no_control_character() -> None:
    """The name check's shortcut (str.isprintable) is exact: no character Python calls printable is one
    of the control, format or separator characters the check refuses."""
    from launchbench.printable import control_characters

    printable = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isprintable())
    assert control_characters(printable) == []
    assert not "a\u202eb".isprintable() and control_characters("a\u202eb") == ["U+202E"]
