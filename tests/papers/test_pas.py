"""PAS: special cases, agreement with ppi-python and the official code, CURE unbiasedness, bad input, smoke runs.

The method's defining elements, and the tests that fail when one is removed or altered (each mutation was tried
once on a scratch edit and reverted; docs/papers/pas.md lists the outcomes):

1. Power tuning: ``lambda_j = N_j/(n_j+N_j) * Cov(Y, f)/Var f``, clipped to [0, 1] (PT-PPI, the first stage) --
   ``test_pt_ppi_matches_ppi_python``, ``test_official_parity_pt_and_pas``,
   ``test_theory_checks_of_the_experiment_hold`` (lambda = n/(n+N) tried).
2. The PT-PPI variance ``A_j = sigma2/n + lambda^2 tau2 (n+N)/(nN) - 2 lambda gamma/n`` (pooled moments when
   estimated, as the official code) -- ``test_pooled_pas_is_the_official_estimated_moment_formula``,
   ``test_official_parity_pt_and_pas`` (the cross term dropped tried).
3. Shrinkage towards the prediction mean Z_j with ``w_j = omega/(A_j + omega)`` --
   ``test_omega_zero_gives_prediction_mean``, ``test_official_parity_pt_and_pas`` (target = grand mean of
   theta_pt tried).
4. CURE's correlation correction ``sum_j 2 A_j/(A_j+omega) lambda_j tau2_j/N_j`` --
   ``test_cure_is_unbiased_at_fixed_omega``, ``test_theory_checks_of_the_experiment_hold`` (the correction removed
   tried).
5. omega = the global minimiser of CURE on ``[0, c/(1-c) max A_j]`` -- ``test_cure_minimiser_is_global``,
   ``test_official_parity_pt_and_pas`` (omega = the grid's first point tried).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError

from icml25.papers.pas import (
    PASConfig,
    PASEstimator,
    classical_mean_pointestimate,
    cure,
    gaussian_synthetic,
    gaussian_true_moments,
    grand_mean_sure,
    pas_fit,
    pas_mean_pointestimate,
    pooled_variance_moments,
    power_tuning_lambdas,
    prediction_mean_pointestimate,
    problem_moments,
    pt_ppi_mean_pointestimate,
    pt_variance,
    shrink_to_grand_mean_pointestimate,
    shrinkage_only_pointestimate,
    vanilla_ppi_mean_pointestimate,
)


@pytest.fixture
def ragged():
    """Problems of different sizes, with a predictor that is informative but biased."""
    rng = np.random.default_rng(3)
    y, fl, fu = [], [], []
    for _j in range(25):
        n, N = rng.integers(2, 30), rng.integers(1, 60)
        mu = rng.normal()
        x_l, x_u = rng.normal(mu, 1, n), rng.normal(mu, 1, N)
        y.append(x_l + rng.normal(0, 0.5, n))
        fl.append(0.8 * x_l + 0.3)
        fu.append(0.8 * x_u + 0.3)
    return y, fl, fu


def test_omega_zero_gives_prediction_mean(ragged):
    theta, _, omegas = pas_mean_pointestimate(*ragged, omega=0.0)
    np.testing.assert_allclose(theta, [f.mean() for f in ragged[2]], rtol=0, atol=1e-12)
    assert np.all(omegas == 0)


def test_omega_infinite_gives_pt_ppi(ragged):
    theta, lambdas, omegas = pas_mean_pointestimate(*ragged, omega=np.inf)
    np.testing.assert_allclose(theta, pt_ppi_mean_pointestimate(*ragged), atol=1e-12)
    assert np.all(omegas == 1)
    assert np.all((0 <= lambdas) & (lambdas <= 1))


def test_lambda_zero_omega_infinite_gives_classical(ragged):
    theta, _, _ = pas_mean_pointestimate(*ragged, lam=0.0, omega=np.inf)
    np.testing.assert_allclose(theta, [y.mean() for y in ragged[0]], atol=1e-12)
    np.testing.assert_allclose(theta, classical_mean_pointestimate(*ragged), atol=1e-12)


def test_lambda_one_omega_infinite_gives_vanilla_ppi(ragged):
    ppi_py = pytest.importorskip("ppi_py")
    theta, _, _ = pas_mean_pointestimate(*ragged, lam=1.0, omega=np.inf)
    np.testing.assert_allclose(theta, vanilla_ppi_mean_pointestimate(*ragged), atol=1e-12)
    expected = [float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, fl, fu, lam=1.0))) for y, fl, fu in zip(*ragged)]
    np.testing.assert_allclose(theta, expected, atol=1e-10)


def test_pt_ppi_matches_ppi_python(ragged):
    """Per problem, PT-PPI is ppi_py's PPI++ mean. ppi_py's tuned lambda uses the 1/n covariance,
    ours (like the official PAS code) the 1/(n-1) one: lambda_ppi = clip(lambda_ours * (n-1)/n)."""
    ppi_py = pytest.importorskip("ppi_py")
    lam_raw = power_tuning_lambdas(problem_moments(*ragged), clip=False)
    pt = pt_ppi_mean_pointestimate(*ragged)
    for j, (y, fl, fu) in enumerate(zip(*ragged)):
        n = y.size
        ours_at_their_lambda = y.mean() + np.clip(lam_raw[j] * (n - 1) / n, 0, 1) * (fu.mean() - fl.mean())
        theirs = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, fl, fu)))
        assert ours_at_their_lambda == pytest.approx(theirs, abs=1e-9)
        # and at our own lambda the two formulas coincide exactly
        theirs_at_ours = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, fl, fu, lam=np.clip(lam_raw[j], 0, 1))))
        assert pt[j] == pytest.approx(theirs_at_ours, abs=1e-10)


def test_moments_match_numpy_per_problem(ragged):
    mom = problem_moments(*ragged)
    for j, (y, fl, fu) in enumerate(zip(*ragged)):
        assert mom.var_y[j] == pytest.approx(np.var(y, ddof=1))
        assert mom.cov_yf[j] == pytest.approx(np.cov(y, fl, ddof=1)[0, 1])
        assert mom.var_f[j] == pytest.approx(np.var(np.concatenate([fl, fu]), ddof=1))
    pooled = problem_moments(*ragged, share_var=True)
    assert np.all(pooled.var_y == pytest.approx(np.var(np.concatenate(ragged[0]), ddof=1)))
    official = pooled_variance_moments(*ragged)  # Var f over the unlabelled points only
    Y, FL, FU = (np.concatenate(a) for a in ragged)
    np.testing.assert_allclose(official.var_y, np.var(Y, ddof=1))
    np.testing.assert_allclose(official.cov_yf, np.cov(Y, FL, ddof=1)[0, 1])
    np.testing.assert_allclose(official.var_f, np.var(FU, ddof=1))
    np.testing.assert_array_equal(official.y_mean, mom.y_mean)


def _xkb_sure_grid(y_mean, Z, A, grid):
    """Independent Xie-Kou-Brown SURE of shrinking y_mean towards Z, evaluated on a grid."""
    b = A / (A + grid[:, None])  # weight on Z of every problem, at every grid point
    values = np.sum(b**2 * (y_mean - Z) ** 2 + (1 - 2 * b) * A, axis=1)
    return grid[np.argmin(values)]


@pytest.mark.parametrize("variance", ["pooled", "per_problem"])
def test_shrinkage_only_is_xie_kou_brown_sure(ragged, variance):
    """A_j = Var(Y)/n_j with Var(Y) over all labelled points (pooled, the official share_var=False) or per problem."""
    mom = problem_moments(*ragged)
    var_y = np.var(np.concatenate(ragged[0]), ddof=1) if variance == "pooled" else mom.var_y
    A = np.maximum(var_y / mom.n, 1e-12)
    fit = pas_fit(*ragged, lam=0.0, variance=variance)
    upper = 999 * A.max()
    omega_grid = _xkb_sure_grid(mom.y_mean, mom.f_unlabelled_mean, A, np.linspace(0, upper, 200_001))
    assert fit.omega == pytest.approx(omega_grid, abs=upper / 200_000 * 2)
    np.testing.assert_allclose(shrinkage_only_pointestimate(*ragged, variance=variance), fit.theta)
    weight_on_z = A / (A + fit.omega)  # the estimate is Ybar shrunk towards Z with the XKB weights
    np.testing.assert_allclose(fit.theta, weight_on_z * mom.f_unlabelled_mean + (1 - weight_on_z) * mom.y_mean,
                               atol=1e-12)
    def sure(w):
        return np.sum((A / (A + w)) ** 2 * (mom.y_mean - mom.f_unlabelled_mean) ** 2 + (1 - 2 * A / (A + w)) * A)

    assert sure(fit.omega) <= sure(omega_grid) + 1e-12


def test_pooled_pas_is_the_official_estimated_moment_formula(ragged):
    """The official estimated-moment PAS re-derived here: per-problem lambda_j, then A_j and CURE's correction from
    Var(all Y), Cov(all Y, all f labelled) and Var(all f unlabelled); omega by a fine grid over CURE."""
    y, fl, fu = ragged
    n = np.array([a.size for a in y], float)
    N = np.array([a.size for a in fu], float)
    lam = np.array([np.clip(Nj / (nj + Nj) * np.cov(a, b, ddof=1)[0, 1] / np.var(np.r_[b, c], ddof=1), 0, 1)
                    for a, b, c, nj, Nj in zip(y, fl, fu, n, N)])
    Z = np.array([c.mean() for c in fu])
    pt = np.array([a.mean() for a in y]) + lam * (Z - np.array([b.mean() for b in fl]))
    Y, FL, FU = np.concatenate(y), np.concatenate(fl), np.concatenate(fu)
    s2, g, t2 = np.var(Y, ddof=1), np.cov(Y, FL, ddof=1)[0, 1], np.var(FU, ddof=1)
    A = s2 / n + lam**2 * t2 * (n + N) / (n * N) - 2 * lam * g / n
    grid = np.linspace(0, 999 * A.max(), 400_001)[:, None]
    risk = np.sum(A / (A + grid) ** 2 * (A * (Z - pt) ** 2 + grid**2 - A**2) + 2 * A / (A + grid) * lam * t2 / N, 1)
    w = grid[np.argmin(risk), 0]
    fit = pas_fit(y, fl, fu)  # the default is variance="pooled"
    np.testing.assert_allclose(fit.lambdas, lam, atol=1e-12)
    np.testing.assert_allclose(fit.variances, A, rtol=1e-10)
    assert fit.omega == pytest.approx(w, abs=2 * 999 * A.max() / 400_000)
    wf = fit.omega
    np.testing.assert_allclose(fit.theta, wf / (A + wf) * pt + A / (A + wf) * Z, atol=1e-12)
    risk_at_fit = np.sum(A / (A + wf) ** 2 * (A * (Z - pt) ** 2 + wf**2 - A**2) + 2 * A / (A + wf) * lam * t2 / N)
    assert risk_at_fit <= risk.min() + 1e-12
    # per_problem: A_j from the same per-problem moments as lambda_j (Var f over all n_j + N_j points)
    pp = pas_fit(y, fl, fu, variance="per_problem")
    np.testing.assert_allclose(pp.variances, pt_variance(problem_moments(y, fl, fu), lam))
    assert not np.allclose(pp.variances, fit.variances)


def test_known_moments_are_used_per_problem_whatever_the_variance_option():
    d = gaussian_synthetic(m=30, seed=2)
    a = pas_fit(*d.arrays, known_moments=d.known_moments, variance="pooled")
    b = pas_fit(*d.arrays, known_moments=d.known_moments, variance="per_problem")
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_allclose(a.variances, pt_variance(a.moments, a.lambdas))


def test_variance_option_bad_values_raise(ragged):
    for bad in ("pool", "", None, 1):
        with pytest.raises(ValueError, match="variance must be one of"):
            pas_mean_pointestimate(*ragged, variance=bad)
    with pytest.raises(ValueError, match="variance must be one of"):
        shrinkage_only_pointestimate(*ragged, variance="shared")
    X, yy = _xy_layout(*ragged)
    with pytest.raises(ValueError, match="variance must be one of"):
        PASEstimator(variance="per-problem").fit(X, yy)
    with pytest.raises(ValueError, match="at least 2 unlabelled points"):
        pooled_variance_moments([np.ones(3)], [np.ones(3)], [np.ones(1)])


def test_estimator_variance_option_matches_the_functional_api(ragged):
    X, yy = _xy_layout(*ragged)
    for variance in ("pooled", "per_problem"):
        est = PASEstimator(variance=variance).fit(X, yy)
        np.testing.assert_array_equal(est.theta_, pas_fit(*ragged, variance=variance).theta)
    assert PASEstimator().get_params()["variance"] == "pooled"


def test_cure_minimiser_is_global(ragged):
    fit = pas_fit(*ragged)
    m = fit.moments
    tau2 = fit.variance_moments.var_f  # CURE's correction uses the Var f of A_j (pooled by default)
    grid = np.linspace(0, 999 * fit.variances.max(), 100_001)
    values = cure(grid, fit.theta_pt, fit.prediction_mean, fit.variances, fit.lambdas, tau2, m.N)
    at_fit = cure(fit.omega, fit.theta_pt, fit.prediction_mean, fit.variances, fit.lambdas, tau2, m.N)
    assert at_fit <= values.min() + 1e-12 * abs(values.min())


def test_cure_is_unbiased_at_fixed_omega():
    """Monte Carlo: with the true moments and lambda fixed, E[CURE(omega)] = E[loss(omega)]."""
    m, n, N, reps = 40, 10, 30, 3000
    rng = np.random.default_rng(0)
    mu = rng.uniform(-1, 1, m)  # fixed problems; data redrawn each replicate
    var_y, cov, var_f = gaussian_true_moments(mu, good_predictor=False)
    lam = N / (n + N) * cov / var_f
    for omega in (0.0005, 0.005):
        cures, losses, corrections = [], [], []
        for _ in range(reps):
            x = mu[:, None] + 0.1 * rng.standard_normal((m, n + N))
            y = mu[:, None] ** 2 + 2 * mu[:, None] * (x - mu[:, None]) + np.sqrt(0.05) * rng.standard_normal((m, n + N))
            f = np.abs(x)
            args = (list(y[:, :n]), list(f[:, :n]), list(f[:, n:]))
            fit = pas_fit(*args, lam=lam, omega=omega, known_moments=(var_y, cov, var_f))
            cures.append(cure(omega, fit.theta_pt, fit.prediction_mean, fit.variances, lam, var_f, fit.moments.N))
            losses.append(np.sum((fit.theta - mu**2) ** 2))
            corrections.append(np.sum(2 * fit.variances / (fit.variances + omega) * lam * var_f / N))
        diff = np.asarray(cures) - np.asarray(losses)
        se = diff.std(ddof=1) / np.sqrt(reps)
        assert abs(diff.mean()) < 4 * se, (omega, diff.mean(), se)
        # the plain SURE (no correlation correction) is biased: the correction is needed
        plain = diff - np.asarray(corrections)
        assert abs(plain.mean()) > 4 * plain.std(ddof=1) / np.sqrt(reps)


def test_true_moments_match_monte_carlo():
    mu = np.array([-0.7, -0.05, 0.0, 0.3, 0.9])
    rng = np.random.default_rng(1)
    for good in (True, False):
        var_y, cov, var_f = gaussian_true_moments(mu, good_predictor=good)
        for j, m_j in enumerate(mu):
            x = m_j + 0.1 * rng.standard_normal(400_000)
            y = m_j**2 + 2 * m_j * (x - m_j) + np.sqrt(0.05) * rng.standard_normal(x.size)
            f = x**2 if good else np.abs(x)
            c = np.cov(y, f)
            se_cov = np.sqrt(c[0, 0] * c[1, 1] / x.size)  # Monte Carlo standard error of the covariance
            assert c[0, 0] == pytest.approx(var_y[j], rel=0.02)
            assert c[1, 1] == pytest.approx(var_f[j], rel=0.02, abs=1e-6)
            assert c[0, 1] == pytest.approx(cov[j], abs=5 * se_cov)


def test_omegas_in_unit_interval_and_shrink_noisier_problems_more(ragged):
    fit = pas_fit(*ragged)
    assert np.all((fit.omegas >= 0) & (fit.omegas <= 1))
    order = np.argsort(fit.variances)
    assert np.all(np.diff(fit.omegas[order]) <= 1e-15)
    np.testing.assert_allclose(fit.variances, pt_variance(fit.variance_moments, fit.lambdas))


def test_pas_adapts_to_predictor_quality():
    """Good predictor: PAS close to the prediction mean; bad one: far better than it."""
    errs = {True: [], False: []}
    for good in (True, False):
        for seed in range(20):
            d = gaussian_synthetic(m=100, good_predictor=good, seed=seed)
            pas = pas_mean_pointestimate(*d.arrays, known_moments=d.known_moments)[0]
            pred = prediction_mean_pointestimate(*d.arrays)
            classical = classical_mean_pointestimate(*d.arrays)
            errs[good].append([np.mean((e - d.theta) ** 2) for e in (pas, pred, classical)])
    good, bad = np.mean(errs[True], axis=0), np.mean(errs[False], axis=0)
    assert good[0] < 0.2 * good[2] and good[0] < 1.3 * good[1]
    assert bad[0] < 0.9 * bad[2] and bad[0] < 0.2 * bad[1]


def test_estimator_matches_functional_api_and_predicts_by_label(ragged):
    y, fl, fu = ragged
    labels = [f"p{j:02d}" for j in range(len(y))]
    gl = np.concatenate([[lab] * a.size for lab, a in zip(labels, y)])
    gu = np.concatenate([[lab] * a.size for lab, a in zip(labels, fu)])
    perm_l, perm_u = np.random.default_rng(0).permutation(gl.size), np.random.default_rng(1).permutation(gu.size)
    est = PASEstimator().fit(np.concatenate(y)[perm_l], np.concatenate(fl)[perm_l], gl[perm_l],
                             np.concatenate(fu)[perm_u], gu[perm_u])
    theta, lambdas, omegas = pas_mean_pointestimate(y, fl, fu)
    # equal up to the order of floating-point sums over the shuffled rows (CURE's minimiser moves by ~1e-9)
    np.testing.assert_allclose(est.theta_, theta, rtol=0, atol=1e-7)
    np.testing.assert_allclose(est.omegas_, omegas, rtol=0, atol=1e-7)
    np.testing.assert_array_equal(est.predict(["p03", "p00"]), est.theta_[[3, 0]])
    with pytest.raises(ValueError, match="unknown problem"):
        est.predict(["nope"])
    with pytest.raises(ValueError, match="not fitted"):
        PASEstimator().predict(["p00"])


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda y, fl, fu: ([], [], []), "non-empty"),
        (lambda y, fl, fu: (y[:-1], fl, fu), "same number of problems"),
        (lambda y, fl, fu: ([y[0][:1]] + y[1:], [fl[0][:1]] + fl[1:], fu), "at least 2"),
        (lambda y, fl, fu: (y, fl, [np.array([])] + fu[1:]), "at least 1"),
        (lambda y, fl, fu: (y, [fl[0][:-1]] + fl[1:], fu), "pred_labelled has"),
        (lambda y, fl, fu: ([np.r_[y[0][:-1], np.nan]] + y[1:], fl, fu), "NaN"),
        (lambda y, fl, fu: (y, fl, [np.r_[fu[0], np.inf]] + fu[1:]), "NaN or infinite"),
    ],
)
def test_bad_input_raises(ragged, mutate, match):
    y, fl, fu = (list(a) for a in ragged)
    with pytest.raises(ValueError, match=match):
        pas_mean_pointestimate(*mutate(y, fl, fu))


def test_bad_parameters_raise(ragged):
    with pytest.raises(ValueError, match="cutoff"):
        pas_mean_pointestimate(*ragged, cutoff=1.0)
    with pytest.raises(ValueError, match="omega"):
        pas_mean_pointestimate(*ragged, omega=-1.0)
    with pytest.raises(ValueError, match="known_moments"):
        pas_mean_pointestimate(*ragged, known_moments=(np.ones(2), np.ones(2), np.ones(2)))
    with pytest.raises(ValueError, match="n >= 2"):
        gaussian_synthetic(m=3, n=1)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"sigma_x": np.nan}, "sigma_x must be finite and > 0"),
        ({"sigma_x": np.inf}, "sigma_x must be finite and > 0"),
        ({"sigma_x": 0.0}, "sigma_x must be finite and > 0"),
        ({"sigma_x": -0.1}, "sigma_x must be finite and > 0"),
        ({"noise_var": np.nan}, "noise_var must be finite and >= 0"),
        ({"noise_var": np.inf}, "noise_var must be finite and >= 0"),
        ({"noise_var": -1e-3}, "noise_var must be finite and >= 0"),
    ],
)
def test_bad_input_gaussian_synthetic_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gaussian_synthetic(m=3, **kwargs)


def test_gaussian_synthetic_boundary_parameters_still_valid():
    d = gaussian_synthetic(m=3, n=4, N=5, sigma_x=0.2, noise_var=0.0)  # noise_var = 0 is allowed
    assert len(d.y_labelled) == 3 and all(np.isfinite(a).all() for a in d.y_labelled + d.pred_unlabelled)
    ref = gaussian_synthetic(m=3, n=4, N=5, seed=7)
    again = gaussian_synthetic(m=3, n=4, N=5, seed=7, sigma_x=0.1, noise_var=0.05)
    for a, b in zip(ref.y_labelled + ref.pred_unlabelled, again.y_labelled + again.pred_unlabelled):
        np.testing.assert_array_equal(a, b)


def test_smoke_experiments_show_the_regimes():
    from icml25.core.registry import load_reproduction

    repro = load_reproduction("pas")
    syn = repro.experiment("synthetic")
    metrics = syn.run(syn.make_config("smoke"), seed=0)
    # known structure of the model: x^2 predicts far better than the 20-label means, |x| far worse
    assert metrics["good_mse_prediction"] < 0.3 * metrics["good_mse_classical"]
    assert metrics["bad_mse_prediction"] > 3 * metrics["bad_mse_classical"]
    assert metrics["bad_mse_pas"] < metrics["bad_mse_classical"]
    assert metrics["good_pas_minus_pt"] < 0
    digits = repro.experiment("digits")
    dm = digits.run(digits.make_config("smoke"), seed=0)
    assert 20 <= dm["n_problems"] <= 30
    assert dm["mse_pas"] < dm["mse_prediction"]
    assert all(np.isfinite(v) for v in dm.values())


# --- the (X, y) form of PASEstimator ---------------------------------------------------------

def _xy_layout(y, fl, fu, ids=None):
    """Stack problems into X = [problem id, prediction] and y with NaN for the unlabelled rows."""
    ids = np.arange(len(y)) if ids is None else np.asarray(ids)
    gid = np.concatenate([np.full(a.size, ids[j]) for j, a in enumerate(y)]
                         + [np.full(a.size, ids[j]) for j, a in enumerate(fu)])
    X = np.column_stack([gid, np.concatenate(fl + fu)])
    yy = np.concatenate(y + [np.full(a.size, np.nan) for a in fu])
    return X.astype(float), yy


def test_xy_form_gives_exactly_the_functional_estimates(ragged):
    X, yy = _xy_layout(*ragged, ids=np.arange(len(ragged[0]))[::-1] * 3)  # ids need not be 0..m-1 nor ordered
    est = PASEstimator().fit(X, yy)
    perm = np.random.default_rng(5).permutation(yy.size)
    fit = pas_fit(*(lst[::-1] for lst in ragged))  # problems sorted by id, i.e. reversed
    assert est.pas_mask_.all() and est.n_features_in_ == 2
    np.testing.assert_array_equal(est.theta_, fit.theta)
    np.testing.assert_array_equal(est.omegas_, fit.omegas)
    assert est.omega_ == fit.omega
    # predict: each row gets its problem's estimate, whatever its prediction column says
    rows = X[perm][:7].copy()
    rows[:, 1] = 123.0
    np.testing.assert_array_equal(est.predict(rows), fit.theta[np.searchsorted(est.groups_[:, 0], rows[:, 0])])
    with pytest.raises(ValueError, match="unknown problem"):
        est.predict(np.array([[1.5, 0.0]]))
    labelled = ~np.isnan(yy)
    assert est.score(X, yy) == pytest.approx(
        1 - np.sum((yy[labelled] - est.predict(X[labelled])) ** 2) / np.sum((yy[labelled] - yy[labelled].mean()) ** 2))


def test_xy_form_several_key_columns_group_like_a_groupby(ragged):
    X, yy = _xy_layout(*ragged)
    a, b = np.divmod(X[:, 0], 5)  # problem id j written as two keys (j // 5, j % 5)
    est = PASEstimator().fit(np.column_stack([a, b, X[:, 1]]), yy)
    np.testing.assert_array_equal(est.theta_, PASEstimator().fit(X, yy).theta_)
    assert est.groups_.shape == (len(ragged[0]), 2)


def test_xy_form_keeps_the_sample_mean_where_pas_cannot_run(ragged):
    y, fl, fu = ragged
    X, yy = _xy_layout(y, fl, fu)
    extra_single = np.array([[100.0, 0.3], [100.0, 0.1], [100.0, 0.2]])  # one label, two unlabelled
    extra_nounl = np.array([[200.0, 0.3], [200.0, 0.1]])                 # two labels, no unlabelled
    est = PASEstimator().fit(np.vstack([X, extra_single, extra_nounl]), np.concatenate([yy, [2.0, np.nan, np.nan],
                                                                                        [1.0, 4.0]]))
    np.testing.assert_array_equal(est.pas_mask_, np.r_[np.ones(len(y), bool), False, False])
    np.testing.assert_array_equal(est.theta_[:-2], pas_fit(y, fl, fu).theta)  # the others are untouched
    np.testing.assert_array_equal(est.theta_[-2:], [2.0, 2.5])
    assert est.omegas_[-1] == 1 and est.lambdas_[-1] == 0 and np.isnan(est.prediction_mean_[-1])
    assert est.prediction_mean_[-2] == pytest.approx(0.15)


def test_xy_form_bad_input():
    X = np.array([[0, 1.0], [0, 2.0], [0, 3.0]])
    with pytest.raises(ValueError, match="no labelled point"):
        PASEstimator().fit(X, np.full(3, np.nan))
    with pytest.raises(ValueError, match="n_features = 1"):
        PASEstimator().fit(X[:, :1], np.ones(3))
    with pytest.raises(ValueError, match="no labelled point"):
        PASEstimator().fit(np.vstack([X, [[1, 0.0]]]), np.array([1.0, 2.0, np.nan, np.nan]))
    with pytest.raises(ValueError, match="cutoff"):
        PASEstimator(cutoff=1.0).fit(X, np.array([1.0, 2.0, np.nan]))
    with pytest.raises(NotFittedError):
        PASEstimator().predict(X)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_xy_form_is_invariant_to_row_order(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 6))
    n, N = rng.integers(2, 6, m), rng.integers(1, 6, m)
    y = [rng.normal(size=k) for k in n]
    fl = [a + rng.normal(scale=0.3, size=a.size) for a in y]
    fu = [rng.normal(size=k) for k in N]
    X, yy = _xy_layout(y, fl, fu)
    perm = rng.permutation(yy.size)
    a, b = PASEstimator().fit(X, yy), PASEstimator().fit(X[perm], yy[perm])
    # the same estimates up to the order of floating-point sums (CURE's minimiser moves by ~1e-9)
    np.testing.assert_allclose(a.theta_, b.theta_, rtol=0, atol=1e-7)
    np.testing.assert_array_equal(a.theta_, pas_fit(y, fl, fu).theta)


# --- the paper's data files (small generated copies; nothing is downloaded) ---------------------------------


def _galaxy_csv(path, rng, bins=(70, 3, 12), per_bin=40):
    """A file in the official Galaxy Zoo layout: extra columns, bins out of order, classes 0-6."""
    rows = []
    for i in range(per_bin * len(bins)):
        rows.append((1000 + i, int(rng.integers(0, 7)), int(rng.integers(0, 7)), 587730022795182299 + i,
                     bins[i % len(bins)]))
    with open(path, "w") as fh:
        fh.write("galaxyID,true_label,pred_label,dr7objid,WVT_BIN\n")
        fh.writelines(",".join(map(str, r)) + "\n" for r in rows)
    return np.array(rows)


def test_load_galaxy_zoo_groups_by_bin_and_binarises_spiral_classes(tmp_path):
    from icml25.papers.pas import load_galaxy_zoo

    rows = _galaxy_csv(tmp_path / "g.csv", np.random.default_rng(0))
    probs = load_galaxy_zoo(tmp_path / "g.csv")
    assert probs.ids == (3, 12, 70)  # sorted by bin
    for b, y, f in zip(probs.ids, probs.y, probs.pred):
        sel = rows[rows[:, 4] == b]  # file order within the bin
        np.testing.assert_array_equal(y, np.isin(sel[:, 1], [3, 4, 5]).astype(float))
        np.testing.assert_array_equal(f, np.isin(sel[:, 2], [3, 4, 5]).astype(float))
    np.testing.assert_allclose(probs.theta, [y.mean() for y in probs.y])


def test_load_amazon_reviews_npz_and_h5_agree(tmp_path):
    from icml25.papers.pas import load_amazon_reviews

    rng = np.random.default_rng(1)
    arrays = {pid: rng.integers(1, 6, size=(2, int(rng.integers(5, 12)))).astype(np.int32)
              for pid in ("B00X", "B001", "A9")}
    np.savez(tmp_path / "a.npz", **arrays)
    probs = load_amazon_reviews(tmp_path / "a.npz")
    assert probs.ids == ("A9", "B001", "B00X")
    for pid, y, f in zip(probs.ids, probs.y, probs.pred):
        np.testing.assert_array_equal(y, arrays[pid][0])
        np.testing.assert_array_equal(f, arrays[pid][1])
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "a.h5", "w") as fh:
        for pid, a in arrays.items():
            fh.create_dataset(pid, data=a)
    from_h5 = load_amazon_reviews(tmp_path / "a.h5")
    assert from_h5.ids == probs.ids
    for a, b in zip(from_h5.y + from_h5.pred, probs.y + probs.pred):
        np.testing.assert_array_equal(a, b)


def test_split_labelled_fraction_is_the_official_split(tmp_path):
    """int(n_j * 0.2) labelled points from np.random.seed(s) + np.random.permutation per problem, in order; theta is
    the mean of Y over the unlabelled points."""
    from icml25.papers.pas import PredictionProblems, split_labelled_fraction

    rng = np.random.default_rng(2)
    ys = [rng.normal(size=k) for k in (17, 30, 11)]
    fs = [y + 0.1 for y in ys]
    d = split_labelled_fraction(PredictionProblems(ys, fs, np.zeros(3)), 0.2, seed=45)
    np.random.seed(45)  # the official loaders' global-state convention, re-derived here
    for j, (y, f) in enumerate(zip(ys, fs)):
        perm = np.random.permutation(y.size)
        k = int(y.size * 0.2)
        np.testing.assert_array_equal(d.y_labelled[j], y[perm[:k]])
        np.testing.assert_array_equal(d.pred_unlabelled[j], f[perm[k:]])
        assert d.theta[j] == pytest.approx(y[perm[k:]].mean())


@pytest.mark.parametrize("content, match", [
    ("a,b,c\n1,2,3\n", "must be a CSV with the columns"),
    ("true_label,pred_label,WVT_BIN\n1,x,3\n", "must be integers"),
    ("true_label,pred_label,WVT_BIN\n", "no data rows"),
])
def test_load_galaxy_zoo_bad_files(tmp_path, content, match):
    from icml25.papers.pas import load_galaxy_zoo

    (tmp_path / "bad.csv").write_text(content)
    with pytest.raises(ValueError, match=match):
        load_galaxy_zoo(tmp_path / "bad.csv")
    with pytest.raises(ValueError, match="not found"):
        load_galaxy_zoo(tmp_path / "missing.csv")


def test_load_amazon_and_split_bad_input(tmp_path):
    from icml25.papers.pas import PredictionProblems, load_amazon_reviews, split_labelled_fraction

    np.savez(tmp_path / "bad.npz", p=np.ones((3, 4)))
    with pytest.raises(ValueError, match="shape \\(2, n\\)"):
        load_amazon_reviews(tmp_path / "bad.npz")
    np.savez(tmp_path / "nan.npz", p=np.array([[1.0, np.nan], [1.0, 2.0]]))
    with pytest.raises(ValueError, match="NaN"):
        load_amazon_reviews(tmp_path / "nan.npz")
    (tmp_path / "x.txt").write_text("1")
    with pytest.raises(ValueError, match="suffix"):
        load_amazon_reviews(tmp_path / "x.txt")
    with pytest.raises(ValueError, match="not found"):
        load_amazon_reviews(tmp_path / "missing.h5")
    probs = PredictionProblems([np.ones(9)], [np.ones(9)], np.ones(1))
    with pytest.raises(ValueError, match="at least 2 and 1"):
        split_labelled_fraction(probs, 0.2)  # int(9 * 0.2) = 1 labelled point
    with pytest.raises(ValueError, match="fraction"):
        split_labelled_fraction(probs, 1.0)


def test_real_data_runs_in_its_own_experiments(tmp_path, no_network):
    """The paper's Galaxy Zoo and Amazon files run in paper_data_galaxy / paper_data_amazon (never in digits), with
    the official benchmark's splits; a missing or wrong file is a ConfigError naming the setting."""
    from icml25.core.experiment import ConfigError
    from icml25.core.registry import load_reproduction
    from icml25.papers.pas import load_galaxy_zoo, split_labelled_fraction
    from icml25.papers.pas.repro import compound_mse
    from paper_files.pas import write_amazon_h5, write_galaxy_csv

    repro = load_reproduction("pas")
    assert not {"data_path", "labelled_fraction"} & set(repro.experiment("digits").fields)
    galaxy, amazon = repro.experiment("paper_data_galaxy"), repro.experiment("paper_data_amazon")
    assert (galaxy.data_setting, amazon.data_setting) == ("galaxy_path", "amazon_path")
    assert galaxy.missing_data(galaxy.make_config("smoke")) and "amazon_path" not in galaxy.fields
    assert galaxy.fidelity_of("full").level == "paper" and galaxy.make_config("full").replicates * 10 == 200
    write_galaxy_csv(tmp_path / "g.csv", seed=3, bins=(1, 2, 3, 4, 5, 6), per_bin=30)
    cfg = galaxy.make_config("smoke", {"galaxy_path": str(tmp_path / "g.csv")})
    m = galaxy.run(cfg, seed=1)
    assert m["n_problems"] == 6 and all(np.isfinite(v) for v in m.values())
    # seed 1 runs the official trials 42 + 4 .. 42 + 7: the same MSEs by hand
    probs = load_galaxy_zoo(tmp_path / "g.csv")
    reps = [compound_mse(split_labelled_fraction(probs, 0.2, seed=42 + 4 + r), pas=cfg.pas) for r in range(4)]
    for k in ("pas", "classical", "pt", "shrinkage", "grand_mean"):
        assert m[f"mse_{k}"] == pytest.approx(np.mean([r[k] for r in reps]), rel=1e-12)
    best = min(m[f"mse_{k}"] for k in ("classical", "pt", "shrinkage", "grand_mean"))
    assert m["pas_over_best_baseline"] == pytest.approx(m["mse_pas"] / best)
    arrays = write_amazon_h5(tmp_path / "a.h5")
    m = amazon.run(amazon.make_config("smoke", {"amazon_path": str(tmp_path / "a.h5")}), seed=0)
    assert m["n_problems"] == len(arrays)
    with pytest.raises(ConfigError, match="galaxy_path"):
        galaxy.make_config("smoke", {"galaxy_path": str(tmp_path / "missing.csv")})
    with pytest.raises(ConfigError, match="amazon_path"):
        amazon.make_config("smoke", {"amazon_path": str(tmp_path / "g.csv")})  # a CSV is not the Amazon file
    with pytest.raises(ConfigError, match=r"pas\.variance"):
        galaxy.make_config("smoke", {"pas.variance": "shared"})
    twin = {c.id: c for c in repro.claims}
    for study in ("galaxy", "amazon"):
        c = twin[f"paper_data_{study}_pas_best"]
        assert (c.metric, c.op, c.threshold, c.resolution, c.fair_at) == ("pas_over_best_baseline", "<=", 1.0, 0.03,
                                                                          "paper")


