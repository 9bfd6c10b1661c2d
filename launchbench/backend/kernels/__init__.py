"""The step kinds a chain can hold and how each is launched with CuPy (imported only by the backend)."""
