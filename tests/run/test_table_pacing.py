"""Which passes' ends write the run's tables (session.TablePacing), and that the run's end always does."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import make_run

from launchbench.results.schema import RunRecord
from launchbench.run.session import TABLES_EVERY_S, TABLES_SHARE, RunSession, TablePacing


@pytest.mark.parametrize(
    ("since_s", "took_s", "due"),
    [
        (0.0, 0.0, False),  # just written
        (TABLES_EVERY_S - 0.01, 0.0, False),  # not yet the interval
        (TABLES_EVERY_S, 0.0, True),
        (TABLES_EVERY_S, 0.5, True),  # 0.5 of 5.5 s: under a tenth
        (TABLES_EVERY_S, 1.0, False),  # 1 of 6 s: over a tenth
        (9.0 * 20.0, 20.0, True),  # a write of 20 s (a thousand cases) waits nine times as long
        (9.0 * 20.0 - 1.0, 20.0, False),
    ],
)
def test_the_tables_wait_for_the_interval_and_stay_a_tenth_of_the_run(since_s, took_s, due):
    assert TablePacing().due(since_s, took_s) is due


def test_pacing_of_zero_and_one_writes_after_every_pass():
    every = TablePacing(every_s=0.0, share=1.0)
    assert all(every.due(since, took) for since, took in [(0.0, 0.0), (0.0, 10.0), (1e-9, 1e3)])
    assert TABLES_SHARE == 0.1


class _Clock:
    """Seconds that the test moves on by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_session_writes_the_tables_at_the_passes_its_pacing_says_and_at_the_end(tmp_path: Path):
    clock = _Clock()
    written: list[float] = []

    def write(run_dir: Path, record: RunRecord) -> None:
        assert run_dir == tmp_path
        written.append(clock.now)
        clock.now += 1.0  # each write takes 1 s

    session = RunSession(tmp_path, make_run(), write, pacing=TablePacing(every_s=5.0, share=0.1), clock=clock)
    for step in [2.0, 3.0, 4.0, 4.0, 0.5]:  # each pass's time: passes end at 102, 105, 110, 114, 114.5
        clock.now += step
        session.pass_ended()
    session.finish("complete")
    # 5 s after the start (105): written, ending at 106; the next waits until its 1 s is a tenth of the
    # time since 105 (115): the passes at 110, 114 and 114.5 write none, and the run's end writes at 114.5
    assert written == [105.0, 114.5]
    assert (tmp_path / "results.json").exists()


def test_a_session_without_a_table_writer_writes_none(tmp_path: Path):
    session = RunSession(tmp_path, make_run(), None, pacing=TablePacing(every_s=0.0, share=1.0))
    session.pass_ended()
    assert session.finish("complete").status == "complete"
    assert not (tmp_path / "results.csv").exists()
