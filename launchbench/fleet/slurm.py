"""Scripts that run a scenario on a Slurm cluster: a task script (one task per node, or per shard), a
merge script that runs once every task has succeeded, and submit.sh, which hands both to ``sbatch``
(the merge with ``--dependency=afterok:`` on the tasks).

Tasks: with ``--nodes N`` or ``--shards N`` a job array of N tasks (``--array=0-(N-1)``; the task reads
``SLURM_ARRAY_TASK_ID``); with ``--nodelist a,b,c`` one job per listed node (``sbatch -w NODE``; the
task reads ``LAUNCHBENCH_FLEET_TASK``), since every task of a Slurm array would need the whole list. A
node task takes its node whole (``--exclusive``) and runs every case; a shard task runs
``launchbench run --shard TASK/N``. Each writes its run directory under ``SHARED/runs``; the merge job
writes ``SHARED/merged`` (``launchbench merge``) and, for node tasks, the fleet report beside it.

Both scripts call ``$LAUNCHBENCH``, by default the interpreter that wrote them with ``-m launchbench``
(so a checkout's virtualenv or an installed wheel alike, on a path every node sees); set LAUNCHBENCH
when submitting (sbatch passes the environment on) to use, e.g., the ``launchbench`` on the nodes' PATH."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from launchbench.results.store import atomic_write_text

TASK_SCRIPT = "fleet.sbatch"
MERGE_SCRIPT = "merge.sbatch"
SUBMIT_SCRIPT = "submit.sh"
TASK_VARIABLE = "LAUNCHBENCH_FLEET_TASK"


@dataclass(frozen=True)
class SlurmJob:
    scenario: Path  # absolute: the nodes read it from the shared file system
    shared: Path  # absolute: the directory every node writes into
    tasks: int
    nodelist: tuple[str, ...] = ()
    sharded: bool = False  # each task one shard of the cases (else: each task every case, on its own node)
    partition: str | None = None
    gpus: int = 1  # GPUs each task asks for (--gpus-per-task); 0 asks for none
    time_limit: str | None = None
    run_args: tuple[str, ...] = ()  # more options for `launchbench run`

    @property
    def name(self) -> str:
        return f"launchbench-{self.scenario.stem}"


def default_launcher() -> str:
    return f"{shlex.quote(sys.executable)} -m launchbench"


def _header(job: SlurmJob, name: str, log: str) -> list[str]:
    lines = ["#!/bin/bash", f"#SBATCH --job-name={name}", f"#SBATCH --output={job.shared}/logs/{log}"]
    lines += ["#SBATCH --nodes=1", "#SBATCH --ntasks=1"]
    if job.partition:
        lines.append(f"#SBATCH --partition={job.partition}")
    if job.time_limit:
        lines.append(f"#SBATCH --time={job.time_limit}")
    return lines


def _launcher_line() -> str:
    return f'LAUNCHBENCH="${{LAUNCHBENCH:-{default_launcher()}}}"'


def task_script(job: SlurmJob) -> str:
    """The script every task runs."""
    lines = _header(job, job.name, "task-%j.out")
    if job.gpus:
        lines.append(f"#SBATCH --gpus-per-task={job.gpus}")
    if not job.sharded:
        lines.append("#SBATCH --exclusive")
    shared = shlex.quote(str(job.shared))
    args = " ".join(shlex.quote(a) for a in job.run_args)
    run = f"$LAUNCHBENCH run {shlex.quote(str(job.scenario))} -q"
    if job.sharded:
        target = f'-d {shared}/runs/shard-"$TASK" --shard "$TASK/{job.tasks}"'
    else:
        target = f'-d {shared}/runs/"$(hostname)-$TASK"'
    lines += [
        "set -euo pipefail",
        f'TASK="${{{TASK_VARIABLE}:-${{SLURM_ARRAY_TASK_ID:?neither {TASK_VARIABLE} nor SLURM_ARRAY_TASK_ID is set}}}}"',
        _launcher_line(),
        f"{run} {target} {args}".rstrip(),
    ]
    return "\n".join(lines) + "\n"


def merge_script(job: SlurmJob) -> str:
    """The script of the job that runs after every task succeeded."""
    lines = _header(job, f"{job.name}-merge", "merge-%j.out")
    shared = shlex.quote(str(job.shared))
    lines += ["set -euo pipefail", _launcher_line(), f"$LAUNCHBENCH merge {shared}/runs/* -d {shared}/merged"]
    if not job.sharded:  # every node ran every case: the fleet report compares them (exit 1 names outliers)
        lines.append(
            f"$LAUNCHBENCH fleet report {shared}/merged > {shared}/merged/fleet.txt || test $? -eq 1"
        )
    return "\n".join(lines) + "\n"


def submit_script(job: SlurmJob, here: Path) -> str:
    """Submits the tasks, then the merge job on their success; prints both job ids."""
    folder = shlex.quote(str(here))
    shared = shlex.quote(str(job.shared))
    lines = [
        "#!/bin/bash",
        "set -euo pipefail",
        f"mkdir -p {shared}/logs {shared}/runs",
    ]
    if job.nodelist:
        for index, node in enumerate(job.nodelist):
            lines.append(
                f"id{index}=$(sbatch --parsable -w {shlex.quote(node)} --export=ALL,{TASK_VARIABLE}={index} {folder}/{TASK_SCRIPT})"
            )
        ids = ":".join(f"${{id{i}%%;*}}" for i in range(len(job.nodelist)))
        lines.append(f'tasks="{ids}"')
    else:
        lines.append(f"array=$(sbatch --parsable --array=0-{job.tasks - 1} {folder}/{TASK_SCRIPT})")
        lines.append('tasks="${array%%;*}"')
    lines += [
        f'merge=$(sbatch --parsable --dependency=afterok:"$tasks" --kill-on-invalid-dep=yes {folder}/{MERGE_SCRIPT})',
        'echo "tasks: $tasks"',
        'echo "merge: ${merge%%;*}"',
    ]
    return "\n".join(lines) + "\n"


def write_scripts(job: SlurmJob, folder: Path) -> list[Path]:
    """The three scripts in ``folder`` (made); their paths."""
    written = []
    for name, text in (
        (TASK_SCRIPT, task_script(job)),
        (MERGE_SCRIPT, merge_script(job)),
        (SUBMIT_SCRIPT, submit_script(job, folder)),
    ):
        path = folder / name
        atomic_write_text(path, text)
        path.chmod(0o755)
        written.append(path)
    return written
