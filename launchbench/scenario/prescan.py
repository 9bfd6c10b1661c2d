"""What a scenario's expansion will cost, read from the YAML event stream before the document is built.

Building a large document costs seconds (a 480 KB file of 15,000 steps takes longer to compose than to
refuse), so the sizes that matter are counted first from libyaml's events, which stream in C with
constant memory: the steps of each chain, the values of each sweep axis, and the axes each chain's
steps reference. A sweep that is certain to exceed the limits is refused here with the same message the
exact check in expand.py gives; anything the scan cannot be sure of (aliases, a malformed document, no
libyaml) is left to the exact check, which runs after the document is built.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from launchbench.scenario.expr import names_in

_REFERENCE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")
_INLINE = re.compile(r"\$\{([^{}]*)\}")


@dataclass
class _Chain:
    line: int
    steps: int = 0
    axes: set[str] = field(default_factory=set)


@dataclass
class Counts:
    """Sizes read from the event stream: None where the scan could not be sure."""

    chains: dict[str, _Chain]
    axes: dict[str, int]
    sweep_line: int | None
    max_cases: int | None
    single: bool

    def cases_of(self, chain: _Chain) -> int:
        return math.prod(self.axes[a] for a in chain.axes if a in self.axes)


def _number(text: str) -> float | int | None:
    try:
        return int(text, 10)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def count(text: str, range_values: Any) -> Counts | None:
    """Count from the event stream; None when libyaml is missing, the document is not plain (aliases,
    tags) or does not parse (the full loader then reports it). ``range_values(mapping)`` turns a sweep
    range's scalars into its number of distinct values, or None."""
    loader_class = getattr(yaml, "CSafeLoader", None)
    if loader_class is None or not getattr(yaml, "__with_libyaml__", False):
        return None
    loader = loader_class(text)
    try:
        return _scan(loader, range_values)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return None
    finally:
        loader.dispose()


def _scan(loader: Any, range_values: Any) -> Counts | None:
    # stack of [kind, path, pending key (mappings), index (sequences)]
    stack: list[list[Any]] = []
    chains: dict[str, _Chain] = {}
    axes: dict[str, int] = {}
    axis_items: dict[str, set[Any]] = {}
    ranges: dict[str, dict[str, str]] = {}
    sweep_line: int | None = None
    max_cases: int | None = None
    single = False
    key_line = 1

    def child_path() -> tuple[Any, ...] | None:
        if not stack:
            return ()
        kind, path, key, index = stack[-1]
        if kind == "map":
            return None if key is None else path + (key,)
        return path + (index,)

    def after_value() -> None:
        if stack:
            top = stack[-1]
            if top[0] == "map":
                top[2] = None
            else:
                top[3] += 1

    def chain_of(path: tuple[Any, ...]) -> _Chain | None:
        if len(path) >= 2 and path[0] == "chains":
            return chains.get(path[1])
        if len(path) >= 1 and path[0] == "chain":
            return chains.get("chain")
        return None

    while loader.check_event():
        event = loader.get_event()
        if isinstance(event, (yaml.AliasEvent,)) or getattr(event, "anchor", None):
            return None  # aliases: the exact check counts their expansion
        if isinstance(
            event,
            (yaml.StreamStartEvent, yaml.DocumentStartEvent, yaml.DocumentEndEvent, yaml.StreamEndEvent),
        ):
            continue
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            stack.pop()
            after_value()
            continue
        if isinstance(event, yaml.ScalarEvent) and stack and stack[-1][0] == "map" and stack[-1][2] is None:
            stack[-1][2] = event.value  # a key
            key_line = event.start_mark.line + 1 if event.start_mark else key_line
            continue
        path = child_path()
        if path is None:
            return None  # a key that is not a scalar
        line = key_line  # where a value that is a mapping or a list is reported: its key's line
        if isinstance(event, yaml.ScalarEvent):
            value = event.value
            if path == ("max_cases",):
                number = _number(value)
                max_cases = number if isinstance(number, int) else None
            elif len(path) == 3 and path[0] == "sweep" and isinstance(path[2], int):
                axis_items.setdefault(path[1], set()).add(
                    _number(value) if _number(value) is not None else value
                )
            elif len(path) == 3 and path[0] == "sweep" and isinstance(path[2], str):
                ranges.setdefault(path[1], {})[path[2]] = value
            else:
                chain = chain_of(path)
                if chain is not None:
                    match = _REFERENCE.match(value)
                    if match:
                        chain.axes.add(match.group(1))
                    for expression in _INLINE.findall(value):
                        chain.axes.update(names_in(expression))
            after_value()
            continue
        kind = "map" if isinstance(event, yaml.MappingStartEvent) else "seq"
        if path == ("sweep",):
            sweep_line = line
        if len(path) == 2 and path[0] == "chains" and kind == "seq":
            chains[str(path[1])] = _Chain(line)
        if path == ("chain",) and kind == "seq":
            chains["chain"] = _Chain(line)
            single = True
        chain = chain_of(path)
        if chain is not None and (
            (path[0] == "chains" and len(path) == 3) or (path[0] == "chain" and len(path) == 2)
        ):
            chain.steps += 1
        stack.append([kind, path, None, 0])
    if not stack and (chains or axis_items or ranges):
        for name, items in axis_items.items():
            axes[name] = len(items)
        for name, spec in ranges.items():
            values = range_values(spec)
            if values is None:
                return None
            axes[name] = values
        return Counts(chains, axes, sweep_line, max_cases, single)
    return None
