"""Figures of the UCBVI-constants reproduction (drawn by ``icml25 reproduce ucbvi_constants``): regret curves with
their 95% bands over seeds; no method code."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure

if TYPE_CHECKING:
    from icml25.papers.ucbvi_constants.repro import RegretConfig


def _band(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and two-sided 95% Student-t band over seeds (axis 0)."""
    from scipy import stats

    mean = values.mean(axis=0)
    if len(values) < 2:
        return mean, mean, mean
    half = stats.t.ppf(0.975, len(values) - 1) * values.std(axis=0, ddof=1) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def _curves(per_seed: list[Metrics], names: list[str], labels: dict[str, str], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.asarray(per_seed[0]["curve_episodes"])
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for name in names:
        if f"curve_{name}" not in per_seed[0]:
            continue
        mean, lo, hi = _band(np.array([m[f"curve_{name}"] for m in per_seed]))
        (line,) = ax.plot(x, mean, label=labels.get(name, name))
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.25)
    ax.set_xlabel("episode k")
    ax.set_ylabel("cumulative regret (mean, 95% band)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def regret_figures(per_seed: list[Metrics], cfg: RegretConfig, outdir: Path) -> list[Path]:
    """Realised cumulative regret of the main agents and, when swept, of UCBVI-CH's bonus scales."""
    from icml25.papers.ucbvi_constants.repro import LABELS, MAIN  # at call time: repro imports this module

    tag = f"{cfg.env}, S={cfg.n_states}, A={cfg.n_actions}, H={cfg.horizon}, {len(per_seed)} seeds"
    paths = [_curves(per_seed, list(MAIN), LABELS, outdir / f"{cfg.env}_regret.png", f"Realised regret, {tag}")]
    if cfg.ch_scales:
        sweep = ["ch"] + [f"ch_x{s:g}" for s in cfg.ch_scales if s != 1.0]
        sweep_labels = {"ch": "CH x1 (Azar)", **{f"ch_x{s:g}": f"CH x{s:g}" for s in cfg.ch_scales}}
        paths.append(_curves(per_seed, sweep, sweep_labels, outdir / f"{cfg.env}_ch_scale_sweep.png",
                             f"UCBVI-CH bonus scale (diagnostic), {tag}"))
    return paths
