"""What every benchmark script does last: print its table under a header and keep a CSV and a text copy."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def write_report(table: pd.DataFrame, header: str, out: Path | None, stem: str, digits: int) -> None:
    text = header + table.to_string(index=False, float_format=lambda v: f"{v:.{digits}f}")
    print(text)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        table.to_csv(out / f"{stem}.csv", index=False)
        (out / f"{stem}.txt").write_text(text + "\n")
