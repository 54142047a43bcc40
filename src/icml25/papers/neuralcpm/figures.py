"""Figures of the neuralcpm experiments (drawn by ``icml25 reproduce`` from the metrics of all seeds).

A reproduction module (as ``repro.py``): it may draw with :mod:`icml25.core.plots`, which a method module may not
import. One function per experiment of :mod:`icml25.papers.neuralcpm.repro`, each returning the PNG paths.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.neuralcpm.repro import ClosureConfig, RecoveryConfig


def recovery_figures(per_seed: list[Metrics], cfg: RecoveryConfig, outdir: Path) -> list[Path]:
    """Learnt contact energies next to the truth, and the sorting index of data vs model samples: ``recovery.png``."""
    import matplotlib.pyplot as plt

    from icml25.papers.neuralcpm.repro import SCENARIO_B_J  # imported here: repro imports this module

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    keys = ["J01", "J02", "J11", "J12", "J22"]
    seed_bars(axes[0], per_seed, keys, highlight=keys)
    truth = [SCENARIO_B_J[0, 1], SCENARIO_B_J[0, 2], SCENARIO_B_J[1, 1], SCENARIO_B_J[1, 2], SCENARIO_B_J[2, 2]]
    axes[0].scatter(keys, truth, c="k", marker="_", s=400, zorder=3, label="truth")
    axes[0].legend()
    axes[0].set_title("learnt J (bars) vs truth")
    seed_bars(axes[1], per_seed, ["sorting_index_data", "sorting_index_model"], ["data", "model"], highlight="model")
    axes[1].set_title("sorting index")
    return [save_figure(fig, outdir / "recovery.png")]


def closure_figures(per_seed: list[Metrics], cfg: ClosureConfig, outdir: Path) -> list[Path]:
    """W1 distance of per-type volume histograms to the data, per model: ``closure_w1.png``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    kinds = ["symbolic", "nh", "closure"]
    seed_bars(ax, per_seed, [f"w1_{k}" for k in kinds], kinds, highlight=["nh", "closure"])
    ax.set_ylabel("W1(volume | type), model vs data")
    return [save_figure(fig, outdir / "closure_w1.png")]
