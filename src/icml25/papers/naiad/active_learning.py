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

Two discovery metrics: :meth:`ActiveLearningHistory.found` counts the true top pairs measured
so far (ours); the official metric (``calculate_aggregate_metrics``) is the top-N true positive
rate of "measured + predicted" over the whole screen: measured pairs keep their measured value,
the others get the ensemble mean, and for each N of the grid ``10, 15, ..., 195`` the share of
the N most extreme true phenotypes among the N most extreme of those values is reported
(:func:`top_n_tpr`; :meth:`ActiveLearner.run` with ``tpr_n``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from icml25.common.checks import check_ranges
from icml25.papers.naiad.data import CombinatorialScreen
from icml25.papers.naiad.model import SingleEffectLinearRegressor

ACQUISITIONS = ("mean", "std", "mean+std", "residual", "residual+std", "random")

TPR_N_VALUES: tuple[int, ...] = tuple(range(10, 200, 5))
"""The official grid of N for the top-N TPR: ``find_top_n_perturbations(min=10, max=200, by=5)``, 10 .. 195."""


def top_n_recall(y_true, y_pred, n: int, minimize: bool = True) -> float:
    """Share of the ``n`` most extreme measured pairs among the ``n`` most extreme predictions.

    "Most extreme" is the most negative when ``minimize`` (growth screens), else the most
    positive (official ``find_top_n_perturbations`` at one N). Ties are broken by position.

    Raises:
        ValueError: ``y_true`` and ``y_pred`` not 1-D of equal, non-zero length or not finite; ``n`` outside
            [1, len(y_true)].
        TypeError: ``n`` not an integer.
    """
    y_true, y_pred = np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float)
    if y_true.ndim != 1 or y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred must be 1-D of equal length, got {y_true.shape} and {y_pred.shape}")
    if y_true.size == 0:
        raise ValueError("y_true and y_pred are empty: top_n_recall needs at least one pair")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an integer, got {n!r} ({type(n).__name__})")
    if not 1 <= n <= y_true.size:
        raise ValueError(f"n must be in [1, {y_true.size}], got {n}")
    if not (np.all(np.isfinite(y_true)) and np.all(np.isfinite(y_pred))):
        raise ValueError("y_true and y_pred must be finite")
    sign = 1.0 if minimize else -1.0
    top_true = np.argsort(sign * y_true, kind="stable")[:n]
    top_pred = np.argsort(sign * y_pred, kind="stable")[:n]
    return float(np.intersect1d(top_true, top_pred).size / n)


def top_n_tpr(y_true, y_pred, n_values=TPR_N_VALUES, minimize: bool = True) -> np.ndarray:
    """Top-N true positive rate for every N of ``n_values`` (official ``find_top_n_perturbations``).

    Entry k is :func:`top_n_recall` at ``N = n_values[k]``: the share of the N most extreme
    measured phenotypes among the N most extreme predictions. Returns a float array of
    ``len(n_values)``; ties are broken by position.
    """
    y_true, y_pred = np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float)
    if y_true.ndim != 1 or y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred must be 1-D of equal length, got {y_true.shape} and {y_pred.shape}")
    if y_true.size == 0:
        raise ValueError("y_true and y_pred are empty: top_n_tpr needs at least one pair")
    if not (np.all(np.isfinite(y_true)) and np.all(np.isfinite(y_pred))):
        raise ValueError("y_true and y_pred must be finite")
    ns = _check_n_values(n_values, y_true.size)
    sign = 1.0 if minimize else -1.0
    rank_true = np.empty(y_true.size, dtype=np.int64)
    rank_true[np.argsort(sign * y_true, kind="stable")] = np.arange(y_true.size)
    by_pred = rank_true[np.argsort(sign * y_pred, kind="stable")]  # true rank of the k-th strongest prediction
    return np.array([np.count_nonzero(by_pred[:n] < n) / n for n in ns])


