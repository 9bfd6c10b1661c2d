"""Finding NVML's device for a CUDA device (no GPU needed: NVML's two lookups are recorded by a stand-in)."""

from __future__ import annotations

from launchbench.backend.nvml import complete_uuid, nvml_handle

RAW_UUID = bytes.fromhex("1dd57fde4b8cf8e5a5bd4794b6901383")  # an H200 of the device tool
BUS_ID = "00000000:00:05.0"


class RecordingNvml:
    """Answers NVML's two lookups with which one was asked."""

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> tuple[str, str]:  # noqa: N802 - NVML's name
        return ("uuid", uuid)

    def nvmlDeviceGetHandleByPciBusId(self, bus_id: str) -> tuple[str, str]:  # noqa: N802 - NVML's name
        return ("pci", bus_id)


def test_a_complete_uuid_finds_the_device_by_uuid() -> None:
    assert complete_uuid(RAW_UUID) == "GPU-1dd57fde-4b8c-f8e5-a5bd-4794b6901383"
    assert nvml_handle(RecordingNvml(), RAW_UUID, BUS_ID) == (
        "uuid",
        "GPU-1dd57fde-4b8c-f8e5-a5bd-4794b6901383",
    )


def test_a_uuid_cut_at_a_zero_byte_finds_the_device_by_pci_bus_id() -> None:
    """CuPy reads the UUID as a C string: an H200 whose UUID has a zero byte gave 10 of 16 bytes, NVML
    found no such device, and the run lost its driver version, clocks and throttle reasons."""
    cut = RAW_UUID[:10]
    assert complete_uuid(cut) is None and complete_uuid(None) is None
    assert nvml_handle(RecordingNvml(), cut, BUS_ID) == ("pci", BUS_ID)
    assert nvml_handle(RecordingNvml(), None, BUS_ID) == ("pci", BUS_ID)


def test_the_cupy_build_counts_only_where_both_runs_recorded_it():
    from launchbench.results.environment import items_differ, summarize_environment

    old = summarize_environment({"cupy": "14.2.0"})
    cuda12 = summarize_environment({"cupy": "14.2.0", "cupy_build": "cupy-cuda12x"})
    cuda13 = summarize_environment({"cupy": "14.2.0", "cupy_build": "cupy-cuda13x"})
    assert not items_differ("cupy_build", old, cuda13)  # a run from before the item was recorded
    assert items_differ("cupy_build", cuda12, cuda13) and not items_differ("cupy", cuda12, cuda13)


def test_env_speaks_every_format():
    import csv
    import io

    from click.testing import CliRunner

    from launchbench.cli import cli

    for fmt in ("table", "markdown", "csv", "json"):
        result = CliRunner().invoke(cli, ["env", "--format", fmt])
        assert result.exit_code in (0, 2) and "python" in result.output, (fmt, result.output)
    rows = list(csv.reader(io.StringIO(CliRunner().invoke(cli, ["env", "--format", "csv"]).output)))
    assert rows[0] == ["item", "value"] and any(r[0] == "cupy_build" for r in rows)
    markdown = CliRunner().invoke(cli, ["env", "--format", "markdown"]).output.splitlines()
    assert markdown[:2] == ["| item | value |", "| --- | --- |"]
