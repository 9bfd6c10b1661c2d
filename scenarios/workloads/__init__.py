"""Workloads for launchbench's ``python`` step kind (imported from scenario files beside this folder as
``workloads.<module>:<function>``). Each function follows the contract in docs/scenarios.md."""
