"""Prediction-Powered Adaptive Shrinkage (PAS) for compound mean estimation.

Li & Ignatiadis, "Prediction-Powered Adaptive Shrinkage Estimation", ICML 2025
(arXiv 2502.14166).

Setting: m problems. Problem j has n_j labelled pairs (X_ij, Y_ij), N_j unlabelled
points X~_ij and a black-box predictor f. The target is theta_j = E[Y_j] for every
j, under the compound loss sum_j (theta_hat_j - theta_j)^2.

PAS has two stages:

1. Within each problem, power-tuned PPI (PPI++):
   ``theta_pt_j = Ybar_j + lambda_j (Z_j - fbar_j)`` with
   ``lambda_j = N_j/(n_j+N_j) * gamma_j / tau2_j`` clipped to [0, 1], where Z_j is the
   mean of f on the unlabelled points, fbar_j its mean on the labelled points,
   gamma_j = Cov(Y, f(X)) over the labelled pairs and tau2_j = Var f over all
   n_j + N_j points. Its variance is
   ``A_j = sigma2_j/n_j + lambda_j^2 tau2_j (n_j+N_j)/(n_j N_j) - 2 lambda_j gamma_j/n_j``.
   With estimated moments the official code builds A_j (and CURE's correction term) from
   moments pooled over all problems (``variance="pooled"``, our default): sigma2 = Var of
   all labelled Y, gamma = Cov of all labelled (Y, f), tau2 = Var of f over all unlabelled
   points; lambda_j stays per problem. ``variance="per_problem"`` uses each problem's own
   moments, the same ones as lambda_j.
2. Across problems, shrink towards the prediction mean Z_j:
   ``theta_pas_j = w_j theta_pt_j + (1 - w_j) Z_j`` with ``w_j = omega/(A_j + omega)``,
   one global omega >= 0 chosen by minimising the unbiased risk estimate CURE.

Inputs are lists of 1-D arrays, one per problem; sizes may differ between problems.
Every function here computes all problems at once with segment sums (no Python loop
over problems).

Special cases (the tests check each): ``omega=0`` gives the prediction mean Z;
``omega=inf`` gives PT-PPI; ``lam=0`` gives shrinkage-only (Ybar shrunk towards Z
with the Xie-Kou-Brown SURE); ``lam=1, omega=inf`` gives vanilla PPI; ``lam=0,
omega=inf`` gives the classical sample mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy.optimize import minimize_scalar
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d, validate_data

from icml25.common.checks import ConfigError, check_ranges

VARIANCE_FLOOR = 1e-12
"""Lower bound on the estimated variance A_j (ours: the official code has none). It only binds for a
degenerate problem (A_j <= 1e-12, e.g. constant labels with lambda_j = 0), where it keeps CURE defined."""

VARIANCES = ("pooled", "per_problem")
"""How A_j and CURE's correction term are estimated (see :func:`pas_fit`)."""

ArrayList = Sequence[np.ndarray]


@dataclass
class PASConfig:
    """PAS's settings: the hyperparameters of :func:`pas_fit` and :class:`PASEstimator`, in one place.

    The defaults are the official code's (``config.py``: ``share_var=False``, cutoff 0.999, clipped lambda, A_j
    from pooled moments). An experiment nests it as ``pas`` (``--set pas.variance=per_problem``); the baselines that
    are stages of PAS (PT-PPI, shrinkage-only, shrink-to-grand-mean) take the same settings, so the comparison is
    PAS against its own parts. ``PASEstimator(**dataclasses.asdict(cfg))`` (or :meth:`estimator`) builds the
    scikit-learn estimator, ``pas_fit(*arrays, **dataclasses.asdict(cfg))`` the functional form.
    """

    variance: str = "pooled"
    """How A_j and CURE's correction term are estimated: ``pooled`` (the official code's estimated-moment
    configuration) or ``per_problem`` (each problem's own moments, the ones lambda_j uses)."""
    clip_lambda: bool = True
    """Clip the power-tuning weights lambda_j to [0, 1] (the official code's default; the paper's Eq. 13 is
    unclipped)."""
    cutoff: float = 0.999
    """c in (0, 1): omega is searched on ``[0, c/(1-c) max_j A_j]``."""
    share_var: bool = False
    """Estimate lambda_j from moments pooled over all problems instead of per problem."""

    def __post_init__(self) -> None:
        # named as the settings are typed (``--set pas.cutoff=...``)
        check_ranges("pas", vars(self), open_fraction=("cutoff",), choices={"variance": VARIANCES})
        for name in ("clip_lambda", "share_var"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"pas.{name} must be True or False, got {getattr(self, name)!r}")

    def estimator(self) -> PASEstimator:
        """A :class:`PASEstimator` with these settings."""
        return PASEstimator(**asdict(self))


