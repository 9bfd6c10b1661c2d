"""A Kubernetes manifest that runs a scenario as an Indexed Job: ``completions`` pods, each measuring
shard ``JOB_COMPLETION_INDEX``/N of the cases on one GPU (``nvidia.com/gpu``), writing its run directory
under ``/results/runs`` on a PersistentVolumeClaim every pod mounts; the scenario file travels in a
ConfigMap of the same manifest. The pods call ``launchbench`` on the image's PATH (an image with the
wheel installed); ``launchbench merge /results/runs/* -d /results/merged`` joins the shards once the Job
is complete."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

RESULTS_MOUNT = "/results"
SCENARIO_MOUNT = "/scenario"


@dataclass(frozen=True)
class IndexedJob:
    scenario: Path
    completions: int
    image: str
    claim: str  # the PersistentVolumeClaim the results go to
    parallelism: int | None = None  # pods at a time (default: all)
    gpus: int = 1
    namespace: str | None = None
    run_args: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return "launchbench-" + re.sub(r"[^a-z0-9-]+", "-", self.scenario.stem.lower()).strip("-")[:40]


def _metadata(job: IndexedJob, name: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/name": "launchbench"}}
    if job.namespace:
        meta["namespace"] = job.namespace
    return meta


def _command(job: IndexedJob) -> str:
    scenario = f"{SCENARIO_MOUNT}/{job.scenario.name}"
    args = " ".join(job.run_args)
    shard = f'"$JOB_COMPLETION_INDEX/{job.completions}"'
    out = f'{RESULTS_MOUNT}/runs/shard-"$JOB_COMPLETION_INDEX"'
    return f"exec launchbench run {scenario} -q -d {out} --shard {shard} {args}".rstrip()


def manifest(job: IndexedJob) -> list[dict[str, Any]]:
    """The ConfigMap holding the scenario and the Indexed Job, as Kubernetes objects."""
    config_name = f"{job.name}-scenario"
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(job, config_name),
        "data": {job.scenario.name: job.scenario.read_text(encoding="utf-8")},
    }
    container = {
        "name": "launchbench",
        "image": job.image,
        "command": ["/bin/sh", "-c", _command(job)],
        "resources": {"limits": {"nvidia.com/gpu": job.gpus}} if job.gpus else {},
        "volumeMounts": [
            {"name": "results", "mountPath": RESULTS_MOUNT},
            {"name": "scenario", "mountPath": SCENARIO_MOUNT, "readOnly": True},
        ],
    }
    spec = {
        "completionMode": "Indexed",
        "completions": job.completions,
        "parallelism": job.parallelism or job.completions,
        "backoffLimitPerIndex": 0,
        "template": {
            "metadata": {"labels": {"app.kubernetes.io/name": "launchbench"}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [container],
                "volumes": [
                    {"name": "results", "persistentVolumeClaim": {"claimName": job.claim}},
                    {"name": "scenario", "configMap": {"name": config_name}},
                ],
            },
        },
    }
    return [
        config,
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": _metadata(job, job.name), "spec": spec},
    ]


def manifest_text(job: IndexedJob) -> str:
    return yaml.safe_dump_all(manifest(job), sort_keys=False)
