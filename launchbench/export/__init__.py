"""Output formats of comparisons and gate reports, one file per format: tables (csv, json), markdown, junit.

Each function returns text; the caller decides where it goes (stdout, --output, $GITHUB_STEP_SUMMARY).
"""
