"""Tests of sparse_glm_bnb: exact prox and dual bound against cvxpy, identities, special cases, BnB vs brute force.

The method's defining elements, and the test that failed first when each was altered (each mutation tried once on a
scratch copy of the package, run with the whole module; docs/papers/sparse_glm_bnb.md lists the outcomes):

1. The exact prox of the perspective regulariser G, computed in O(p log p) through the soft-threshold level nu
   (``perspective_prox``) -- ``test_prox_matches_cvxpy_socp`` (nu halved tried).
2. The conjugate G* (Huber-type term, top-k sum) behind the Fenchel dual bound --
   ``test_moreau_identity_and_fenchel_young`` (the Huber term's a^2/(4 lam2) changed to a^2/(2 lam2) tried).
3. FISTA's momentum on the composite problem -- ``test_restart_needs_fewer_iterations`` (momentum set to 0 tried).
4. The restart of the momentum when the objective rises -- ``test_restart_needs_fewer_iterations`` (restart removed
   tried).
5. Branch and bound: a node is pruned only when its dual bound reaches the incumbent (within gap_tol) --
   ``test_bnb_matches_bruteforce_squared`` (pruning at 0.9 x incumbent tried).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from icml25.papers.sparse_glm_bnb import (
    BnBConfig,
    FISTAConfig,
    SparseGLMBnB,
    breast_cancer_logistic,
    brute_force_best_subset,
    fenchel_lower_bound,
    perspective_conjugate,
    perspective_prox,
    perspective_value,
    ridge_coefficients,
    solve_perspective_relaxation,
    synthetic_sparse_regression,
)
from icml25.papers.sparse_glm_bnb.repro import EXPERIMENTS

TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}

PROX_CASES = [
    # p, k, M, lam2, rho, fixed_zero, fixed_one
    (8, 3, 1.0, 0.5, 1.0, (), ()),
    (10, 2, 0.4, 2.0, 0.3, (), ()),  # box binds
    (12, 4, 2.0, 0.0, 1.5, (), ()),  # lam2 = 0: indicator of box and l1 ball
    (9, 4, 1.5, 1.0, 0.7, (0, 5), (2,)),  # a branch-and-bound node
    (6, 6, 1.0, 0.3, 1.0, (), ()),  # k = p: plain ridge on the box
]


def _prox_objective(beta, v, rho, k, M, lam2, fz, fo):
    return 0.5 * np.sum((beta - v) ** 2) + rho * perspective_value(beta, k, M, lam2, fixed_zero=fz, fixed_one=fo)


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("case", PROX_CASES)
def test_prox_matches_cvxpy_socp(case):
    pytest.importorskip("cvxpy")
    from icml25.papers.sparse_glm_bnb import cvxpy_perspective_prox

    p, k, M, lam2, rho, fz, fo = case
    rng = np.random.default_rng(p)
    for _ in range(3):
        v = rng.normal(scale=2.0, size=p)
        ours = perspective_prox(v, rho, k, M, lam2, fixed_zero=fz, fixed_one=fo)
        ref = cvxpy_perspective_prox(v, rho, k, M, lam2, fixed_zero=fz, fixed_one=fo, **TIGHT)
        # Clarabel is itself only ~1e-5 accurate in beta where coordinates sit on the box
        assert np.max(np.abs(ours - ref)) < 1e-4
        # ours is never worse than the conic solver's answer (inf when Clarabel's point is slightly infeasible);
        # the prox objective is 1-strongly convex, so this also bounds the distance of ours to the optimum
        ours_obj = _prox_objective(ours, v, rho, k, M, lam2, fz, fo)
        ref_obj = _prox_objective(ref, v, rho, k, M, lam2, fz, fo)
        assert np.isfinite(ours_obj) and ours_obj <= ref_obj + 1e-10


def test_value_matches_explicit_minimisation_over_z():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    p, k, M, lam2 = 7, 3, 1.0, 0.8
    beta = rng.uniform(-1, 1, size=p) * np.array([1, 0.1, 0.9, 0.05, 0.3, 0.0, 0.7])
    z = cp.Variable(p)
    terms = [cp.quad_over_lin(beta[j], z[j]) for j in range(p)]
    prob = cp.Problem(cp.Minimize(lam2 * cp.sum(cp.hstack(terms))),
                      [cp.sum(z) <= k, z <= 1, z >= np.abs(beta) / M])
    prob.solve(solver="CLARABEL", **TIGHT)
    assert perspective_value(beta, k, M, lam2) == pytest.approx(prob.value, rel=1e-6)
    # outside the domain: a coordinate above M, or ||beta||_1 > k M
    assert perspective_value(np.full(p, 1.01), k, 1.0, lam2) == np.inf
    assert perspective_value(np.full(p, 0.5), 3, 0.5, lam2) == np.inf


@pytest.mark.parametrize("case", PROX_CASES)
def test_moreau_identity_and_fenchel_young(case):
    p, k, M, lam2, rho, fz, fo = case
    rng = np.random.default_rng(10 + p)
    v = rng.normal(scale=2.0, size=p)
    beta = perspective_prox(v, rho, k, M, lam2, fixed_zero=fz, fixed_one=fo)
    alpha = (v - beta) / rho  # Moreau: alpha = prox_{G*/rho}(v / rho), and alpha is a subgradient of G at beta
    kw = dict(fixed_zero=fz, fixed_one=fo)
    # Fenchel-Young equality at the subgradient pair
    lhs = perspective_value(beta, k, M, lam2, **kw) + perspective_conjugate(alpha, k, M, lam2, **kw)
    assert lhs == pytest.approx(alpha @ beta, rel=1e-9, abs=1e-9)

    # Moreau: alpha minimises 0.5||a - v/rho||^2 + G*(a)/rho (checked against random perturbations)
    def dual_prox_objective(a):
        return 0.5 * np.sum((a - v / rho) ** 2) + perspective_conjugate(a, k, M, lam2, **kw) / rho

    base = dual_prox_objective(alpha)
    for scale in (1e-1, 1e-3):
        for _ in range(50):
            assert dual_prox_objective(alpha + scale * rng.normal(size=p)) >= base - 1e-12
    # Fenchel-Young inequality on random pairs
    for _ in range(50):
        b = perspective_prox(rng.normal(scale=3, size=p), rho, k, M, lam2, **kw)  # a point in dom G
        a = rng.normal(scale=3, size=p)
        assert perspective_value(b, k, M, lam2, **kw) + perspective_conjugate(a, k, M, lam2, **kw) >= a @ b - 1e-9


def test_wrong_prox_is_detected_by_identity():
    # the Fenchel-Young equality fails for a plain ridge prox that ignores the budget (k binds here)
    v, rho, k, M, lam2 = np.array([3.0, 2.5, 2.0, 0.1]), 1.0, 1, 5.0, 0.5
    wrong = v / (1 + 2 * rho * lam2)
    alpha = (v - wrong) / rho
    gap = perspective_value(wrong, k, M, lam2) + perspective_conjugate(alpha, k, M, lam2) - alpha @ wrong
    assert gap > 1e-3


def test_prox_single_coordinate_closed_form():
    for v in (-3.0, -0.2, 0.0, 0.7, 5.0):
        out = perspective_prox(np.array([v]), 0.5, 1, 2.0, 1.5)
        assert out[0] == pytest.approx(np.clip(v / (1 + 2 * 0.5 * 1.5), -2.0, 2.0))


def _instance(n=80, p=15, k=3, seed=0):
    data = synthetic_sparse_regression(n, p, k, seed=seed)
    lam2 = 0.5
    M = 2 * float(np.max(np.abs(ridge_coefficients(data.X, data.y, lam2))))
    return data.X, data.y, k, lam2, M


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_relaxation_matches_cvxpy_and_bound_is_valid_every_iteration(loss):
    pytest.importorskip("cvxpy")
    from icml25.papers.sparse_glm_bnb import cvxpy_perspective_relaxation

    X, y, k, lam2, M = _instance()
    if loss == "logistic":
        y = np.where(y > np.median(y), 1.0, -1.0)
    for fz, fo in [((), ()), ((0, 7), (4,))]:
        ref = cvxpy_perspective_relaxation(X, y, k, lam2, M, loss, fixed_zero=fz, fixed_one=fo, **TIGHT)
        res = solve_perspective_relaxation(X, y, k, lam2, M, loss, fixed_zero=fz, fixed_one=fo, tol=1e-8)
        assert res.converged
        assert res.primal_value == pytest.approx(ref.value, rel=1e-6)
        assert np.all(res.history["lower_bound"] <= ref.value * (1 + 1e-8))
        assert res.lower_bound <= ref.value * (1 + 1e-8)
        assert np.all(res.beta[list(fz)] == 0)
        # the bound at an arbitrary point is valid too
        assert fenchel_lower_bound(X, y, np.zeros(X.shape[1]), k, lam2, M, loss, fz, fo) <= ref.value


def test_relaxation_bound_below_bruteforce_optimum():
    X, y, k, lam2, M = _instance(p=12)
    bf_value, _ = brute_force_best_subset(X, y, k, lam2, M)
    res = solve_perspective_relaxation(X, y, k, lam2, M)
    assert res.lower_bound <= res.primal_value * (1 + 1e-12)
    assert res.primal_value <= bf_value * (1 + 1e-9)


def test_ridge_closed_form_when_k_equals_p():
    X, y, _, lam2, _ = _instance(n=50, p=8)
    ridge = ridge_coefficients(X, y, lam2)
    res = solve_perspective_relaxation(X, y, X.shape[1], lam2, 1e3, tol=1e-12, max_iter=50000)
    assert np.allclose(res.beta, ridge, atol=1e-6)
    assert res.primal_value == pytest.approx(np.sum((y - X @ ridge) ** 2) + lam2 * ridge @ ridge, rel=1e-10)


def test_ridge_rejects_bad_penalty_and_lengths():
    X, y, _, _, _ = _instance(n=50, p=8)
    for lam2 in (-1e9, np.nan, np.inf):
        with pytest.raises(ValueError, match="lam2 must be a finite ridge weight >= 0"):
            ridge_coefficients(X, y, lam2)
    with pytest.raises(ValueError, match="y must have 50 entries"):
        ridge_coefficients(X, y[:-3], 0.1)
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        ridge_coefficients(X[0], y, 0.1)


def test_restart_needs_fewer_iterations():
    X, y, k, lam2, M = _instance(n=200, p=100, k=5, seed=2)
    fast = solve_perspective_relaxation(X, y, k, lam2, M, restart=True, tol=1e-7)
    slow = solve_perspective_relaxation(X, y, k, lam2, M, restart=False, tol=1e-7)
    assert fast.converged and fast.n_iter < slow.n_iter
    assert fast.primal_value == pytest.approx(slow.primal_value, rel=1e-6)


def test_cutoff_stops_early_with_a_bound_above_it():
    X, y, k, lam2, M = _instance()
    full = solve_perspective_relaxation(X, y, k, lam2, M, tol=1e-9)
    cutoff = full.lower_bound * 0.99
    res = solve_perspective_relaxation(X, y, k, lam2, M, tol=1e-9, cutoff=cutoff)
    assert res.stopped_by_cutoff and res.lower_bound >= cutoff and res.n_iter < full.n_iter


def test_bnb_matches_bruteforce_squared():
    X, y, k, lam2, M = _instance(n=60, p=14, k=3, seed=4)
    bf_value, bf_beta = brute_force_best_subset(X, y, k, lam2, M)
    model = SparseGLMBnB(k, lam2, M).fit(X, y)
    assert model.certified_ and model.gap_ <= 1e-4
    assert set(model.support_) == set(np.flatnonzero(bf_beta))
    assert model.upper_bound_ == pytest.approx(bf_value, rel=1e-6)
    assert model.lower_bound_ <= bf_value * (1 + 1e-9)
    assert np.count_nonzero(model.coef_) <= k and np.max(np.abs(model.coef_)) <= M
    assert model.predict(X).shape == (X.shape[0],)


def test_bnb_matches_bruteforce_logistic_breast_cancer():
    X, y = breast_cancer_logistic(0.3, seed=1)
    X = X[:, :15]
    k, lam2, M = 2, 1.0, 5.0
    bf_value, bf_beta = brute_force_best_subset(X, y, k, lam2, M, "logistic")
    model = SparseGLMBnB(k, lam2, M, "logistic").fit(X, y)
    assert model.certified_
    assert set(model.support_) == set(np.flatnonzero(bf_beta))
    assert model.upper_bound_ == pytest.approx(bf_value, rel=1e-6)
    assert set(np.unique(model.predict(X))) <= {-1.0, 1.0}
    assert np.mean(model.predict(X) == y) > 0.8


def test_bnb_time_limit_gives_valid_uncertified_bounds():
    X, y, k, lam2, M = _instance(n=60, p=14, k=3, seed=4)
    bf_value, _ = brute_force_best_subset(X, y, k, lam2, M)
    model = SparseGLMBnB(k, lam2, M, time_limit=0.0).fit(X, y)
    assert model.lower_bound_ <= bf_value <= model.upper_bound_ + 1e-9
    assert clone(model).get_params()["time_limit"] == 0.0


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(k=20), "k must satisfy"),
        (dict(k=0), "k must satisfy"),
        (dict(M=0.0), "M must be a positive"),
        (dict(M=-1.0), "M must be a positive"),
        (dict(lam2=-1.0), "lam2 must be"),
        (dict(loss="hinge"), "loss must be"),
    ],
)
def test_bad_hyperparameters_raise(change, message):
    X, y, k, lam2, M = _instance(n=30, p=10)
    params = dict(k=k, lam2=lam2, M=M, loss="squared") | change
    with pytest.raises(ValueError, match=message):
        SparseGLMBnB(**params).fit(X, y)
    with pytest.raises(ValueError, match=message):
        solve_perspective_relaxation(X, y, params["k"], params["lam2"], params["M"], params["loss"])


def test_bad_data_raises():
    X, y, k, lam2, M = _instance(n=30, p=10)
    with pytest.raises(ValueError, match=r"labels y in \{-1, \+1\}"):
        SparseGLMBnB(k, lam2, M, "logistic").fit(X, (y > 0).astype(float))
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN or infinite"):
        SparseGLMBnB(k, lam2, M).fit(bad, y)
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="X contains NaN or infinite"):
        solve_perspective_relaxation(bad, y, k, lam2, M)
    ybad = y.copy()
    ybad[3] = np.inf
    with pytest.raises(ValueError, match="y contains NaN or infinite"):
        SparseGLMBnB(k, lam2, M).fit(X, ybad)
    with pytest.raises(ValueError, match="1-D array"):
        SparseGLMBnB(k, lam2, M).fit(X, y[:-1])
    with pytest.raises(ValueError, match="M must be a positive"):
        perspective_prox(np.ones(3), 1.0, 1, 0.0, 1.0)
    with pytest.raises(ValueError, match="more than k"):
        solve_perspective_relaxation(X, y, 1, lam2, M, fixed_one=(0, 1))


def test_smoke_relaxation_experiment():
    exp = next(e for e in EXPERIMENTS if e.name == "relaxation")
    m = exp.run(exp.make_config("smoke"), seed=0)
    assert m["max_rel_err"] <= 1e-5
    assert m["max_lb_excess"] <= 1e-7
    assert m["max_restart_iter_ratio"] < 1.0
    assert m["speedup_largest_p"] > 0


def test_smoke_certification_experiment():
    exp = next(e for e in EXPERIMENTS if e.name == "certification")
    m = exp.run(exp.make_config("smoke"), seed=0)
    assert m["syn_certified_matches_bruteforce"] == 1.0
    assert m["bc_certified_matches_bruteforce"] == 1.0
    assert m["syn_subproblems_bruteforce"] == 220.0


def test_solver_settings_are_nested_configs_reached_by_dotted_keys():
    """The solvers' settings are one config each, nested in their experiment (``solver`` = :class:`FISTAConfig`
    in ``relaxation``, ``bnb`` = :class:`BnBConfig` in ``certification``), not flat copies: a dotted override
    reaches the method and a bad nested value raises ConfigError naming the dotted key."""
    from icml25.core.experiment import ConfigError

    relax = next(e for e in EXPERIMENTS if e.name == "relaxation")
    cert = next(e for e in EXPERIMENTS if e.name == "certification")
    assert relax.make_config("smoke").solver == FISTAConfig()
    assert relax.make_config("smoke", {"solver.tol": 1e-8, "solver.max_iter": 7}).solver == FISTAConfig(1e-8, 7)
    assert cert.make_config("smoke", {"bnb.gap_tol": 1e-3}).bnb == BnBConfig(gap_tol=1e-3)
    assert not {"tol", "max_iter"} & set(relax.fields) and not {"gap_tol", "time_limit"} & set(cert.fields)
    for exp, key, bad in ((relax, "solver.tol", 0.0), (relax, "solver.max_iter", 0), (cert, "bnb.gap_tol", -1.0),
                          (cert, "bnb.time_limit", 0.0), (cert, "bnb.max_iter", 2.5)):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            exp.make_config("smoke", {key: bad})
    # the override reaches the solver: FISTA capped at 7 iterations stops unconverged in both variants
    m = relax.run(relax.make_config("smoke", {"solver.max_iter": 7}), seed=0)
    assert m["p60_iters_restart"] == m["p60_iters_plain"] == 7 and m["p60_plain_converged"] == 0.0
    # BnBConfig builds the estimator with its settings and the instance's problem
    model = BnBConfig(gap_tol=1e-3, time_limit=5.0, max_iter=77).estimator(3, 0.5, 2.0, "logistic")
    assert model.get_params() == SparseGLMBnB(3, 0.5, 2.0, "logistic", gap_tol=1e-3, time_limit=5.0,
                                              max_iter=77).get_params()


def test_estimator_contract_defaults_score_and_unfitted():
    X, y, _, _, _ = _instance(n=60, p=20, k=2, seed=1)
    model = SparseGLMBnB(lam2=0.5, M=10.0).fit(X, y)
    assert model.k_ == 2 and model.support_.size <= 2 and model.n_features_in_ == 20  # k=None: max(1, p // 10)
    assert 1 <= model.n_iter_ <= model.max_iter
    assert model.score(X, y) == pytest.approx(1 - np.sum((y - X @ model.coef_) ** 2) / np.sum((y - y.mean()) ** 2))
    assert not hasattr(model, "decision_function")  # a regressor; the margin exists for the logistic loss
    labels = np.where(X[:, 0] + 0.3 * X[:, 5] > 0, 1.0, -1.0)
    clf = SparseGLMBnB(k=2, lam2=1.0, M=5.0, loss="logistic").fit(X, labels)
    np.testing.assert_array_equal(clf.decision_function(X), X @ clf.coef_)
    assert clf.score(X, labels) == np.mean(clf.predict(X) == labels)
    with pytest.raises(NotFittedError):
        SparseGLMBnB().predict(X)
    with pytest.raises(ValueError, match="tol must be"):
        solve_perspective_relaxation(X, y, 2, 0.5, 10.0, tol=-1.0)
    with pytest.raises(ValueError, match="max_iter must be"):
        SparseGLMBnB(max_iter=0).fit(X, y)


@settings(max_examples=20, deadline=None)
@given(st.floats(-0.99, 0.99), st.integers(1, 6))
def test_synthetic_design_is_valid_for_every_ar1_correlation(rho, k):
    data = synthetic_sparse_regression(30, 6, k, rho=rho, seed=0)
    assert np.all(np.isfinite(data.X)) and np.all(np.isfinite(data.y)) and data.support.size == k
