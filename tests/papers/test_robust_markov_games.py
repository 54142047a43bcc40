"""Robust Markov games: TV-robust expectation against linprog, the exact robust CCE-gap evaluator against
brute force and closed forms, invariances, Robust-Q-FTRL convergence/self-consistency, bad input, smoke run.

The method's defining elements and the test that fails when each is removed or altered (each mutation tried once
on a scratch edit, issue 25):

1. TV-robust target via the dual (eq. 16), ``max_alpha {P[V]_alpha - sigma (alpha - min V)}``: dropping the sigma
   term -> ``test_tv_robust_matches_linprog_on_random_instances``.
2. Per-agent N-sample estimation of the fictitious (s, a_i) model: a_i fixed on its axis, a_-i ~ pi_-i(s) (drawing
   a_-i uniformly -> ``test_sampling_is_per_agent_from_its_fictitious_model``; not fixing a_i -> the same test).
3. Rescaled linear rate ``alpha_k = c log K / (k - 1 + c log K)`` (1/k instead ->
   ``test_step_sizes_and_mixture_weights``) and the averaging ``Q^k = (1 - alpha_k) Q^{k-1} + alpha_k q^k``
   (``Q = q`` instead -> ``test_ftrl_policies_follow_the_update_rule``).
4. Exponential weights ``pi^k ∝ exp(eta_k Q^{k-1})``, ``eta_k = sqrt(log A_i / (alpha_{k-1} H))`` (eta = 0 ->
   ``test_q_ftrl_converges_on_zero_sum_matrix_game``).
5. Output mixture and value estimate with weights ``alpha^K_k`` (last iterate instead ->
   ``test_variance_bonus_matches_its_formula``).
6. The variance bonus ``beta = c_b sqrt(log K / K (sum_k alpha^K_k Var + H))`` (variance term dropped ->
   ``test_variance_bonus_matches_its_formula``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from icml25.common.mdp import backward_induction
from icml25.papers.robust_markov_games import (
    CorrelatedPolicy,
    MarkovGame,
    RobustQFTRLConfig,
    estimate_joint_model,
    ftrl_step_sizes,
    mixture_weights,
    random_general_sum_game,
    robust_best_response_values,
    robust_cce_gap,
    robust_cce_gaps,
    robust_policy_values,
    robust_q_ftrl,
    tv_robust_expectation,
    tv_robust_expectation_batch,
)
from icml25.papers.robust_markov_games.repro import EXPERIMENTS, samples_to_target
from icml25.papers.robust_markov_games.robust_q_ftrl import _sampled_targets


def tv_primal_linprog(p, v, sigma):
    """min_x v.x s.t. x in simplex, ||x - p||_1 <= 2 sigma (auxiliary t >= |x - p|)."""
    S = len(p)
    eye = np.eye(S)
    c = np.concatenate([v, np.zeros(S)])
    A_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, S)), np.ones((1, S))]])
    b_ub = np.concatenate([p, -p, [2 * sigma]])
    A_eq = np.concatenate([np.ones(S), np.zeros(S)])[None]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0], bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


# --------------------------------------------------------------------------- TV-robust expectation

def test_tv_robust_matches_linprog_on_random_instances():
    rng = np.random.default_rng(0)
    for trial in range(40):
        S = int(rng.integers(2, 9))
        p = rng.dirichlet(np.ones(S) * rng.choice([0.3, 1.0, 5.0]))
        v = rng.normal(size=S) * 3
        if trial % 5 == 0:
            v[: S // 2] = v[0]  # ties
        sigma = float(rng.uniform(0, 1))
        assert tv_robust_expectation(p, v, sigma) == pytest.approx(tv_primal_linprog(p, v, sigma), abs=1e-8)


def test_tv_robust_closed_forms():
    rng = np.random.default_rng(1)
    p, v = rng.dirichlet(np.ones(6)), rng.random(6)
    assert tv_robust_expectation(p, v, 0.0) == pytest.approx(p @ v, abs=1e-12)
    assert tv_robust_expectation(p, v, 1.0) == pytest.approx(v.min(), abs=1e-12)
    # enough budget to move all other mass to the minimum: sigma >= 1 - p(argmin)
    assert tv_robust_expectation(p, v, 1 - p[np.argmin(v)] + 1e-9) == pytest.approx(v.min(), abs=1e-9)
    # two states: move sigma of the mass from the high state to the low one
    for q, sigma in [(0.3, 0.1), (0.3, 0.5), (0.9, 0.2)]:
        assert tv_robust_expectation([q, 1 - q], [0.0, 1.0], sigma) == pytest.approx(max(1 - q - sigma, 0.0))


def test_tv_robust_invariances_and_batch():
    rng = np.random.default_rng(2)
    p, v = rng.dirichlet(np.ones(5), size=(3, 4)), rng.normal(size=(3, 4, 5))
    sig = rng.uniform(0, 1, size=(3, 4))
    base = tv_robust_expectation_batch(p, v, sig)
    loop = np.array([[tv_robust_expectation(p[a, b], v[a, b], sig[a, b]) for b in range(4)] for a in range(3)])
    np.testing.assert_allclose(base, loop, atol=1e-12)
    np.testing.assert_allclose(tv_robust_expectation_batch(p, v + 2.5, sig), base + 2.5, atol=1e-12)
    np.testing.assert_allclose(tv_robust_expectation_batch(p, 3 * v, sig), 3 * base, atol=1e-12)
    perm = rng.permutation(5)
    np.testing.assert_allclose(tv_robust_expectation_batch(p[..., perm], v[..., perm], sig), base, atol=1e-12)
    values = [tv_robust_expectation(p[0, 0], v[0, 0], s) for s in np.linspace(0, 1, 11)]
    assert np.all(np.diff(values) <= 1e-12) and values[0] >= values[-1]


@pytest.mark.parametrize("p, v, sigma, match", [
    ([0.5, 0.6], [1.0, 2.0], 0.1, "not stochastic"),
    ([1.2, -0.2], [1.0, 2.0], 0.1, "negative"),
    ([0.5, 0.5], [1.0, 2.0, 3.0], 0.1, "same length"),
    ([0.5, 0.5], [1.0, 2.0], -0.1, "sigma"),
    ([0.5, 0.5], [1.0, 2.0], 1.5, "sigma"),
    ([0.5, 0.5], [1.0, np.nan], 0.1, "finite"),
])
def test_tv_robust_bad_input(p, v, sigma, match):
    with pytest.raises(ValueError, match=match):
        tv_robust_expectation(p, v, sigma)


def test_tv_robust_batch_bad_input():
    with pytest.raises(ValueError, match="axis of length"):
        tv_robust_expectation_batch(np.full((2, 3), 1 / 3), np.zeros((2, 4)), 0.1)
    with pytest.raises(ValueError, match="sigma"):
        tv_robust_expectation_batch(np.full((2, 3), 1 / 3), np.zeros((2, 3)), [0.1, 2.0])


# --------------------------------------------------------------------------- the game and its validation

def test_game_bad_input():
    game = random_general_sum_game(2, 2, 3, 2, seed=0)
    P, R = game.P.copy(), game.R.copy()
    bad = P.copy()
    bad[0, 0, 0, 0] *= 0.5
    with pytest.raises(ValueError, match="not stochastic"):
        MarkovGame(bad, R, 2)
    with pytest.raises(ValueError, match="R must have shape"):
        MarkovGame(P, R[:, :, :2], 2)
    with pytest.raises(ValueError, match="does not match"):
        MarkovGame(P, R, 3)
    with pytest.raises(ValueError, match="H must be >= 1"):
        MarkovGame(P, R, 0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        MarkovGame(P, R + 1.0, 2)
    for kwargs in ({"m": -1}, {"S": 0}, {"A": -2}, {"H": 0}, {"A": (2, -1)}, {"A": (2, 2, 2)}):
        args = {"m": 2, "A": 2, "S": 3, "H": 2, **kwargs}
        with pytest.raises(ValueError):
            random_general_sum_game(**args)
    with pytest.raises(ValueError, match="sigma"):
        robust_cce_gap(game, CorrelatedPolicy.product([np.full((2, 3, 2), 0.5)] * 2), 1.5)
    with pytest.raises(ValueError, match="shape"):
        robust_cce_gap(game, CorrelatedPolicy.product([np.full((2, 3, 2), 0.5)] * 3), 0.2)
    with pytest.raises(ValueError, match="K must be >= 1"):
        robust_q_ftrl(game, 0.2, 0, 5)
    with pytest.raises(ValueError, match="N must be >= 1"):
        robust_q_ftrl(game, 0.2, 5, -3)
    with pytest.raises(ValueError, match="n_per_entry"):
        estimate_joint_model(game, 0)


def test_sample_next_follows_P():
    game = random_general_sum_game(2, (2, 3), 4, 2, seed=3)
    rng = np.random.default_rng(0)
    draws = np.array([game.sample_next(1, 2, (1, 2), rng) for _ in range(20000)])
    freq = np.bincount(draws, minlength=4) / draws.size
    np.testing.assert_allclose(freq, game.P[1, 2, 1, 2], atol=0.015)
    est, n = estimate_joint_model(game, 4000, seed=1)
    assert n == 2 * 4 * 6 * 4000
    np.testing.assert_allclose(est.P, game.P, atol=0.04)


# --------------------------------------------------------------------------- the exact CCE-gap evaluator

def minimax_strategy(M):
    """Row player's maximin mixed strategy of the matrix game M (row maximises) by LP."""
    n_rows, n_cols = M.shape
    c = np.zeros(n_rows + 1)
    c[-1] = -1.0
    A_ub = np.hstack([-M.T, np.ones((n_cols, 1))])
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(n_cols), A_eq=[[1.0] * n_rows + [0.0]], b_eq=[1.0],
                  bounds=[(0, None)] * n_rows + [(None, None)], method="highs")
    return res.x[:-1]


