"""Tests of the shared tabular MDP toolkit (icml25.common.mdp)."""

import itertools

import numpy as np
import pytest

from icml25.common import mdp

SOLVERS = [mdp.value_iteration, mdp.policy_iteration, mdp.nesterov_value_iteration, mdp.anderson_value_iteration]


def brute_force_optimum(P, r, gamma):
    """v* as the elementwise max over the values of every deterministic policy (exact solves)."""
    n_actions, n_states = P.shape[0], P.shape[1]
    best = np.full(n_states, -np.inf)
    for policy in itertools.product(range(n_actions), repeat=n_states):
        policy = np.array(policy)
        P_pi = P[policy, np.arange(n_states)]
        v = np.linalg.solve(np.eye(n_states) - gamma * P_pi, r[np.arange(n_states), policy])
        best = np.maximum(best, v)
    return best


def test_garnet_shapes_rows_and_branching():
    P, r = mdp.garnet_mdp(20, 3, 4, seed=1)
    assert P.shape == (3, 20, 20) and r.shape == (20, 3)
    np.testing.assert_allclose(P.sum(axis=2), 1.0, atol=1e-12)
    assert np.all((P > 0).sum(axis=2) == 4)
    assert r.min() >= 0 and r.max() <= 1
    P2, r2 = mdp.garnet_mdp(20, 3, 4, seed=1)
    np.testing.assert_array_equal(P, P2)
    np.testing.assert_array_equal(r, r2)
    P3, _ = mdp.garnet_mdp(20, 3, 4, seed=2)
    assert not np.array_equal(P, P3)


def test_bellman_gamma_zero_is_max_reward():
    P, r = mdp.garnet_mdp(8, 3, 2, seed=0)
    Tv, policy = mdp.bellman_optimality(P, r, np.arange(8.0), 0.0)
    np.testing.assert_allclose(Tv, r.max(axis=1))
    np.testing.assert_array_equal(policy, r.argmax(axis=1))


def test_bellman_matches_explicit_loop():
    P, r = mdp.garnet_mdp(6, 3, 3, seed=3)
    v = np.random.default_rng(0).normal(size=6)
    Tv, policy = mdp.bellman_optimality(P, r, v, 0.7)
    q = np.array([[r[s, a] + 0.7 * sum(P[a, s, t] * v[t] for t in range(6)) for a in range(3)] for s in range(6)])
    np.testing.assert_allclose(Tv, q.max(axis=1))
    np.testing.assert_array_equal(policy, q.argmax(axis=1))


@pytest.mark.parametrize("solver", SOLVERS)
def test_single_state_closed_form(solver):
    P = np.ones((3, 1, 1))
    r = np.array([[0.2, 1.5, -1.0]])
    res = solver(P, r, 0.9, tol=1e-10)
    np.testing.assert_allclose(res.v, [1.5 / 0.1], atol=1e-8)
    assert res.policy.tolist() == [1]
    assert res.converged


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("gamma", [0.5, 0.95])
def test_solvers_agree_with_brute_force_and_linear_solve(solver, gamma):
    P, r = mdp.garnet_mdp(5, 2, 3, seed=4)
    v_bf = brute_force_optimum(P, r, gamma)
    res = solver(P, r, gamma, tol=1e-10)
    np.testing.assert_allclose(res.v, v_bf, atol=1e-8 / (1 - gamma))
    # the returned greedy policy's exact value (numpy solve) is v*
    n = P.shape[1]
    v_pi = np.linalg.solve(np.eye(n) - gamma * P[res.policy, np.arange(n)], r[np.arange(n), res.policy])
    np.testing.assert_allclose(v_pi, v_bf, atol=1e-8)


@pytest.mark.parametrize("solver", [mdp.value_iteration, mdp.nesterov_value_iteration, mdp.anderson_value_iteration])
def test_iterative_solvers_stop_on_residual_and_count(solver):
    P, r = mdp.garnet_mdp(40, 4, 5, seed=5)
    v_star = mdp.policy_iteration(P, r, 0.95).v
    res = solver(P, r, 0.95, tol=1e-7, v_ref=v_star)
    assert res.converged and res.residuals[-1] <= 1e-7 and np.all(res.residuals[:-1] > 1e-7)
    assert res.n_iter >= len(res.residuals) and res.evals[-1] <= res.n_iter
    assert np.max(np.abs(res.v - v_star)) <= 1e-7 / 0.05
    assert len(res.errors) == len(res.residuals)


