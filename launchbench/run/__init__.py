"""Running a plan: the runner, its executors (in-process or worker processes) and one case's execution."""
