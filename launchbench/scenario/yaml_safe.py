"""The YAML reader for scenario files: a safe loader, bounded, with YAML 1.2 scalars and a line index.

Input is untrusted: the text is parsed with a safe loader that refuses every tag that would build a
Python object, and the composed document is checked before anything walks it: at most MAX_DEPTH levels
of nesting and MAX_NODES values *after* aliases are expanded (a "billion laughs" document is a few lines
that expand to 10⁹ values), and no alias may refer to a node that contains it.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from launchbench.errors import ScenarioError
from launchbench.scenario.messages import KeyPath, format_path, oneline, short

MAX_DEPTH = 40  # a scenario nests about 7 levels (chains → chain → step → buffers → buffer → size)
MAX_NODES = 100_000  # values in the document once aliases are expanded

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
                None, None, f"cannot read the value {short(node.value)}: {reason}", node.start_mark
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
                "a list" if isinstance(node, yaml.SequenceNode) else f"a single value ({short(node.value)})"
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
            if depth + sizes[key][1] - 1 > MAX_DEPTH:
                raise ScenarioError(
                    file, f"aliases nest the document more than {MAX_DEPTH} levels deep", line
                )
            return sizes[key]
        if depth > MAX_DEPTH:
            raise ScenarioError(file, f"nested more than {MAX_DEPTH} levels deep; not a scenario", line)
        active.add(key)
        children = _children(node, file)
        size = 1 + (len(node.value) if isinstance(node, yaml.MappingNode) else 0)  # a mapping's keys count
        height = 1
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


def _children(node: yaml.Node, file: str) -> list[yaml.Node]:
    """The values a list or mapping holds; a mapping's keys must be plain values."""
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if not isinstance(node, yaml.MappingNode):
        return []
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise ScenarioError(
                file, "a key must be a plain value, not a list or a mapping", key_node.start_mark.line + 1
            )
    return [value_node for _, value_node in node.value]


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
                where = oneline(format_path(path + (key,)))
                raise ScenarioError(
                    file, oneline(f"duplicate key '{key}'"), key_node.start_mark.line + 1, where
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