def test_value_iteration_contracts_and_counts_one_per_iteration():
    P, r = mdp.garnet_mdp(30, 3, 5, seed=6)
    res = mdp.value_iteration(P, r, 0.9, tol=1e-9)
    assert res.n_iter == len(res.residuals)
    np.testing.assert_array_equal(res.evals, np.arange(1, res.n_iter + 1))
    assert np.all(res.residuals[1:] <= 0.9 * res.residuals[:-1] + 1e-12)
    capped = mdp.value_iteration(P, r, 0.9, tol=1e-9, max_iter=5)
    assert capped.n_iter == 5 and not capped.converged


def test_accelerated_baselines_beat_vi_at_high_gamma():
    P, r = mdp.garnet_mdp(50, 4, 5, seed=7)
    vi = mdp.value_iteration(P, r, 0.99, tol=1e-6)
    assert mdp.nesterov_value_iteration(P, r, 0.99, tol=1e-6).n_iter < vi.n_iter
    assert mdp.anderson_value_iteration(P, r, 0.99, tol=1e-6).n_iter < vi.n_iter


def test_invariances_reward_shift_scale_and_permutation():
    P, r = mdp.garnet_mdp(12, 3, 4, seed=8)
    gamma = 0.9
    base = mdp.policy_iteration(P, r, gamma)
    shifted = mdp.policy_iteration(P, r + 2.0, gamma)
    np.testing.assert_allclose(shifted.v, base.v + 2.0 / (1 - gamma), atol=1e-9)
    np.testing.assert_array_equal(shifted.policy, base.policy)
    scaled = mdp.value_iteration(P, 3.0 * r, gamma, tol=1e-10)
    np.testing.assert_allclose(scaled.v, 3.0 * base.v, atol=1e-8)
    perm = np.random.default_rng(0).permutation(12)
    Pp = P[:, perm][:, :, perm]
    permuted = mdp.policy_iteration(Pp, r[perm], gamma)
    np.testing.assert_allclose(permuted.v, base.v[perm], atol=1e-9)


def test_policy_iteration_matches_pymdptoolbox():
    toolbox = pytest.importorskip("mdptoolbox.mdp")
    P, r = mdp.garnet_mdp(30, 4, 5, seed=9)
    pi = toolbox.PolicyIteration(P, r, 0.9)
    pi.run()
    ours = mdp.policy_iteration(P, r, 0.9)
    np.testing.assert_allclose(np.asarray(pi.V), ours.v, atol=1e-8)
    np.testing.assert_array_equal(np.asarray(pi.policy), ours.policy)


def test_backward_induction_matches_policy_enumeration():
    P, r = mdp.garnet_mdp(2, 2, 2, seed=10)
    H = 3
    V, policy = mdp.backward_induction(P, r, horizon=H, terminal_value=[1.0, -1.0])
    assert V.shape == (H + 1, 2) and policy.shape == (H, 2)
    best = -np.inf * np.ones(2)
    for pols in itertools.product(itertools.product(range(2), repeat=2), repeat=H):
        value = np.array([1.0, -1.0])
        for t in reversed(range(H)):
            pol = np.array(pols[t])
            value = r[np.arange(2), pol] + P[pol, np.arange(2)] @ value
        best = np.maximum(best, value)
    np.testing.assert_allclose(V[0], best)
    # time-varying inputs: stacking the same P and r gives the same answer
    V2, _ = mdp.backward_induction(np.stack([P] * H), np.stack([r] * H), terminal_value=[1.0, -1.0])
    np.testing.assert_allclose(V2, V)
    V1, _ = mdp.backward_induction(P, r, horizon=1)
    np.testing.assert_allclose(V1[0], r.max(axis=1))


def test_generative_model_frequencies():
    P, _ = mdp.garnet_mdp(4, 2, 3, seed=11)
    sampler = mdp.generative_model(P)
    rng = np.random.default_rng(0)
    draws = np.stack([sampler(rng) for _ in range(20_000)])  # (n, S, A)
    freq = np.stack([(draws == s2).mean(axis=0) for s2 in range(4)], axis=-1)  # (S, A, S)
    np.testing.assert_allclose(freq, P.transpose(1, 0, 2), atol=0.02)


def test_q_learning_deterministic_unit_step_is_q_value_iteration():
    P, r = mdp.garnet_mdp(10, 3, 1, seed=12)  # deterministic transitions
    gamma = 0.8
    q_star = mdp.q_values(P, r, mdp.policy_iteration(P, r, gamma).v, gamma)
    res = mdp.q_learning(mdp.generative_model(P), r, gamma, n_iter=150, step_size=1.0, q_ref=q_star, log_every=10)
    np.testing.assert_allclose(res.q, q_star, atol=1e-10)
    assert np.all(np.diff(res.errors) <= 1e-12)


