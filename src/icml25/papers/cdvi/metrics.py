"""Survival metrics: time-dependent concordance (Antolini; and pycox's adjusted form, the official model-selection
criterion) and the integrated Brier score."""

from __future__ import annotations

import numpy as np

from icml25.papers.cdvi.model import make_survival_array, split_survival_array


def ctd(y, surv_at_times: np.ndarray) -> float:
    """Antolini's time-dependent concordance C_td.

    A pair (i, j) is comparable when i has an event and ``t_i < t_j`` (or ``t_i == t_j`` with j censored);
    it is concordant when ``S(t_i | x_i) < S(t_i | x_j)`` (ties in S count 0). This is pycox's
    ``concordance_td('antolini')`` rule.

    Args:
        y: structured array (event, time) of the n evaluated subjects.
        surv_at_times: ``(n, n)`` array with ``surv_at_times[j, i] = S(t_i | x_j)`` (every subject's survival
            at every subject's own time), or ``(n, n_events)`` with only the columns of the event subjects, in
            the order of ``np.flatnonzero(event)`` (cheaper; the result is the same).

    Returns:
        C_td in [0, 1] (NaN when no pair is comparable).
    """
    event, time = split_survival_array(y)
    S = np.asarray(surv_at_times, dtype=float)
    n = len(time)
    ev = np.flatnonzero(event)
    if S.shape == (n, n):
        S = S[:, ev]
    elif S.shape != (n, len(ev)):
        raise ValueError(f"surv_at_times must have shape ({n}, {n}) or ({n}, {len(ev)}), got {S.shape}")
    ti = time[ev]
    # comparable[k, j]: event subject ev[k] against subject j
    comparable = (ti[:, None] < time[None, :]) | ((ti[:, None] == time[None, :]) & ~event[None, :])
    s_own = S[ev, np.arange(len(ev))][:, None]  # S(t_i | x_i)
    s_other = S.T                               # S(t_i | x_j)
    score = s_own < s_other
    total = comparable.sum()
    return float((score * comparable).sum() / total) if total else float("nan")


def ctd_pycox(y, surv_at_grid: np.ndarray, grid: np.ndarray) -> float:
    """The official code's validation criterion ``"ctdpycox"``: pycox's ``EvalSurv(...).concordance_td()``.

    pycox's default method ``adj_antolini`` on survival curves known only at ``grid`` (looked up as a step
    function: subject i is scored at the largest grid time <= t_i, the first grid time if none, pycox's
    ``steps="post"``). With s_k = S(grid[idx(t_i)] | x_k), a pair (i, j) is comparable when
    ``t_i < t_j`` and i has an event, or ``t_i == t_j`` and either has an event; it scores
    ``[s_i < s_j] + 0.5 [s_i == s_j]`` when ``t_i < t_j`` (or ``t_i == t_j`` with only i an event),
    ``[s_i > s_j] + 0.5 [s_i == s_j]`` when only j is an event, and ``1 - 0.5 [s_i != s_j]`` when both are.
    Unlike :func:`ctd`, ties in S count one half, and the curve is read on the grid, not at t_i.

    Args:
        y: structured array (event, time) of the n evaluated subjects.
        surv_at_grid: ``(n, len(grid))`` predicted survival probabilities.
        grid: strictly increasing times (the official fit uses the 10%, 20%, ..., 100% quantiles of the
            training event times).

    Returns:
        The concordance in [0, 1] (NaN when no pair is comparable).
    """
    event, time = split_survival_array(y)
    grid = np.asarray(grid, dtype=float)
    S = np.asarray(surv_at_grid, dtype=float)
    if grid.ndim != 1 or grid.size < 1 or np.any(np.diff(grid) <= 0):
        raise ValueError("grid must be a strictly increasing 1-D array of times")
    if S.shape != (len(time), len(grid)):
        raise ValueError(f"surv_at_grid must have shape ({len(time)}, {len(grid)}), got {S.shape}")
    idx = np.clip(np.searchsorted(grid, time, side="right") - 1, 0, len(grid) - 1)
    s_own = S[np.arange(len(time)), idx][:, None]  # s_i = S(grid[idx_i] | x_i)
    s_other = S[:, idx].T                          # [i, j] = S(grid[idx_i] | x_j)
    ti, tj = time[:, None], time[None, :]
    di, dj = event[:, None], event[None, :]
    lt, eq, gt = (s_own < s_other), (s_own == s_other), (s_own > s_other)
    before = (ti < tj) & di
    same = (ti == tj) & (di | dj)
    np.fill_diagonal(same, False)
    score = np.where(before | (same & di & ~dj), lt + 0.5 * eq, 0.0)
    score = np.where(same & dj & ~di, gt + 0.5 * eq, score)
    score = np.where(same & di & dj, 1.0 - 0.5 * ~eq, score)
    total = (before | same).sum()
    return float(score.sum() / total) if total else float("nan")


def ibs(y_train, y_test, surv_at_grid: np.ndarray, grid: np.ndarray) -> float:
    """Integrated Brier score with IPCW (Graf et al.), via ``sksurv.metrics.integrated_brier_score``.

    Args:
        y_train: structured array used to estimate the censoring distribution (Kaplan-Meier); its largest
            time must not be below any test time, so passing training and test data together is the safe choice.
        y_test: structured array of the evaluated subjects.
        surv_at_grid: ``(n_test, len(grid))`` predicted survival probabilities.
        grid: increasing times inside the follow-up range of ``y_test``.
    """
    try:
        from sksurv.metrics import integrated_brier_score
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("ibs needs scikit-survival: pip install 'icml25[survival]'") from exc
    grid = np.asarray(grid, dtype=float)
    if grid.ndim != 1 or grid.size < 2 or np.any(np.diff(grid) <= 0):
        raise ValueError("grid must be a strictly increasing 1-D array of at least two times")
    y_train = make_survival_array(*split_survival_array(y_train))
    y_test = make_survival_array(*split_survival_array(y_test))
    return float(integrated_brier_score(y_train, y_test, np.asarray(surv_at_grid), grid))


def evaluation_grid(y_train, y_test, n_points: int = 20) -> np.ndarray:
    """Grid for the IBS: ``n_points`` times from the 10% to the 90% quantile of the training event times,
    clipped inside the test follow-up range."""
    ev_tr, t_tr = split_survival_array(y_train)
    _, t_te = split_survival_array(y_test)
    lo, hi = np.quantile(t_tr[ev_tr], [0.1, 0.9])
    lo, hi = max(lo, t_te.min()), min(hi, np.nextafter(t_te.max(), -np.inf))
    return np.unique(np.linspace(lo, hi, n_points))