def test_method_settings_are_one_nested_config_reached_by_dotted_keys(ragged):
    """PAS's settings are one :class:`PASConfig`, nested as ``pas`` in both experiments (no flat copy): a dotted
    override reaches the method, and a bad nested value raises ConfigError naming the dotted key."""
    from icml25.core.experiment import ConfigError
    from icml25.core.registry import load_reproduction

    repro = load_reproduction("pas")
    for name in ("synthetic", "digits"):
        exp = repro.experiment(name)
        cfg = exp.make_config("smoke", {"pas.variance": "per_problem", "pas.cutoff": 0.99})
        assert cfg.pas == PASConfig(variance="per_problem", cutoff=0.99)
        assert exp.make_config("smoke").pas == PASConfig()
        assert not {"variance", "cutoff", "clip_lambda", "share_var"} & set(exp.fields)
        with pytest.raises(ConfigError, match=r"pas\.cutoff"):
            exp.make_config("smoke", {"pas.cutoff": 1.0})
        with pytest.raises(ConfigError, match=r"pas\.share_var"):
            exp.make_config("smoke", {"pas.share_var": 1})
    # the override reaches the estimates: with pas.variance=per_problem, PAS is the per-problem variant
    exp = repro.experiment("digits")
    default = exp.run(exp.make_config("smoke"), seed=0)
    per_problem = exp.run(exp.make_config("smoke", {"pas.variance": "per_problem"}), seed=0)
    assert per_problem["mse_pas"] == per_problem["mse_pas_per_problem"] == default["mse_pas_per_problem"]
    assert default["mse_pas"] != default["mse_pas_per_problem"]
    # the config builds the estimator and the functional form with the same settings
    settings = PASConfig(variance="per_problem", clip_lambda=False, cutoff=0.9, share_var=True)
    assert settings.estimator().get_params() == dataclasses.asdict(settings)
    np.testing.assert_array_equal(
        pas_fit(*ragged, **dataclasses.asdict(settings)).theta,
        pas_fit(*ragged, clip_lambda=False, cutoff=0.9, share_var=True, variance="per_problem").theta)