def zero_sum_game(M, H=1, S=1, seed=0):
    """Agent 1 gets M, agent 2 gets 1 - M at every (h, s); transitions ignore the actions."""
    rng = np.random.default_rng(seed)
    base = rng.dirichlet(np.ones(S), size=(H, S))
    P = np.broadcast_to(base[:, :, None, None, :], (H, S, *M.shape, S)).copy()
    R = np.stack([np.broadcast_to(M, (H, S, *M.shape)), np.broadcast_to(1 - M, (H, S, *M.shape))])
    return MarkovGame(P, R, H)


@pytest.mark.parametrize("H, S, sigma", [(1, 1, 0.0), (3, 2, 0.4)])
def test_cce_gap_zero_at_minimax(H, S, sigma):
    M = np.random.default_rng(4).random((3, 3))
    game = zero_sum_game(M, H, S)
    x, y = minimax_strategy(M), minimax_strategy((1 - M).T)
    policy = CorrelatedPolicy.product([np.broadcast_to(x, (H, S, 3)), np.broadcast_to(y, (H, S, 3))])
    assert robust_cce_gap(game, policy, sigma) == pytest.approx(0.0, abs=1e-7)
    # a non-equilibrium has a positive gap
    other = CorrelatedPolicy.product([np.full((H, S, 3), 1 / 3), np.broadcast_to(y, (H, S, 3))])
    assert robust_cce_gap(game, other, sigma) > 1e-3


