"""Measurement: clocks, stopping rules and the sampling loop. Nothing here prints or imports CuPy."""