@dataclass(frozen=True)
class ProblemMoments:
    """Per-problem sample moments, each an array of shape (m,).

    Attributes:
        n, N: labelled and unlabelled sample sizes.
        y_mean: labelled mean of Y (the classical estimate).
        f_labelled_mean: mean of f on the labelled points.
        f_unlabelled_mean: mean of f on the unlabelled points (Z, the shrinkage target).
        var_y: sample variance of Y (ddof=1).
        cov_yf: sample covariance of Y and f over the labelled pairs (ddof=1).
        var_f: sample variance of f over all n + N points (ddof=1).
    """

    n: np.ndarray
    N: np.ndarray
    y_mean: np.ndarray
    f_labelled_mean: np.ndarray
    f_unlabelled_mean: np.ndarray
    var_y: np.ndarray
    cov_yf: np.ndarray
    var_f: np.ndarray


def _as_problems(name: str, arrays: ArrayList, min_size: int) -> list[np.ndarray]:
    if isinstance(arrays, np.ndarray) and arrays.ndim == 2:
        arrays = list(arrays)
    if not isinstance(arrays, (list, tuple)) or len(arrays) == 0:
        raise ValueError(f"{name} must be a non-empty list of 1-D arrays, one per problem")
    out = []
    for j, a in enumerate(arrays):
        a = _as_reals(f"{name}[{j}]", a)
        if a.ndim != 1:
            raise ValueError(f"{name}[{j}] must be 1-D, got shape {a.shape}")
        if a.size < min_size:
            raise ValueError(f"{name}[{j}] has {a.size} points; each problem needs at least {min_size}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name}[{j}] contains NaN or infinite values")
        out.append(a)
    return out


def _as_reals(name: str, value) -> np.ndarray:
    """``value`` as a float array; TypeError naming ``name`` for strings or anything else not numeric."""
    try:
        raw = np.asarray(value)
        if raw.dtype.kind in "USV":
            raise TypeError
        return raw.astype(float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must hold real numbers, got {type(value).__name__} "
                        f"{value!r:.60}") from None