# --- shrink to the grand mean (a baseline of the paper's tables) ----------------------------------------------


def test_grand_mean_sure_equals_the_official_form_and_is_unbiased():
    """Two independent forms of Xie-Kou-Brown's grand-mean SURE agree, and E[SURE] = E[loss] (Monte Carlo)."""
    rng = np.random.default_rng(6)
    m, reps = 20, 40_000
    A = rng.uniform(0.2, 2.0, m)
    theta = rng.normal(size=m)
    X = theta + np.sqrt(A) * rng.standard_normal((reps, m))  # independent unbiased estimates, known variances
    for omega in (0.3, 2.0):
        wj = omega / (A + omega)
        gbar = X.mean(axis=1, keepdims=True)
        official = np.sum((1 - wj) ** 2 * (gbar - X) ** 2 + (1 - wj) * (omega + (2 / m - 1) * A), axis=1)
        ours = np.array([grand_mean_sure(omega, x, A) for x in X[:50]])
        np.testing.assert_allclose(ours, official[:50], rtol=1e-10, atol=1e-12)
        loss = np.sum((wj * X + (1 - wj) * gbar - theta) ** 2, axis=1)
        diff = official - loss
        assert abs(diff.mean()) < 4 * diff.std(ddof=1) / np.sqrt(reps)


