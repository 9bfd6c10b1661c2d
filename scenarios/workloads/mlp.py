"""One SGD training step of a 3-layer MLP, as a launchbench ``python`` step (workloads.mlp:training_step).

    x (batch × inputs) → Linear → ReLU → Linear → ReLU → Linear (→ classes) → softmax cross-entropy

Forward, backward and the SGD update of every weight and bias are one iteration, 29 launches:

    forward   3 × (GEMM, bias add) + 2 ReLU                                    8
    softmax   row max, subtract, exp, row sum, dZ3 = (P − Y)/batch             5
    backward  3 × (GEMM for dW, bias-gradient sum) + 2 × (GEMM for dH, ReLU')  10
    update    6 × (w −= lr·g)                                                  6

Every matrix product goes through the RawKernel GEMM of gemm.py (cuBLAS refuses capture), every
elementwise op through a CuPy ufunc or ElementwiseKernel with ``out=`` or in place, every reduction
with ``out=``: all buffers are allocated here, before any capture. ``cublas=True`` computes the same
products with ``cupy.matmul`` (cuBLAS): the eager cost of the library path, whose capture fails.

``reference_step`` is the same step in plain NumPy (float64), for checking the GPU's weights.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from .gemm import Gemm

LAUNCHES = 29  # per step; scenarios declare it as the python step's `launches`
PARAMS = ("w1", "b1", "w2", "b2", "w3", "b3")

_KERNELS: dict[int, dict[str, Any]] = {}


def _kernels(xp: Any) -> dict[str, Any]:
    """ElementwiseKernels, one set per array module (compiled on first use)."""
    key = id(xp)
    if key not in _KERNELS:
        _KERNELS[key] = {
            "softmax_grad": xp.ElementwiseKernel(
                "T e, T s, T y, T inv_batch", "T dz", "dz = (e / s - y) * inv_batch", "lb_softmax_xent_grad"
            ),
            "relu_grad": xp.ElementwiseKernel("T z", "T g", "g = z > (T)0 ? g : (T)0", "lb_relu_grad"),
            "sgd": xp.ElementwiseKernel("T g, T lr", "T w", "w = w - lr * g", "lb_sgd"),
        }
    return _KERNELS[key]


def init_host(batch: int, inputs: int, hidden: int, classes: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Initial weights (He-normal), small random biases, an input batch and one-hot labels (float32)."""
    rng = np.random.default_rng(seed)
    f32 = np.float32
    dims = [(inputs, hidden), (hidden, hidden), (hidden, classes)]
    host: dict[str, np.ndarray] = {}
    for layer, (fan_in, fan_out) in enumerate(dims, start=1):
        host[f"w{layer}"] = (rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)).astype(f32)
        host[f"b{layer}"] = (0.01 * rng.standard_normal(fan_out)).astype(f32)
    host["x"] = rng.standard_normal((batch, inputs)).astype(f32)
    labels = rng.integers(0, classes, batch)
    host["y"] = np.eye(classes, dtype=f32)[labels]
    return host


def _relu(z: np.ndarray) -> np.ndarray:
    return np.maximum(z, 0.0)


def reference_forward(params: dict[str, np.ndarray], x: np.ndarray) -> dict[str, np.ndarray]:
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    z1 = x @ p["w1"] + p["b1"]
    h1 = _relu(z1)
    z2 = h1 @ p["w2"] + p["b2"]
    h2 = _relu(z2)
    z3 = h2 @ p["w3"] + p["b3"]
    e = np.exp(z3 - z3.max(axis=1, keepdims=True))
    prob = e / e.sum(axis=1, keepdims=True)
    return {"z1": z1, "h1": h1, "z2": z2, "h2": h2, "z3": z3, "prob": prob}


