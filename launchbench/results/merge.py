"""Passes: a case measured in several passes over the whole run is one CaseResult whose modes hold one
ModePass per pass, in order; its ``extra_passes`` adds up the passes marked as added beyond the plan."""

from __future__ import annotations

import statistics

from launchbench.results.schema import MEASURED_STATUSES, CaseResult, ModeResult


def _merge_mode(old: ModeResult, new: ModeResult) -> ModeResult:
    if old.status not in MEASURED_STATUSES or new.status not in MEASURED_STATUSES:
        return new if new.status not in MEASURED_STATUSES else old
    merged = old.model_copy(update={"passes": [*old.passes, *new.passes]})
    return merged.model_copy(update={"status": "ok" if merged.target_met else "budget"})


def merge_pass(previous: CaseResult | None, new: CaseResult) -> CaseResult:
    """Add one more pass of a case to what earlier passes measured."""
    if previous is None:
        return new.model_copy(update={"passes_done": 1})
    modes = {
        name: _merge_mode(previous.modes[name], mode) if name in previous.modes else mode
        for name, mode in new.modes.items()
    }
    if new.error:
        return previous.model_copy(
            update={
                "modes": modes,
                "error": f"pass {previous.passes_done + 1}: {new.error}",
                "outputs_match": new.outputs_match,
                "check_detail": new.check_detail,
                "passes_done": previous.passes_done + 1,
                "extra_passes": previous.extra_passes + new.extra_passes,
            }
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
            "extra_passes": previous.extra_passes + new.extra_passes,
        }
    )
