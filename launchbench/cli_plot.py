"""plot command (being written)."""

COMMANDS: list = []
