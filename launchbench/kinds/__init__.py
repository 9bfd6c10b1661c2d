"""The step kinds a chain can hold, one module per kind (see registry.py)."""
