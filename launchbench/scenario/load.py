"""YAML scenario file → validated Scenario, every error naming the file, the line and the key path.

Input is untrusted: the file is read with a bounded size, parsed with a safe loader that refuses every tag
that would build a Python object, and the composed document is checked before anything walks it: at most
MAX_DEPTH levels of nesting and MAX_NODES values *after* aliases are expanded (a "billion laughs" document
is a few lines that expand to 10⁹ values), and no alias may refer to a node that contains it.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails
from yaml.constructor import ConstructorError

from launchbench.errors import ScenarioError
from launchbench.files import read_regular_file
from launchbench.scenario.model import STEP_FIELDS, Scenario, Step

MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 40  # a scenario nests about 7 levels (chains → chain → step → buffers → buffer → size)
MAX_NODES = 100_000  # values in the document once aliases are expanded

KeyPath = tuple[Any, ...]


@dataclass(frozen=True)
class ScenarioFile:
    """A validated scenario with where it came from and the line of every key."""

    file: str
    scenario: Scenario
    lines: dict[KeyPath, int]
    sha256: str  # of the bytes that were read: what the run records it measured


def load_scenario_file(path: str | Path, precheck: Callable[[str, str], None] | None = None) -> ScenarioFile:
    """Read, parse and validate one scenario file (the chains' steps are checked in expand.py).
    ``precheck(text, file)`` runs on the text before it is parsed (expand.py bounds the expansion there)."""
    path = Path(path)
    file = str(path)
    text = _read_text(path)
    if precheck is not None:
        precheck(text, file)
    data, lines = parse_yaml(text, file)
    if "chain" in data and "chains" in data:
        raise ScenarioError(
            file,
            "give either 'chain' (one chain) or 'chains' (named chains), not both",
            lines.get(("chain",)),
            "chain",
        )
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as err:
        raise validation_error(err, file, lines, (), Scenario) from None
    _check_defaults(scenario, file, lines)
    return ScenarioFile(file, scenario, lines, hashlib.sha256(text.encode("utf-8")).hexdigest())


def load_scenario(path: str | Path) -> Scenario:
    return load_scenario_file(path).scenario


def _read_text(path: Path) -> str:
    file = str(path)
    raw = read_regular_file(
        path, MAX_FILE_BYTES, lambda message: ScenarioError(file, message), "a scenario file"
    )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise ScenarioError(
            file, f"not UTF-8 text ({err.reason} at byte {err.start}); is it a binary file?", line
        ) from None


# --- parsing ------------------------------------------------------------------------------------------

# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution): only these plain scalars are
# booleans and numbers. YAML 1.1's others read as text: yes/no/on/off, 1:30 (sexagesimal 90), 1_000, 0b1,
# dates; and 010 is ten, not octal eight. Where a number is expected, the model's error names the form.
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_YAML12_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_YAML12_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_YAML12_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_YAML11_ONLY = (
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:timestamp",
)


class _TagRefused(ConstructorError):
    pass


def _construct_int(constructor: yaml.constructor.SafeConstructor, node: yaml.Node) -> int:
    """A YAML 1.2 integer: decimal (leading zeros allowed: ``010`` is 10), ``0o`` octal or ``0x`` hex."""
    value = str(constructor.construct_scalar(node))  # type: ignore[arg-type]
    if value.startswith("0o"):
        return int(value[2:], 8)
    if value.startswith("0x"):
        return int(value[2:], 16)
    return int(value, 10)


class _Keys(yaml.constructor.SafeConstructor):
    """Builds mapping keys as the loader does (for the line index)."""


class _Loader(yaml.SafeLoader):
    """The safe loader with YAML 1.2 core-schema scalars, bounded while composing, refusing unknown tags
    by name."""

    def __init__(self, stream: str, file: str):
        super().__init__(stream)
        self.file = file
        self.depth = 0
        self.nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            return super().compose_node(parent, index)  # an existing node; _check_graph counts its expansion
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise ScenarioError(
                    self.file, f"nested more than {MAX_DEPTH} levels deep; not a scenario", line
                )
            self.nodes += 1
            if self.nodes > MAX_NODES:
                line = self.peek_event().start_mark.line + 1
                raise ScenarioError(self.file, f"holds more than {MAX_NODES:,} values; not a scenario", line)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (
            ValueError,
            TypeError,
            OverflowError,
        ) as err:  # PyYAML lets these out: 2024-13-45, !!int "x", 10**5000
            reason = "a number of more than 4300 digits" if "Exceeds the limit" in str(err) else str(err)
            raise ConstructorError(
                None, None, f"cannot read the value {_short(node.value)}: {reason}", node.start_mark
            ) from None


def _refuse_tag(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    raise _TagRefused(
        None,
        None,
        f"YAML tag '{tag}' is not allowed: a scenario holds plain data, and tags that build objects are never run",
        node.start_mark,
    )


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _YAML11_ONLY]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL, _YAML12_BOOL, list("tTfF"))
_Loader.add_implicit_resolver(_INT, _YAML12_INT, list("-+0123456789"))
_Loader.add_implicit_resolver(_FLOAT, _YAML12_FLOAT, list("-+0123456789."))
for _constructor in (_Loader, _Keys):
    _constructor.add_constructor(_INT, _construct_int)  # type: ignore[type-var]
    _constructor.add_constructor("tag:yaml.org,2002:timestamp", _refuse_tag)
_Loader.add_constructor(None, _refuse_tag)


def parse_yaml(text: str, file: str) -> tuple[dict[str, Any], dict[KeyPath, int]]:
    """Parse with the safe loader; return the mapping and a map from key path to 1-based line."""
    loader: _Loader | None = None
    try:
        loader = _Loader(text, file)
        node = loader.get_single_node()
        if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"):
            raise ScenarioError(file, "file is empty; a scenario needs name, description and chains")
        if not isinstance(node, yaml.MappingNode):
            what = (
                "a list" if isinstance(node, yaml.SequenceNode) else f"a single value ({_short(node.value)})"
            )
            raise ScenarioError(
                file,
                f"a scenario must be a YAML mapping of keys to values, not {what}",
                node.start_mark.line + 1,
            )
        _check_graph(node, file)
        lines: dict[KeyPath, int] = {}
        _index_lines(node, (), lines, file, _Keys())
        data = loader.construct_document(node)
    except yaml.YAMLError as err:
        raise _yaml_error(err, file, text) from None
    except RecursionError:  # not reachable with the limits above; kept so that no input can show a traceback
        raise ScenarioError(file, "YAML nested too deeply") from None
    finally:
        if loader is not None:
            loader.dispose()
    if not isinstance(data, dict):
        raise ScenarioError(
            file, f"a scenario must be a YAML mapping, not a {type(data).__name__}", node.start_mark.line + 1
        )
    return data, lines


def _yaml_error(err: yaml.YAMLError, file: str, text: str) -> ScenarioError:
    if isinstance(err, yaml.reader.ReaderError):
        line = text.count("\n", 0, err.position) + 1 if isinstance(err.position, int) else None
        char = err.character if isinstance(err.character, str) else chr(err.character)
        return ScenarioError(
            file, f"not valid YAML: control character {ord(char):#04x} is not allowed in a YAML file", line
        )
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    line = mark.line + 1 if mark else None
    if isinstance(err, _TagRefused):
        return ScenarioError(file, str(err.problem), line)
    if isinstance(err, ConstructorError) and err.problem == "found unhashable key":
        return ScenarioError(file, "a key must be a plain value, not a list or a mapping", line)
    context = getattr(err, "context", None)
    problem = getattr(err, "problem", None)
    parts = [str(p) for p in (context, problem) if p]
    detail = ", ".join(parts) if parts else (str(err).splitlines() or ["unreadable"])[0]
    return ScenarioError(file, f"not valid YAML: {detail}", line)


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value) if isinstance(value, str) else repr(str(value))
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def _show(value: Any) -> str:
    """A value for a message: short, and never a 4300-digit integer (which str() refuses to convert)."""
    if isinstance(value, str):
        return _short(value)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a number of {int(value.bit_length() * 0.30103) + 1} digits"
    return repr(value)


def _check_graph(root: yaml.Node, file: str) -> None:
    """Refuse alias cycles, and documents that aliases expand beyond MAX_NODES values or MAX_DEPTH levels.

    Linear in the composed document: each node's expanded size and height are computed once."""
    sizes: dict[int, tuple[int, int]] = {}
    active: set[int] = set()

    def visit(node: yaml.Node, depth: int) -> tuple[int, int]:
        key = id(node)
        line = node.start_mark.line + 1
        if key in active:
            raise ScenarioError(
                file, "an alias refers to the list or mapping that holds it (a recursive document)", line
            )
        if key in sizes:
            size, height = sizes[key]
            if depth + height - 1 > MAX_DEPTH:
                raise ScenarioError(
                    file, f"aliases nest the document more than {MAX_DEPTH} levels deep", line
                )
            return sizes[key]
        if depth > MAX_DEPTH:
            raise ScenarioError(file, f"nested more than {MAX_DEPTH} levels deep; not a scenario", line)
        active.add(key)
        size, height = 1, 1
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise ScenarioError(
                        file,
                        "a key must be a plain value, not a list or a mapping",
                        key_node.start_mark.line + 1,
                    )
                size += 1
                children.append(value_node)
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        for child in children:
            child_size, child_height = visit(child, depth + 1)
            size += child_size
            height = max(height, child_height + 1)
            if size > MAX_NODES:
                raise ScenarioError(
                    file,
                    f"aliases expand the document to more than {MAX_NODES:,} values (a 'billion laughs' document?)",
                    line,
                )
        active.discard(key)
        sizes[key] = (size, height)
        return size, height

    visit(root, 1)


def _index_lines(
    node: yaml.Node,
    path: KeyPath,
    lines: dict[KeyPath, int],
    file: str,
    keys: yaml.constructor.SafeConstructor,
) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = _key(key_node, keys)
            if key in seen and key != "<<":
                where = _oneline(format_path(path + (key,)))
                raise ScenarioError(
                    file, _oneline(f"duplicate key '{key}'"), key_node.start_mark.line + 1, where
                )
            seen.add(key)
            _index_lines(value_node, path + (key,), lines, file, keys)
            lines[path + (key,)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index_lines(item, path + (index,), lines, file, keys)


def _key(node: yaml.Node, keys: yaml.constructor.SafeConstructor) -> Any:
    """A mapping key as the loader will build it (``1:`` is the int 1), or its text where it cannot be built."""
    try:
        key = keys.construct_object(node)
        hash(key)
        return key
    except Exception:  # any tag or value the loader refuses is reported when the document is constructed
        return node.value


def _check_defaults(scenario: Scenario, file: str, lines: dict[KeyPath, int]) -> None:
    allowed = sorted({name for fields in STEP_FIELDS.values() for name in fields} - {"kind"})
    for key in scenario.defaults:
        line = lines.get(("defaults", key), lines.get(("defaults",)))
        where = _oneline(format_path(("defaults", key)))
        if key == "kind":
            raise ScenarioError(
                file, "defaults cannot set 'kind': every step names its own kind", line, where
            )
        if key not in allowed:
            message = f"unknown key '{key}' in defaults (no step kind takes it)"
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            message += f"; did you mean '{close[0]}'?" if close else f" (step keys: {', '.join(allowed)})"
            raise ScenarioError(file, _oneline(message), line, where)


# --- validation errors -------------------------------------------------------------------------------


def format_path(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def locate(loc: Iterable[Any], base: KeyPath, lines: dict[KeyPath, int]) -> tuple[KeyPath, int | None]:
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


_SCALARS = (str, int, float, bool, type(None))


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


def _most_telling(located: list[Located], base: KeyPath, lines: dict[KeyPath, int]) -> Located:
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


def _union_branch(loc: tuple[Any, ...], base: KeyPath, lines: dict[KeyPath, int]) -> int | None:
    """The index in a pydantic location of the first union member's name ('BufferArg', 'list[...]'): a
    part that is not a key in the document and is not the last part."""
    path = base
    for index, part in enumerate(loc[:-1]):
        if path + (part,) in lines:
            path = path + (part,)
        elif isinstance(part, str) and (part[:1].isupper() or "[" in part):
            return index
    return None


def validation_error(
    err: ValidationError, file: str, lines: dict[KeyPath, int], base: KeyPath, model: Any | None
) -> ScenarioError:
    """Turn the most telling pydantic error into a ScenarioError with line, key path and a suggestion.

    ``model`` is what was validated (Scenario; None or the Step union for one step), for suggestions."""
    errors = err.errors(include_url=False)
    located = [(e, *locate(e["loc"], base, lines)) for e in errors]
    first, path, line = _most_telling(located, base, lines)
    loc = tuple(first["loc"])
    kind = first["type"]
    relative = path[len(base) :]
    message = str(first["msg"]).removeprefix("Value error, ")
    value = first.get("input")
    show_value = True
    if kind == "extra_forbidden":
        key = loc[-1]
        path = path if path and path[-1] == key else path + (key,)
        line = lines.get(path, line)
        message = f"unknown key '{key}'"
        allowed = _allowed_keys(model if model is not None else Step, loc)
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        if close:
            message += f"; did you mean '{close[0]}'?"
        elif allowed:
            message += f" (allowed: {', '.join(sorted(allowed))})"
        show_value = False
    elif kind == "union_tag_invalid":
        tag = value.get("kind") if isinstance(value, dict) else first["ctx"]["tag"]
        kinds = ", ".join(STEP_FIELDS)
        if isinstance(tag, str):
            message = f"unknown step kind '{tag}'"
            close = difflib.get_close_matches(tag, list(STEP_FIELDS), n=1, cutoff=0.5)
            message += f"; did you mean '{close[0]}'? (kinds: {kinds})" if close else f" (kinds: {kinds})"
        else:
            message = f"a step's kind must be one of: {kinds}"
        path = path + ("kind",) if path + ("kind",) in lines else path
        line = lines.get(path, line)
        show_value = False
    elif kind == "union_tag_not_found":
        message = f"a step needs a 'kind' (one of: {', '.join(STEP_FIELDS)})"
        show_value = False
    elif kind == "missing":
        message = f"missing required key '{loc[-1]}'"
        show_value = False
    elif kind == "too_short" and relative == ("chain",):
        message = "the chain has no steps"
        show_value = False
    elif kind == "too_short" and relative[:1] == ("chains",):
        message = (
            f"chain '{relative[1]}' has no steps"
            if len(relative) > 1
            else "no chains: a scenario needs at least one chain of steps"
        )
        show_value = False
    elif kind == "list_type" and (
        relative == ("chain",) or (relative[:1] == ("chains",) and len(relative) == 2)
    ):
        message = "a chain must be a list of steps"
    elif kind == "int_from_float":
        message = "expected a whole number"
    elif loc[-1:] == ("[key]",) and kind == "string_type":
        message = f"a key must be text, not {_show(value)} (quote it)"
        show_value = False
    elif kind == "int_parsing_size":
        message = "number too large"
    elif kind == "string_pattern_mismatch" and relative == ("name",):
        message = "a scenario name may hold only letters, digits, '_', '.' and '-'"
    elif kind == "too_short" and relative[:1] == ("sweep",) and len(relative) == 2:
        message = f"sweep axis '{relative[1]}' has no values"
        show_value = False
    elif relative[:1] in (("sweep",), ("params",)) and len(relative) == 2 and loc[-1] == "[key]":
        what = "sweep axis" if relative[0] == "sweep" else "parameter"
        message = f"{what} name '{relative[1]}' must be a plain name (letters, digits, _) for steps to reference as $name"
        show_value = False
    elif relative[:1] == ("sweep",) and len(relative) == 2 and _rank(first) == 3:
        message = f"sweep axis '{relative[1]}' must be a list of numbers or a range {{start, stop, num}}"
    elif kind == "dict_type" and (
        (relative[:1] == ("chains",) and len(relative) == 3)
        or (relative[:1] == ("chain",) and len(relative) == 2)
    ):
        message = "a step must be a mapping with a 'kind'"
    named = isinstance(value, str) and (f"'{value}'" in message or repr(value) in message)
    if show_value and isinstance(value, _SCALARS) and "not the" not in message and not named:
        message += f" (got {_show(value)})"
    others = {
        p
        for e, p, _ in located
        if e is not first and _rank(e) <= 2 and p[: len(path)] != path and path[: len(p)] != p
    }
    if others:
        message += f" (and {len(others)} more error{'s' if len(others) > 1 else ''})"
    return ScenarioError(file, _oneline(message), line, _oneline(format_path(path)) or None)


def _oneline(text: str) -> str:
    """Keys and values from the file, made safe for a one-line message (a key may hold a newline)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _allowed_keys(model: Any, loc: tuple[Any, ...]) -> list[str]:
    """The field names valid where an unknown key stood (walking the model along the location)."""
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
    return names + (["chain"] if current is Scenario else [])


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
