"""Graph nodes CuPy does not expose, added to a capture in progress on CuPy's stream through
cuda-bindings: a conditional WHILE node (CUDA 12.4+) whose body graph is filled by capturing another
stream into it (cudaStreamBeginCaptureToGraph), and the device-side source of the kernel that sets its
condition (cudaGraphSetConditional).

Every function raises GraphFeatureUnavailable, with a sentence saying why, where this installation
cannot do it (no cuda-bindings, a driver or runtime without conditional nodes); a capture that raises
it fails, and the graph row of the case says why. cuda-bindings is imported inside the functions: the
step kinds import without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# The declarations NVRTC needs to call the device runtime's cudaGraphSetConditional without headers.
SET_CONDITIONAL_DECLARATION = r"""
typedef __device_builtin__ unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                                     unsigned int value);
"""


# conditional node (as an int) → its body graph, for drawing where the driver does not return a
# conditional node's parameters (cudaGraphNodeGetParams); the entry of a node is replaced when a new
# node takes its address
_BODIES: dict[int, Any] = {}
_MAX_BODIES = 1024


def body_of(node: Any) -> Any | None:
    """The body graph of a WHILE node added by append_while_node, or None."""
    return _BODIES.get(int(node))


class GraphFeatureUnavailable(RuntimeError):
    """This installation cannot build the node; the message says why."""


def _runtime() -> Any:
    try:
        from cuda.bindings import runtime
    except ImportError:
        raise GraphFeatureUnavailable(
            "conditional graph nodes need cuda-bindings (pip install cuda-python), which is not installed"
        ) from None
    return runtime


def _driver() -> Any:
    from cuda.bindings import driver

    return driver


def _name(err: Any) -> str:
    try:
        return str(_runtime().cudaGetErrorName(err)[1].decode())
    except Exception:  # noqa: BLE001 - a driver error code has no runtime name
        return str(err)


def _ok(result: Any, what: str) -> Any:
    """The values of a cuda-bindings call, or GraphFeatureUnavailable naming the call and its error."""
    err = result[0]
    if int(err) != 0:
        raise GraphFeatureUnavailable(f"{what} failed: {_name(err)}")
    rest = result[1:]
    return rest[0] if len(rest) == 1 else rest


def require_conditional_nodes() -> None:
    """GraphFeatureUnavailable unless the driver and the runtime both have conditional nodes (12.4+)."""
    runtime = _runtime()
    if not hasattr(runtime, "cudaGraphConditionalHandleCreate"):
        raise GraphFeatureUnavailable(
            "this cuda-bindings has no conditional graph nodes (CUDA 12.4 or newer)"
        )
    driver_version = int(_ok(runtime.cudaDriverGetVersion(), "cudaDriverGetVersion"))
    runtime_version = int(_ok(runtime.cudaRuntimeGetVersion(), "cudaRuntimeGetVersion"))
    for what, version in (("driver", driver_version), ("runtime", runtime_version)):
        if version < 12040:
            raise GraphFeatureUnavailable(
                f"conditional WHILE nodes need CUDA 12.4 or newer; the {what} is {version // 1000}.{version % 1000 // 10}"
            )


def _capture_info(stream_ptr: int) -> tuple[Any, list[Any]]:
    """The graph being captured on the stream and the nodes the next node will depend on."""
    runtime = _runtime()
    values = _ok(runtime.cudaStreamGetCaptureInfo(stream_ptr), "cudaStreamGetCaptureInfo")
    status, _capture_id, graph, dependencies = values[0], values[1], values[2], values[3]
    active = runtime.cudaStreamCaptureStatus.cudaStreamCaptureStatusActive
    if status != active:
        raise GraphFeatureUnavailable("a conditional node can be added only while the stream is capturing")
    return graph, list(dependencies or [])


def conditional_handle(stream_ptr: int) -> Any:
    """A new conditional handle of the graph being captured on the stream (default value 0, not reset
    at launch: the kernel before the node sets it)."""
    require_conditional_nodes()
    graph, _ = _capture_info(stream_ptr)
    return _ok(_runtime().cudaGraphConditionalHandleCreate(graph, 0, 0), "cudaGraphConditionalHandleCreate")


def handle_value(handle: Any) -> int:
    """The handle as the 64-bit integer a kernel takes."""
    return int(handle)


def append_while_node(stream_ptr: int, handle: Any) -> Any:
    """Add a conditional WHILE node on ``handle`` after what the stream captured so far, make it the
    stream's capture dependency, and return its (empty) body graph."""
    driver = _driver()
    runtime = _runtime()
    graph, dependencies = _capture_info(stream_ptr)
    params = driver.CUgraphNodeParams()
    params.type = driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
    params.conditional.handle = driver.CUgraphConditionalHandle(handle_value(handle))
    params.conditional.type = driver.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_WHILE
    params.conditional.size = 1
    params.conditional.ctx = _ok(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
    graph_handle = driver.CUgraph(int(graph))
    nodes = [driver.CUgraphNode(int(node)) for node in dependencies]
    try:  # CUDA 13: (graph, dependencies, edge data, count, params)
        result = driver.cuGraphAddNode(graph_handle, nodes, None, len(nodes), params)
    except TypeError:  # CUDA 12: no edge data
        result = driver.cuGraphAddNode(graph_handle, nodes, len(nodes), params)
    node = _ok(result, "cuGraphAddNode (conditional WHILE)")
    body = params.conditional.phGraph_out[0]
    if len(_BODIES) >= _MAX_BODIES:
        _BODIES.clear()
    _BODIES[int(node)] = body
    flags = runtime.cudaStreamUpdateCaptureDependenciesFlags.cudaStreamSetCaptureDependencies
    try:
        update = runtime.cudaStreamUpdateCaptureDependencies(stream_ptr, [node], None, 1, flags)
    except TypeError:
        update = runtime.cudaStreamUpdateCaptureDependencies(stream_ptr, [node], 1, flags)
    _ok(update, "cudaStreamUpdateCaptureDependencies")
    return body


@contextmanager
def capturing_into(body: Any, stream_ptr: int) -> Iterator[None]:
    """Capture what is issued on the stream inside the block into the graph ``body`` (a conditional
    node's body), through cudaStreamBeginCaptureToGraph."""
    runtime = _runtime()
    mode = runtime.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed
    _ok(
        runtime.cudaStreamBeginCaptureToGraph(stream_ptr, body, None, None, 0, mode),
        "cudaStreamBeginCaptureToGraph",
    )
    try:
        yield
    except BaseException:
        runtime.cudaStreamEndCapture(stream_ptr)  # the stream usable again; the real error goes on
        raise
    _ok(runtime.cudaStreamEndCapture(stream_ptr), "cudaStreamEndCapture (conditional body)")
