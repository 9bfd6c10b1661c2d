"""A python step whose graph grows with its size (for tests/backend/test_shapes_gpu.py): one kernel up to 10,000
elements, two above, though the step declares one launch, so only the GPU sees the topology change."""


def grows(xp, stream, n):
    x = xp.ones(n, dtype=xp.float32)

    def run():
        xp.multiply(x, 1.01, out=x)
        if n > 10_000:
            xp.add(x, 0.5, out=x)

    return {"run": run, "outputs": {"x": x}}
