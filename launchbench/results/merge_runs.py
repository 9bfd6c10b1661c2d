"""One run from several: the shards of a run, each node's run of the same scenarios, or each device's
(``launchbench merge``, ``run --devices``). Every case keeps the node (the host's name) and the CUDA
device that measured it; the run lists its members, each with its own environment.

What must agree, or the merge is refused with one line naming both directories: the results schema
version, launchbench's version, the scenario files (names and sha256), the measurement settings, the
GPU model, CuPy and the CUDA runtime, and every run must be complete. Shards must be shards of one N,
each K once. What may differ between members is everything else of the environment: host name, driver,
CPU, kernel, governor, NUMA placement."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from launchbench.errors import LaunchbenchError
from launchbench.results.metadata import Environment
from launchbench.results.schema import CaseResult, MemberRun, RunRecord, record_problems
from launchbench.results.store import JOURNAL, RESULTS_JSON, load_run
from launchbench.scenario.shard import Shard, ShardError

# environment entries every member must share, as paths into the recorded environment
SAME_ENVIRONMENT: dict[str, Callable[[Environment], object]] = {
    "GPU model": lambda env: env.gpu.name,
    "CuPy": lambda env: env.cupy,
    "CUDA runtime": lambda env: env.cuda_runtime,
}


class MergeError(LaunchbenchError):
    """Runs that cannot be one run."""


@dataclass(frozen=True)
class SourceRun:
    """A run to merge: where it was read from, its record and the schema version its file was written in."""

    path: Path
    record: RunRecord
    schema_version: int


def stored_schema_version(run_dir: Path) -> int:
    """The schema version a run directory's results were written in (its results.json, else its journal's
    first line); the records load_run gives are already migrated to the current version."""
    for name in (RESULTS_JSON, JOURNAL):
        file = run_dir / name
        if file.is_file():
            with open(file, encoding="utf-8") as handle:
                first = handle.readline() if name == JOURNAL else handle.read()
            try:
                version = json.loads(first).get("schema_version")
            except (ValueError, AttributeError):
                continue
            if isinstance(version, int):
                return version
    raise MergeError(f"{run_dir}: reading: no results.json or journal with a schema version")


def read_source(path: str | Path) -> SourceRun:
    run_dir = Path(path)
    if run_dir.name in (RESULTS_JSON, JOURNAL):
        run_dir = run_dir.parent
    record = load_run(run_dir)
    return SourceRun(run_dir, record, stored_schema_version(run_dir))


def node_name(record: RunRecord, run_dir: Path) -> str:
    """The host a run measured on (its environment's host name), or its directory's name."""
    name = record.environment.host.hostname
    return str(name) if name else run_dir.name


def members_of(source: SourceRun) -> list[MemberRun]:
    """The members a run brings: itself, or (a merged run) the members it holds."""
    record = source.record
    if record.members:
        return list(record.members)
    device = record.settings.device
    return [
        MemberRun(
            node=node_name(record, source.path),
            device=device if isinstance(device, int) and device >= 0 else None,
            shard=record.settings.shard,
            source=str(source.path),
            environment=record.environment,
        )
    ]


def _differ(what: str, first: SourceRun, other: SourceRun, a: Any, b: Any) -> MergeError:
    return MergeError(
        f"{other.path}: reading: {what} differs from {first.path}'s ({b!r} here, {a!r} there); "
        "runs of different measurements are not merged"
    )


def check_compatible(sources: Sequence[SourceRun]) -> None:
    """Refuse runs that are not parts of one measurement (see the module's docstring)."""
    first = sources[0]
    for source in sources:
        if source.record.status != "complete":
            raise MergeError(
                f"{source.path}: reading: the run is {source.record.status}; finish it with "
                f"`launchbench run --resume {source.path}` before merging"
            )
    for other in sources[1:]:
        a, b = first.record, other.record
        pairs: list[tuple[str, Any, Any]] = [
            ("the results schema version", first.schema_version, other.schema_version),
            ("launchbench's version", a.launchbench_version, b.launchbench_version),
            ("the scenario files", _scenarios(a), _scenarios(b)),
            (
                "the measurement settings",
                a.settings.overrides.model_dump(),
                b.settings.overrides.model_dump(),
            ),
        ]
        envs = (members_of(first)[0].environment, members_of(other)[0].environment)
        pairs += [(name, item(envs[0]), item(envs[1])) for name, item in SAME_ENVIRONMENT.items()]
        for what, x, y in pairs:
            if x != y:
                raise _differ(what, first, other, x, y)


def _scenarios(record: RunRecord) -> list[tuple[str, str]]:
    return sorted((s.name, s.sha256) for s in record.scenarios)


def _check_once(members: Sequence[MemberRun]) -> None:
    """Whole runs: one per node and device."""
    seen: dict[tuple[str, int | None], MemberRun] = {}
    for member in members:
        key = (member.node, member.device)
        if key in seen:
            raise MergeError(
                f"{member.source}: reading: node {member.node} device {member.device} also measured the "
                f"cases in {seen[key].source}; merge one run per node and device"
            )
        seen[key] = member


def check_shards(members: Sequence[MemberRun]) -> None:
    """Shards of one N, each K once, or whole runs, one per node and device."""
    shards = [m.shard for m in members]
    if all(s is None for s in shards):
        _check_once(members)
        return
    if any(s is None for s in shards):
        whole = next(m for m in members if m.shard is None)
        raise MergeError(f"{whole.source}: reading: a whole run among shards; merge shards of one run")
    parsed: dict[int, MemberRun] = {}
    count = None
    for member in members:
        try:
            shard = Shard.parse(member.shard or "")
        except ShardError as err:
            raise MergeError(f"{member.source}: reading: {err}") from None
        if count is not None and shard.count != count:
            raise MergeError(f"{member.source}: reading: shard {shard} is not one of {count} shards")
        count = shard.count
        if shard.index in parsed:
            raise MergeError(f"{member.source}: reading: shard {shard} also in {parsed[shard.index].source}")
        parsed[shard.index] = member
    missing = [k for k in range(count or 0) if k not in parsed]
    if missing:
        raise MergeError(
            f"{members[0].source}: reading: shard {missing[0]}/{count} is missing "
            f"({len(missing)} of {count} shards missing)"
        )


def _in_plan_order(member: MemberRun, position: int, member_index: int) -> tuple[int, int]:
    """Where a member's case stands in the merged run: a shard's case where the whole plan had it (shard
    K of N holds cases K, K + N, …), another member's after the members before it."""
    if member.shard is None:
        return (member_index, position)
    shard = Shard.parse(member.shard)
    return (0, position * shard.count + shard.index)


def merge_runs(sources: Sequence[SourceRun], argv: Sequence[str] = ()) -> RunRecord:
    """One run of the sources' cases, each case marked with its node and device (shards' cases in the
    order of the whole plan)."""
    if not sources:
        raise MergeError("give at least one run directory to merge")
    check_compatible(sources)
    members: list[MemberRun] = []
    placed: list[tuple[tuple[int, int], CaseResult]] = []
    for source in sources:
        own = members_of(source)
        members += own
        if source.record.members:
            placed += [((len(members), i), c) for i, c in enumerate(source.record.cases)]
            continue
        marked = {"node": own[0].node, "device": own[0].device}
        placed += [
            (_in_plan_order(own[0], i, len(members)), c.model_copy(update=marked))
            for i, c in enumerate(source.record.cases)
        ]
    check_shards(members)
    cases = [case for _, case in sorted(placed, key=lambda item: item[0])]
    first = sources[0].record
    record = first.model_copy(
        update={
            "argv": list(argv),
            "started": min(s.record.started for s in sources),
            "finished": max((s.record.finished or "") for s in sources) or None,
            "settings": first.settings.without("shard", "device"),
            "cases": cases,
            "members": members,
            "journal_bytes": None,
        }
    )
    problems = record_problems(record)
    if problems:
        where, message = problems[0]
        raise MergeError(f"{sources[0].path}: reading: the merged cases clash: {message}")
    return record


def refuse_repeated_cases(record: RunRecord, path: str | Path, instead: str) -> None:
    """Refuse a merged run that measured a case on several members (nodes or devices) where one
    measurement per case is needed; ``instead`` says what to do."""
    seen: set[tuple[str, str]] = set()
    for case in record.cases:
        key = (case.scenario, case.case_id)
        if key in seen:
            raise MergeError(
                f"{path}: reading: a merged run of {len(record.members)} nodes or devices holds case "
                f"'{case.case_id}' once per member; {instead}"
            )
        seen.add(key)
