"""The figure of the ICFL screen experiment (drawn from the per-seed metrics of :mod:`icml25.papers.icfl.repro`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def screen_figure(per_seed: Sequence[dict[str, Any]], cfg: Any, methods: Sequence[str],  # noqa: ANN401
                  conditions: Sequence[str], summary: Callable[[list[float]], tuple[float, float]]):
    """Bars of the four measures for every method and condition; ``summary(values)`` gives the mean over seeds and
    the half-width of its interval (drawn only with more than one seed)."""
    import matplotlib.pyplot as plt

    panels = [("dead", "dead features"), ("recovered", f"true atoms recovered (cos > {cfg.recovery_thr})"),
              ("cos", "held-out reconstruction cosine"),
              ("selective", f"features, avg-selectivity > {cfg.selectivity_thr}"),
              ("selective_low", f"features, avg-selectivity > {cfg.selectivity_thr_low}")]
    names = [f"{m}\n{c}" for m in methods for c in conditions]
    colours = ["#d62728", "#ff9896", "#7f7f7f", "#c7c7c7"]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8))
    for ax, (key, title) in zip(axes, panels):
        summaries = [summary([m[f"{meth}_{c}_{key}"] for m in per_seed]) for meth in methods for c in conditions]
        mean = [s[0] for s in summaries]
        err = [s[1] for s in summaries] if len(per_seed) > 1 else None
        ax.bar(names, mean, yerr=err, color=colours, capsize=3)
        ax.set_title(title, fontsize=10)
    icfl = cfg.icfl
    fig.suptitle(f"synthetic screen, d={cfg.d}, M={icfl.n_features}, J*L=k={icfl.J * icfl.L}, {icfl.n_steps} steps")
    return fig
