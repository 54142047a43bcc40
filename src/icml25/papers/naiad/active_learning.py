"""NAIAD's active-learning loop: an ensemble recommends the next batch of pairs to measure.

Round 0 measures a random batch. Each later round trains an ensemble of M models (same
data, different seeds) on everything measured so far, scores every unmeasured candidate
pair and measures the n_select best-scoring ones (official ``ActiveLearner``). Scores,
with mu and sigma the ensemble mean and standard deviation of the predictions and
``sign = -1`` when strong means negative (``minimize=True``):

* ``'mean'``  (MPE, maximum predicted effect, the paper's recommendation): sign * mu
* ``'std'``   (pure exploration): sigma
* ``'mean+std'`` (UCB): sign * mu + beta * sigma
* ``'residual'``: |mu - linear|, disagreement with the additive linear model fitted on the
  measured pairs; ``'residual+std'``: |mu - linear| + beta * sigma
* ``'random'``: a uniformly random batch (no model is trained)

The candidates with the highest score are measured next.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from icml25.papers.naiad.data import CombinatorialScreen
from icml25.papers.naiad.model import SingleEffectLinearRegressor

ACQUISITIONS = ("mean", "std", "mean+std", "residual", "residual+std", "random")


def top_n_recall(y_true, y_pred, n: int, minimize: bool = True) -> float:
    """Share of the ``n`` most extreme measured pairs among the ``n`` most extreme predictions.

    "Most extreme" is the most negative when ``minimize`` (growth screens), else the most
    positive (official ``find_top_n_perturbations`` at one N). Ties are broken by position.
    """
    y_true, y_pred = np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float)
    if y_true.ndim != 1 or y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred must be 1-D of equal length, got {y_true.shape} and {y_pred.shape}")
    if not 1 <= n <= y_true.size:
        raise ValueError(f"n must be in [1, {y_true.size}], got {n}")
    if not (np.all(np.isfinite(y_true)) and np.all(np.isfinite(y_pred))):
        raise ValueError("y_true and y_pred must be finite")
    sign = 1.0 if minimize else -1.0
    top_true = np.argsort(sign * y_true, kind="stable")[:n]
    top_pred = np.argsort(sign * y_pred, kind="stable")[:n]
    return float(np.intersect1d(top_true, top_pred).size / n)


def acquisition_scores(preds: np.ndarray, method: str, beta: float = 1.0, minimize: bool = True,
                       linear: np.ndarray | None = None) -> np.ndarray:
    """Score of every candidate from ensemble predictions ``preds`` (M, n); higher is measured first.

    ``linear`` (n,) are the additive linear model's predictions, needed by the residual scores.
    """
    preds = np.asarray(preds, dtype=float)
    if preds.ndim != 2 or preds.shape[0] < 1:
        raise ValueError(f"preds must have shape (n_ensemble, n_candidates), got {preds.shape}")
    if method not in ACQUISITIONS or method == "random":
        raise ValueError(f"method must be one of {ACQUISITIONS[:-1]} to be scored, got {method!r}")
    mu = preds.mean(axis=0)
    sd = preds.std(axis=0, ddof=1) if preds.shape[0] > 1 else np.zeros_like(mu)
    sign = -1.0 if minimize else 1.0
    if method == "mean":
        return sign * mu
    if method == "std":
        return sd
    if method == "mean+std":
        return sign * mu + beta * sd
    if linear is None:
        raise ValueError(f"method {method!r} needs the linear model's predictions")
    res = np.abs(mu - np.asarray(linear, dtype=float))
    return res if method == "residual" else res + beta * sd


@dataclass
class ActiveLearningHistory:
    """What an active-learning run measured.

    Attributes:
        labelled: one array of pool row indices per round: everything measured after that round
            (``labelled[0]`` is the random start; ``labelled[r]`` has ``schedule[r]`` rows).
        selected: rows chosen in round r >= 1 (``selected[0]`` is the random start).
        test_rmse: RMSE on the test rows of the ensemble mean trained at round r (NaN for
            ``'random'`` or when no test rows were given); rounds 0 .. R-2, the last round's
            data are not trained on.
    """

    labelled: list[np.ndarray] = field(default_factory=list)
    selected: list[np.ndarray] = field(default_factory=list)
    test_rmse: list[float] = field(default_factory=list)

    def found(self, targets: np.ndarray) -> list[int]:
        """Number of the ``targets`` rows that were measured by the end of each round."""
        return [int(np.isin(targets, lab).sum()) for lab in self.labelled]


class ActiveLearner:
    """Ensemble active learning over a pool of candidate pairs (official ``ActiveLearner``).

    Args:
        model_factory: ``model_factory(seed) -> estimator`` with ``fit(pairs, single, y)`` and
            ``predict(pairs, single)``, e.g. ``lambda s: NAIADRegressor(seed=s, n_genes=G)``.
        n_ensemble: models per round (M), trained with seeds ``seed*1000 + 100*round + i``.
        method: acquisition, one of ``'mean'`` (MPE), ``'std'``, ``'mean+std'``, ``'residual'``,
            ``'residual+std'``, ``'random'``.
        beta: weight of sigma in ``'mean+std'`` and ``'residual+std'`` (1.0 as in the official code).
        minimize: strong perturbations are the most negative phenotypes (official ``method_min=True``).
    """

    def __init__(self, model_factory: Callable[[int], object], n_ensemble: int = 5, method: str = "mean",
                 beta: float = 1.0, minimize: bool = True) -> None:
        if method not in ACQUISITIONS:
            raise ValueError(f"method must be one of {ACQUISITIONS}, got {method!r}")
        if n_ensemble < 1:
            raise ValueError(f"n_ensemble must be >= 1, got {n_ensemble}")
        if beta < 0:
            raise ValueError(f"beta must be >= 0, got {beta}")
        self.model_factory, self.n_ensemble, self.method = model_factory, n_ensemble, method
        self.beta, self.minimize = beta, minimize

    def run(self, pool: CombinatorialScreen, schedule: Sequence[int], seed: int = 0,
            test_idx: np.ndarray | None = None) -> ActiveLearningHistory:
        """Simulate the loop on a fully measured screen.

        Args:
            pool: the screen; ``pool.y`` of a row is used only once the row is measured.
            schedule: cumulative number of measured pairs after each round, strictly increasing
                (official ``n_sample``), e.g. ``[300, 600, 900, 1200, 1500]``.
            seed: seed of the random start and of the ensemble members.
            test_idx: rows held out from selection (never measured) to report test RMSE.

        Returns:
            :class:`ActiveLearningHistory`.
        """
        sched = [int(v) for v in schedule]
        test_idx = np.zeros(0, dtype=np.int64) if test_idx is None else np.unique(np.asarray(test_idx, dtype=np.int64))
        n_avail = len(pool) - test_idx.size
        if not sched or sched[0] < 1 or any(b <= a for a, b in zip(sched, sched[1:])):
            raise ValueError(f"schedule must be a non-empty, strictly increasing list of positive ints, got {schedule}")
        if sched[-1] > n_avail:
            raise ValueError(f"schedule ends at {sched[-1]} but only {n_avail} candidate pairs are available")
        if test_idx.size and (test_idx.min() < 0 or test_idx.max() >= len(pool)):
            raise ValueError("test_idx holds out-of-range row indices")
        rng = np.random.default_rng([seed, 17])
        candidates = np.setdiff1d(np.arange(len(pool)), test_idx)
        start = rng.choice(candidates, size=sched[0], replace=False)
        hist = ActiveLearningHistory(labelled=[np.sort(start)], selected=[start])
        for r in range(1, len(sched)):
            labelled = hist.labelled[-1]
            unlabelled = np.setdiff1d(candidates, labelled)
            n_select = sched[r] - sched[r - 1]
            if self.method == "random":
                chosen = rng.choice(unlabelled, size=n_select, replace=False)
                hist.test_rmse.append(float("nan"))
            else:
                chosen, rmse = self._select(pool, labelled, unlabelled, test_idx, n_select, seed * 1000 + 100 * r)
                hist.test_rmse.append(rmse)
            hist.selected.append(chosen)
            hist.labelled.append(np.sort(np.concatenate([labelled, chosen])))
        return hist

    def _select(self, pool, labelled, unlabelled, test_idx, n_select, seed0):
        """Train the ensemble on ``labelled`` and return the top-``n_select`` unlabelled rows."""
        pairs, single, y = pool.subset(labelled)
        eval_idx = np.concatenate([unlabelled, test_idx])
        ep, es = pool.pairs[eval_idx], pool.single[eval_idx]
        preds = np.empty((self.n_ensemble, eval_idx.size))
        for i in range(self.n_ensemble):
            model = self.model_factory(seed0 + i)
            model.fit(pairs, single, y)
            preds[i] = model.predict(ep, es)
        linear = None
        if self.method.startswith("residual"):
            linear = SingleEffectLinearRegressor().fit(pairs, single, y).predict(ep, es)
        scores = acquisition_scores(preds[:, : unlabelled.size], self.method, self.beta, self.minimize,
                                    None if linear is None else linear[: unlabelled.size])
        order = np.argsort(-scores, kind="stable")[:n_select]
        rmse = float("nan")
        if test_idx.size:
            rmse = float(np.sqrt(np.mean((preds[:, unlabelled.size:].mean(axis=0) - pool.y[test_idx]) ** 2)))
        return unlabelled[order], rmse