def test_q_learning_converges_on_stochastic_mdp():
    P, r = mdp.garnet_mdp(8, 2, 3, seed=13)
    gamma = 0.5
    q_star = mdp.q_values(P, r, mdp.policy_iteration(P, r, gamma).v, gamma)
    res = mdp.q_learning(mdp.generative_model(P), r, gamma, n_iter=5000, q_ref=q_star, log_every=500)
    assert res.errors[-1] < 0.05 * np.abs(q_star).max()
    assert res.errors[-1] < res.errors[0]


def test_tabular_env_passes_gymnasium_checker():
    pytest.importorskip("gymnasium")
    from gymnasium.utils.env_checker import check_env

    P, r = mdp.garnet_mdp(6, 2, 3, seed=14)
    env = mdp.TabularEnv(P, r, max_episode_steps=5)
    check_env(env, skip_render_check=True)
    s, _ = env.reset(seed=0)
    s2, reward, terminated, truncated, _ = env.step(1)
    assert reward == r[s, 1] and P[1, s, s2] > 0 and not terminated and not truncated
    for _ in range(4):
        *_, truncated, _ = env.step(0)
    assert truncated
    with pytest.raises(ValueError, match="not stochastic"):
        mdp.TabularEnv(P * 2, r)


@pytest.mark.parametrize("call, message", [
    (lambda P, r: mdp.value_iteration(P * 1.1, r, 0.9), "not stochastic"),
    (lambda P, r: mdp.value_iteration(np.where(P > 0, P, -0.0) - (P == 0) * 0.1, r, 0.9), "negative"),
    (lambda P, r: mdp.policy_iteration(P, r.T, 0.9), r"r must have shape \(S, A\)"),
    (lambda P, r: mdp.value_iteration(P[:, :, :3], r, 0.9), r"P must have shape \(A, S, S\)"),
    (lambda P, r: mdp.value_iteration(P, r, 1.0), r"gamma must be in \[0, 1\)"),
    (lambda P, r: mdp.nesterov_value_iteration(P, r, -0.1), r"gamma must be in \[0, 1\)"),
    (lambda P, r: mdp.value_iteration(P, r, 0.9, v0=np.zeros(3)), "v0 must have shape"),
    (lambda P, r: mdp.value_iteration(P, r, 0.9, max_iter=-1), "max_iter must be >= 1"),
    (lambda P, r: mdp.garnet_mdp(-3, 2, 1, 0), "n_states must be >= 1"),
    (lambda P, r: mdp.garnet_mdp(5, 2, 0, 0), "branching must be >= 1"),
    (lambda P, r: mdp.garnet_mdp(5, 2, 6, 0), "branching must be <= n_states"),
    (lambda P, r: mdp.q_learning(mdp.generative_model(P), r, 0.9, n_iter=-5), "n_iter must be >= 0"),
    (lambda P, r: mdp.backward_induction(P, r), "horizon is required"),
])
def test_bad_input_raises_clear_errors(call, message):
    P, r = mdp.garnet_mdp(5, 2, 2, seed=15)
    with pytest.raises(ValueError, match=message):
        call(P, r)


def test_policy_evaluation_is_the_bellman_fixed_point_of_the_policy():
    P, r = mdp.garnet_mdp(10, 3, 4, seed=16)
    policy = np.random.default_rng(1).integers(0, 3, size=10)
    v = mdp.policy_evaluation(P, r, policy, 0.9)
    P_pi, r_pi = mdp.policy_transitions(P, policy), mdp.policy_rewards(r, policy)
    np.testing.assert_allclose(v, r_pi + 0.9 * P_pi @ v, atol=1e-10)
    with pytest.raises(ValueError, match="policy actions"):
        mdp.policy_evaluation(P, r, policy + 3, 0.9)


def test_sparse_and_dense_paths_agree(monkeypatch):
    P, r = mdp.garnet_mdp(120, 3, 6, seed=17)  # 5% non-zeros: the CSR path
    assert not isinstance(mdp._transition_operator(P), np.ndarray)
    sparse = mdp.value_iteration(P, r, 0.95, tol=1e-9)
    monkeypatch.setattr(mdp, "SPARSE_DENSITY", 0.0)
    assert isinstance(mdp._transition_operator(P), np.ndarray)
    dense = mdp.value_iteration(P, r, 0.95, tol=1e-9)
    assert sparse.n_iter == dense.n_iter
    np.testing.assert_allclose(sparse.v, dense.v, atol=1e-12)
