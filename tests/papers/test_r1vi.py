"""Tests of R1-VI / R1-QL (icml25.papers.r1vi) and a smoke run of its reproduction.

Defining elements of the method (each altered once on a scratch copy; the test that failed is named):

1. The rank-one (Sherman-Morrison) shift coefficient gamma/(1-gamma) in
   ``v+ = T v + gamma/(1-gamma) d^T (T v - v) 1`` -- mutation "coefficient gamma" caught by
   ``test_rank_one_chain_reaches_v_star_after_one_update``.
2. The shift weighs the Bellman residual ``T v - v`` by ``d`` (not ``T v``, and the shift is there at all) --
   mutation "no shift" (plain VI) caught by ``test_fewer_iterations_than_vi_on_garnet``; "d^T T v" caught by
   ``test_fixed_point_is_v_star_and_independent_solve``.
3. ``d`` is a power step of the greedy policy's chain, as a row vector ``d^T P^pi`` (``P^pi`` transposed) --
   mutation "P^pi d" caught by ``test_power_method_finds_stationary_distribution`` and
   ``test_power_steps_are_warm_started_on_the_greedy_chain``; "chain of a fixed policy instead of the greedy one"
   caught by ``test_power_steps_are_warm_started_on_the_greedy_chain``.
4. ``d`` is warm-started from ``d_{k-1}`` with ``d_0`` uniform -- mutation "restart from uniform every
   iteration" caught by ``test_power_steps_are_warm_started_on_the_greedy_chain``.
5. R1-QL: the same shift on the empirical operator, averaged with the step size, and ``d`` moved by one
   empirical power step of the greedy state-action chain -- mutations "no shift in R1-QL" caught by
   ``test_r1ql_beats_ql_and_converges``; "coefficient gamma in R1-QL" and "d never updated in R1-QL" caught by
   ``test_r1ql_unit_step_on_deterministic_mdp_equals_q_form_r1vi``.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.common import mdp
from icml25.papers.r1vi import power_step, r1_q_learning, r1_q_value_iteration, r1_value_iteration, repro


def optimum(P, r, gamma):
    v = mdp.policy_iteration(P, r, gamma).v
    return v, mdp.q_values(P, r, v, gamma)


def test_sherman_morrison_identity():
    rng = np.random.default_rng(0)
    for gamma in (0.0, 0.5, 0.99):
        d = rng.dirichlet(np.ones(7))
        ones = np.ones((7, 1))
        lhs = np.linalg.inv(np.eye(7) - gamma * ones @ d[None])
        rhs = np.eye(7) + gamma / (1 - gamma) * ones @ d[None]
        np.testing.assert_allclose(lhs, rhs, atol=1e-10)


def test_power_method_finds_stationary_distribution():
    P, r = mdp.garnet_mdp(20, 2, 5, seed=1)
    P_pi = mdp.policy_transitions(P, np.zeros(20, dtype=int))
    d = power_step(P_pi, np.full(20, 1 / 20), 2000)
    assert np.max(np.abs(d @ P_pi - d)) < 1e-10
    w, vecs = np.linalg.eig(P_pi.T)
    ref = np.real(vecs[:, np.argmin(np.abs(w - 1))])
    np.testing.assert_allclose(d, ref / ref.sum(), atol=1e-9)


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.99])
def test_fixed_point_is_v_star_and_independent_solve(gamma):
    P, r = mdp.garnet_mdp(40, 4, 5, seed=2)
    v_star, q_star = optimum(P, r, gamma)
    res = r1_value_iteration(P, r, gamma, tol=1e-10)
    assert res.converged and res.residuals[-1] <= 1e-10
    np.testing.assert_allclose(res.v, v_star, atol=1e-10 / (1 - gamma))
    n = 40
    v_pi = np.linalg.solve(np.eye(n) - gamma * P[res.policy, np.arange(n)], r[np.arange(n), res.policy])
    np.testing.assert_allclose(v_pi, v_star, atol=1e-8)
    qres = r1_q_value_iteration(P, r, gamma, tol=1e-10)
    np.testing.assert_allclose(qres.v, q_star, atol=1e-10 / (1 - gamma))
    np.testing.assert_array_equal(qres.policy, res.policy)


def test_single_state_is_solved_in_one_step():
    P = np.ones((2, 1, 1))
    r = np.array([[0.3, 2.0]])
    res = r1_value_iteration(P, r, 0.95, v0=[-7.0], tol=1e-12, power_steps=1)
    np.testing.assert_allclose(res.v, [2.0 / 0.05], rtol=1e-12)
    assert res.n_iter == 2  # one update, one Bellman application to certify it


def test_gamma_zero_gives_max_reward_after_one_step():
    P, r = mdp.garnet_mdp(10, 3, 3, seed=3)
    res = r1_value_iteration(P, r, 0.0, v0=np.arange(10.0), tol=1e-12)
    np.testing.assert_allclose(res.v, r.max(axis=1))
    assert res.n_iter == 2


def test_rank_one_chain_reaches_v_star_after_one_update():
    rng = np.random.default_rng(4)
    d = rng.dirichlet(np.ones(15))
    P = np.broadcast_to(d, (3, 15, 15)).copy()  # every row equals d: P_pi = 1 d^T for every pi
    r = rng.random((15, 3))
    v_star, _ = optimum(P, r, 0.99)
    res = r1_value_iteration(P, r, 0.99, v0=rng.normal(size=15), v_ref=v_star, power_steps=1, tol=1e-9)
    assert res.errors[0] > 1.0
    assert res.errors[1] < 1e-9 * np.abs(v_star).max()
    vi = mdp.value_iteration(P, r, 0.99, v_ref=v_star, max_iter=2)
    assert vi.errors[1] > 1.0  # VI is far from it after one step


def test_r1vi_is_vi_plus_constant_shift_with_same_policies():
    P, r = mdp.garnet_mdp(30, 4, 5, seed=5)
    v0 = np.random.default_rng(5).normal(size=30)
    for k in (1, 2, 5, 20):
        vi = mdp.value_iteration(P, r, 0.95, v0=v0, tol=1e-300, max_iter=k)
        r1 = r1_value_iteration(P, r, 0.95, v0=v0, tol=1e-300, max_iter=k)
        diff = r1.v - vi.v
        assert np.ptp(diff) < 1e-10
        np.testing.assert_array_equal(r1.policy, vi.policy)
    assert abs(diff[0]) > 1e-3  # the shift itself is not zero
    # and R1-VI is much closer to v* than VI after the same number of steps
    v_star, _ = optimum(P, r, 0.95)
    assert np.max(np.abs(r1.v - v_star)) < 0.1 * np.max(np.abs(vi.v - v_star))


def test_power_steps_are_warm_started_on_the_greedy_chain(monkeypatch):
    """Each iteration's power steps start from the previous d (d_0 uniform) on P^pi of the greedy policy of v_k."""
    from icml25.papers.r1vi import r1vi as module

    P, r = mdp.garnet_mdp(12, 3, 4, seed=12)
    calls, real = [], module._power_step

    def spy(P_pi, d, steps):
        out = real(P_pi, d, steps)
        calls.append((P_pi.copy(), d.copy(), out.copy()))
        return out

    monkeypatch.setattr(module, "_power_step", spy)
    n_iter = 6
    r1_value_iteration(P, r, 0.9, tol=1e-300, max_iter=n_iter + 1, power_steps=1)
    assert len(calls) == n_iter
    np.testing.assert_array_equal(calls[0][1], np.full(12, 1 / 12))
    for k, (P_pi, d_in, d_out) in enumerate(calls):
        if k:
            np.testing.assert_array_equal(d_in, calls[k - 1][2])  # warm start
        # the greedy policy of v_k equals VI's after k steps (constant-shift structure): an independent policy
        policy = mdp.value_iteration(P, r, 0.9, tol=1e-300, max_iter=k + 1).policy
        np.testing.assert_array_equal(P_pi, mdp.policy_transitions(P, policy))
        np.testing.assert_allclose(d_out, d_in @ P_pi / (d_in @ P_pi).sum(), rtol=1e-12)  # row vector d^T P^pi


