"""Statistics and decisions on measured runs: summaries, host drift, the cost model, compare and the gate."""
