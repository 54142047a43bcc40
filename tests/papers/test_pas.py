"""PAS: special cases, agreement with ppi-python, CURE unbiasedness, bad input, smoke runs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError

from icml25.papers.pas import (
    PASEstimator,
    classical_mean_pointestimate,
    cure,
    gaussian_synthetic,
    gaussian_true_moments,
    pas_fit,
    pas_mean_pointestimate,
    power_tuning_lambdas,
    prediction_mean_pointestimate,
    problem_moments,
    pt_ppi_mean_pointestimate,
    pt_variance,
    shrinkage_only_pointestimate,
    vanilla_ppi_mean_pointestimate,
)


@pytest.fixture
def ragged():
    """Problems of different sizes, with a predictor that is informative but biased."""
    rng = np.random.default_rng(3)
    y, fl, fu = [], [], []
    for j in range(25):
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


def _xkb_sure_grid(y_mean, Z, A, grid):
    """Independent Xie-Kou-Brown SURE of shrinking y_mean towards Z, evaluated on a grid."""
    best, best_val = None, np.inf
    for omega in grid:
        b = A / (A + omega)
        val = np.sum(b**2 * (y_mean - Z) ** 2 + (1 - 2 * b) * A)
        if val < best_val:
            best, best_val = omega, val
    return best


def test_shrinkage_only_is_xie_kou_brown_sure(ragged):
    mom = problem_moments(*ragged)
    A = np.maximum(mom.var_y / mom.n, 1e-12)
    fit = pas_fit(*ragged, lam=0.0)
    upper = 999 * A.max()
    omega_grid = _xkb_sure_grid(mom.y_mean, mom.f_unlabelled_mean, A, np.linspace(0, upper, 200_001))
    assert fit.omega == pytest.approx(omega_grid, abs=upper / 200_000 * 2)
    weight_on_z = A / (A + omega_grid)
    np.testing.assert_allclose(shrinkage_only_pointestimate(*ragged), fit.theta)
    theta_grid = weight_on_z * mom.f_unlabelled_mean + (1 - weight_on_z) * mom.y_mean
    np.testing.assert_allclose(fit.theta, theta_grid, atol=1e-3)


def test_cure_minimiser_is_global(ragged):
    fit = pas_fit(*ragged)
    m = fit.moments
    grid = np.linspace(0, 999 * fit.variances.max(), 100_001)
    values = cure(grid, fit.theta_pt, fit.prediction_mean, fit.variances, fit.lambdas, m.var_f, m.N)
    at_fit = cure(fit.omega, fit.theta_pt, fit.prediction_mean, fit.variances, fit.lambdas, m.var_f, m.N)
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
    np.testing.assert_allclose(fit.variances, pt_variance(fit.moments, fit.lambdas))


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
    np.testing.assert_allclose(est.theta_, theta)
    np.testing.assert_allclose(est.omegas_, omegas)
    np.testing.assert_allclose(est.predict(["p03", "p00"]), theta[[3, 0]])
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
