"""Figures of the soft_inductive_bias experiments (drawn by ``icml25 reproduce`` from the metrics of all seeds).

A reproduction module (as ``repro.py``): it may draw with :mod:`icml25.core.plots`, which a method module may not
import. One function per experiment of :mod:`icml25.papers.soft_inductive_bias.repro`, each returning the PNG paths.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from icml25.core.experiment import Metrics
from icml25.core.paper import Summary
from icml25.core.plots import save_figure

if TYPE_CHECKING:
    from icml25.papers.soft_inductive_bias.repro import (
        CompressionConfig,
        DoubleDescentConfig,
        GPConfig,
        PolynomialConfig,
    )


def polynomial_figures(per_seed: list[Metrics], cfg: PolynomialConfig, outdir: Path) -> list[Path]:
    """Fits of seed 0 at the middle n (top) and test / train MSE against n (bottom): ``polynomial.png``."""
    import matplotlib.pyplot as plt

    # imported here: repro imports this module for its Experiment definitions
    from icml25.papers.soft_inductive_bias.repro import POLY_METHODS, TARGETS, poly_data, poly_models

    fig, axes = plt.subplots(2, 3, figsize=(14, 7.5))
    x_test = np.linspace(-1, 1, 400)
    n_show = cfg.n_train[len(cfg.n_train) // 2]
    for col, target in enumerate(TARGETS):  # top: fits of seed 0 at the middle n
        ax = axes[0, col]
        x, y, f = poly_data(target, n_show, cfg, np.random.default_rng([0, col, n_show]))
        ax.plot(x, y, "k.", ms=6, label="train")
        if target != "noise":
            ax.plot(x_test, f(x_test), "k--", lw=1, label="truth")
        for name, model in poly_models(cfg).items():
            model.fit(x[:, None], y)
            ax.plot(x_test, model.predict(x_test[:, None]), lw=1.2, label=name)
        lim = 3 * np.max(np.abs(y)) + 0.5
        ax.set_ylim(-lim, lim)
        ax.set_title(f"{target}, n={n_show} (seed 0)")
        if col == 0:
            ax.legend(fontsize=7)
    for col, target in enumerate(("simple", "structured")):  # bottom: test MSE against n
        ax = axes[1, col]
        for name in POLY_METHODS:
            s = [Summary.of([mm[f"{target}_n{n}_test_mse_{name}"] for mm in per_seed]) for n in cfg.n_train]
            ax.plot(cfg.n_train, [v.mean for v in s], "o-", label=name)
        ax.set(xscale="log", yscale="log", xlabel="n", ylabel="test MSE", title=f"{target}: test MSE")
        ax.legend(fontsize=7)
    ax = axes[1, 2]
    for name in ("soft", "ls3"):
        ax.plot(cfg.n_train, [np.mean([mm[f"noise_n{n}_train_mse_{name}"] for mm in per_seed]) for n in cfg.n_train],
                "o-", label=name)
    ax.set(xscale="log", yscale="log", xlabel="n", ylabel="train MSE", title="pure noise: train MSE")
    ax.legend(fontsize=7)
    model = cfg.model
    fig.suptitle(f"order-dependent polynomial, J={model.degree}, gamma={model.gamma}, alpha={model.alpha:g}")
    return [save_figure(fig, outdir / "polynomial.png", dpi=110)]


def gp_figures(per_seed: list[Metrics], cfg: GPConfig, outdir: Path) -> list[Path]:
    """Accuracy, marginal likelihood and bound against label noise (mean, 95% t interval): ``gp_label_noise.png``."""
    import matplotlib.pyplot as plt

    p = np.asarray(cfg.noise_fracs)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, keys, title in ((axes[0], ("train_acc", "test_acc"), "accuracy"),
                            (axes[1], ("lml",), "log marginal likelihood / n"),
                            (axes[2], ("bound", "gibbs_train_err"), "PAC-Bayes-kl bound (Gibbs)")):
        for key in keys:
            s = [Summary.of([mm[key][i] for mm in per_seed]) for i in range(len(p))]
            mean = np.array([v.mean for v in s])
            half = np.array([v.half_width for v in s])
            ax.errorbar(p, mean, yerr=half, marker="o", capsize=3, label=key)
        ax.set(xlabel="fraction of random labels", title=title)
        ax.legend(fontsize=8)
    fig.suptitle(f"GP (RBF, noise {cfg.gp.noise:g}) on digits, n={cfg.n_train}")
    return [save_figure(fig, outdir / "gp_label_noise.png", dpi=110)]


def double_descent_figures(per_seed: list[Metrics], cfg: DoubleDescentConfig, outdir: Path) -> list[Path]:
    """Test MSE and N_eff against the number of random features p: ``double_descent.png``."""
    import matplotlib.pyplot as plt

    grid = np.asarray(per_seed[0]["p_grid"])
    fig, ax = plt.subplots(figsize=(6.5, 4))
    mse = np.array([mm["test_mse"] for mm in per_seed])
    ax.plot(grid, np.median(mse, 0), "o-", color="C0", label="test MSE (median over seeds)")
    ax.fill_between(grid, mse.min(0), mse.max(0), color="C0", alpha=0.2)
    ax.axvline(cfg.n_train, color="k", ls=":", lw=1)
    ax.set(xscale="log", yscale="log", xlabel="number of random features p", ylabel="test MSE")
    ax2 = ax.twinx()
    ax2.plot(grid, np.mean([mm["n_eff"] for mm in per_seed], 0), "s--", color="C3", ms=3, label="N_eff")
    ax2.set_ylabel("effective dimensionality", color="C3")
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(f"min-norm ReLU random features on digits, n={cfg.n_train}")
    return [save_figure(fig, outdir / "double_descent.png", dpi=110)]


def compression_figures(per_seed: list[Metrics], cfg: CompressionConfig, outdir: Path) -> list[Path]:
    """Bound and train error against the subspace dimension k, true vs random labels: ``compression.png``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    k = np.array([kk for _ in cfg.compression.levels for kk in cfg.compression.dims])
    for name, colour in (("true", "C0"), ("random", "C3")):
        ax.plot(k, np.mean([mm[f"{name}_bound"] for mm in per_seed], 0), "o-", color=colour, label=f"bound, {name}")
        ax.plot(k, np.mean([mm[f"{name}_train_err"] for mm in per_seed], 0), "x--", color=colour,
                label=f"train error, {name}")
    ax.set(xscale="log", xlabel="subspace dimension k", ylabel="0-1 error", ylim=(0, 1),
           title=f"compression bound, digits n={cfg.n_train}, {cfg.compression.levels[0]} levels")
    ax.legend(fontsize=8)
    return [save_figure(fig, outdir / "compression.png", dpi=110)]