def test_shrink_to_grand_mean_minimises_its_sure(ragged):
    fit = pas_fit(*ragged, omega=np.inf)
    A, pt = fit.variances, fit.theta_pt
    est = shrink_to_grand_mean_pointestimate(*ragged)
    gbar = pt.mean()
    j = int(np.argmax(np.abs(pt - gbar)))
    w = (est[j] - gbar) / (pt[j] - gbar)  # the shrinkage weight of problem j, hence omega
    omega = w * A[j] / (1 - w)
    np.testing.assert_allclose(est, omega / (A + omega) * pt + A / (A + omega) * gbar, atol=1e-10)
    grid = np.linspace(0, 999 * A.max(), 200_001)
    assert grand_mean_sure(omega, pt, A) <= grand_mean_sure(grid, pt, A).min() + 1e-12
    with pytest.raises(ValueError, match="cutoff"):
        shrink_to_grand_mean_pointestimate(*ragged, cutoff=0.0)


# --- parity with the official code and the experiment's theory checks ------------------------------------------

def _official_fixture():
    """Inputs (ours, seeded) and the official code's outputs on them; see tests/fixtures/official/pas/PROVENANCE.md."""
    from pathlib import Path

    z = np.load(Path(__file__).parents[1] / "fixtures" / "official" / "pas" / "official_outputs.npz")
    cut_l, cut_u = np.cumsum(z["ns"])[:-1], np.cumsum(z["Ns"])[:-1]
    arrays = (np.split(z["y_labelled"], cut_l), np.split(z["pred_labelled"], cut_l),
              np.split(z["pred_unlabelled"], cut_u))
    return z, arrays


