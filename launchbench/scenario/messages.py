"""Where a scenario's values stand in its file, and pydantic's errors as one line naming the key.

A key path is the keys and list indexes from the top of the document to a value (``('chains', 'a', 0,
'size')``, written ``chains.a[0].size``). ``ScenarioSource`` is a file's name with the line of every key
path in it: what every message about the file names. ``validation_error`` turns a ValidationError into
one ScenarioError with the line, the key path and, where it helps, a suggestion; the words for each
pydantic error type are a table (``Translator``), which the results files' reader uses too.

Importing it loads no scenario model (results/ imports it for ``format_path`` and ``Translator``): the
step kinds are looked up only where a step's kind is wrong.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from launchbench.errors import ScenarioError

KeyPath = tuple[Any, ...]
C = TypeVar("C")
R = TypeVar("R")


def format_path(path: Iterable[Any]) -> str:
    """('chains', 'a', 0, 'size') → 'chains.a[0].size' (an empty path is '')."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def oneline(text: str) -> str:
    """Keys and values from the file, made safe for a one-line message (a key may hold a newline)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def short(value: Any, limit: int = 40) -> str:
    """A value's text, quoted and cut to ``limit`` characters."""
    text = repr(value) if isinstance(value, str) else repr(str(value))
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def show(value: Any) -> str:
    """A value for a message: short, and never a 4300-digit integer (which str() refuses to convert)."""
    if isinstance(value, str):
        return short(value)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a number of {int(value.bit_length() * 0.30103) + 1} digits"
    return repr(value)


