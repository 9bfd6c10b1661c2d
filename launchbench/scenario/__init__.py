"""Scenario files: YAML (load.py, yaml_safe.py) → validated models (model.py) → expanded cases
(expand.py, core.Case).

The package imports nothing itself, so a worker process that needs only core.Case does not load the
YAML reader and the scenario models."""