def test_cce_gap_closed_form_matching_pennies():
    M = np.array([[1.0, 0.0], [0.0, 1.0]])
    game = zero_sum_game(M)
    both_heads = CorrelatedPolicy.product([np.array([[[1.0, 0.0]]])] * 2)
    np.testing.assert_allclose(robust_cce_gaps(game, both_heads, 0.3), [0.0, 1.0], atol=1e-12)
    uniform = CorrelatedPolicy.product([np.full((1, 1, 2), 0.5)] * 2)
    assert robust_cce_gap(game, uniform, 0.3) == pytest.approx(0.0, abs=1e-12)


def brute_force_gaps(game, joint, sigma):
    """Independent evaluator: explicit loops, linprog for every robust expectation, and enumeration of all
    deterministic Markov deviations pi'_i (the others drawn from the marginal of the correlated policy)."""
    m, H, S, A = game.n_agents, game.horizon, game.n_states, game.n_actions
    joints = list(itertools.product(*[range(a) for a in A]))

    def evaluate(i, prob):  # prob(h, s, a) -> probability of joint action a; centers conditioned on a_i
        V = np.zeros((H + 1, S))
        for h in reversed(range(H)):
            for s in range(S):
                total = 0.0
                for ai in range(A[i]):
                    mass = sum(prob(h, s, a) for a in joints if a[i] == ai)
                    if mass <= 1e-15:
                        continue
                    r = sum(prob(h, s, a) * game.R[(i, h, s) + a] for a in joints if a[i] == ai) / mass
                    center = sum(prob(h, s, a) * game.P[(h, s) + a] for a in joints if a[i] == ai) / mass
                    total += mass * (r + tv_primal_linprog(center, V[h + 1], sigma))
                V[h, s] = total
        return V[0]

    gaps = []
    for i in range(m):
        own = evaluate(i, lambda h, s, a: joint[(h, s) + a])
        others = joint.sum(axis=2 + i)
        best = np.full(S, -np.inf)
        for dev in itertools.product(range(A[i]), repeat=H * S):
            dev = np.array(dev).reshape(H, S)

            def prob(h, s, a, dev=dev, i=i, others=others):
                rest = a[:i] + a[i + 1:]
                return float(a[i] == dev[h, s]) * others[(h, s) + rest]
            best = np.maximum(best, evaluate(i, prob))
        gaps.append((best - own).max())
    return np.array(gaps)


