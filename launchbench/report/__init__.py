"""Human-facing output: console tables (console.py) and figures (plots.py, matplotlib with Agg)."""
