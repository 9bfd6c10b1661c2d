"""The GPU behind a small interface. Only backend/ imports CuPy, and only when a run starts; the step kinds
(kinds/) import it inside their builders, so their definitions import without a GPU."""