def _check_n_values(n_values, size: int) -> list[int]:
    ns = [int(n) for n in n_values]
    if not ns or any(n != v for n, v in zip(ns, n_values)) or min(ns) < 1 or max(ns) > size:
        raise ValueError(f"n_values must be a non-empty list of ints in [1, {size}], got {n_values!r}")
    return ns


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
        test_rmse: RMSE on the test rows of the ensemble mean trained on ``labelled[r]`` (NaN
            when no test rows were given). Without ``tpr_n``: rounds 0 .. R-2 (the last round's
            data are not trained on; NaN for ``'random'``, which trains no model). With ``tpr_n``:
            every round 0 .. R-1, for every method.
        tpr: with ``tpr_n``, one array per round 0 .. R-1: :func:`top_n_tpr` over the whole pool
            of "measured + predicted" (measured rows keep ``pool.y``, the others get the mean
            of the ensemble trained on ``labelled[r]``), the official metric; else empty.
        tpr_n: the N of each ``tpr`` entry.
    """

    labelled: list[np.ndarray] = field(default_factory=list)
    selected: list[np.ndarray] = field(default_factory=list)
    test_rmse: list[float] = field(default_factory=list)
    tpr: list[np.ndarray] = field(default_factory=list)
    tpr_n: tuple[int, ...] = ()

    def found(self, targets: np.ndarray) -> list[int]:
        """Number of the ``targets`` rows that were measured by the end of each round."""
        return [int(np.isin(targets, lab).sum()) for lab in self.labelled]


@dataclass
class ActiveLearnerConfig:
    """Settings of the ensemble loop (:class:`ActiveLearner`), as an experiment sets them (``--set learner.beta=...``).

    Defaults are the official ``ActiveLearner``'s (5 models per round, beta = 1).
    """

    n_ensemble: int = 5
    """Models per round (M); their spread is the uncertainty sigma."""
    beta: float = 1.0
    """Weight of sigma in ``'mean+std'`` (UCB) and ``'residual+std'`` (>= 0; MPE is UCB with beta = 0)."""

    def __post_init__(self) -> None:
        # bounds: an ensemble is retrained every round; beyond 1000 models a job takes days
        check_ranges(type(self).__name__, vars(self), integer=("n_ensemble",), finite=("beta",),
                     positive=("n_ensemble",), nonnegative=("beta",), at_most={"n_ensemble": 10**3})


class ActiveLearner:
    """Ensemble active learning over a pool of candidate pairs (official ``ActiveLearner``).

    Args:
        model_factory: ``model_factory(seed) -> estimator`` with ``fit(pairs, single, y)`` and
            ``predict(pairs, single)``, e.g. ``lambda s: NAIADRegressor(seed=s, n_genes=G)``.
        n_ensemble: models per round (M); the ensemble trained on ``labelled[r]`` uses seeds
            ``seed*1000 + 100*(r+1) + i``, the same for every method (a paired comparison).
        method: acquisition, one of ``'mean'`` (MPE), ``'std'``, ``'mean+std'``, ``'residual'``,
            ``'residual+std'``, ``'random'``.
        beta: weight of sigma in ``'mean+std'`` and ``'residual+std'`` (1.0 as in the official code).
        minimize: strong perturbations are the most negative phenotypes (official ``method_min=True``).
        round_params: optional list of keyword dicts, one per round, passed to the estimator's
            ``set_params`` before fitting the ensemble trained on round r's data (the official
            ``model_args`` list, e.g. ``[{"d_embed": 2}, {"d_embed": 4}, ...]``); ``None``: none.
    """

    def __init__(self, model_factory: Callable[[int], object], n_ensemble: int = 5, method: str = "mean",
                 beta: float = 1.0, minimize: bool = True, round_params: Sequence[dict] | None = None) -> None:
        if method not in ACQUISITIONS:
            raise ValueError(f"method must be one of {ACQUISITIONS}, got {method!r}")
        if n_ensemble < 1:
            raise ValueError(f"n_ensemble must be >= 1, got {n_ensemble}")
        if beta < 0:
            raise ValueError(f"beta must be >= 0, got {beta}")
        self.model_factory, self.n_ensemble, self.method = model_factory, n_ensemble, method
        self.beta, self.minimize = beta, minimize
        self.round_params = None if round_params is None else [dict(p) for p in round_params]

    def run(self, pool: CombinatorialScreen, schedule: Sequence[int], seed: int = 0,
            test_idx: np.ndarray | None = None, tpr_n: Sequence[int] | None = None) -> ActiveLearningHistory:
        """Simulate the loop on a fully measured screen.

        Args:
            pool: the screen; ``pool.y`` of a row is used only once the row is measured.
            schedule: cumulative number of measured pairs after each round, strictly increasing
                (official ``n_sample``), e.g. ``[300, 600, 900, 1200, 1500]``.
            seed: seed of the random start and of the ensemble members.
            test_idx: rows held out from selection (never measured) to report test RMSE.
            tpr_n: N values of the official top-N TPR (e.g. :data:`TPR_N_VALUES`), each in
                ``[1, len(pool)]``. When given, an ensemble is trained on every round's data,
                the last round's and the ``'random'`` arm's included (as the official loop
                does), and ``history.tpr`` is filled; the selections do not change.

        Returns:
            :class:`ActiveLearningHistory`.
        """
        sched = [int(v) for v in schedule]
        test_idx = np.zeros(0, dtype=np.int64) if test_idx is None else np.unique(np.asarray(test_idx, dtype=np.int64))
        n_avail = len(pool) - test_idx.size
        if not sched or sched[0] < 1 or any(b <= a for a, b in zip(sched, sched[1:])):
            raise ValueError(f"schedule must be a non-empty, strictly increasing list of positive ints, got {schedule}")
        if self.round_params is not None and len(self.round_params) != len(sched):
            raise ValueError(f"round_params must hold one dict per round ({len(sched)}), got {len(self.round_params)}")
        if sched[-1] > n_avail:
            raise ValueError(f"schedule ends at {sched[-1]} but only {n_avail} candidate pairs are available")
        if test_idx.size and (test_idx.min() < 0 or test_idx.max() >= len(pool)):
            raise ValueError("test_idx holds out-of-range row indices")
        track = tpr_n is not None
        ns = tuple(_check_n_values(tpr_n, len(pool))) if track else ()
        rng = np.random.default_rng([seed, 17])
        candidates = np.setdiff1d(np.arange(len(pool)), test_idx)
        start = rng.choice(candidates, size=sched[0], replace=False)
        hist = ActiveLearningHistory(labelled=[np.sort(start)], selected=[start], tpr_n=ns)
        for r in range(len(sched)):
            labelled = hist.labelled[-1]
            unlabelled = np.setdiff1d(candidates, labelled)
            last = r == len(sched) - 1
            preds = None
            if track or (self.method != "random" and not last):
                params = self.round_params[r] if self.round_params is not None else {}
                preds, rmse = self._ensemble(pool, labelled, unlabelled, test_idx, seed * 1000 + 100 * (r + 1), params)
                hist.test_rmse.append(rmse)
                if track:
                    mixed = pool.y.astype(float)  # measured + predicted over the whole screen
                    mixed[np.concatenate([unlabelled, test_idx])] = preds.mean(axis=0)
                    hist.tpr.append(top_n_tpr(pool.y, mixed, ns, self.minimize))
            elif not last:
                hist.test_rmse.append(float("nan"))
            if last:
                break
            n_select = sched[r + 1] - sched[r]
            if self.method == "random":
                chosen = rng.choice(unlabelled, size=n_select, replace=False)
            else:
                chosen = self._choose(pool, labelled, unlabelled, preds, n_select)
            hist.selected.append(chosen)
            hist.labelled.append(np.sort(np.concatenate([labelled, chosen])))
        return hist

    def _ensemble(self, pool, labelled, unlabelled, test_idx, seed0, params):
        """Train M models on ``labelled``; predictions (M, |unlabelled| + |test|) and the test RMSE."""
        pairs, single, y = pool.subset(labelled)
        eval_idx = np.concatenate([unlabelled, test_idx])
        ep, es = pool.pairs[eval_idx], pool.single[eval_idx]
        preds = np.empty((self.n_ensemble, eval_idx.size))
        for i in range(self.n_ensemble):
            model = self.model_factory(seed0 + i)
            if params:
                model.set_params(**params)
            model.fit(pairs, single, y)
            preds[i] = model.predict(ep, es)
        rmse = float("nan")
        if test_idx.size:
            rmse = float(np.sqrt(np.mean((preds[:, unlabelled.size:].mean(axis=0) - pool.y[test_idx]) ** 2)))
        return preds, rmse

    def _choose(self, pool, labelled, unlabelled, preds, n_select):
        """The ``n_select`` unlabelled rows with the highest acquisition score."""
        linear = None
        if self.method.startswith("residual"):  # the official linear baseline, fitted on the measured pairs
            linear = SingleEffectLinearRegressor().fit(*pool.subset(labelled)).predict(
                pool.pairs[unlabelled], pool.single[unlabelled])
        scores = acquisition_scores(preds[:, : unlabelled.size], self.method, self.beta, self.minimize, linear)
        return unlabelled[np.argsort(-scores, kind="stable")[:n_select]]
