"""compare and check commands (being written)."""

COMMANDS: list = []
