"""Small plotting helpers shared by the papers' figure functions.

Figures show the mean over seeds with the same 95% Student-t interval the claims use
(:class:`icml25.core.paper.Summary`), so a bar's error bar is exactly what a verdict sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from icml25.core.paper import Summary

HIGHLIGHT = "#d62728"
"""Colour of the paper's own method in bar charts."""
OTHER = "#8c8c8c"
"""Colour of baselines."""


def mean_and_half_width(per_seed: Sequence[dict[str, Any]], keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Mean over seeds and half-width of its 95% t interval for each metric key (0 where one seed).

    Seeds that lack a key are skipped for that key; a key no seed has gives NaN.
    """
    summaries = [Summary.of([m[k] for m in per_seed if k in m]) for k in keys]
    return np.array([s.mean for s in summaries]), np.array([s.half_width for s in summaries])


def seed_bars(ax, per_seed: Sequence[dict[str, Any]], keys: Sequence[str], labels: Sequence[str] | None = None,
              highlight: Sequence[str] | str | None = None, colors: Sequence[str] | None = None,
              threshold: float | None = None, **bar_kw: Any):
    """Bar chart of per-seed metrics: one bar per key, mean with its 95% t interval as error bar.

    Args:
        ax: matplotlib axes.
        per_seed: the experiment's per-seed metric dicts.
        keys: metric names, one bar each.
        labels: tick labels (default: the keys).
        highlight: label(s) drawn in :data:`HIGHLIGHT` (the paper's method); the rest in :data:`OTHER`.
        colors: explicit colours, overriding ``highlight``.
        threshold: draw a dashed horizontal line here (a claim's threshold).
        **bar_kw: passed to ``ax.bar``.

    Returns:
        The ``BarContainer``.
    """
    labels = list(keys) if labels is None else list(labels)
    if len(labels) != len(keys):
        raise ValueError(f"got {len(labels)} labels for {len(keys)} keys")
    if colors is None:
        marked = {highlight} if isinstance(highlight, str) else set(highlight or ())
        colors = [HIGHLIGHT if lab in marked else OTHER for lab in labels]
    mean, half = mean_and_half_width(per_seed, keys)
    bars = ax.bar(labels, mean, yerr=half, color=list(colors), capsize=3, **bar_kw)
    if threshold is not None:
        ax.axhline(threshold, ls="--", c="k", lw=0.8)
    return bars


def save_figure(fig, path: Path, dpi: int = 120) -> Path:
    """Lay out, write and close a figure; returns ``path`` (figure functions return a list of these)."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