def test_no_linear_solve_inside_r1vi(monkeypatch):
    P, r = mdp.garnet_mdp(20, 3, 4, seed=6)

    def forbidden(*args, **kwargs):
        raise AssertionError("R1-VI must not solve linear systems")

    monkeypatch.setattr(np.linalg, "solve", forbidden)
    monkeypatch.setattr(np.linalg, "inv", forbidden)
    assert r1_value_iteration(P, r, 0.9, tol=1e-8).converged
    assert r1_q_value_iteration(P, r, 0.9, tol=1e-8).converged


def test_fewer_iterations_than_vi_on_garnet():
    P, r = mdp.garnet_mdp(50, 4, 5, seed=7)
    assert r1_value_iteration(P, r, 0.99, tol=1e-6).n_iter < mdp.value_iteration(P, r, 0.99, tol=1e-6).n_iter / 5


def test_r1ql_minus_ql_is_constant_with_common_samples():
    P, r = mdp.garnet_mdp(12, 3, 4, seed=8)
    sampler = mdp.generative_model(P)
    for n_iter in (1, 10, 300):
        ql = mdp.q_learning(sampler, r, 0.9, n_iter, seed=3)
        r1 = r1_q_learning(sampler, r, 0.9, n_iter, seed=3)
        assert np.ptp(r1.q - ql.q) < 1e-9
        np.testing.assert_array_equal(r1.policy, ql.policy)


