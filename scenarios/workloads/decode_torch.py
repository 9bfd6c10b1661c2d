"""One decode step of a small pre-norm transformer block in PyTorch, as a launchbench ``torch`` step
(workloads.decode_torch:decode_step).

    x (batch × d) → LayerNorm → q, k, v projections → k, v written into the KV cache at one position
      → attention of q over the cache (bmm, softmax, bmm) → output projection → + x
      → LayerNorm → SwiGLU MLP (gate, up, silu(gate)·up, down) → + residual → y

The step is written for graphs: every tensor is allocated here, every op writes with ``out=`` or in
place (LayerNorm and softmax spelled out in such ops), the KV cache is stored so that both attention
products are plain ``torch.bmm`` calls, and the new token is written at a fixed position, so one
iteration does the same work every time and its outputs are the same after every iteration from the
same inputs. Matrix products go through cuBLAS. One iteration is LAUNCHES torch ops:

    LayerNorm 1        9   (mean, centre, square, mean, + eps, rsqrt, scale, × gamma, + beta)
    q, k, v            3   GEMMs
    KV cache write     2   copies into the cache's position column
    attention          8   (bmm, scale, row max, subtract, exp, row sum, divide, bmm)
    out projection     2   (GEMM, + x)
    LayerNorm 2        9
    SwiGLU MLP         6   (gate, up GEMMs, silu, multiply, down GEMM, + residual)
"""

from __future__ import annotations

from typing import Any

LAUNCHES = 39  # torch ops per step; the scenario declares it as the torch step's `launches`
EPS = 1e-5


def _layer_norm(torch: Any, x: Any, gamma: Any, beta: Any, work: dict[str, Any], out: Any) -> None:
    """LayerNorm of x's rows into ``out`` with ``out=`` and in-place ops only (9 launches)."""
    mean, centred, square, var = work["mean"], work["centred"], work["square"], work["var"]
    torch.mean(x, dim=-1, keepdim=True, out=mean)
    torch.sub(x, mean, out=centred)
    torch.mul(centred, centred, out=square)
    torch.mean(square, dim=-1, keepdim=True, out=var)
    var.add_(EPS)
    var.rsqrt_()
    torch.mul(centred, var, out=out)
    out.mul_(gamma)
    out.add_(beta)


def _tensors(torch: Any, device: Any, batch: int, d: int, heads: int, context: int, ffn: int) -> dict:
    """Weights (scaled so activations stay near 1), the input token, the KV cache and every temporary."""
    gen = torch.Generator(device=device).manual_seed(0)
    dtype = torch.float16
    head_dim = d // heads

    def rand(*shape: int, scale: float = 1.0) -> Any:
        return (torch.randn(*shape, generator=gen, device=device, dtype=torch.float32) * scale).to(dtype)

    def empty(*shape: int) -> Any:
        return torch.empty(*shape, device=device, dtype=dtype)

    t = {name: rand(d, d, scale=d**-0.5) for name in ("wq", "wk", "wv", "wo")}
    t.update(wg=rand(d, ffn, scale=d**-0.5), wu=rand(d, ffn, scale=d**-0.5), wd=rand(ffn, d, scale=ffn**-0.5))
    t.update(g1=torch.ones(d, device=device, dtype=dtype), b1=torch.zeros(d, device=device, dtype=dtype))
    t.update(g2=torch.ones(d, device=device, dtype=dtype), b2=torch.zeros(d, device=device, dtype=dtype))
    t.update(
        x=rand(batch, d), k_t=rand(batch * heads, head_dim, context), v=rand(batch * heads, context, head_dim)
    )
    for name in ("h", "q", "k", "vn", "attn", "proj", "r1", "h2", "y", "mlp"):
        t[name] = empty(batch, d)
    t.update(gate=empty(batch, ffn), up=empty(batch, ffn), scores=empty(batch * heads, 1, context))
    t.update(row=empty(batch * heads, 1, 1), mean=empty(batch, 1), var=empty(batch, 1))
    t.update(centred=empty(batch, d), square=empty(batch, d))
    return t