@pytest.mark.parametrize("tag", ["estimated", "known"])
def test_official_parity_pt_and_pas(tag):
    """The official get_pt_ppi_estimators / get_pas_estimators (share_var=False, cutoff 0.999) at commit e33e331.

    PT-PPI and lambda agree to round-off (1e-12). The official omega comes from a bounded Brent search; with omega
    fixed at it (recovered from its omega_j = omega/(A_j + omega) and our A_j, which must give one value) our PAS
    equals the official to 1e-12, and our own omega reaches a CURE no larger than the official one. Shrinkage-only
    agrees to 1e-5 (only the omega search differs)."""
    z, arrays = _official_fixture()
    known = (z["true_y_vars"], z["true_covs"], z["true_vars"]) if tag == "known" else None
    fit = pas_fit(*arrays, known_moments=known)
    np.testing.assert_allclose(fit.lambdas, z[f"{tag}_lambdas"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(fit.theta_pt, z[f"{tag}_pt"], rtol=0, atol=1e-12)
    om = z[f"{tag}_omegas"]
    omega_official = om * fit.variances / (1 - om)
    np.testing.assert_allclose(omega_official, omega_official[0], rtol=1e-9)
    at_official = pas_fit(*arrays, known_moments=known, omega=float(omega_official[0]))
    np.testing.assert_allclose(at_official.theta, z[f"{tag}_pas"], rtol=0, atol=1e-12)
    args = (fit.theta_pt, fit.prediction_mean, fit.variances, fit.lambdas, fit.variance_moments.var_f, fit.moments.N)
    assert cure(fit.omega, *args) <= cure(float(omega_official[0]), *args) + 1e-12
    np.testing.assert_allclose(fit.theta, z[f"{tag}_pas"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(shrinkage_only_pointestimate(*arrays, known_moments=known),
                               z[f"{tag}_shrinkage_only"], rtol=0, atol=1e-5)


def test_theory_checks_of_the_experiment_hold():
    """The synthetic experiment's checks on 60 seeded data sets (good predictor, the paper's m, n, N): CURE's relative
    bias at a fixed omega is near 0 (the correction removed gives about -0.18) and PT-PPI's MSE is within 5% of the
    smallest variance over lambda (lambda = n/(n+N) gives about 1.12)."""
    from icml25.papers.pas.data import CompoundMeanData
    from icml25.papers.pas.repro import theory_quantities

    rng = np.random.default_rng([0, 7])
    cures, losses, pt_mse, pt_min = [], [], [], []
    for _ in range(60):
        d = gaussian_synthetic(100, 20, 80, good_predictor=True, seed=int(rng.integers(2**63)))
        t = theory_quantities(d)
        cures.append(t["cure"])
        losses.append(t["loss"])
        pt_min.append(t["pt_min_variance"])
        pt_mse.append(np.mean((pt_ppi_mean_pointestimate(*d.arrays, known_moments=d.known_moments) - d.theta) ** 2))
    assert abs(np.mean(cures) - np.mean(losses)) / np.mean(losses) < 0.06
    assert np.mean(pt_mse) / np.mean(pt_min) < 1.05
    with pytest.raises(ValueError, match="true moments"):
        theory_quantities(CompoundMeanData(*gaussian_synthetic(5, 3, 4).arrays, theta=np.zeros(5)))
    # the method's settings reach the fit: unclipped lambdas change CURE and the loss on this draw, and the
    # default is PASConfig()'s
    d = gaussian_synthetic(100, 20, 80, good_predictor=False, seed=3)
    assert theory_quantities(d) == theory_quantities(d, PASConfig())
    unclipped = theory_quantities(d, PASConfig(clip_lambda=False))
    assert unclipped["loss"] != theory_quantities(d)["loss"]
