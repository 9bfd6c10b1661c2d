"""Passes: a case measured in several passes over the whole run is one CaseResult whose samples are
pooled, with the size of each pass's share kept so statistics can see drift between passes."""

from __future__ import annotations

import statistics

from launchbench.results.schema import MEASURED_STATUSES, WALL, CaseResult, GraphLifecycle, ModeResult


def _median_lifecycle(passes: list[GraphLifecycle]) -> GraphLifecycle:
    def med(values: list[float | int | None]) -> float | None:
        known = [v for v in values if v is not None]
        return statistics.median(known) if known else None

    first = passes[0]
    nodes = med([p.nodes for p in passes])
    mem = med([p.mem_bytes for p in passes])
    return GraphLifecycle(
        split=first.split,
        capture_s=statistics.median(p.capture_s for p in passes),
        instantiate_s=med([p.instantiate_s for p in passes]),
        upload_s=statistics.median(p.upload_s for p in passes),
        first_launch_s=statistics.median(p.first_launch_s for p in passes),
        nodes=None if nodes is None else int(nodes),
        mem_bytes=None if mem is None else int(mem),
    )


def first_pass(result: CaseResult) -> CaseResult:
    """Tag a single measurement as pass 1 of possibly several."""
    modes = {}
    for name, mode in result.modes.items():
        update: dict[str, object] = {}
        if mode.status in MEASURED_STATUSES:
            update["pass_sizes"] = [len(mode.samples.get(WALL, []))]
        if mode.lifecycle is not None:
            update["lifecycle_passes"] = [mode.lifecycle]
        modes[name] = mode.model_copy(update=update)
    return result.model_copy(update={"modes": modes, "passes_done": 1})


def _merge_mode(old: ModeResult, new: ModeResult) -> ModeResult:
    if old.status not in MEASURED_STATUSES or new.status not in MEASURED_STATUSES:
        return new if new.status not in MEASURED_STATUSES else old
    samples = {key: [*old.samples.get(key, []), *new.samples.get(key, [])] for key in {*old.samples, *new.samples}}
    lifecycles = [*old.lifecycle_passes, *([new.lifecycle] if new.lifecycle is not None else [])]
    target_met = old.target_met and new.target_met
    return old.model_copy(
        update={
            "samples": samples,
            "pass_sizes": [*old.pass_sizes, len(new.samples.get(WALL, []))],
            "throttled_samples": old.throttled_samples + new.throttled_samples,
            "target_met": target_met,
            "status": "ok" if target_met else "budget",
            "lifecycle_passes": lifecycles,
            "lifecycle": _median_lifecycle(lifecycles) if lifecycles else None,
        }
    )


def merge_pass(previous: CaseResult | None, new: CaseResult) -> CaseResult:
    """Add one more pass of a case to what earlier passes measured."""
    if previous is None:
        return first_pass(new)
    modes = {name: _merge_mode(previous.modes[name], mode) if name in previous.modes else mode for name, mode in new.modes.items()}
    if new.error:
        return previous.model_copy(
            update={"modes": modes, "error": f"pass {previous.passes_done + 1}: {new.error}", "outputs_match": new.outputs_match,
                    "check_detail": new.check_detail, "passes_done": previous.passes_done + 1}
        )
    matches = [previous.outputs_match, new.outputs_match]
    outputs_match = False if False in matches else (True if True in matches else None)
    reasons = sorted({*previous.clocks.throttle_reasons, *new.clocks.throttle_reasons})
    harness = [h for h in (previous.harness_s_per_iter, new.harness_s_per_iter) if h is not None]
    return new.model_copy(
        update={
            "modes": modes,
            "outputs_match": outputs_match,
            "clocks": new.clocks.model_copy(update={"throttle_reasons": reasons}),
            "harness_s_per_iter": statistics.median(harness) if harness else None,
            "elapsed_s": previous.elapsed_s + new.elapsed_s,
            "passes_done": previous.passes_done + 1,
        }
    )
