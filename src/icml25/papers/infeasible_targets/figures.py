"""Infeasible-targets reproduction figure: rejection rates per target class and evaluator, delusion rates."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from icml25.core.experiment import Metrics
from icml25.core.plots import save_figure, seed_bars

if TYPE_CHECKING:
    from icml25.papers.infeasible_targets.repro import SSMConfig


def ssm_figures(per_seed: list[Metrics], cfg: SSMConfig, outdir: Path) -> list[Path]:
    """Rejection rates per target class and evaluator; delusion rate per planner variant."""
    import matplotlib.pyplot as plt

    from icml25.papers.infeasible_targets.repro import MIXTURES, VARIANTS  # the experiment's (repro imports this)

    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    titles = {"nonexistent": "non-existent targets rejected", "temporary": "temporarily infeasible rejected",
              "feasible": "feasible targets rejected (false)"}
    for ax, (cls, title) in zip(axes, titles.items()):
        seed_bars(ax, per_seed, [f"reject_{cls}_{m}" for m in MIXTURES], list(MIXTURES), highlight="EGP",
                  threshold=0.9 if cls != "feasible" else None)
        ax.set_ylim(0, 1.05)
        ax.set_title(title)
    seed_bars(axes[3], per_seed, [f"delusion_rate_{v}" for v in VARIANTS], list(VARIANTS), highlight="EGP")
    axes[3].set_title("delusion rate (steps chasing infeasible targets)")
    fig.suptitle(f"SSM-lite {cfg.size}x{cfg.size}, delta={cfg.difficulty}, {cfg.n_tasks} tasks, "
                 f"{cfg.env_steps} env steps")
    return [save_figure(fig, outdir / "ssm_evaluators.png", dpi=110)]