def test_r1ql_unit_step_on_deterministic_mdp_equals_q_form_r1vi():
    P, r = mdp.garnet_mdp(10, 3, 1, seed=9)  # deterministic: the sample is the model
    planned = r1_q_value_iteration(P, r, 0.9, tol=1e-300, max_iter=31, power_steps=1)
    learned = r1_q_learning(mdp.generative_model(P), r, 0.9, n_iter=30, step_size=1.0)
    np.testing.assert_allclose(learned.q, planned.v, atol=1e-9)


def test_r1ql_beats_ql_and_converges():
    P, r = mdp.garnet_mdp(15, 3, 5, seed=10)
    _, q_star = optimum(P, r, 0.9)
    sampler = mdp.generative_model(P)
    ql = mdp.q_learning(sampler, r, 0.9, 3000, seed=1, q_ref=q_star, log_every=3000)
    r1 = r1_q_learning(sampler, r, 0.9, 3000, seed=1, q_ref=q_star, log_every=3000)
    assert r1.errors[-1] < 0.1 * ql.errors[-1]
    assert r1.errors[-1] < 0.05 * np.abs(q_star).max()


@pytest.mark.parametrize("call, message", [
    (lambda P, r: r1_value_iteration(P + 0.1, r, 0.9), "not stochastic"),
    (lambda P, r: r1_value_iteration(P, r[:, :1], 0.9), "r must have shape"),
    (lambda P, r: r1_value_iteration(P, r, 1.0), r"gamma must be in \[0, 1\)"),
    (lambda P, r: r1_q_value_iteration(P, r, 1.5), r"gamma must be in \[0, 1\)"),
    (lambda P, r: r1_value_iteration(P, r, 0.9, power_steps=-1), "power_steps must be >= 0"),
    (lambda P, r: r1_value_iteration(P, r, 0.9, d0=-np.ones(6)), "d0 must be a non-negative"),
    (lambda P, r: r1_q_learning(mdp.generative_model(P), r, 0.9, n_iter=-1), "n_iter must be >= 0"),
    (lambda P, r: r1_q_learning(lambda rng: np.zeros((2, 2), int), r, 0.9, n_iter=3), "next states of shape"),
    (lambda P, r: r1_q_learning(mdp.generative_model(P), r, 0.9, n_iter=3, step_size="fast"), "step_size"),
])
def test_bad_input_raises_clear_errors(call, message):
    P, r = mdp.garnet_mdp(6, 2, 3, seed=11)
    with pytest.raises(ValueError, match=message):
        call(P, r)


