"""PAS reproduction figures: compound MSE of every estimator per experiment (mean over seeds, 95% interval)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.pas.repro import DigitsConfig, PaperDataConfig, SyntheticConfig

METHODS = ("classical", "prediction", "ppi", "pt", "shrinkage", "grand_mean", "pas")
"""Methods compared, the bars in this order. Also reported: ``pas_per_problem`` (A_j from each problem's own
moments) and, in the synthetic study with known moments, PAS and shrinkage-only with estimated moments."""


def _bar_figure(per_seed: list[Metrics], prefixes: dict[str, str], path: Path, title: str) -> Path:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(prefixes), figsize=(5.5 * len(prefixes), 4), squeeze=False)
    for ax, (prefix, label) in zip(axes[0], prefixes.items()):
        seed_bars(ax, per_seed, [f"{prefix}mse_{k}" for k in METHODS], METHODS, highlight=METHODS[-1])
        ax.set_yscale("log")
        ax.set_ylabel("compound MSE (log scale)")
        ax.set_title(label)
        ax.tick_params(axis="x", rotation=30)
    fig.suptitle(title)
    return save_figure(fig, path)


def synthetic_figures(per_seed: list[Metrics], cfg: SyntheticConfig, outdir: Path) -> list[Path]:
    return [_bar_figure(per_seed, {"good_": "good predictor f(x)=x^2", "bad_": "bad predictor f(x)=|x|"},
                        outdir / "synthetic_mse.png", f"Gaussian model, m={cfg.m}, n={cfg.n}, N={cfg.N}")]


def digits_figures(per_seed: list[Metrics], cfg: DigitsConfig, outdir: Path) -> list[Path]:
    return [_bar_figure(per_seed, {"": "digits: mean digit value per k-means cluster"}, outdir / "digits_mse.png",
                        f"digits, {cfg.n_labelled} labelled images per problem")]


def paper_data_figures(per_seed: list[Metrics], cfg: PaperDataConfig, outdir: Path) -> list[Path]:
    study = "galaxy" if hasattr(cfg, "galaxy_path") else "amazon"
    return [_bar_figure(per_seed, {"": Path(cfg.path).name},
                        outdir / f"paper_data_{study}_mse.png",
                        f"{study}: {cfg.replicates} splits per seed, "
                        f"{cfg.labelled_fraction:.0%} labelled")]