def decode_step(
    torch: Any, device: Any, stream: Any, batch: int, d: int = 1024, heads: int = 16, context: int = 512,
    ffn: int = 2816, position: int = 0,
) -> dict[str, Any]:  # fmt: skip
    """Allocate the block's tensors on ``device`` and return its decode step (``run``) and outputs."""
    t = _tensors(torch, device, batch, d, heads, context, ffn)
    head_dim = d // heads
    scale = head_dim**-0.5
    rows = batch * heads
    k_slot, v_slot = t["k_t"][:, :, position], t["v"][:, position, :]

    def run() -> None:
        _layer_norm(torch, t["x"], t["g1"], t["b1"], t, t["h"])
        torch.matmul(t["h"], t["wq"], out=t["q"])
        torch.matmul(t["h"], t["wk"], out=t["k"])
        torch.matmul(t["h"], t["wv"], out=t["vn"])
        k_slot.copy_(t["k"].view(rows, head_dim))
        v_slot.copy_(t["vn"].view(rows, head_dim))
        scores = t["scores"]
        torch.bmm(t["q"].view(rows, 1, head_dim), t["k_t"], out=scores)
        scores.mul_(scale)
        torch.amax(scores, dim=-1, keepdim=True, out=t["row"])
        scores.sub_(t["row"])
        scores.exp_()
        torch.sum(scores, dim=-1, keepdim=True, out=t["row"])
        scores.div_(t["row"])
        torch.bmm(scores, t["v"], out=t["attn"].view(rows, 1, head_dim))
        torch.matmul(t["attn"], t["wo"], out=t["proj"])
        torch.add(t["x"], t["proj"], out=t["r1"])
        _layer_norm(torch, t["r1"], t["g2"], t["b2"], t, t["h2"])
        torch.matmul(t["h2"], t["wg"], out=t["gate"])
        torch.matmul(t["h2"], t["wu"], out=t["up"])
        torch.nn.functional.silu(t["gate"], inplace=True)
        t["gate"].mul_(t["up"])
        torch.matmul(t["gate"], t["wd"], out=t["mlp"])
        torch.add(t["r1"], t["mlp"], out=t["y"])

    return {"run": run, "outputs": {"y": t["y"]}}


LAUNCHES_NATURAL = 20  # torch ops per step of decode_step_natural


def decode_step_natural(
    torch: Any, device: Any, stream: Any, batch: int, d: int = 1024, heads: int = 16, context: int = 512,
    ffn: int = 2816, position: int = 0,
) -> dict[str, Any]:  # fmt: skip
    """The same block written as torch code usually is: every intermediate a new tensor (LayerNorm and
    softmax as torch's own functions), only the KV cache write in place and the result copied into
    ``y``. It allocates on every call, so CuPy's capture refuses it (the graph mode is not_capturable)
    and torch_graph keeps its intermediates in the graph's private pool."""
    t = _tensors(torch, device, batch, d, heads, context, ffn)
    functional = torch.nn.functional
    head_dim = d // heads
    scale = head_dim**-0.5
    rows = batch * heads
    k_slot, v_slot = t["k_t"][:, :, position], t["v"][:, position, :]

    def run() -> None:
        h = functional.layer_norm(t["x"], (d,), t["g1"], t["b1"], EPS)
        q, k, vn = h @ t["wq"], h @ t["wk"], h @ t["wv"]
        k_slot.copy_(k.view(rows, head_dim))
        v_slot.copy_(vn.view(rows, head_dim))
        scores = torch.bmm(q.view(rows, 1, head_dim), t["k_t"]) * scale
        attn = torch.bmm(torch.softmax(scores, dim=-1), t["v"]).view(batch, d)
        r1 = t["x"] + attn @ t["wo"]
        h2 = functional.layer_norm(r1, (d,), t["g2"], t["b2"], EPS)
        mlp = (functional.silu(h2 @ t["wg"]) * (h2 @ t["wu"])) @ t["wd"]
        t["y"].copy_(r1 + mlp)

    return {"run": run, "outputs": {"y": t["y"]}}
