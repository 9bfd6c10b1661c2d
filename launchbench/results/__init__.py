"""Result files: the versioned schema, the CSV table, and the store that writes and reads run directories."""