@pytest.mark.parametrize("sigma", [0.0, 0.3, 1.0])
def test_cce_gap_matches_brute_force(sigma):
    game = random_general_sum_game(2, (2, 3), 2, 2, seed=5)
    rng = np.random.default_rng(6)
    joint = rng.dirichlet(np.ones(6) * 0.7, size=(2, 2)).reshape(2, 2, 2, 3)
    joint[1, 0] = 0.0
    joint[1, 0, 1, 2] = 1.0  # a pure joint action: centers of unplayed actions must not matter
    policy = CorrelatedPolicy(joint)
    np.testing.assert_allclose(robust_cce_gaps(game, policy, sigma), brute_force_gaps(game, joint, sigma), atol=1e-7)


def test_single_agent_nonrobust_matches_backward_induction():
    game = random_general_sum_game(1, 3, 4, 3, seed=7)
    V = robust_best_response_values(game, CorrelatedPolicy.product([np.full((3, 4, 3), 1 / 3)]), 0.0)[0]
    P = np.moveaxis(game.P, 2, 1)           # (H, A, S, S)
    V_bi, _ = backward_induction(P, game.R[0])
    np.testing.assert_allclose(V, V_bi, atol=1e-12)
    # robustness can only lower the optimal value
    V_rob = robust_best_response_values(game, CorrelatedPolicy.product([np.full((3, 4, 3), 1 / 3)]), 0.3)[0]
    assert np.all(V_rob <= V + 1e-12) and np.any(V_rob < V - 1e-6)


def test_evaluator_invariances():
    game = random_general_sum_game(2, (2, 3), 3, 2, seed=8)
    joint = np.random.default_rng(9).dirichlet(np.ones(6), size=(2, 3)).reshape(2, 3, 2, 3)
    gaps = robust_cce_gaps(game, CorrelatedPolicy(joint), 0.25)
    # relabel the agents: the per-agent gaps swap
    swapped = MarkovGame(np.swapaxes(game.P, 2, 3), np.swapaxes(game.R[::-1], 3, 4), 2)
    np.testing.assert_allclose(robust_cce_gaps(swapped, CorrelatedPolicy(np.swapaxes(joint, 2, 3)), 0.25),
                               gaps[::-1], atol=1e-12)
    # affine rewards r -> 0.5 r + 0.25 halve the gaps (the TV operator is shift-equivariant and homogeneous)
    affine = MarkovGame(game.P, 0.5 * game.R + 0.25, 2)
    np.testing.assert_allclose(robust_cce_gaps(affine, CorrelatedPolicy(joint), 0.25), 0.5 * gaps, atol=1e-12)
    # relabel the states
    perm = np.array([2, 0, 1])
    P = game.P[:, perm][..., perm]
    relabelled = MarkovGame(P, game.R[:, :, perm], 2)
    np.testing.assert_allclose(robust_cce_gaps(relabelled, CorrelatedPolicy(joint[:, perm]), 0.25), gaps, atol=1e-12)


