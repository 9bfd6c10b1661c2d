"""The GPU behind a small interface. Only backend/ and kernels/ import CuPy, and only when a run starts."""
