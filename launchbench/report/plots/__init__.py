"""Figures drawn from result files alone (no GPU): matplotlib with the Agg backend.

One module per figure (``modes``: wall and CPU time per launch, ``speedup``, ``lifecycle``,
``distributions``, ``comparison``, ``shapes``), the house style (``style``), the table and its panels
(``panels``), the grouped bars of chains at one length (``bars``) and which figures are written
(``write``). Each ``figure_*`` function builds one matplotlib Figure from a RunRecord (or a Comparison,
for the comparison); ``draw_plots`` saves them under names that say what they show (see FIGURES and
docs/plots.md) and leaves out a figure that would have nothing to show, saying which and why. Figures
are made with ``matplotlib.figure.Figure`` rather than pyplot, so nothing is kept in a global figure
registry and nothing has to be closed.

Every figure: a title, the GPU and versions in a subtitle, axes with units, a caption naming the
interval its bars draw, a legend above the panels (never over the data), Okabe–Ito colours (safe for
colour-blind readers), 8 inches wide: 1600 px at the default 200 dpi, for a slide.
"""

from launchbench.report.plots.write import (
    COMPARISON_FIGURE,
    FIGURES,
    SHAPE_FIGURE,
    PlotsWritten,
    SkippedFigure,
    draw_plots,
    write_all_plots,
)

__all__ = [
    "COMPARISON_FIGURE",
    "FIGURES",
    "SHAPE_FIGURE",
    "PlotsWritten",
    "SkippedFigure",
    "draw_plots",
    "write_all_plots",
]