def reference_loss(params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> float:
    """Mean softmax cross-entropy of the batch (float64)."""
    prob = reference_forward(params, np.asarray(x, dtype=np.float64))["prob"]
    return float(-np.mean(np.sum(np.asarray(y, dtype=np.float64) * np.log(prob), axis=1)))


def reference_step(
    params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, lr: float
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One SGD step in NumPy (float64): (new parameters, gradients), the same math as the GPU step."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    f = reference_forward(p, x)
    dz3 = (f["prob"] - y) / x.shape[0]
    grads = {"w3": f["h2"].T @ dz3, "b3": dz3.sum(axis=0)}
    dz2 = (dz3 @ p["w3"].T) * (f["z2"] > 0)
    grads.update(w2=f["h1"].T @ dz2, b2=dz2.sum(axis=0))
    dz1 = (dz2 @ p["w2"].T) * (f["z1"] > 0)
    grads.update(w1=x.T @ dz1, b1=dz1.sum(axis=0))
    new = {k: p[k] - lr * grads[k] for k in PARAMS}
    return new, grads


def _explain_cublas(xp: Any, a: Any, b: Any, out: Any) -> None:
    """cupy.matmul, with a capture refusal named for what it is."""
    try:
        xp.matmul(a, b, out=out)
    except Exception as err:
        if xp.cuda.get_current_stream().is_capturing():
            raise NotImplementedError(
                f"cuBLAS (cupy.matmul) refuses CUDA graph capture in CuPy (cupy/cupy#6290): {type(err).__name__}: {err}"
            ) from err
        raise


class TrainingStep:
    """The buffers and the 29 launches of one step; ``run`` issues them on the current stream."""

    def __init__(
        self,
        xp: Any,
        batch: int = 64,
        inputs: int = 1024,
        hidden: int = 1024,
        classes: int = 10,
        lr: float = 0.01,
        seed: int = 0,
        cublas: bool = False,
    ):
        self.xp = xp
        self.lr = lr
        self.cublas = cublas
        self.host = init_host(batch, inputs, hidden, classes, seed)
        self.params = {k: xp.asarray(self.host[k]) for k in PARAMS}
        self.grads = {k: xp.zeros_like(v) for k, v in self.params.items()}
        x, y = xp.asarray(self.host["x"]), xp.asarray(self.host["y"])
        self.x, self.y = x, y
        f32 = np.float32

        def empty(*shape: int) -> Any:
            return xp.zeros(shape, dtype=f32)

        z1, h1, z2, h2, z3 = (
            empty(batch, hidden),
            empty(batch, hidden),
            empty(batch, hidden),
            empty(batch, hidden),
            empty(batch, classes),
        )
        e, row_max, row_sum, dz3 = (
            empty(batch, classes),
            empty(batch, 1),
            empty(batch, 1),
            empty(batch, classes),
        )
        dh2, dh1 = empty(batch, hidden), empty(batch, hidden)
        self.activations = {
            "z1": z1,
            "h1": h1,
            "z2": z2,
            "h2": h2,
            "z3": z3,
            "e": e,
            "dz3": dz3,
            "dh2": dh2,
            "dh1": dh1,
        }
        k = _kernels(xp)
        p, g = self.params, self.grads
        mm = self._cublas_bind if cublas else Gemm(xp).bind
        zero, inv_batch, lr32 = f32(0), f32(1.0 / batch), f32(lr)
        ops: list[Callable[[], Any]] = [
            # forward
            mm(x, p["w1"], z1),
            partial(xp.add, z1, p["b1"], out=z1),
            partial(xp.maximum, z1, zero, out=h1),
            mm(h1, p["w2"], z2),
            partial(xp.add, z2, p["b2"], out=z2),
            partial(xp.maximum, z2, zero, out=h2),
            mm(h2, p["w3"], z3),
            partial(xp.add, z3, p["b3"], out=z3),
            # softmax cross-entropy: dZ3 = (softmax(Z3) − Y) / batch
            partial(xp.max, z3, axis=1, keepdims=True, out=row_max),
            partial(xp.subtract, z3, row_max, out=e),
            partial(xp.exp, e, out=e),
            partial(xp.sum, e, axis=1, keepdims=True, out=row_sum),
            partial(k["softmax_grad"], e, row_sum, y, inv_batch, dz3),
            # backward (dh2 becomes dZ2 and dh1 becomes dZ1 in place, through ReLU')
            mm(h2, dz3, g["w3"], trans_a=True),
            partial(xp.sum, dz3, axis=0, out=g["b3"]),
            mm(dz3, p["w3"], dh2, trans_b=True),
            partial(k["relu_grad"], z2, dh2),
            mm(h1, dh2, g["w2"], trans_a=True),
            partial(xp.sum, dh2, axis=0, out=g["b2"]),
            mm(dh2, p["w2"], dh1, trans_b=True),
            partial(k["relu_grad"], z1, dh1),
            mm(x, dh1, g["w1"], trans_a=True),
            partial(xp.sum, dh1, axis=0, out=g["b1"]),
        ]
        ops += [partial(k["sgd"], g[name], lr32, p[name]) for name in PARAMS]  # update
        assert len(ops) == LAUNCHES, len(ops)
        self.ops = ops
        self.outputs = {name: p[name] for name in PARAMS}

    def _cublas_bind(
        self, a: Any, b: Any, out: Any, *, trans_a: bool = False, trans_b: bool = False
    ) -> Callable[[], None]:
        return partial(_explain_cublas, self.xp, a.T if trans_a else a, b.T if trans_b else b, out)

    def run(self) -> None:
        for op in self.ops:
            op()

    def initial_params(self) -> dict[str, np.ndarray]:
        return {k: self.host[k] for k in PARAMS}


def training_step(
    xp: Any,
    stream: Any,
    batch: int = 64,
    inputs: int = 1024,
    hidden: int = 1024,
    classes: int = 10,
    lr: float = 0.01,
    seed: int = 0,
    cublas: bool = False,
) -> TrainingStep:
    """launchbench entry point: outputs are the six parameters (compared eager against graph after one
    step from the same initial weights; launchbench restores them between the two)."""
    return TrainingStep(xp, batch, inputs, hidden, classes, lr, seed, cublas)