@dataclass(frozen=True)
class ScenarioSource:
    """A scenario file's name and the 1-based line of every key path in it."""

    path: str
    lines: Mapping[KeyPath, int]

    @property
    def single_chain(self) -> bool:
        """The file says ``chain:`` (validated as ``chains: {chain: ...}``)."""
        return ("chains",) not in self.lines and ("chain",) in self.lines

    def chain_path(self, chain_name: str) -> KeyPath:
        """Where a chain's steps stand in the file."""
        return ("chain",) if self.single_chain else ("chains", chain_name)

    def nearest_line(self, path: KeyPath) -> int | None:
        """The line of ``path``, or of the nearest key above it that is in the file."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def with_lines(self, lines: Mapping[KeyPath, int]) -> ScenarioSource:
        """The same file with ``lines`` put over its own (a step's values taken from ``defaults``)."""
        return ScenarioSource(self.path, ChainMap(dict(lines), self.lines))  # type: ignore[arg-type]

    def error(self, message: str, path: KeyPath, line: int | None = None) -> ScenarioError:
        """A ScenarioError at ``path``: at its line, or at ``line`` where one is given."""
        return ScenarioError(
            self.path, message, line if line is not None else self.lines.get(path), format_path(path)
        )


@dataclass(frozen=True)
class Translator(Generic[C, R]):
    """Pydantic's error types → words. The formatter for the error's type answers first, then each of the
    ``general`` ones in order; a formatter answers None where its rule does not hold; ``default`` last."""

    by_type: Mapping[str, Callable[[C], R | None]]
    default: Callable[[C], R]
    general: tuple[Callable[[C], R | None], ...] = ()

    def __call__(self, kind: str, context: C) -> R:
        formatter = self.by_type.get(kind)
        for say in (formatter, *self.general) if formatter is not None else self.general:
            said = say(context)
            if said is not None:
                return said
        return self.default(context)


def error_text(error: ErrorDetails) -> str:
    """Pydantic's own message for an error, without the "Value error, " a validator's ValueError gets."""
    return str(error["msg"]).removeprefix("Value error, ")


# --- where an error stands in the file ----------------------------------------------------------------


def locate(loc: Iterable[Any], base: KeyPath, lines: Mapping[KeyPath, int]) -> tuple[KeyPath, int | None]:
    """Map a pydantic error location to the deepest key path that exists in the file, and its line.

    Pydantic adds union tags (the step kind, 'int', 'list[...]') to locations; they are skipped when
    they are not keys in the document. A file with a single ``chain`` is validated as ``chains: {chain: ...}``.
    """
    loc = tuple(loc)
    if not base and loc[:1] == ("chains",) and ("chains",) not in lines and ("chain",) in lines:
        loc = ("chain",) + loc[2:]
    path = base
    for part in loc:
        if path + (part,) in lines:
            path = path + (part,)
    return path, lines.get(path)


def _rank(error: ErrorDetails) -> int:
    kind = error["type"]
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return 0
    if kind == "extra_forbidden":
        return 1
    if kind.endswith("_type") or kind in ("is_instance_of", "model_attributes_type"):
        return 3  # in a union, usually the branch the user did not mean
    return 2


Located = tuple[ErrorDetails, KeyPath, "int | None"]


def _most_telling(located: list[Located], base: KeyPath, lines: Mapping[KeyPath, int]) -> Located:
    """The error to show: unknown kinds and keys first, then value errors, then wrong types, deepest first.

    Where the value failed every member of a union (an argument that is ``{buffer}`` or ``{scalar}``), each
    member reports its own errors; the member with the fewest is the one the user meant."""
    best = min(located, key=lambda item: (_rank(item[0]), -len(item[1])))
    loc = tuple(best[0]["loc"])
    branch = _union_branch(loc, base, lines)
    if branch is None:
        return best
    prefix = loc[:branch]
    groups: dict[Any, list[Located]] = {}
    for item in located:
        other = tuple(item[0]["loc"])
        if (
            other[:branch] == prefix
            and len(other) > branch + 1
            and _union_branch(other, base, lines) == branch
        ):
            groups.setdefault(other[branch], []).append(item)
    fewest = min(groups.values(), key=len)
    if len(fewest) < len(groups.get(loc[branch], ())):
        return min(fewest, key=lambda item: (_rank(item[0]), -len(item[1])))
    return best


def _union_branch(loc: tuple[Any, ...], base: KeyPath, lines: Mapping[KeyPath, int]) -> int | None:
    """The index in a pydantic location of the first union member's name ('BufferArg', 'list[...]'): a
    part that is not a key in the document and is not the last part."""
    path = base
    for index, part in enumerate(loc[:-1]):
        if path + (part,) in lines:
            path = path + (part,)
        elif isinstance(part, str) and (part[:1].isupper() or "[" in part):
            return index
    return None


# --- a scenario's validation errors ------------------------------------------------------------------


@dataclass(frozen=True)
class _Failure:
    """The pydantic error a message is about, where it stands and what was validated."""

    error: ErrorDetails
    path: KeyPath  # the deepest key path of its location that is in the file
    relative: KeyPath  # the same below the base that was validated
    source: ScenarioSource
    model: Any  # what was validated (Scenario, Shapes, the Step union), for the keys it allows

    @property
    def loc(self) -> tuple[Any, ...]:
        return tuple(self.error["loc"])

    @property
    def value(self) -> Any:
        return self.error.get("input")

    @property
    def at_chain(self) -> bool:
        """The location is a chain: ``chain`` or ``chains.NAME``."""
        return self.relative == ("chain",) or (self.relative[:1] == ("chains",) and len(self.relative) == 2)

    @property
    def at_step(self) -> bool:
        """The location is a step of a chain."""
        r = self.relative
        return (r[:1] == ("chains",) and len(r) == 3) or (r[:1] == ("chain",) and len(r) == 2)

    def at_entry(self, *blocks: str) -> bool:
        """The location is an entry of one of ``blocks`` (``sweep.NAME``, ``params.NAME``)."""
        return self.relative[:1] in tuple((block,) for block in blocks) and len(self.relative) == 2


@dataclass(frozen=True)
class _Said:
    """A message, and the key path it is about where that is not the error's own."""

    text: str
    path: KeyPath | None = None


_SCALARS = (str, int, float, bool, type(None))


def _got(failure: _Failure, message: str) -> _Said:
    """The message with the value that failed, unless the message names it already."""
    value = failure.value
    named = isinstance(value, str) and (f"'{value}'" in message or repr(value) in message)
    if isinstance(value, _SCALARS) and "not the" not in message and not named:
        message += f" (got {show(value)})"
    return _Said(message)


def _step_kinds() -> list[str]:
    from launchbench.scenario.model import STEP_FIELDS  # here: loading the models only where a step failed

    return list(STEP_FIELDS)


def _unknown_key(failure: _Failure) -> _Said:
    key = failure.loc[-1]
    path = failure.path if failure.path and failure.path[-1] == key else failure.path + (key,)
    message = f"unknown key '{key}'"
    allowed = _allowed_keys(failure.model, failure.loc)
    close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
    if close:
        message += f"; did you mean '{close[0]}'?"
    elif allowed:
        message += f" (allowed: {', '.join(sorted(allowed))})"
    return _Said(message, path)


def _unknown_kind(failure: _Failure) -> _Said:
    value = failure.value
    tag = value.get("kind") if isinstance(value, dict) else failure.error["ctx"]["tag"]
    known = _step_kinds()
    kinds = ", ".join(known)
    if isinstance(tag, str):
        message = f"unknown step kind '{tag}'"
        close = difflib.get_close_matches(tag, known, n=1, cutoff=0.5)
        message += f"; did you mean '{close[0]}'? (kinds: {kinds})" if close else f" (kinds: {kinds})"
    else:
        message = f"a step's kind must be one of: {kinds}"
    path = failure.path + ("kind",)
    return _Said(message, path if path in failure.source.lines else failure.path)


def _too_short(failure: _Failure) -> _Said | None:
    relative = failure.relative
    if relative == ("chain",):
        return _Said("the chain has no steps")
    if relative[:1] == ("chains",):
        if len(relative) > 1:
            return _Said(f"chain '{relative[1]}' has no steps")
        return _Said("no chains: a scenario needs at least one chain of steps")
    if failure.at_entry("sweep"):
        return _Said(f"sweep axis '{relative[1]}' has no values")
    return None


def _entry_name(failure: _Failure) -> _Said | None:
    """A sweep axis or parameter whose name is not a plain name."""
    if not (failure.at_entry("sweep", "params") and failure.loc[-1] == "[key]"):
        return None
    name = failure.relative[1]
    what = "sweep axis" if failure.relative[0] == "sweep" else "parameter"
    return _Said(
        f"{what} name '{name}' must be a plain name (letters, digits, _) for steps to reference as $name"
    )


def _axis_values(failure: _Failure) -> _Said | None:
    if not (failure.at_entry("sweep") and _rank(failure.error) == 3):
        return None
    return _got(
        failure,
        f"sweep axis '{failure.relative[1]}' must be a list of numbers or a range {{start, stop, num}}",
    )


_SCENARIO_WORDS: Translator[_Failure, _Said] = Translator(
    by_type={
        "extra_forbidden": _unknown_key,
        "union_tag_invalid": _unknown_kind,
        "union_tag_not_found": lambda f: _Said(f"a step needs a 'kind' (one of: {', '.join(_step_kinds())})"),
        "missing": lambda f: _Said(f"missing required key '{f.loc[-1]}'"),
        "too_short": _too_short,
        "list_type": lambda f: _got(f, "a chain must be a list of steps") if f.at_chain else None,
        "int_from_float": lambda f: _got(f, "expected a whole number"),
        "string_type": lambda f: (
            _Said(f"a key must be text, not {show(f.value)} (quote it)") if f.loc[-1:] == ("[key]",) else None
        ),
        "int_parsing_size": lambda f: _got(f, "number too large"),
        "string_pattern_mismatch": lambda f: (
            _got(f, "a scenario name may hold only letters, digits, '_', '.' and '-'")
            if f.relative == ("name",)
            else None
        ),
        "dict_type": lambda f: _got(f, "a step must be a mapping with a 'kind'") if f.at_step else None,
    },
    general=(_entry_name, _axis_values),
    default=lambda f: _got(f, error_text(f.error)),
)


def validation_error(
    err: ValidationError, source: ScenarioSource, base: KeyPath, model: Any
) -> ScenarioError:
    """Turn the most telling pydantic error into a ScenarioError with line, key path and a suggestion.

    ``model`` is what was validated at ``base`` (Scenario, Shapes or the Step union), for suggestions."""
    located = [(e, *locate(e["loc"], base, source.lines)) for e in err.errors(include_url=False)]
    first, path, line = _most_telling(located, base, source.lines)
    said = _SCENARIO_WORDS(first["type"], _Failure(first, path, path[len(base) :], source, model))
    if said.path is not None:
        path = said.path
        line = source.lines.get(path, line)
    others = {
        p
        for e, p, _ in located
        if e is not first and _rank(e) <= 2 and p[: len(path)] != path and path[: len(p)] != p
    }
    message = said.text
    if others:
        message += f" (and {len(others)} more error{'s' if len(others) > 1 else ''})"
    return ScenarioError(source.path, oneline(message), line, oneline(format_path(path)) or None)


# --- the keys a model allows ---------------------------------------------------------------------------


def _allowed_keys(model: Any, loc: tuple[Any, ...]) -> list[str]:
    """The field names valid where an unknown key stood (walking the model along the location), and the
    keys a model reads beyond its fields (its ``EXTRA_KEYS``)."""
    current: Any = model
    for part in loc[:-1]:
        current = _walk(current, part)
        if current is None:
            return []
    current = _unwrap(current)
    fields = getattr(current, "model_fields", None)
    if not isinstance(current, type) or fields is None:
        return []
    names = [
        info.alias or name for name, info in fields.items() if name != "kind"
    ]  # the YAML key is the alias
    return names + list(getattr(current, "EXTRA_KEYS", ()))


def _unwrap(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _walk(annotation: Any, part: Any) -> Any:
    """One step along a pydantic error location: a field, a list index, a dict key or a union tag."""
    annotation = _unwrap(annotation)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [_unwrap(a) for a in typing.get_args(annotation)]
        for member in members:
            if not (isinstance(member, type) and issubclass(member, BaseModel)):
                continue
            kind = member.model_fields.get("kind")
            tags = typing.get_args(kind.annotation) if kind is not None else ()
            if part == member.__name__ or part in tags:
                return member
        models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
        return annotation if len(models) != 1 else _walk(models[0], part)  # e.g. 'function-after[...]'
    if origin in (list, tuple) and isinstance(part, int):
        return typing.get_args(annotation)[0]
    if origin is dict:
        return typing.get_args(annotation)[1]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(part) if isinstance(part, str) else None
        return field.annotation if field is not None else annotation
    return annotation
