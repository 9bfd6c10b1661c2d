"""launchbench: what launching a chain of GPU kernels one by one costs, and what a CUDA Graph saves."""

__version__ = "0.1.0"
