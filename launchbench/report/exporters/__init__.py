"""One module per report format, each defining ``EXPORTER`` (see report/export.py)."""
