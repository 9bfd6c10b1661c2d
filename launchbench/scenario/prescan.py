"""What a scenario's expansion will cost, read from the YAML event stream before the document is built.

Building a large document costs seconds (a 480 KB file of 15,000 steps takes longer to compose than to
refuse), so the sizes that matter are counted first from libyaml's events, which stream in C with
constant memory: the steps of each chain, the values of each sweep axis, and the axes each chain's
steps reference. A sweep that is certain to exceed the limits is refused (sweep.py) with the same message
the exact check gives; anything the scan cannot be sure of (aliases, a malformed document, no
libyaml) is left to the exact check, which runs after the document is built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import yaml

from launchbench.scenario.template import references

_FRAMING = (yaml.StreamStartEvent, yaml.DocumentStartEvent, yaml.DocumentEndEvent, yaml.StreamEndEvent)


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


def number(text: str) -> float | int | None:
    """A plain scalar's number (a decimal integer, else a float), or None."""
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
    scan = _Scan()
    while loader.check_event():
        if not scan.feed(loader.get_event()):
            return None
    return scan.counts(range_values)


@dataclass
class _Frame:
    """An open mapping or list: its key path, the key whose value comes next (mappings), the next index
    (lists)."""

    kind: str  # "map" or "seq"
    path: tuple[Any, ...]
    key: Any = None
    index: int = 0


class _Scan:
    """The sizes gathered so far, event by event."""

    def __init__(self) -> None:
        self.stack: list[_Frame] = []
        self.chains: dict[str, _Chain] = {}
        self.axis_items: dict[str, set[Any]] = {}
        self.ranges: dict[str, dict[str, str]] = {}
        self.sweep_line: int | None = None
        self.max_cases: int | None = None
        self.single = False
        self.key_line = 1  # where a value that is a mapping or a list is reported: its key's line

    def feed(self, event: Any) -> bool:
        """Take one event; False where the scan cannot be sure (an alias, an anchor, a key that is not
        a scalar)."""
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            return False  # aliases: the exact check counts their expansion
        if isinstance(event, _FRAMING):
            return True
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            self.stack.pop()
            self._after_value()
            return True
        top = self.stack[-1] if self.stack else None
        if isinstance(event, yaml.ScalarEvent) and top is not None and top.kind == "map" and top.key is None:
            top.key = event.value  # a key
            self.key_line = event.start_mark.line + 1 if event.start_mark else self.key_line
            return True
        path = self._child_path()
        if path is None:
            return False  # a key that is not a scalar
        if isinstance(event, yaml.ScalarEvent):
            self._scalar(path, event.value)
            self._after_value()
        else:
            self._open(path, "map" if isinstance(event, yaml.MappingStartEvent) else "seq")
        return True

    def counts(self, range_values: Any) -> Counts | None:
        if self.stack or not (self.chains or self.axis_items or self.ranges):
            return None
        axes = {name: len(items) for name, items in self.axis_items.items()}
        for name, spec in self.ranges.items():
            values = range_values(spec)
            if values is None:
                return None
            axes[name] = values
        return Counts(self.chains, axes, self.sweep_line, self.max_cases, self.single)

    def _child_path(self) -> tuple[Any, ...] | None:
        if not self.stack:
            return ()
        top = self.stack[-1]
        if top.kind == "map":
            return None if top.key is None else top.path + (top.key,)
        return top.path + (top.index,)

    def _after_value(self) -> None:
        if self.stack:
            top = self.stack[-1]
            if top.kind == "map":
                top.key = None
            else:
                top.index += 1

    def _chain_of(self, path: tuple[Any, ...]) -> _Chain | None:
        if len(path) >= 2 and path[0] == "chains":
            return self.chains.get(path[1])
        if len(path) >= 1 and path[0] == "chain":
            return self.chains.get("chain")
        return None

    def _scalar(self, path: tuple[Any, ...], value: str) -> None:
        if path == ("max_cases",):
            cases = number(value)
            self.max_cases = cases if isinstance(cases, int) else None
        elif len(path) == 3 and path[0] == "sweep" and isinstance(path[2], int):
            self.axis_items.setdefault(path[1], set()).add(
                number(value) if number(value) is not None else value
            )
        elif len(path) == 3 and path[0] == "sweep" and isinstance(path[2], str):
            self.ranges.setdefault(path[1], {})[path[2]] = value
        else:
            chain = self._chain_of(path)
            if chain is not None:
                chain.axes.update(references(value))

    def _open(self, path: tuple[Any, ...], kind: str) -> None:
        line = self.key_line
        if path == ("sweep",):
            self.sweep_line = line
        if len(path) == 2 and path[0] == "chains" and kind == "seq":
            self.chains[str(path[1])] = _Chain(line)
        if path == ("chain",) and kind == "seq":
            self.chains["chain"] = _Chain(line)
            self.single = True
        chain = self._chain_of(path)
        if chain is not None and (
            (path[0] == "chains" and len(path) == 3) or (path[0] == "chain" and len(path) == 2)
        ):
            chain.steps += 1
        self.stack.append(_Frame(kind, path))