# --------------------------------------------------------------------------- Robust-Q-FTRL

def test_step_sizes_and_mixture_weights():
    alpha = ftrl_step_sizes(50, 1.0)
    lam = np.log(50)
    np.testing.assert_allclose(alpha, lam / (np.arange(50) + lam))
    w = mixture_weights(alpha)
    assert w.sum() == pytest.approx(1.0) and np.all(w >= 0)
    # alpha_k = 1/k gives uniform averaging
    np.testing.assert_allclose(mixture_weights(1.0 / np.arange(1, 11)), np.full(10, 0.1))


def test_q_ftrl_converges_on_zero_sum_matrix_game():
    M = np.random.default_rng(11).random((3, 3))
    game = zero_sum_game(M)
    assert robust_cce_gap(game, CorrelatedPolicy.product([np.full((1, 1, 3), 1 / 3)] * 2), 0.0) > 0.05
    gaps = [robust_cce_gap(game, robust_q_ftrl(game, 0.0, K, None), 0.0) for K in (5, 2000)]
    assert gaps[1] < 0.03 and gaps[1] < gaps[0] / 3
    sampled = robust_q_ftrl(game, 0.0, 2000, 50, seed=1)
    assert robust_cce_gap(game, sampled, 0.0) < 0.06
    assert sampled.n_samples == 1 * 1 * 2000 * 50 * 6


def test_robust_q_ftrl_self_consistency():
    """With large K and N the algorithm's value estimates match the exact robust values of its own output,
    and its output is an approximate robust CCE (much better than uniform play)."""
    game = random_general_sum_game(2, 2, 3, 2, seed=10)
    policy = robust_q_ftrl(game, 0.3, 400, 100, seed=0, c_bonus=0.0)  # no optimism: estimates vs exact values
    exact = robust_policy_values(game, policy, 0.3)
    assert np.abs(policy.value_estimates[:, 0] - exact[:, 0]).max() < 0.05
    assert policy.n_samples == 2 * 3 * 400 * 100 * 4
    uniform = CorrelatedPolicy.product([np.full((2, 3, 2), 0.5)] * 2)
    assert robust_cce_gap(game, policy, 0.3) < 0.5 * robust_cce_gap(game, uniform, 0.3)
    coarse = robust_q_ftrl(game, 0.3, 20, 2, seed=0, c_bonus=0.0)
    assert np.abs(coarse.value_estimates - robust_policy_values(game, coarse, 0.3)).max() > \
        np.abs(policy.value_estimates - exact).max()
    # with the default bonus the estimates are optimistic: above the exact robust values of the output
    optimistic = robust_q_ftrl(game, 0.3, 400, 100, seed=0)
    assert np.all(optimistic.value_estimates[:, 0] >= robust_policy_values(game, optimistic, 0.3)[:, 0] - 1e-9)


def test_variance_bonus_matches_its_formula():
    """H = 1, exact targets: q^k_i(a_i) = sum_{a_-i} pi^k_-i(a_-i) R_i(a_i, a_-i) recomputed from the returned
    per-round policies; V_hat = min{sum_k w_k <pi^k_i, q^k_i>
    + c sqrt(log K / K (sum_k w_k Var_pi^k_i(q^k_i) + H)), 1}."""
    M = np.random.default_rng(5).random((2, 3))
    game = MarkovGame(np.ones((1, 1, 2, 3, 1)), np.stack([M, 1 - M])[:, None, None], 1)
    K, c = 30, 0.7
    pol = robust_q_ftrl(game, 0.0, K, None, c_bonus=c)
    pi1, pi2 = pol.factors[0][0, 0], pol.factors[1][0, 0]  # (K, A_i)
    w = mixture_weights(ftrl_step_sizes(K))
    for i, (pi, q) in enumerate([(pi1, pi2 @ M.T), (pi2, pi1 @ (1 - M))]):  # q: (K, A_i)
        mean = (pi * q).sum(axis=1)
        var = (pi * (q - mean[:, None]) ** 2).sum(axis=1)
        expected = min(w @ mean + c * np.sqrt(np.log(K) / K * (w @ var + 1)), 1.0)
        assert pol.value_estimates[i, 0, 0] == pytest.approx(expected, rel=1e-12)
    assert robust_q_ftrl(game, 0.0, K, None, c_bonus=0.0).value_estimates[0, 0, 0] == pytest.approx(
        w @ (pi1 * (pi2 @ M.T)).sum(axis=1), rel=1e-12)


