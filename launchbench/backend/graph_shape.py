"""The shape of a captured CUDA Graph, read through cuda-bindings (``walk``), and its Graphviz DOT
(``to_dot``, pure): every node with its type and what it does (a kernel's name and launch shape, a
memory node's bytes), the edges (so parallel branches of a multi-stream chain show side by side), and a
conditional node's body graph as a cluster its node points into.

cuda-bindings is imported inside ``walk``: the shape and its DOT are built and tested without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from launchbench.kinds import graph_nodes

STYLE: dict[str, tuple[str, str]] = {  # node kind → (shape, fill colour)
    "kernel": ("box", "#cfe2f3"),
    "memcpy": ("box", "#fff2cc"),
    "memset": ("box", "#fff2cc"),
    "mem_alloc": ("box", "#d9ead3"),
    "mem_free": ("box", "#f4cccc"),
    "event_record": ("ellipse", "#eeeeee"),
    "event_wait": ("ellipse", "#eeeeee"),
    "conditional": ("diamond", "#fce5cd"),
    "graph": ("box3d", "#eeeeee"),
    "empty": ("point", "#999999"),
}


@dataclass
class Node:
    kind: str  # a key of STYLE, or the runtime's own name of the node type
    label: str
    body: GraphShape | None = None  # a conditional (or child-graph) node's graph


@dataclass
class GraphShape:
    nodes: list[Node] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)  # indices into nodes

    def count(self, kind: str) -> int:
        """Nodes of ``kind``, bodies included."""
        return sum((n.kind == kind) + (n.body.count(kind) if n.body else 0) for n in self.nodes)

    def branches(self) -> int:
        """Parallel branches: the roots (a capture drops the fork event of a multi-stream chain, leaving
        one root per stream) or the most edges leaving one node, whichever is more (1 for a chain)."""
        out: dict[int, int] = {}
        for src, _dst in self.edges:
            out[src] = out.get(src, 0) + 1
        roots = len(self.nodes) - len({dst for _src, dst in self.edges})
        return max(1, roots, *out.values())


def describe(shape: GraphShape) -> str:
    """One line: the nodes by kind (bodies counted apart), the widest fork, each conditional body."""
    kinds: dict[str, int] = {}
    for node in shape.nodes:
        kinds[node.kind] = kinds.get(node.kind, 0) + 1
    parts = [f"{len(shape.nodes)} nodes (" + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) + ")"]
    if shape.branches() > 1:
        parts.append(f"{shape.branches()} parallel branches")
    for node in shape.nodes:
        if node.body is not None:
            parts.append(f"{node.label.splitlines()[0]} body: {describe(node.body)}")
    return "; ".join(parts)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(shape: GraphShape, title: str = "") -> str:
    """The graph as Graphviz DOT; a conditional node's body is a cluster, with a dashed edge into it."""
    lines = [
        "digraph launchbench {",
        "  compound=true; rankdir=TB;",
        '  node [style="filled,rounded", fontname="Helvetica", fontsize=10];',
    ]
    if title:
        lines.append(f'  label={_quote(title)}; labelloc=t; fontname="Helvetica";')
    counter = [0]

    def emit(graph: GraphShape, prefix: str, indent: str) -> list[str]:
        names = []
        for index, node in enumerate(graph.nodes):
            name = f"{prefix}n{index}"
            names.append(name)
            shape, colour = STYLE.get(node.kind, ("box", "#ffffff"))
            lines.append(
                f"{indent}{name} [label={_quote(node.label)}, shape={shape}, fillcolor={_quote(colour)}];"
            )
            if node.body is not None:
                counter[0] += 1
                cluster = f"cluster_{counter[0]}"
                lines.append(f"{indent}subgraph {cluster} {{")
                lines.append(f"{indent}  label={_quote(node.label + ' body')}; style=dashed;")
                inner = emit(node.body, f"{prefix}b{counter[0]}_", indent + "  ")
                lines.append(f"{indent}}}")
                if inner:
                    lines.append(
                        f'{indent}{name} -> {inner[0]} [style=dashed, lhead={cluster}, label="body"];'
                    )
        for src, dst in graph.edges:
            lines.append(f"{indent}{names[src]} -> {names[dst]};")
        return names

    emit(shape, "", "  ")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --- reading a graph through cuda-bindings --------------------------------------------------------------


def _ok(result: Any) -> Any:
    if int(result[0]) != 0:
        raise RuntimeError(str(result[0]))
    rest = result[1:]
    return rest[0] if len(rest) == 1 else rest