def _check_real(name: str, value) -> float:
    """A real scalar (bool and strings rejected) as a float; TypeError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r:.60}")
    return float(value)


def _check_flag(name: str, value) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r:.60}")


def _segment_sums(values: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return np.add.reduceat(values, starts)


def problem_moments(y_labelled: ArrayList, pred_labelled: ArrayList, pred_unlabelled: ArrayList,
                    share_var: bool = False,
                    known_moments: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> ProblemMoments:
    """Compute the sample moments of every problem, validating the inputs.

    Args:
        y_labelled: list of m arrays, Y of the labelled points of each problem (n_j >= 2).
        pred_labelled: list of m arrays, f(X) on the same labelled points.
        pred_unlabelled: list of m arrays, f(X~) on the unlabelled points (N_j >= 1).
        share_var: pool var_y, cov_yf and var_f over all problems (one value for all)
            instead of estimating them per problem.
        known_moments: optional true ``(var_y, cov_yf, var_f)``, each of shape (m,),
            replacing the sample estimates.

    Returns:
        ProblemMoments with arrays of shape (m,).

    Raises:
        ValueError: empty or mismatched lists, a problem with n_j < 2 or N_j < 1,
            labelled arrays of different lengths, or non-finite values.
    """
    y = _as_problems("y_labelled", y_labelled, 2)
    fl = _as_problems("pred_labelled", pred_labelled, 2)
    fu = _as_problems("pred_unlabelled", pred_unlabelled, 1)
    if not len(y) == len(fl) == len(fu):
        raise ValueError(f"y_labelled, pred_labelled and pred_unlabelled must list the same number of problems, "
                         f"got {len(y)}, {len(fl)} and {len(fu)}")
    for j, (a, b) in enumerate(zip(y, fl)):
        if a.size != b.size:
            raise ValueError(f"problem {j}: y_labelled has {a.size} points but pred_labelled has {b.size}")
    n = np.array([a.size for a in y], dtype=float)
    N = np.array([a.size for a in fu], dtype=float)
    Y, FL, FU = np.concatenate(y), np.concatenate(fl), np.concatenate(fu)
    ni, Ni = n.astype(int), N.astype(int)

    y_mean = _segment_sums(Y, ni) / n
    fl_mean = _segment_sums(FL, ni) / n
    fu_mean = _segment_sums(FU, Ni) / N
    if share_var:
        m = len(y)
        f_all = np.concatenate([FL, FU])
        var_y = np.full(m, Y.var(ddof=1))
        cov_yf = np.full(m, np.cov(Y, FL, ddof=1)[0, 1])
        var_f = np.full(m, f_all.var(ddof=1))
    else:
        yc = Y - np.repeat(y_mean, ni)
        flc = FL - np.repeat(fl_mean, ni)
        var_y = _segment_sums(yc**2, ni) / (n - 1)
        cov_yf = _segment_sums(yc * flc, ni) / (n - 1)
        f_mean_all = (n * fl_mean + N * fu_mean) / (n + N)
        ss_f = _segment_sums((FL - np.repeat(f_mean_all, ni)) ** 2, ni) + \
            _segment_sums((FU - np.repeat(f_mean_all, Ni)) ** 2, Ni)
        var_f = ss_f / (n + N - 1)
    if known_moments is not None:
        if isinstance(known_moments, (str, bytes)):
            raise TypeError(f"known_moments must be three arrays (var_y, cov_yf, var_f), got {known_moments!r:.60}")
        known = [_as_reals(f"known_moments[{i}]", v) for i, v in enumerate(known_moments)]
        if len(known) != 3 or any(v.shape != (len(y),) or not np.all(np.isfinite(v)) for v in known):
            raise ValueError(f"known_moments must be three finite arrays (var_y, cov_yf, var_f) of shape ({len(y)},)")
        if np.any(known[0] < 0) or np.any(known[2] < 0):
            raise ValueError("known variances must be >= 0")
        var_y, cov_yf, var_f = known
    return ProblemMoments(n, N, y_mean, fl_mean, fu_mean, var_y, cov_yf, var_f)


def pooled_variance_moments(y_labelled: ArrayList, pred_labelled: ArrayList,
                            pred_unlabelled: ArrayList) -> ProblemMoments:
    """Per-problem sizes and means, with the variances pooled as the official PAS builds A_j.

    ``var_y`` is the sample variance of all labelled Y, ``cov_yf`` the sample covariance
    of all labelled (Y, f(X)) pairs, and ``var_f`` the sample variance of f over all
    *unlabelled* points (ddof=1 each), every one concatenated over the m problems and
    repeated m times (official ``pas_estimators.get_pas_estimators``, estimated moments).

    Raises:
        ValueError: as :func:`problem_moments`, or fewer than 2 unlabelled points in all.
    """
    return _pool_variances(problem_moments(y_labelled, pred_labelled, pred_unlabelled), y_labelled, pred_labelled,
                           pred_unlabelled)


def _pool_variances(mom: ProblemMoments, y_labelled: ArrayList, pred_labelled: ArrayList,
                    pred_unlabelled: ArrayList) -> ProblemMoments:
    """``mom`` with its variances replaced by the pooled ones (inputs already validated)."""
    Y = np.concatenate([np.asarray(a, dtype=float) for a in y_labelled])
    FL = np.concatenate([np.asarray(a, dtype=float) for a in pred_labelled])
    FU = np.concatenate([np.asarray(a, dtype=float) for a in pred_unlabelled])
    if FU.size < 2:
        raise ValueError("variance='pooled' needs at least 2 unlabelled points over all problems, got 1")
    m = mom.n.size
    return ProblemMoments(mom.n, mom.N, mom.y_mean, mom.f_labelled_mean, mom.f_unlabelled_mean,
                          np.full(m, Y.var(ddof=1)), np.full(m, np.cov(Y, FL, ddof=1)[0, 1]),
                          np.full(m, FU.var(ddof=1)))


def power_tuning_lambdas(moments: ProblemMoments, clip: bool = True) -> np.ndarray:
    """PPI++ power-tuning weights ``lambda_j = N/(n+N) * cov_yf / var_f`` (0 where var_f = 0)."""
    ratio = np.divide(moments.cov_yf, moments.var_f, out=np.zeros_like(moments.var_f), where=moments.var_f > 0)
    lam = moments.N / (moments.n + moments.N) * ratio
    return np.clip(lam, 0.0, 1.0) if clip else lam


def pt_variance(moments: ProblemMoments, lambdas: np.ndarray) -> np.ndarray:
    """Variance A_j of ``Ybar_j + lambda_j (Z_j - fbar_j)``, floored at ``VARIANCE_FLOOR``."""
    n, N = moments.n, moments.N
    a = moments.var_y / n + lambdas**2 * moments.var_f * (n + N) / (n * N) - 2 * lambdas * moments.cov_yf / n
    return np.maximum(a, VARIANCE_FLOOR)


def cure(omega: float | np.ndarray, theta_pt: np.ndarray, Z: np.ndarray, A: np.ndarray, lambdas: np.ndarray,
         tau2: np.ndarray, N: np.ndarray) -> float | np.ndarray:
    """Correlation-aware unbiased risk estimate of the PAS compound loss at global ``omega``.

    ``CURE(omega) = sum_j A_j/(A_j+omega)^2 (A_j (Z_j - theta_pt_j)^2 + omega^2 - A_j^2)
    + sum_j 2 A_j/(A_j+omega) lambda_j tau2_j / N_j``. The second sum corrects for
    the covariance ``lambda_j tau2_j / N_j`` between theta_pt_j and Z_j; without it this
    is the SURE of Xie, Kou & Brown (2012).

    Args:
        omega: scalar, or an array of candidate values (evaluated elementwise).
        theta_pt, Z, A, lambdas, tau2, N: arrays of shape (m,).

    Returns:
        The risk estimate (sum over problems), a float or an array shaped like ``omega``.
    """
    w = np.asarray(omega, dtype=float)[..., None]
    first = A / (A + w) ** 2 * (A * (Z - theta_pt) ** 2 + w**2 - A**2)
    extra = 2 * A / (A + w) * lambdas * tau2 / N
    total = (first + extra).sum(axis=-1)
    return float(total) if np.ndim(omega) == 0 else total


def minimise_cure(theta_pt: np.ndarray, Z: np.ndarray, A: np.ndarray, lambdas: np.ndarray, tau2: np.ndarray,
                  N: np.ndarray, cutoff: float = 0.999, grid_size: int = 200) -> float:
    """Global omega minimising CURE on ``[0, cutoff/(1-cutoff) * max_j A_j]``.

    A log-spaced grid (plus both ends) locates the best basin; bounded Brent then
    refines between its neighbours. The official code runs Brent on the whole
    interval, which can stop in a local minimum; the grid makes the search global.
    """
    return _global_minimiser(cure, (theta_pt, Z, A, lambdas, tau2, N), float(A.max()), cutoff, grid_size)


def _global_minimiser(risk, args: tuple, a_max: float, cutoff: float, grid_size: int = 200) -> float:
    """omega in ``[0, cutoff/(1-cutoff) a_max]`` minimising ``risk(omega, *args)``: log grid, then bounded Brent."""
    if not 0 < cutoff < 1:
        raise ValueError(f"cutoff must be in (0, 1), got {cutoff}")
    upper = cutoff / (1 - cutoff) * a_max
    grid = np.concatenate(([0.0], np.geomspace(upper * 1e-8, upper, grid_size - 1)))
    values = risk(grid, *args)
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    if hi <= lo:
        return float(grid[i])
    res = minimize_scalar(risk, bounds=(lo, hi), method="bounded", args=args,
                          options={"xatol": 1e-12 * max(upper, 1.0)})
    return float(res.x) if res.fun <= values[i] else float(grid[i])


def pas_mean_pointestimate(
    y_labelled: ArrayList,
    pred_labelled: ArrayList,
    pred_unlabelled: ArrayList,
    clip_lambda: bool = True,
    cutoff: float = 0.999,
    share_var: bool = False,
    lam: float | np.ndarray | None = None,
    omega: float | None = None,
    known_moments: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    variance: str = "pooled",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PAS estimates of the m problem means.

    Args:
        y_labelled: list of m 1-D arrays, the labelled outcomes of each problem (n_j >= 2).
        pred_labelled: list of m 1-D arrays, predictions on the labelled points.
        pred_unlabelled: list of m 1-D arrays, predictions on the unlabelled points.
        clip_lambda: clip the power-tuning weights to [0, 1] (the official code's
            default; the paper's Eq. 13 is unclipped).
        cutoff: c in (0, 1); omega is searched on ``[0, c/(1-c) max_j A_j]``.
        share_var: estimate lambda_j from moments pooled over all problems (Var f over all
            n + N points) instead of per problem; with ``variance="per_problem"`` A_j uses
            these same pooled moments.
        lam: fix the power-tuning weights (scalar or shape (m,)) instead of tuning
            them; ``0`` gives shrinkage-only, ``1`` vanilla PPI inside PAS.
        omega: fix the global shrinkage parameter instead of minimising CURE;
            ``0`` returns the prediction means, ``np.inf`` the PT-PPI estimates.
        known_moments: optional ``(var_y, cov_yf, var_f)``, each of shape (m,): the
            true Var Y, Cov(Y, f) and Var f of every problem, used instead of the
            sample estimates (the paper's synthetic study assumes them known). They are
            used per problem for lambda_j, A_j and CURE, whatever ``variance`` says (the
            official ``has_true_vars`` path).
        variance: how A_j and CURE's correction term are estimated from the data.
            ``"pooled"`` (default, the official code's estimated-moment configuration):
            Var Y and Cov(Y, f) over all labelled pairs and Var f over all unlabelled
            points, pooled over the m problems (see :func:`pooled_variance_moments`);
            lambda_j stays per problem. ``"per_problem"``: each problem's own moments,
            the ones lambda_j uses.

    Returns:
        (theta_hat, lambdas, omegas), each of shape (m,): the PAS estimates, the
        power-tuning weights lambda_j, and the per-problem shrinkage weights
        ``omega_j = omega/(A_j + omega)`` in [0, 1] (1 = no shrinkage).
    """
    fit = pas_fit(y_labelled, pred_labelled, pred_unlabelled, clip_lambda, cutoff, share_var, lam, omega,
                  known_moments, variance)
    return fit.theta, fit.lambdas, fit.omegas