def test_ftrl_policies_follow_the_update_rule():
    """H = 1, exact targets: each returned round-k policy is exp(eta_k Q^{k-1}) normalised, with
    eta_k = sqrt(log A_i / (alpha_{k-1} H)) and Q^k = (1 - alpha_k) Q^{k-1} + alpha_k q^k the rescaled linear
    average of the targets q^k recomputed from the returned policies (steps 1 and 3 of the algorithm)."""
    M = np.random.default_rng(7).random((3, 2))
    game = MarkovGame(np.ones((1, 1, 3, 2, 1)), np.stack([M, 1 - M])[:, None, None], 1)
    K = 25
    pol = robust_q_ftrl(game, 0.0, K, None, c_bonus=0.0)
    alpha = ftrl_step_sizes(K)
    pis = [pol.factors[0][0, 0], pol.factors[1][0, 0]]                  # (K, A_i)
    Q = [np.zeros(3), np.zeros(2)]
    for k in range(K):
        for i, A in enumerate((3, 2)):
            eta = 0.0 if k == 0 else np.sqrt(np.log(A) / alpha[k - 1])
            logits = eta * Q[i]
            expected = np.exp(logits - logits.max())
            np.testing.assert_allclose(pis[i][k], expected / expected.sum(), rtol=1e-10, atol=1e-12)
        q = [M @ pis[1][k], pis[0][k] @ (1 - M)]                          # q^k_i(a_i) under pi^k_-i
        for i in range(2):
            Q[i] = (1 - alpha[k]) * Q[i] + alpha[k] * q[i]


def test_sampling_is_per_agent_from_its_fictitious_model():
    """s' encodes the joint action (s' = 2 a_1 + a_2), so agent i's empirical kernel P_hat_i(s, a_i, .) reveals
    the sampled a_-i: N draws per (s, a_i) with a_i fixed and a_-i ~ pi_-i(.|s); rewards averaged the same way."""
    S, N = 4, 20000
    P = np.zeros((1, S, 2, 2, S))
    for a1, a2 in itertools.product(range(2), range(2)):
        P[0, :, a1, a2, 2 * a1 + a2] = 1.0
    R = np.zeros((2, 1, S, 2, 2))
    R[0, 0, :, :, 1] = 1.0  # agent 1 is paid when a_2 = 1
    R[1, 0, :, 1, :] = 1.0  # agent 2 is paid when a_1 = 1
    game = MarkovGame(P, R, 1)
    rng = np.random.default_rng(0)
    pis = [rng.dirichlet(np.ones(2), size=S) for _ in range(2)]  # (S, 2) each
    v_next = np.zeros((2, S))
    v_next[0, [1, 3]] = 1.0  # value 1 where a_2 = 1
    v_next[1, [2, 3]] = 1.0  # value 1 where a_1 = 1
    q1, q2 = _sampled_targets(game, 0, pis, v_next, np.zeros(2), N, np.random.default_rng(1))
    tol = 5 * np.sqrt(0.25 / N)
    # agent 1: reward + next value both equal 1{a_2 = 1}, for either own action
    np.testing.assert_allclose(q1, 2 * np.repeat(pis[1][:, 1:2], 2, axis=1), atol=2 * tol)
    np.testing.assert_allclose(q2, 2 * np.repeat(pis[0][:, 1:2], 2, axis=1), atol=2 * tol)
    # the own action a_i is fixed on its axis, not drawn: a next value 1{a_i = 1} shows up exactly in q_i(s, 1)
    own = np.zeros((2, S))
    own[0, [2, 3]] = 1.0  # a_1 = 1
    own[1, [1, 3]] = 1.0  # a_2 = 1
    q1, q2 = _sampled_targets(game, 0, pis, own, np.zeros(2), N, np.random.default_rng(2))
    np.testing.assert_allclose(q1 - np.repeat(pis[1][:, 1:2], 2, axis=1), np.tile([0.0, 1.0], (S, 1)), atol=2 * tol)
    np.testing.assert_allclose(q2 - np.repeat(pis[0][:, 1:2], 2, axis=1), np.tile([0.0, 1.0], (S, 1)), atol=2 * tol)