def _kernel_label(node: Any) -> str:
    from cuda.bindings import driver

    try:
        params = _ok(driver.cuGraphKernelNodeGetParams(driver.CUgraphNode(int(node))))
        name = _ok(driver.cuFuncGetName(params.func))
        name = name.decode() if isinstance(name, bytes) else str(name)
        grid = f"{params.gridDimX}×{params.gridDimY}×{params.gridDimZ}"
        block = f"{params.blockDimX}×{params.blockDimY}×{params.blockDimZ}"
        return f"kernel\n{name}\ngrid {grid}, block {block}"
    except Exception:  # noqa: BLE001 - an older driver: the node is still drawn
        return "kernel"


def _alloc_label(node: Any) -> str:
    from cuda.bindings import runtime

    try:
        params = _ok(runtime.cudaGraphMemAllocNodeGetParams(node))
        return f"mem alloc\n{int(params.bytesize)} bytes"
    except Exception:  # noqa: BLE001
        return "mem alloc"


def _conditional(node: Any, depth: int) -> Node:
    """A conditional node and its body: read back through cudaGraphNodeGetParams where the driver returns
    a conditional node's parameters, else the body launchbench recorded when it added the node
    (graph_nodes.body_of)."""
    from cuda.bindings import runtime

    getter = getattr(runtime, "cudaGraphNodeGetParams", None)
    try:
        if getter is None:
            raise RuntimeError("no cudaGraphNodeGetParams")
        params = _ok(getter(node))
        kind = params.conditional.type
        name = {
            runtime.cudaGraphConditionalNodeType.cudaGraphCondTypeWhile: "WHILE",
            runtime.cudaGraphConditionalNodeType.cudaGraphCondTypeIf: "IF",
        }.get(kind, str(kind).rsplit(".", 1)[-1])
        if not int(params.conditional.size) or not int(params.conditional.phGraph_out[0]):
            raise RuntimeError("no body graph in the node's parameters")
        return Node("conditional", name, walk(params.conditional.phGraph_out[0], depth + 1))
    except Exception as err:  # noqa: BLE001 - an older driver: the body recorded at capture, if any
        recorded = graph_nodes.body_of(node)
        if recorded is not None:
            return Node("conditional", "WHILE", walk(recorded, depth + 1))
        return Node("conditional", f"conditional node\n(body unreadable: {err})")


# node types drawn with a fixed label: cudaGraphNodeType member → (kind, label)
PLAIN_NODES = {
    "cudaGraphNodeTypeMemcpy": ("memcpy", "memcpy"),
    "cudaGraphNodeTypeMemset": ("memset", "memset"),
    "cudaGraphNodeTypeMemFree": ("mem_free", "mem free"),
    "cudaGraphNodeTypeEventRecord": ("event_record", "event record"),
    "cudaGraphNodeTypeWaitEvent": ("event_wait", "event wait"),
    "cudaGraphNodeTypeEmpty": ("empty", "join"),
}


def walk(graph: Any, depth: int = 0) -> GraphShape:
    """The shape of a cudaGraph_t (CuPy's ``Graph.graph``), bodies of conditional nodes included."""
    from cuda.bindings import runtime

    if isinstance(graph, int):
        graph = runtime.cudaGraph_t(graph)
    if depth > 8:
        return GraphShape([Node("graph", "… (nested deeper than 8)")])
    _nodes, count = _ok(runtime.cudaGraphGetNodes(graph, numNodes=0))
    nodes, _count = _ok(runtime.cudaGraphGetNodes(graph, numNodes=count)) if count else ([], 0)
    index = {int(node): i for i, node in enumerate(nodes)}
    types = runtime.cudaGraphNodeType
    plain = {getattr(types, name): labels for name, labels in PLAIN_NODES.items()}
    shape = GraphShape()
    for node in nodes:
        kind = _ok(runtime.cudaGraphNodeGetType(node))
        if kind in plain:
            shape.nodes.append(Node(*plain[kind]))
        elif kind == types.cudaGraphNodeTypeKernel:
            shape.nodes.append(Node("kernel", _kernel_label(node)))
        elif kind == types.cudaGraphNodeTypeMemAlloc:
            shape.nodes.append(Node("mem_alloc", _alloc_label(node)))
        elif kind == types.cudaGraphNodeTypeGraph:
            child = _ok(runtime.cudaGraphChildGraphNodeGetGraph(node))
            shape.nodes.append(Node("graph", "child graph", walk(child, depth + 1)))
        elif kind == getattr(types, "cudaGraphNodeTypeConditional", None):
            shape.nodes.append(_conditional(node, depth))
        else:
            shape.nodes.append(Node(str(kind).rsplit(".", 1)[-1], str(kind).rsplit(".", 1)[-1]))
    edge_result = runtime.cudaGraphGetEdges(graph, numEdges=0)
    edge_count = edge_result[-1]
    if int(edge_count):
        values = _ok(runtime.cudaGraphGetEdges(graph, numEdges=edge_count))
        sources, targets = values[0], values[1]
        shape.edges = [(index[int(a)], index[int(b)]) for a, b in zip(sources, targets)]
    return shape