@dataclass(frozen=True)
class PASFit:
    """Everything PAS computes: estimates, weights and the intermediate quantities."""

    theta: np.ndarray
    theta_pt: np.ndarray
    prediction_mean: np.ndarray
    lambdas: np.ndarray
    omegas: np.ndarray
    omega: float
    variances: np.ndarray
    moments: ProblemMoments
    """The moments of lambda_j (per problem unless ``share_var``)."""
    variance_moments: ProblemMoments
    """The moments behind A_j and CURE's correction term (pooled with ``variance="pooled"``, else ``moments``)."""


def pas_fit(y_labelled: ArrayList, pred_labelled: ArrayList, pred_unlabelled: ArrayList, clip_lambda: bool = True,
            cutoff: float = 0.999, share_var: bool = False, lam: float | np.ndarray | None = None,
            omega: float | None = None,
            known_moments: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
            variance: str = "pooled") -> PASFit:
    """Like :func:`pas_mean_pointestimate`, returning a :class:`PASFit` with the global omega too.

    Raises:
        TypeError: a non-numeric value (e.g. strings) in the arrays, ``cutoff``, ``omega``, ``lam`` or
            ``known_moments``; ``clip_lambda`` or ``share_var`` not a bool.
        ValueError: see :func:`problem_moments`; ``cutoff`` outside (0, 1), ``omega`` < 0 or NaN, ``lam`` not
            finite, or an unknown ``variance``.
    """
    _check_flag("clip_lambda", clip_lambda)
    _check_flag("share_var", share_var)
    if not 0 < _check_real("cutoff", cutoff) < 1:
        raise ValueError(f"cutoff must be in (0, 1), got {cutoff}")
    if omega is not None:
        _check_real("omega", omega)
    if lam is not None:
        lam = _as_reals("lam", lam)
    check_variance(variance)
    mom = problem_moments(y_labelled, pred_labelled, pred_unlabelled, share_var, known_moments)
    m = mom.n.size
    if lam is None:
        lambdas = power_tuning_lambdas(mom, clip=clip_lambda)
    else:
        lambdas = np.broadcast_to(np.asarray(lam, dtype=float), (m,)).copy()
        if not np.all(np.isfinite(lambdas)):
            raise ValueError("lam must be finite")
    Z = mom.f_unlabelled_mean
    theta_pt = mom.y_mean + lambdas * (Z - mom.f_labelled_mean)
    pooled = variance == "pooled" and known_moments is None
    vmom = _pool_variances(mom, y_labelled, pred_labelled, pred_unlabelled) if pooled else mom
    A = pt_variance(vmom, lambdas)
    if omega is None:
        # CURE's correction uses the same Var f as A_j (pooled over the unlabelled points by default)
        omega = minimise_cure(theta_pt, Z, A, lambdas, vmom.var_f, mom.N, cutoff=cutoff)
    elif not omega >= 0:
        raise ValueError(f"omega must be >= 0, got {omega}")
    omegas = np.ones(m) if np.isinf(omega) else omega / (A + omega)
    theta = omegas * theta_pt + (1 - omegas) * Z
    return PASFit(theta, theta_pt, Z, lambdas, omegas, float(omega), A, mom, vmom)