# --------------------------------------------------------------------------- reproduction

def test_samples_to_target_interpolation():
    assert samples_to_target([10, 100], [0.5, 0.1], 0.3) == pytest.approx((np.sqrt(1000), False))
    assert samples_to_target([10, 100], [0.2, 0.1], 0.3) == (10.0, True)
    value, censored = samples_to_target([10, 100], [0.5, 0.4], 0.3)
    assert np.isnan(value) and not censored
    # budgets given out of order are read in order of cost
    assert samples_to_target([100, 10], [0.1, 0.5], 0.3) == pytest.approx((np.sqrt(1000), False))


def test_joint_model_coverage_fraction():
    """n_per_entry in (0, 1): ceil(n J) joint actions per (h, s) visited once (one-hot rows), the others get the
    pooled empirical kernel of the visited ones; n_samples counts the calls."""
    game = random_general_sum_game(3, 2, 4, 2, seed=3)  # J = 8
    model, n = estimate_joint_model(game, 0.25, seed=1)
    assert n == 2 * 4 * 2
    P = model.P_flat
    for h, s in itertools.product(range(2), range(4)):
        onehot = np.isclose(P[h, s].max(axis=-1), 1.0) & np.isclose(P[h, s].sum(axis=-1), 1.0)
        visited = P[h, s][onehot]
        assert 1 <= len(visited) <= 8
        pooled = P[h, s][~onehot]
        if len(pooled):
            np.testing.assert_allclose(pooled, np.broadcast_to(pooled[0], pooled.shape))
    # one draw per entry at n = 1 is the integer path; 2.0 is read as 2; 1.5 is neither
    assert estimate_joint_model(game, 1, seed=1)[1] == 2 * 4 * 8
    assert estimate_joint_model(game, 2.0, seed=1)[1] == 2 * 4 * 8 * 2
    with pytest.raises(ValueError, match="integer"):
        estimate_joint_model(game, 1.5)


@pytest.mark.parametrize("c_alpha", [0.0, -1.0, np.nan, np.inf, 1e308, 1.0e6 * 1.001, True, "1"])
def test_c_alpha_out_of_range_is_a_clear_error(c_alpha):
    """c log K beyond K makes alpha_k = 1 in every round (last-iterate play); near 1e308 it overflows to NaN."""
    with pytest.raises(ValueError, match="c_alpha"):
        ftrl_step_sizes(10, c_alpha)
    with pytest.raises(ValueError, match="c_alpha"):
        robust_q_ftrl(random_general_sum_game(2, 2, 2, 1, seed=0), 0.1, 3, 2, c_alpha=c_alpha)


def test_c_alpha_bound_in_the_experiment_config():
    from icml25.core.experiment import ConfigError

    with pytest.raises(ConfigError, match=r"rqftrl\.c_alpha"):
        EXPERIMENTS[0].make_config("smoke", {"rqftrl.c_alpha": 1e308})
    with pytest.raises(ConfigError, match=r"rqftrl\.c_alpha"):
        RobustQFTRLConfig(c_alpha=1e308)
    assert np.all(np.isfinite(ftrl_step_sizes(10**6, 1e6)))


