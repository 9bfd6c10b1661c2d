"""What every benchmark script does last: print its table under a header and keep a CSV and a text copy."""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas only for the table's type: a script that only asks the versions loads none of it
    import pandas as pd


def library_versions(names: tuple[str, ...]) -> dict[str, str]:
    """Python's version and each named distribution's ("not installed" for one that is not)."""
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def write_report(table: pd.DataFrame, header: str, out: Path | None, stem: str, digits: int) -> None:
    text = header + table.to_string(index=False, float_format=lambda v: f"{v:.{digits}f}")
    print(text)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        table.to_csv(out / f"{stem}.csv", index=False)
        (out / f"{stem}.txt").write_text(text + "\n")