def check_variance(variance) -> None:
    """Raise ``ValueError`` unless ``variance`` is one of :data:`VARIANCES`."""
    if not isinstance(variance, str) or variance not in VARIANCES:
        raise ValueError(f"variance must be one of {VARIANCES}, got {variance!r}")


def classical_mean_pointestimate(y_labelled: ArrayList, pred_labelled: ArrayList,
                                 pred_unlabelled: ArrayList) -> np.ndarray:
    """The labelled sample mean of each problem (ignores the predictions' values)."""
    return problem_moments(y_labelled, pred_labelled, pred_unlabelled).y_mean


def prediction_mean_pointestimate(y_labelled: ArrayList, pred_labelled: ArrayList,
                                  pred_unlabelled: ArrayList) -> np.ndarray:
    """The mean prediction on the unlabelled points of each problem (Z_j)."""
    return problem_moments(y_labelled, pred_labelled, pred_unlabelled).f_unlabelled_mean


def vanilla_ppi_mean_pointestimate(y_labelled: ArrayList, pred_labelled: ArrayList,
                                   pred_unlabelled: ArrayList) -> np.ndarray:
    """PPI with lambda = 1: ``Ybar_j + Z_j - fbar_j``."""
    mom = problem_moments(y_labelled, pred_labelled, pred_unlabelled)
    return mom.y_mean + mom.f_unlabelled_mean - mom.f_labelled_mean