def test_method_settings_are_one_nested_config_reached_by_dotted_keys():
    """Robust-Q-FTRL's settings are one :class:`RobustQFTRLConfig`, nested as ``rqftrl`` (no flat copy): the
    smoke preset's dotted ``rqftrl.N`` and a ``--set``-style override reach the algorithm, and a bad nested value
    raises ConfigError naming the dotted key."""
    from icml25.core.experiment import ConfigError

    exp = EXPERIMENTS[0]
    assert not {"N", "c_alpha", "c_bonus"} & set(exp.fields)
    assert exp.make_config("smoke").rqftrl == RobustQFTRLConfig(N=5)
    assert exp.make_config("quick").rqftrl == RobustQFTRLConfig()
    cfg = exp.make_config("smoke", {"rqftrl.N": 2, "rqftrl.c_alpha": 3.0, "rqftrl.c_bonus": 0.0})
    assert cfg.rqftrl == RobustQFTRLConfig(N=2, c_alpha=3.0, c_bonus=0.0)
    # each override reaches the algorithm's run (the games and seeds are the same)
    base = exp.run(exp.make_config("smoke"), seed=0)
    for key, value in (("rqftrl.N", 2), ("rqftrl.c_alpha", 3.0), ("rqftrl.c_bonus", 0.0)):
        out = exp.run(exp.make_config("smoke", {key: value}), seed=0)
        assert out["uniform_gap_m2"] == base["uniform_gap_m2"]
        assert out["rqftrl_gap_m2"] != base["rqftrl_gap_m2"], key
    for key, bad in (("rqftrl.N", 0), ("rqftrl.N", 2.5), ("rqftrl.c_alpha", 0.0), ("rqftrl.c_bonus", -1.0)):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            exp.make_config("smoke", {key: bad})


def test_smoke_run():
    exp = EXPERIMENTS[0]
    cfg = exp.make_config("smoke")
    out = exp.run(cfg, seed=0)
    H, S = cfg.horizon, cfg.n_states
    unmeasured = {"rqftrl": 0, "joint": 0}
    for m in cfg.agents:
        target = cfg.target_fraction * out[f"uniform_gap_m{m}"]  # relative to uniform play in the same game
        assert out[f"target_gap_m{m}"] == pytest.approx(target)
        gaps = out[f"rqftrl_gap_m{m}"]
        # K = 1 plays the uniform policy exactly
        assert gaps[0] == pytest.approx(out[f"uniform_gap_m{m}"], abs=1e-12)
        assert all(0 <= g <= H for g in gaps + out[f"joint_gap_m{m}"])
        # K = 1 plays uniform, whose gap is above the target, so Robust-Q-FTRL is never censored at K = 1
        assert gaps[0] > target and out[f"rqftrl_censored_m{m}"] == 0.0
        budgets = [H * S * K * cfg.rqftrl.N * m * cfg.n_actions for K in cfg.K_grid]
        stt = samples_to_target(budgets, gaps, target)
        np.testing.assert_equal(out[f"rqftrl_samples_to_target_m{m}"], stt[0])
        unmeasured["rqftrl"] += stt[1] or np.isnan(stt[0])
        J = cfg.n_actions ** m
        jb = [H * S * (int(np.ceil(n * J)) if n < 1 else J * n) for n in cfg.joint_n_grid]
        stt = samples_to_target(jb, out[f"joint_gap_m{m}"], target)
        np.testing.assert_equal(out[f"joint_samples_to_target_m{m}"], stt[0])
        assert out[f"joint_censored_m{m}"] == float(stt[1])
        unmeasured["joint"] += stt[1] or np.isnan(stt[0])
    assert out["rqftrl_unmeasured_count"] == unmeasured["rqftrl"]
    assert out["joint_unmeasured_count"] == unmeasured["joint"]
    lo, hi = min(cfg.agents), max(cfg.agents)
    np.testing.assert_allclose(out["rqftrl_samples_ratio_mmax_mmin"],
                               out[f"rqftrl_samples_to_target_m{hi}"] / out[f"rqftrl_samples_to_target_m{lo}"])
    assert out["gap_loglog_slope"] == pytest.approx(np.mean([out[f"rqftrl_loglog_slope_m{m}"] for m in cfg.agents]))
    assert out["rqftrl_gap_over_uniform"] == pytest.approx(
        np.mean([out[f"rqftrl_gap_m{m}"][-1] / out[f"uniform_gap_m{m}"] for m in cfg.agents]))