def _experiment(name):
    return next(e for e in repro.EXPERIMENTS if e.name == name)


def test_smoke_planning_experiment():
    exp = _experiment("planning")
    m = exp.run(exp.make_config("smoke"), seed=0)
    for tag in ("g0p9", "g0p99"):
        assert m[f"{tag}_frac_r1_fewer_than_vi"] == 1.0
        assert m[f"{tag}_policy_agreement_r1_vi"] == 1.0
        assert m[f"{tag}_span_r1_minus_vi"] < 1e-12
        assert m[f"{tag}_speedup_vi_over_r1"] > 3.0
    # VI from v0 = 0 on rewards in [0, 1] needs about log(1e-6)/log(gamma) steps
    assert 100 <= m["g0p9_median_evals_vi"] <= 200
    assert 1000 <= m["g0p99_median_evals_vi"] <= 2000
    assert m["g0p99_median_evals_nesterov"] < m["g0p99_median_evals_vi"]


def test_smoke_learning_experiment():
    exp = _experiment("learning")
    m = exp.run(exp.make_config("smoke"), seed=0)
    assert 0.05 < m["error_ql"] < 1.0  # 1/k Q-learning is still far off after 1500 steps
    assert m["error_r1ql"] < m["error_ql"]
    assert m["r1ql_over_ql_error"] < 1.0 and m["r1ql_win_fraction"] == 1.0
    assert m["policy_agreement_r1ql_ql"] == 1.0


def test_claims_name_metrics_the_experiments_produce():
    names = {e.name for e in repro.EXPERIMENTS}
    planning = _experiment("planning").run(_experiment("planning").make_config("smoke", {"gammas": (0.99,),
                                                                                         "n_mdps": 1}), seed=1)
    for claim in repro.CLAIMS:
        assert claim.experiment in names
        if claim.experiment == "planning":
            assert claim.metric in planning


def test_api_example_runs(capsys):
    exec(compile(repro.API_EXAMPLE, "API_EXAMPLE", "exec"), {})
    assert "R1-VI" in capsys.readouterr().out


# ------------------------------------------------------------------ properties and bad input (hypothesis)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), steps=st.integers(0, 5), seed=st.integers(0, 2**32 - 1))
def test_power_step_keeps_a_distribution(n, steps, seed):
    rng = np.random.default_rng(seed)
    P_pi = rng.dirichlet(np.ones(n), size=n)
    d = rng.dirichlet(np.ones(n))
    out = power_step(P_pi, d, steps)
    assert out.shape == (n,) and np.all(out >= 0) and out.sum() == pytest.approx(1.0)
    if steps == 0:
        np.testing.assert_array_equal(out, d)


@settings(max_examples=30, deadline=None)
@given(bad=st.one_of(st.integers(-5, -1), st.integers(4, 9)))
def test_r1_q_learning_rejects_next_states_outside_the_state_space(bad):
    P, r = mdp.garnet_mdp(4, 2, 2, seed=0)
    sampler = lambda rng: np.full((4, 2), bad)  # noqa: E731
    with pytest.raises(ValueError, match="next states"):
        r1_q_learning(sampler, r, 0.9, 3)


def test_planning_config_rejects_out_of_range_discounts():
    from icml25.core.experiment import ConfigError

    exp = {e.name: e for e in repro.EXPERIMENTS}["planning"]
    for gammas in ((), (1.0,), (0.0,), (0.9, 1.5)):
        with pytest.raises(ConfigError, match="gammas"):
            exp.make_config("smoke", {"gammas": gammas})
