"""UCBVI constants: closed-form bonuses (Azar, refined CH-I/BF-I of the authors' code, MVP), the authors'
environments, parity with the official code, exact DP vs mdptoolbox, optimism, MVP epochs, regret, bad input,
smoke runs.

Defining elements of the method (each altered once on a scratch copy of the package, the whole module run with -x;
the first test that failed is named):

1. Optimistic backward induction Q_h = min(Q^{k-1}_h, H, r_hat + P_hat V_{h+1} + b), Q = H on unvisited pairs --
   "no min with the previous episode's Q" caught by ``test_parity_with_official_agents``.
2. The bonus constants: CH c = 7 vs CH-I c = 2; BF (8, 14/3, 8, 1e4) vs BF-I (4, 7/3 over max(N - 1, 1), 4, 7056)
   -- "BF-I linear term over N", "BF-I c_var = 8" and "CH-I c = 7" caught by ``test_refined_bonuses_closed_form``.
3. The log terms: L = ln(5 S A K H) (delta = 1) and MVP's iota = ln(200 S A H^2 K^2 / delta) with delta = 1/K --
   "L with T = K" caught by ``test_log_term_and_ch_bonus_closed_form``; "MVP delta = 1" by
   ``test_mvp_iota_authors_log_term``.
4. N'_{h+1}(y) counts visits with an action taken (the final state is not counted) -- "count the final state"
   was caught by no test at first (the correction term is at its cap H^2 in every run), hence
   ``test_next_state_counts_leave_out_the_final_state``, which catches it.
5. MVP's doubling epochs on the total (s, a) count, estimates from the samples since the previous trigger, Q
   recomputed from scratch -- "epochs never reset" caught by ``test_parity_with_official_agents``; "min with the
   old Q" was caught by no test at first (MVP's Q rarely rises between refreshes), hence
   ``test_mvp_recomputes_q_from_scratch``, which catches it.
6. Ties to the lowest action index, and realised regret (V* minus the sampled return) -- "ties to the last index"
   caught by ``test_first_index_tie_breaking``; "the last step's reward left out of the return" by
   ``test_zero_bonus_true_model_gives_optimal_values_and_zero_regret``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.papers.ucbvi_constants import (
    MVP,
    UCBVI,
    TabularEpisodicMDP,
    Trajectory,
    bonus_bf,
    bonus_bf_refined,
    bonus_ch,
    bonus_ch_refined,
    bonus_mvp,
    greedy_policy,
    illustrative_mdp,
    log_term,
    mvp_iota,
    optimistic_backward_induction,
    random_episodic_mdp,
    riverswim,
    run_regret,
)
from icml25.papers.ucbvi_constants.repro import EXPERIMENTS


def _q_star(env: TabularEpisodicMDP) -> np.ndarray:
    """Q*_h(s, a) = r_h(s, a) + P_h(.|s, a) V*_{h+1}, shape (H, S, A)."""
    return np.stack([env.R[h] + np.einsum("ast,t->sa", env.P[h], env.V_star[h + 1]) for h in range(env.H)])


# --------------------------------------------------------------------------- closed forms

def test_log_term_and_ch_bonus_closed_form():
    L = log_term(S=3, A=2, T=100, delta=0.1)
    assert L == pytest.approx(math.log(30000.0))
    # the authors' L = ln(5 S A K H) is delta = 1, the default (T = K H = 20 * 5)
    assert log_term(3, 2, 100) == pytest.approx(math.log(5 * 3 * 2 * 20 * 5))
    assert UCBVI(3, 2, 5, K=20).L == pytest.approx(math.log(5 * 3 * 2 * 20 * 5))
    np.testing.assert_allclose(bonus_ch([4.0, 16.0], H=10, L=L), [7 * 10 * L / 2, 7 * 10 * L / 4])


def test_bf_bonus_closed_form():
    # one (s, a), two next states, V_{h+1} = (0, 2) under p = (1/2, 1/2): Var = 1
    p_hat = np.array([[[0.5, 0.5]], [[0.5, 0.5]]])  # (S=2, A=1, S=2)
    n, H, L = np.array([[100.0], [100.0]]), 2, 1.0
    b = bonus_bf(n, p_hat, np.array([0.0, 2.0]), np.array([1e6, 1e6]), H, L)
    capped = min(1e4 * H**3 * 2**2 * 1 * L**2 / 1e6, H**2)  # = 0.32
    expected = math.sqrt(8 * 1.0 / 100) + 14 / 3 * H * L / 100 + math.sqrt(8 * capped / 100)
    np.testing.assert_allclose(b, expected, rtol=1e-12)
    # a never-visited next state caps its correction term at H^2
    b0 = bonus_bf(n, p_hat, np.zeros(2), np.zeros(2), H, L)
    np.testing.assert_allclose(b0, 14 / 3 * H * L / 100 + math.sqrt(8 * H**2 / 100), rtol=1e-12)


def test_mvp_bonus_closed_form():
    p_hat = np.array([[[0.5, 0.5]], [[0.5, 0.5]]])
    b = bonus_mvp(np.full((2, 1), 4.0), p_hat, np.array([0.0, 2.0]), np.zeros((2, 1)), H=2, iota=1.0)
    np.testing.assert_allclose(b, 460 / 9 * math.sqrt(1 / 4) + 544 / 9 * 2 / 4, rtol=1e-12)
    b_r = bonus_mvp(np.full((2, 1), 4.0), p_hat, np.zeros(2), np.full((2, 1), 0.25), H=2, iota=1.0)
    np.testing.assert_allclose(b_r, 2 * math.sqrt(2) * math.sqrt(0.25 / 4) + 544 / 9 * 2 / 4, rtol=1e-12)


def _bf_by_hand(N, p, v, n_next, H, L, S, A, c_var, c_lin, c_corr, c_cap, off):
    """The BF / BF-I formula for one (s, a), written out with Python floats."""
    mean = sum(pi * vi for pi, vi in zip(p, v))
    var = sum(pi * (vi - mean) ** 2 for pi, vi in zip(p, v))
    corr = sum(pi * min(c_cap * H**3 * S**2 * A * L**2 / max(m, 1.0), H**2) for pi, m in zip(p, n_next))
    return math.sqrt(c_var * L * var / N) + c_lin * H * L / max(N - off, 1.0) + math.sqrt(c_corr * corr / N)


def test_refined_bonuses_closed_form():
    # CH-I: 2 H L / sqrt(N) (the refined constant; the authors' code runs 2 and 7)
    np.testing.assert_allclose(bonus_ch_refined([[4.0, 9.0]], H=5, L=2.0), [[2 * 5 * 2 / 2, 2 * 5 * 2 / 3]])
    # BF-I: 4, 7/3 over max(N - 1, 1), 4, 7056 = 84^2; N = 1 (denominator floored at 1), 2, 7
    p_hat = np.array([[[0.2, 0.8], [0.5, 0.5]], [[1.0, 0.0], [0.3, 0.7]]])
    n = np.array([[1.0, 2.0], [7.0, 3.0]])
    v, n_next, H, L = np.array([1.0, 3.0]), np.array([0.0, 1e9]), 4, 1.5
    got = bonus_bf_refined(n, p_hat, v, n_next, H, L)
    for s in range(2):
        for a in range(2):
            want = _bf_by_hand(n[s, a], p_hat[s, a], v, n_next, H, L, 2, 2, 4.0, 7 / 3, 4.0, 7056.0, 1.0)
            assert got[s, a] == pytest.approx(want, rel=1e-12)
    # Azar's BF on the same input, and the refined functions with Azar's constants give Azar's bonuses
    azar = bonus_bf(n, p_hat, v, n_next, H, L)
    want = [[_bf_by_hand(n[s, a], p_hat[s, a], v, n_next, H, L, 2, 2, 8.0, 14 / 3, 8.0, 1e4, 0.0) for a in range(2)]
            for s in range(2)]
    np.testing.assert_allclose(azar, want, rtol=1e-12)
    consts = {"c_var": 8.0, "c_lin": 14 / 3, "c_corr": 8.0, "c_cap": 1e4, "c_log": 5.0, "lin_offset": 0.0}
    np.testing.assert_allclose(bonus_bf_refined(n, p_hat, v, n_next, H, L, constants=consts), azar)
    np.testing.assert_allclose(bonus_ch_refined(n, 5, 2.0, constants={"c": 7.0, "c_log": 5.0}), bonus_ch(n, 5, 2.0))


def test_official_variance_quirk():
    """variance="official": the spread over next states of P_hat(y) V(y) (np.std(...)**2 in the authors' code)."""
    p_hat = np.array([[[0.2, 0.3, 0.5]], [[1.0, 0.0, 0.0]], [[0.1, 0.1, 0.8]]])
    v = np.array([1.0, 4.0, 2.0])
    n, n_next = np.full((3, 1), 5.0), np.full(3, 1e12)
    for s in range(3):
        prod = p_hat[s, 0] * v
        quirk = sum((x - prod.mean()) ** 2 for x in prod) / 3
        b = bonus_bf(n, p_hat, v, n_next, 2, 1.0, variance="official")[s, 0]
        rest = bonus_bf(n, p_hat, np.zeros(3), n_next, 2, 1.0)[s, 0]  # V = 0: no variance term
        assert b == pytest.approx(math.sqrt(8 * quirk / 5) + rest, rel=1e-12)


def test_mvp_iota_authors_log_term():
    # iota = ln(200 S A H^2 K^2 / delta) with the authors' delta = 1/K
    assert mvp_iota(3, 2, 5, 100) == pytest.approx(math.log(200 * 3 * 2 * 25 * 100**2 * 100))
    assert mvp_iota(3, 2, 5, 100, delta=0.5) == pytest.approx(math.log(200 * 3 * 2 * 25 * 100**2 * 2))
    assert MVP(3, 2, 5, K=100).iota == pytest.approx(mvp_iota(3, 2, 5, 100))


def test_first_index_tie_breaking():
    Q = np.array([[1.0, 1.0, 0.5], [0.0, 2.0, 2.0]])
    np.testing.assert_array_equal(greedy_policy(Q), [0, 1])
    assert np.all(UCBVI(3, 2, 4, K=10).policy == 0) and np.all(MVP(3, 2, 4, K=10).policy == 0)
    picks = {int(greedy_policy(Q, np.random.default_rng(i))[0]) for i in range(30)}
    assert picks == {0, 1}  # tie_break="random" is still available


# --------------------------------------------------------------------------- exact DP

def test_riverswim_short_horizon_closed_form():
    # the right end is out of reach in 3 steps from the left end: best is "left" three times
    env = riverswim(6, H=3)
    assert env.optimal_value == pytest.approx(3 * 0.005 / 0.3)
    assert np.all(env.pi_star[:, 0] == 0)


def test_riverswim_is_the_authors():
    """Transition table of the authors' RiverSwim, entry by entry (S = 10): 0.3 right / 0.6 stay / 0.1 left."""
    env = riverswim()
    assert (env.n_states, env.n_actions, env.H) == (10, 2, 25)
    P = env.P[0]  # (A, S, S)
    for s in range(10):
        assert P[0, s, max(s - 1, 0)] == 1.0
    assert (P[1, 0, 0], P[1, 0, 1]) == (0.7, 0.3)
    assert (P[1, 9, 8], P[1, 9, 9]) == (0.7, 0.3)
    for s in range(1, 9):
        assert (P[1, s, s - 1], P[1, s, s], P[1, s, s + 1]) == (0.1, 0.6, 0.3)
    R = env.R[0]
    assert R[0, 0] == pytest.approx(0.005 / 0.3) and R[9, 1] == 1.0 and np.count_nonzero(R) == 2


# --------------------------------------------------------------------------- parity with the official code

FIXTURES = Path(__file__).parents[1] / "fixtures" / "official" / "ucbvi_constants"
"""Outputs of marcomussi/position_constants@3434b55 on fixed data (see PROVENANCE.md there)."""
OFFICIAL = {"BF": "bf", "BFI": "bf_refined", "CH": "ch_refined", "CHI": "ch", "MVP": "mvp"}
"""Official run label -> our agent. The official "CH" (improved=False) runs c = 2 and "CHI" c = 7 (doc: "CH-I: 2
or 7?"); every other label maps by name."""
PARITY_CASES = [("tiny_s2a2h3_trial1", 3), ("illustrative_s3a3h5_trial0", 5), ("riverswim_s10h25", 25)]
PARITY_ATOL = 1e-6
"""Q <= H <= 25 in float64, summed in another order than the official loops. The Bernstein bonuses take the square
root of a variance that can be ~0, which turns its round-off (~1e-16 H^2) into up to c1 sqrt(iota 1e-16 H^2 / n)
~ 1e-6 (8e-8 seen for MVP, 1e-14 for UCBVI); a wrong constant or count moves Q by more than 1e-3 here."""


def _official(case: str) -> dict:
    with np.load(FIXTURES / f"{case}.npz") as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize("case, H", PARITY_CASES)
def test_environments_equal_the_official_ones(case, H):
    z = _official(case)
    S, A = z["R"].shape
    env = riverswim(S, H) if case.startswith("riverswim") else illustrative_mdp(S, A, H, seed=int(case[-1]))
    np.testing.assert_allclose(env.P[0], z["P"].transpose(1, 0, 2), rtol=0, atol=1e-15)
    np.testing.assert_allclose(env.R[0], z["R"], rtol=0, atol=1e-15)


@pytest.mark.parametrize("case, H", PARITY_CASES)
def test_parity_with_official_agents(case, H):
    """Fed the official run's data, our agents (variance="official") hold the official Q at every checkpoint
    and pick the official greedy action at every step (ties to the lowest index)."""
    z = _official(case)
    R, K = z["R"], int(z["K"])
    S, A = R.shape
    for label, ours in OFFICIAL.items():
        if f"{label}_states" not in z:
            continue
        agent = (MVP(S, A, H, K, variance="official") if ours == "mvp"
                 else UCBVI(S, A, H, K, bonus=ours, variance="official"))
        states, actions, greedy = z[f"{label}_states"], z[f"{label}_actions"], z[f"{label}_greedy"]
        checkpoints = {int(k): i for i, k in enumerate(z[f"{label}_q_episodes"])}
        below_cap = 0
        for k in range(K):
            if k in checkpoints:
                q = z[f"{label}_q"][checkpoints[k]]  # (S, A, H)
                np.testing.assert_allclose(agent.Q.transpose(1, 2, 0), q, rtol=0, atol=PARITY_ATOL,
                                           err_msg=f"{case} {label} episode {k}")
                below_cap = int((q < H).sum())
            played = [agent.act(h, int(states[k, h])) for h in range(H)]
            np.testing.assert_array_equal(played, greedy[k], err_msg=f"{case} {label} episode {k}")
            agent.update(Trajectory(states[k].copy(), actions[k].copy(), R[states[k, :-1], actions[k]]))
        # the tiny case has enough data per pair for every agent's bonus to bite (Q below the cap H somewhere);
        # in the others, CH (c = 7) and MVP are still at the cap there, and only the greedy ties are compared
        assert below_cap > 0 or not case.startswith("tiny"), f"{case} {label}: every Q at the cap H"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_backward_induction_matches_mdptoolbox(seed):
    mdptoolbox = pytest.importorskip("mdptoolbox.mdp")
    env = random_episodic_mdp(S=7, A=3, H=6, seed=seed)
    fh = mdptoolbox.FiniteHorizon(env.P[0], env.R[0], 1.0, env.H)
    fh.run()
    np.testing.assert_allclose(env.V_star.T, fh.V, atol=1e-10)  # fh.V is (S, H + 1)


def test_zero_bonus_true_model_gives_optimal_values_and_zero_regret():
    env = random_episodic_mdp(S=6, A=3, H=5, seed=4)
    visited = np.ones((env.n_states, env.n_actions), dtype=bool)
    visited = np.broadcast_to(visited, (env.H, *visited.shape))
    Q = optimistic_backward_induction(env.P.transpose(0, 2, 1, 3), env.R, visited, env.H, lambda h, var: 0.0)
    np.testing.assert_allclose(Q.max(axis=2), env.V_star[:-1], atol=1e-12)

    class Oracle:  # plans once with the true model and no bonus, never learns
        policy = np.argmax(Q, axis=2)

        def act(self, h, s):
            return int(self.policy[h, s])

        def update(self, trajectory):
            pass

    regret = run_regret(env, Oracle(), K=50, seed=0, regret="expected")
    assert np.all(np.abs(regret) <= 1e-10)
    # realised regret: V* minus the sampled return, zero on average for the optimal policy
    realised = np.diff(np.concatenate([[0.0], run_regret(env, Oracle(), K=3000, seed=1)]))
    assert abs(realised.mean()) < 4 * realised.std() / math.sqrt(3000)
    assert realised.max() <= env.optimal_value + 1e-12 and realised.min() >= env.optimal_value - env.H


# --------------------------------------------------------------------------- optimism and planning

def _fill_counts(agent, env, n_per_pair, rng):
    """Give a UCBVI agent ``n_per_pair`` samples of every (s, a) from the true (stationary) model."""
    S, A = env.n_states, env.n_actions
    agent.n_sas[:] = np.stack([[rng.multinomial(n_per_pair, env.P[0, a, s]) for a in range(A)] for s in range(S)])
    agent.r_sum[:] = n_per_pair * env.R[0]
    agent.n_step_state[:] = n_per_pair
    agent.Q[:] = env.H


@pytest.mark.parametrize("bonus", ["ch", "bf"])
def test_ucbvi_is_optimistic_and_informative(bonus):
    env = random_episodic_mdp(S=4, A=2, H=3, seed=1)
    q_star = _q_star(env)
    for seed in range(10):
        rng = np.random.default_rng(seed)
        agent = UCBVI(4, 2, 3, K=1000, bonus=bonus, seed=seed)
        _fill_counts(agent, env, 10**6, rng)
        agent.plan()
        assert np.all(agent.Q >= q_star - 1e-12), f"optimism violated (seed {seed})"
        assert agent.Q[0].min() < env.H  # the bound is not the trivial Q = H
    # with the bonus scaled to 0 and this much data, Q is within sampling error of Q*
    agent = UCBVI(4, 2, 3, K=1000, bonus=bonus, bonus_scale=0.0, seed=0)
    _fill_counts(agent, env, 10**6, np.random.default_rng(0))
    agent.plan()
    np.testing.assert_allclose(agent.Q, q_star, atol=0.02)


def test_mvp_is_optimistic_and_informative():
    env = random_episodic_mdp(S=4, A=2, H=3, seed=1)
    q_star = _q_star(env)
    agent = MVP(4, 2, 3, K=1000, seed=0)
    rng = np.random.default_rng(0)
    n = 10**7
    agent.n_hat[:] = n
    agent.p_hat[:] = np.array([[rng.multinomial(n, env.P[0, a, s]) / n for a in range(2)] for s in range(4)])
    agent.r_hat[:] = env.R[0]
    agent.plan()
    assert np.all(agent.Q >= q_star - 1e-12)
    assert agent.Q[0].min() < env.H


def test_fast_planning_equals_reference_bonus_functions():
    """The vectorised plan() uses exactly the public bonus functions (reference loop below)."""
    env = riverswim(5, H=6)
    for bonus, variance in (("ch", "weighted"), ("bf", "weighted"), ("bf_refined", "weighted"),
                            ("bf_refined", "official")):
        agent = UCBVI(5, 2, 6, K=400, bonus=bonus, bonus_scale=0.02, seed=3, variance=variance)
        run_regret(env, agent, K=60, seed=3)
        q_prev = agent.Q.copy()
        agent.plan()
        n = agent.n_sa
        nn = np.maximum(n, 1)
        p_hat, r_hat = agent.n_sas / nn[..., None], agent.r_sum / nn
        V, Q = np.zeros(5), np.empty_like(q_prev)
        for h in range(5, -1, -1):
            q = np.minimum(np.minimum(r_hat + p_hat @ V + agent.bonus_values(h, V), 6.0), q_prev[h])
            Q[h] = np.where(n > 0, q, 6.0)
            V = Q[h].max(axis=1)
        np.testing.assert_allclose(agent.Q, Q, rtol=1e-12, atol=1e-12)


def test_next_state_counts_leave_out_the_final_state():
    """N'_h(y) counts the visits of y at step h at which an action was taken (the authors' Nxah summed over actions):
    the final state of an episode (step H) is not counted. In every run here the correction term is at its cap H^2
    (c_cap H^3 S^2 A L^2 / N' is far above H^2), so only this direct count can see the rule."""
    agent = UCBVI(3, 2, 4, K=10, bonus="bf")
    states = np.array([0, 1, 1, 2, 0])
    agent.update(Trajectory(states, np.array([1, 0, 1, 1]), np.zeros(4)))
    agent.update(Trajectory(np.array([0, 2, 2, 1, 1]), np.array([0, 0, 1, 0]), np.zeros(4)))
    want = np.zeros((5, 3))
    for traj in (states, np.array([0, 2, 2, 1, 1])):
        for h in range(4):
            want[h, traj[h]] += 1
    np.testing.assert_array_equal(agent.n_step_state, want)
    assert agent.n_step_state[4].sum() == 0


def test_mvp_recomputes_q_from_scratch():
    """At a refresh MVP plans from scratch (no min with its previous Q, unlike UCBVI), as the authors' MVP does;
    UCBVI keeps the min. The parity fixtures cannot see this: MVP's Q rarely rises between refreshes there."""
    env = riverswim(4, H=5)
    mvp, ucbvi = MVP(4, 2, 5, K=100), UCBVI(4, 2, 5, K=100, bonus="bf")
    for agent in (mvp, ucbvi):
        run_regret(env, agent, K=40, seed=0)
        agent.plan()
        fresh = agent.Q.copy()
        agent.Q[:] = 0.0  # a previous Q below every fresh value
        agent.plan()
        if agent is mvp:
            np.testing.assert_array_equal(agent.Q, fresh)
        else:  # visited pairs keep the min with the previous Q; unvisited ones are H
            visited = agent.n_sa > 0
            assert visited.any() and np.all(agent.Q[:, visited] == 0.0) and np.all(agent.Q[:, ~visited] == 5.0)


def test_mvp_pooled_doubling_epochs_brute_force():
    """MVP (as the authors run it): per (s, a) pooled over steps; at total counts 1, 2, 4, ... N and P_hat become
    those of the samples since the previous such point. Checked against a replay of all transitions."""
    env = riverswim(4, H=5)
    agent = MVP(4, 2, 5, K=100, seed=0)
    run_regret(env, agent, K=60, seed=2)
    # replay: run the same episodes again and record every transition in order
    agent2 = MVP(4, 2, 5, K=100, seed=0)
    log: dict[tuple[int, int], list[int]] = {}
    orig_update = agent2.update

    def update(traj):
        for h in range(5):
            log.setdefault((int(traj.states[h]), int(traj.actions[h])), []).append(int(traj.states[h + 1]))
        orig_update(traj)

    agent2.update = update
    run_regret(env, agent2, K=60, seed=2)
    np.testing.assert_array_equal(agent2.Q, agent.Q)
    for (s, a), nexts in log.items():
        n = len(nexts)
        assert agent.n_total[s, a] == n
        p = 1 << (n.bit_length() - 1)  # last trigger: the largest power of two <= n
        epoch = nexts[p // 2:p] if p > 1 else nexts[:1]
        assert agent.n_hat[s, a] == len(epoch)
        np.testing.assert_allclose(agent.p_hat[s, a], np.bincount(epoch, minlength=4) / len(epoch))


# --------------------------------------------------------------------------- regret and invariances

def test_regret_monotone_and_bounded():
    env = riverswim(6, H=20)
    cum = run_regret(env, UCBVI(6, 2, 20, K=150, bonus="bf", seed=1), K=150, seed=1, regret="expected")
    per = np.diff(np.concatenate([[0.0], cum]))
    assert np.all(per >= -1e-12) and np.all(per <= env.H)
    assert np.all(np.diff(cum) >= -1e-12)
    # realised regret per episode lies in [V* - H, V*] (rewards in [0, 1])
    per = np.diff(np.concatenate([[0.0], run_regret(env, UCBVI(6, 2, 20, K=150, bonus="bf_refined"), K=150)]))
    assert np.all(per <= env.optimal_value + 1e-12) and np.all(per >= env.optimal_value - env.H)


def test_bonus_scale_equals_refined_constant():
    """Scaling the CH bonus by 1/2 is the same algorithm as CH with constant 3.5: identical regret."""
    env = random_episodic_mdp(S=5, A=2, H=4, seed=2)
    a = run_regret(env, UCBVI(5, 2, 4, K=200, bonus="ch", bonus_scale=0.5, seed=7), K=200, seed=7)
    b = run_regret(env, UCBVI(5, 2, 4, K=200, bonus="ch_refined", seed=7,
                              refined_constants={"c": 3.5, "c_log": 5.0}), K=200, seed=7)
    np.testing.assert_array_equal(a, b)


def test_env_step_frequencies_match_P():
    env = riverswim(4, H=1)
    counts = np.zeros(4)
    for k in range(4000):
        env.reset(seed=k)
        s, r, terminated, *_ = env.step(1)
        counts[s] += 1
        assert terminated and r == 0.0
    np.testing.assert_allclose(counts / 4000, env.P[0, 1, 0], atol=0.03)


# --------------------------------------------------------------------------- bad input

def test_bad_input_raises():
    P = np.full((2, 3, 3), 1 / 3)
    R = np.zeros((3, 2))
    with pytest.raises(ValueError, match="not stochastic"):
        TabularEpisodicMDP(P * 1.1, R, H=3)
    with pytest.raises(ValueError, match="R must have shape"):
        TabularEpisodicMDP(P, np.zeros((2, 3)), H=3)
    with pytest.raises(ValueError, match="H must be >= 1"):
        TabularEpisodicMDP(P, R, H=0)
    with pytest.raises(ValueError, match="H must be >= 1"):
        UCBVI(3, 2, 0, K=10)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        TabularEpisodicMDP(P, R + 2.0, H=3)
    with pytest.raises(ValueError, match="non-negative"):
        bonus_ch([-1.0, 2.0], H=3, L=1.0)
    with pytest.raises(ValueError, match="non-negative"):
        bonus_bf(np.ones((3, 2)), P.transpose(1, 0, 2), np.zeros(3), np.array([-1.0, 0, 0]), 3, 1.0)
    with pytest.raises(ValueError, match="exactly the keys"):
        UCBVI(3, 2, 3, K=10, bonus="bf_refined", refined_constants={"c_var": 4.0})
    with pytest.raises(ValueError, match="tie_break"):
        UCBVI(3, 2, 3, K=10, tie_break="last")
    with pytest.raises(ValueError, match="variance"):
        MVP(3, 2, 3, K=10, variance="std")
    with pytest.raises(ValueError, match="regret"):
        run_regret(riverswim(3, 3), UCBVI(3, 2, 3, K=10), 5, regret="pseudo")
    with pytest.raises(ValueError, match="lin_offset"):
        bonus_bf(np.ones((3, 2)), P.transpose(1, 0, 2), np.zeros(3), np.ones(3), 3, 1.0, lin_offset=-1.0)
    with pytest.raises(ValueError, match="seed"):
        illustrative_mdp(3, 2, 3, seed=-1)
    with pytest.raises(ValueError, match="bonus must be one of"):
        UCBVI(3, 2, 3, K=10, bonus="hoeffding")
    with pytest.raises(ValueError, match="delta"):
        MVP(3, 2, 3, K=10, delta=1.5)
    agent = UCBVI(3, 2, 3, K=10)
    with pytest.raises(ValueError, match="trajectory must have"):
        agent.update(Trajectory(np.zeros(3, int), np.zeros(3, int), np.zeros(3)))


@pytest.mark.parametrize("make", [lambda: UCBVI(3, 2, 4, K=10, seed=0), lambda: MVP(3, 2, 4, K=10, seed=0)],
                         ids=["ucbvi", "mvp"])
def test_bad_input_act_indices(make):
    agent = make()
    with pytest.raises(ValueError, match=r"state index s must be in \[0, S\) = \[0, 3\), got -1"):
        agent.act(0, -1)  # used to wrap around to the last state
    with pytest.raises(ValueError, match=r"state index s must be in \[0, S\) = \[0, 3\), got 3"):
        agent.act(0, 3)
    with pytest.raises(ValueError, match=r"step index h must be in \[0, H\) = \[0, 4\), got 4"):
        agent.act(4, 0)  # h = H: used to be a bare IndexError
    with pytest.raises(ValueError, match=r"step index h must be in \[0, H\) = \[0, 4\), got -1"):
        agent.act(-1, 0)
    with pytest.raises(TypeError, match="step index h must be an integer, got 1.5"):
        agent.act(1.5, 0)
    with pytest.raises(TypeError, match=r"state index s must be an integer, got .*1\.0.*float64"):
        agent.act(0, np.float64(1.0))
    with pytest.raises(TypeError, match="state index s must be an integer, got True"):
        agent.act(0, True)
    # valid calls are unchanged: Python and NumPy integers give the policy entry
    assert agent.act(3, 2) == int(agent.policy[3, 2])
    assert agent.act(np.int64(0), np.int32(1)) == int(agent.policy[0, 1])


@pytest.mark.parametrize("make", [lambda: UCBVI(3, 2, 3, K=10, seed=0), lambda: MVP(3, 2, 3, K=10, seed=0)],
                         ids=["ucbvi", "mvp"])
def test_bad_input_update_float_indices(make):
    agent = make()
    with pytest.raises(TypeError, match="trajectory states must be an integer array of indices, got dtype float64"):
        agent.update(Trajectory(np.array([0, 1.5, 2, 1]), np.array([0, 1, 0]), np.zeros(3)))  # was truncated to 1
    with pytest.raises(TypeError, match="trajectory states must be an integer array"):
        agent.update(Trajectory(np.array([0, np.nan, 2, 1]), np.array([0, 1, 0]), np.zeros(3)))
    with pytest.raises(TypeError, match="trajectory actions must be an integer array of indices, got dtype float64"):
        agent.update(Trajectory(np.array([0, 1, 2, 1]), np.array([0, 1, 0.9]), np.zeros(3)))
    with pytest.raises(TypeError, match="trajectory actions must be an integer array of indices, got dtype bool"):
        agent.update(Trajectory(np.array([0, 1, 2, 1]), np.array([False, True, False]), np.zeros(3)))
    with pytest.raises(ValueError, match="out of range"):
        agent.update(Trajectory(np.array([0, -1, 2, 1]), np.array([0, 1, 0]), np.zeros(3)))
    agent.update(Trajectory(np.array([0, 1, 2, 1]), np.array([0, 1, 0]), np.zeros(3)))  # valid: accepted


# --------------------------------------------------------------------------- smoke runs of the experiments

def test_smoke_riverswim_metrics():
    exp = {e.name: e for e in EXPERIMENTS}["riverswim"]
    m = exp.run(exp.make_config("smoke"), seed=0)
    v = riverswim().optimal_value
    assert m["v_star"] == pytest.approx(v)
    for name in ("bf", "bf_refined", "mvp"):
        curve = np.asarray(m[f"curve_{name}"])
        assert curve[-1] == pytest.approx(m[f"regret_{name}"])
        assert 200 * (v - 25) <= m[f"regret_{name}"] <= 200 * v
    assert m["bf_refined_minus_bf"] == pytest.approx((m["regret_bf_refined"] - m["regret_bf"]) / (200 * v))
    assert math.isnan(m["ch_refined_minus_ch"])  # CH is not run on RiverSwim (as the authors)
    assert 0 < m["uniform_regret_per_episode"] <= v


def test_uniform_policy_regret_brute_force():
    from itertools import product

    from icml25.papers.ucbvi_constants.envs import policy_value
    from icml25.papers.ucbvi_constants.repro import uniform_policy_regret

    env = illustrative_mdp(2, 2, 2, seed=5)
    # the uniform policy's value by enumerating its (independent, uniform) actions at steps 0 and 1
    P, R = env.P[0], env.R[0]
    value = 0.0
    for a0, a1 in product(range(2), repeat=2):
        value += 0.25 * (R[0, a0] + sum(P[a0, 0, y] * R[y, a1] for y in range(2)))
    assert uniform_policy_regret(env) == pytest.approx(env.optimal_value - value, rel=1e-12)
    assert policy_value(env.P, env.R, env.pi_star)[0, 0] == pytest.approx(env.optimal_value)


def test_smoke_refined_with_azar_constants_reproduces_original():
    exp = {e.name: e for e in EXPERIMENTS}["random_mdp"]
    cfg = exp.make_config("smoke", {"agent.ch_refined_constants": (7.0, 5.0),
                                    "agent.bf_refined_constants": (8.0, 14 / 3, 8.0, 1e4, 5.0, 0.0), "ch_scales": ()})
    m = exp.run(cfg, seed=1)
    assert m["ch_refined_minus_ch"] == 0.0 and m["bf_refined_minus_bf"] == 0.0
    assert m["bf_refined_minus_mvp"] == pytest.approx(m["bf_minus_mvp"])
    assert m["v_star"] == pytest.approx(illustrative_mdp(3, 3, 5, seed=1).optimal_value)  # instance = trial index


# ------------------------------------------------------------------ bad input over the whole index range (hypothesis)


@settings(max_examples=60, deadline=None)
@given(h=st.integers(-10, 10), s=st.integers(-10, 10), mvp=st.booleans())
def test_act_accepts_exactly_the_valid_indices(h, s, mvp):
    agent = (MVP if mvp else UCBVI)(3, 2, 4, K=10, seed=0)
    if 0 <= h < 4 and 0 <= s < 3:
        assert agent.act(h, s) in (0, 1)
    else:
        with pytest.raises(ValueError, match="index"):
            agent.act(h, s)


@settings(max_examples=30, deadline=None)
@given(reward=st.one_of(st.floats(max_value=-1e-9), st.floats(min_value=1.0 + 1e-9), st.just(math.nan)))
def test_update_rejects_rewards_outside_the_unit_interval(reward):
    from icml25.papers.ucbvi_constants import Trajectory

    traj = Trajectory(np.zeros(5, dtype=int), np.zeros(4, dtype=int), np.array([0.0, reward, 0.0, 0.0]))
    with pytest.raises(ValueError, match="rewards"):
        UCBVI(3, 2, 4, K=10, seed=0).update(traj)