def pt_ppi_mean_pointestimate(y_labelled: ArrayList, pred_labelled: ArrayList, pred_unlabelled: ArrayList,
                              clip_lambda: bool = True, share_var: bool = False,
                              known_moments: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Power-tuned PPI (PPI++) run separately in each problem: ``Ybar_j + lambda_j (Z_j - fbar_j)``."""
    mom = problem_moments(y_labelled, pred_labelled, pred_unlabelled, share_var, known_moments)
    lambdas = power_tuning_lambdas(mom, clip=clip_lambda)
    return mom.y_mean + lambdas * (mom.f_unlabelled_mean - mom.f_labelled_mean)


def shrinkage_only_pointestimate(y_labelled: ArrayList, pred_labelled: ArrayList, pred_unlabelled: ArrayList,
                                 cutoff: float = 0.999, share_var: bool = False,
                                 known_moments: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                                 variance: str = "pooled") -> np.ndarray:
    """Shrink the sample means towards the prediction means with the Xie-Kou-Brown SURE (PAS with lambda = 0).

    ``A_j = Var(Y)/n_j`` with Var(Y) pooled over all labelled points (``variance="pooled"``,
    the official ``get_shrinkage_only_estimators`` with ``share_var=False``, the setting of
    its experiments) or per problem (``variance="per_problem"``; pooled again if
    ``share_var``). ``known_moments`` gives the true per-problem Var Y.
    """
    return pas_fit(y_labelled, pred_labelled, pred_unlabelled, cutoff=cutoff, share_var=share_var, lam=0.0,
                   known_moments=known_moments, variance=variance).theta


def grand_mean_sure(omega: float | np.ndarray, theta_pt: np.ndarray, A: np.ndarray) -> float | np.ndarray:
    """Xie-Kou-Brown SURE (their Sec. 4) of shrinking ``theta_pt`` towards its own grand mean at global ``omega``.

    ``SURE(omega) = sum_j b_j^2 (theta_pt_j - mean(theta_pt))^2 + (1 - 2 (1 - 1/m) b_j) A_j`` with
    ``b_j = A_j/(A_j + omega)``, the weight on the grand mean. Scalar or array ``omega``.
    """
    w = np.asarray(omega, dtype=float)[..., None]
    b = A / (A + w)
    m = A.size
    total = (b**2 * (theta_pt - theta_pt.mean()) ** 2 + (1 - 2 * (1 - 1 / m) * b) * A).sum(axis=-1)
    return float(total) if np.ndim(omega) == 0 else total


def shrink_to_grand_mean_pointestimate(y_labelled: ArrayList, pred_labelled: ArrayList, pred_unlabelled: ArrayList,
                                       clip_lambda: bool = True, cutoff: float = 0.999, share_var: bool = False,
                                       known_moments: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                                       variance: str = "pooled") -> np.ndarray:
    """PT-PPI estimates shrunk towards their grand mean instead of the predictions (the paper's "shrink to
    grand mean" baseline).

    ``theta_j = w_j theta_pt_j + (1 - w_j) mean(theta_pt)``, ``w_j = omega/(A_j + omega)``, with A_j and the
    moments exactly as in :func:`pas_fit` and omega minimising :func:`grand_mean_sure` on the same interval.
    The official ``get_shrinkage_to_mean_estimators`` tunes omega with this SURE but then shrinks towards
    the prediction means; we shrink towards the grand mean the SURE is computed for (see the docs).

    Returns:
        The estimates, shape (m,).
    """
    fit = pas_fit(y_labelled, pred_labelled, pred_unlabelled, clip_lambda, cutoff, share_var, omega=np.inf,
                  known_moments=known_moments, variance=variance)
    A = fit.variances
    omega = _global_minimiser(grand_mean_sure, (fit.theta_pt, A), float(A.max()), cutoff)
    w = omega / (A + omega)
    return w * fit.theta_pt + (1 - w) * fit.theta_pt.mean()


class PASEstimator(RegressorMixin, BaseEstimator):
    """scikit-learn PAS estimator: the mean of every problem, from flat arrays.

    Two input forms give the same estimates.

    **(X, y)**, the scikit-learn form: one row per point, labelled or not.

    * ``X`` of shape (n_points, K + 1), numeric: the first K >= 1 columns identify the
      problem (rows equal in all of them belong to the same problem, as in a group-by;
      usually K = 1, an integer problem id), the last column is the prediction f(x).
    * ``y`` of shape (n_points,): the outcome of a labelled point, ``NaN`` for an
      unlabelled one.
    * ``predict(X)`` returns, for every row, the estimated mean of its problem (its
      last column is not used); ``score(X, y)`` is the R^2 on the labelled rows.

    A problem needs two labelled and one unlabelled point for PAS. In this form a
    problem with one labelled point, or without unlabelled points, keeps the classical
    mean of its labels (with no unlabelled point, PT-PPI *is* the sample mean and there
    is no prediction mean to shrink towards) and takes no part in the choice of omega;
    ``pas_mask_`` tells which problems PAS estimated. A problem without any labelled
    point raises ``ValueError``. With every problem eligible, the estimates are exactly
    those of :func:`pas_fit`.

    **Five arrays**, ``fit(y, pred_labelled, groups_labelled, pred_unlabelled,
    groups_unlabelled)`` (the same as :meth:`fit_problems`): labelled and unlabelled
    points apart, with problem labels of any type; then ``predict(groups)`` takes labels
    and every problem must be eligible.

    Args:
        clip_lambda: clip power-tuning weights to [0, 1].
        cutoff: upper end of the omega search, as a fraction c in (0, 1).
        share_var: pool the moments of lambda_j across problems.
        variance: ``"pooled"`` (default, the official estimated-moment PAS) or
            ``"per_problem"``: how A_j and CURE's correction are estimated (see
            :func:`pas_mean_pointestimate`). In the (X, y) form the pooling runs over the
            problems PAS estimates (``pas_mask_``).

    Attributes (after ``fit``):
        groups_: the problems, sorted: shape (m, K) of key values in the (X, y) form,
            shape (m,) of labels in the five-array form.
        theta_: estimate of each problem's mean, shape (m,).
        theta_pt_: PT-PPI estimates, shape (m,).
        prediction_mean_: mean prediction on the unlabelled points, shape (m,) (NaN for a
            problem without unlabelled points).
        lambdas_: power-tuning weights, shape (m,) (0 where PAS did not run).
        omegas_: per-problem shrinkage weights omega/(A_j + omega), shape (m,) (1 where PAS
            did not run).
        omega_: the global omega chosen by CURE (NaN when no problem is eligible).
        variances_: estimated variances A_j of the PT-PPI estimates, shape (m,) (NaN where
            PAS did not run).
        pas_mask_: which problems PAS estimated, shape (m,) (all True in the five-array form).
        n_features_in_: K + 1 (the (X, y) form only).

    Example:
        >>> X = np.column_stack([problem_id, prediction])   # labelled and unlabelled rows
        >>> y = np.where(is_labelled, outcome, np.nan)
        >>> est = PASEstimator().fit(X, y)
        >>> est.theta_, est.predict(X)                      # per problem, per row
    """

    def __init__(self, clip_lambda: bool = True, cutoff: float = 0.999, share_var: bool = False,
                 variance: str = "pooled"):
        self.clip_lambda = clip_lambda
        self.cutoff = cutoff
        self.share_var = share_var
        self.variance = variance

    def _check_params(self) -> None:
        if not 0 < self.cutoff < 1:
            raise ValueError(f"cutoff must be in (0, 1), got {self.cutoff!r}")
        check_variance(self.variance)

    def fit(self, X, y=None, *groups_and_unlabelled) -> "PASEstimator":
        """Estimate every problem's mean from ``(X, y)`` (see the class docstring for the layout).

        Called with five arrays, ``fit(y, pred_labelled, groups_labelled, pred_unlabelled,
        groups_unlabelled)``, it is :meth:`fit_problems`.
        """
        if groups_and_unlabelled:
            if len(groups_and_unlabelled) != 3:
                raise TypeError("fit takes (X, y) or the five arrays (y, pred_labelled, groups_labelled, "
                                f"pred_unlabelled, groups_unlabelled), got {2 + len(groups_and_unlabelled)} arrays")
            return self.fit_problems(X, y, *groups_and_unlabelled)
        self._check_params()
        X, y = validate_data(self, X, y, validate_separately=(
            {"dtype": np.float64},
            {"dtype": np.float64, "ensure_2d": False, "ensure_all_finite": "allow-nan"}))
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y)
        if X.shape[1] < 2:
            raise ValueError("X needs the problem-id column(s) and a last column of predictions, got "
                             f"n_features = {X.shape[1]}")
        labelled = ~np.isnan(y)
        if not labelled.any():
            raise ValueError("y has no labelled point: every entry is NaN (NaN marks unlabelled points)")
        groups, problem = np.unique(X[:, :-1], axis=0, return_inverse=True)
        problem = problem.ravel()
        m = groups.shape[0]
        n = np.bincount(problem[labelled], minlength=m)
        N = np.bincount(problem[~labelled], minlength=m)
        if np.any(n == 0):
            raise ValueError(f"problem {groups[np.argmax(n == 0)].tolist()} has unlabelled points but no labelled "
                             f"point (a finite y)")
        pred = X[:, -1]
        y_mean = np.bincount(problem[labelled], weights=y[labelled], minlength=m) / n
        eligible = (n >= 2) & (N >= 1)

        theta, theta_pt = y_mean.copy(), y_mean.copy()
        prediction_mean = np.full(m, np.nan)
        has_unlabelled = N > 0
        prediction_mean[has_unlabelled] = (np.bincount(problem[~labelled], weights=pred[~labelled], minlength=m)
                                           [has_unlabelled] / N[has_unlabelled])
        lambdas, omegas, variances, omega = np.zeros(m), np.ones(m), np.full(m, np.nan), np.nan
        if eligible.any():
            # one array per eligible problem, in the order of ``groups``
            lab_rows = labelled & eligible[problem]
            unl_rows = ~labelled & eligible[problem]
            order_l = np.flatnonzero(lab_rows)[np.argsort(problem[lab_rows], kind="stable")]
            order_u = np.flatnonzero(unl_rows)[np.argsort(problem[unl_rows], kind="stable")]
            split_l = np.cumsum(n[eligible])[:-1]
            split_u = np.cumsum(N[eligible])[:-1]
            fit = pas_fit(np.split(y[order_l], split_l), np.split(pred[order_l], split_l),
                          np.split(pred[order_u], split_u), self.clip_lambda, self.cutoff, self.share_var,
                          variance=self.variance)
            rows = np.flatnonzero(eligible)
            theta[rows], theta_pt[rows], prediction_mean[rows] = fit.theta, fit.theta_pt, fit.prediction_mean
            lambdas[rows], omegas[rows], variances[rows], omega = fit.lambdas, fit.omegas, fit.variances, fit.omega
        self.groups_, self.pas_mask_ = groups, eligible
        self.theta_, self.theta_pt_, self.prediction_mean_ = theta, theta_pt, prediction_mean
        self.lambdas_, self.omegas_, self.omega_, self.variances_ = lambdas, omegas, omega, variances
        return self

    def fit_problems(self, y, pred_labelled, groups_labelled, pred_unlabelled,
                     groups_unlabelled) -> "PASEstimator":
        """Estimate every problem's mean from labelled and unlabelled points given apart.

        Args:
            y: labelled outcomes, shape (n_total,).
            pred_labelled: predictions on the labelled points, shape (n_total,).
            groups_labelled: problem label of each labelled point, shape (n_total,) (any type).
            pred_unlabelled: predictions on the unlabelled points, shape (N_total,).
            groups_unlabelled: problem label of each unlabelled point, shape (N_total,).
        """
        self._check_params()
        y = np.asarray(y, dtype=float).ravel()
        fl = np.asarray(pred_labelled, dtype=float).ravel()
        gl = np.asarray(groups_labelled).ravel()
        fu = np.asarray(pred_unlabelled, dtype=float).ravel()
        gu = np.asarray(groups_unlabelled).ravel()
        if not y.size == fl.size == gl.size:
            raise ValueError(f"y, pred_labelled and groups_labelled must have the same length, "
                             f"got {y.size}, {fl.size} and {gl.size}")
        if fu.size != gu.size:
            raise ValueError(f"pred_unlabelled and groups_unlabelled must have the same length, "
                             f"got {fu.size} and {gu.size}")
        groups = np.unique(gl)
        missing = np.setdiff1d(groups, np.unique(gu))
        if missing.size:
            raise ValueError(f"problem {missing[0]!r} has labelled points but no unlabelled points")
        extra = np.setdiff1d(np.unique(gu), groups)
        if extra.size:
            raise ValueError(f"problem {extra[0]!r} has unlabelled points but no labelled points")
        order_l, order_u = np.argsort(gl, kind="stable"), np.argsort(gu, kind="stable")
        split_l = np.searchsorted(gl[order_l], groups[1:])
        split_u = np.searchsorted(gu[order_u], groups[1:])
        fit = pas_fit(np.split(y[order_l], split_l), np.split(fl[order_l], split_l),
                      np.split(fu[order_u], split_u), self.clip_lambda, self.cutoff, self.share_var,
                      variance=self.variance)
        if hasattr(self, "n_features_in_"):
            del self.n_features_in_  # a refit in this form forgets the (X, y) layout
        self.groups_, self.pas_mask_ = groups, np.ones(groups.size, dtype=bool)
        self.theta_, self.theta_pt_, self.prediction_mean_ = fit.theta, fit.theta_pt, fit.prediction_mean
        self.lambdas_, self.omegas_, self.omega_, self.variances_ = fit.lambdas, fit.omegas, fit.omega, fit.variances
        return self

    def predict(self, X) -> np.ndarray:
        """The estimated mean of each row's problem, shape (n_rows,).

        After ``fit(X, y)``, ``X`` has the fit's layout (problem-id columns, then a
        prediction column that is not used). After the five-array form, ``X`` is a 1-D
        array of problem labels. A problem not seen in ``fit`` raises ``ValueError``.
        """
        check_is_fitted(self, "theta_")
        if not hasattr(self, "n_features_in_"):
            return self._predict_labels(X)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        keys = X[:, :-1]
        m = self.groups_.shape[0]
        # rank the seen problems and the asked rows together; a row's rank must be a seen one's
        _, rank = np.unique(np.concatenate([self.groups_, keys]), axis=0, return_inverse=True)
        rank = rank.ravel()
        problem_of_rank = np.full(rank.max() + 1, -1)
        problem_of_rank[rank[:m]] = np.arange(m)
        idx = problem_of_rank[rank[m:]]
        if np.any(idx < 0):
            raise ValueError(f"unknown problem {keys[np.argmax(idx < 0)].tolist()}; fit saw {m} problems")
        return self.theta_[idx]

    def _predict_labels(self, groups) -> np.ndarray:
        groups = np.asarray(groups).ravel()
        idx = np.searchsorted(self.groups_, groups)
        idx = np.clip(idx, 0, self.groups_.size - 1)
        unknown = self.groups_[idx] != groups
        if np.any(unknown):
            raise ValueError(f"unknown problem {groups[unknown][0]!r}; fit saw {self.groups_.size} problems")
        return self.theta_[idx]

    def score(self, X, y, sample_weight=None) -> float:
        """R^2 of :meth:`predict` on the labelled rows (those with a finite ``y``)."""
        y = np.asarray(y, dtype=np.float64)
        keep = ~np.isnan(y)
        X = np.asarray(X)
        w = None if sample_weight is None else np.asarray(sample_weight)[keep]
        return float(r2_score(y[keep], self.predict(X[keep]), sample_weight=w))
