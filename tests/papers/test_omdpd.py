"""OMDPD: the occupancy LP against exact DP and cvxpy, flow constraints, schedules, reductions, bad input, smoke run."""

from __future__ import annotations

import numpy as np
import pytest

from icml25.common.mdp import backward_induction
from icml25.papers.omdpd import (
    OMDPD,
    EpisodicCMDP,
    OptPrimalDualCMDP,
    ReactiveSchedule,
    SwitchingSchedule,
    Trajectory,
    UnconstrainedUCBVI,
    adversarial_instance,
    evaluate_policy,
    flow_residual,
    mirror_descent_step,
    occupancy_from_policy,
    occupancy_lp,
    policy_from_occupancy,
    policy_value,
    random_cmdp,
    run_online,
)

S, A, H = 4, 3, 4


@pytest.fixture
def cmdp():
    P, r = random_cmdp(S, A, H, seed=3)
    cost = np.random.default_rng(4).uniform(size=(S, A))
    return P, r, cost


def _random_policy(rng, shape=(H, S, A)):
    return rng.dirichlet(np.ones(shape[-1]), size=shape[:-1])


# --------------------------------------------------------------------------- occupancy LP


def test_lp_equals_backward_induction_when_constraints_are_slack(cmdp):
    P, r, _ = cmdp
    V, greedy = backward_induction(P, r, horizon=H)
    slack = np.full((S, A), -1.0)  # V_g = -H < 0 for every policy
    for constraints in (None, slack, [slack, slack - 0.5]):
        res = occupancy_lp(P, r, constraints, mu=0, horizon=H)
        assert res.value == pytest.approx(V[0, 0], abs=1e-8)
    # time-varying P and r, random initial distribution
    rng = np.random.default_rng(0)
    Pt = rng.dirichlet(np.ones(S), size=(H, A, S))
    rt = rng.uniform(size=(H, S, A))
    mu = rng.dirichlet(np.ones(S))
    V, _ = backward_induction(Pt, rt)
    assert occupancy_lp(Pt, rt, None, mu=mu).value == pytest.approx(mu @ V[0], abs=1e-8)


def test_lp_agrees_with_cvxpy_when_the_constraint_binds(cmdp):
    cp = pytest.importorskip("cvxpy")
    P, r, cost = cmdp
    greedy = occupancy_lp(P, r, None, 0, H)
    tau = 0.8 * float(np.sum(greedy.q * cost))
    g = cost - tau / H
    res = occupancy_lp(P, r, g, 0, H)
    assert res.value < greedy.value - 1e-4  # the constraint binds
    q = cp.Variable((H, S * A), nonneg=True)
    inflow = [P[:, :, s2].T.reshape(-1) for s2 in range(S)]  # weights P[a, s, s2] at index s*A + a
    cons = [cp.sum(cp.reshape(q[0], (S, A), order="C"), axis=1) == np.eye(S)[0]]
    for h in range(1, H):
        cons += [cp.sum(cp.reshape(q[h], (S, A), order="C"), axis=1) == cp.hstack([w @ q[h - 1] for w in inflow])]
    cons += [cp.sum(cp.multiply(q, np.tile(g.ravel(), (H, 1)))) <= 0]
    prob = cp.Problem(cp.Maximize(cp.sum(cp.multiply(q, np.tile(r.ravel(), (H, 1))))), cons)
    prob.solve()
    assert res.value == pytest.approx(prob.value, abs=1e-5)
    assert np.sum(res.q * g[None]) <= 1e-8


def test_lp_solution_is_an_occupancy_measure_and_its_policy_reproduces_it(cmdp):
    P, r, cost = cmdp
    g = cost - 0.4
    res = occupancy_lp(P, r, g, 0, H)
    assert res.q.min() >= 0
    assert flow_residual(P, res.q, 0) <= 1e-8
    q_back = occupancy_from_policy(P, res.policy, 0)  # exact forward pass of the extracted policy
    np.testing.assert_allclose(q_back, res.q, atol=1e-8)
    assert policy_value(P, r, res.policy, 0) == pytest.approx(res.value, abs=1e-8)


def test_lp_value_invariant_to_relabelling_states(cmdp):
    P, r, cost = cmdp
    g = cost - 0.45
    perm = np.array([2, 0, 3, 1])
    Pp = P[:, perm][:, :, perm]
    res = occupancy_lp(P, r, g, 0, H)
    res_p = occupancy_lp(Pp, r[perm], g[perm], int(np.argsort(perm)[0]), H)
    assert res_p.value == pytest.approx(res.value, abs=1e-8)


def test_lp_infeasible_raises(cmdp):
    P, r, _ = cmdp
    with pytest.raises(ValueError, match="infeasible"):
        occupancy_lp(P, r, np.ones((S, A)), 0, H)  # V_g = H > 0 for every policy


# --------------------------------------------------------------------------- occupancy measures, env, primal step


def test_forward_occupancy_matches_monte_carlo_rollouts(cmdp):
    P, r, _ = cmdp
    pi = _random_policy(np.random.default_rng(1))
    q = occupancy_from_policy(P, pi, 0)
    assert flow_residual(P, q, 0) <= 1e-12
    np.testing.assert_allclose(q.sum(axis=(1, 2)), 1.0, atol=1e-12)
    env = EpisodicCMDP(P, r, H, 0, seed=0)
    counts = np.zeros((H, S, A))
    n = 4000
    for _ in range(n):
        traj, _ = env.rollout(pi)
        counts[np.arange(H), traj.states[:-1], traj.actions] += 1
    assert np.abs(counts / n - q).max() < 0.03  # about 4 standard errors


def test_learner_occupancies_satisfy_flow_constraints(cmdp):
    P, r, cost = cmdp
    env = EpisodicCMDP(P, r, H, 0, constraint_schedule=lambda k, hist: cost - 0.5, seed=0)
    learner = OMDPD(S, A, H, eta=5.0, g_range=(-0.5, 0.5))
    for _ in range(30):
        traj, g = env.rollout(learner.policy())
        learner.update(traj, g)
        q = occupancy_from_policy(P, learner.policy(), 0)
        assert q.min() >= 0 and flow_residual(P, q, 0) <= 1e-8


def test_policy_evaluation_equals_occupancy_inner_product(cmdp):
    P, r, cost = cmdp
    pi = _random_policy(np.random.default_rng(2))
    Pf = np.broadcast_to(P, (H, A, S, S))
    _, V = evaluate_policy(Pf, np.broadcast_to(cost, (H, S, A)), pi)
    assert V[0, 0] == pytest.approx(policy_value(P, cost, pi, 0), abs=1e-12)


def test_mirror_descent_step_solves_the_kl_regularised_problem():
    from scipy.optimize import minimize

    rng = np.random.default_rng(5)
    logits = rng.normal(size=(1, 1, 4))
    Q, eta = rng.normal(size=(1, 1, 4)) * 3, 0.7
    _, new = mirror_descent_step(logits, Q, eta)
    p0 = np.exp(logits[0, 0]) / np.exp(logits[0, 0]).sum()

    def neg_objective(p):
        p = np.clip(p, 1e-12, None)
        return -(p @ Q[0, 0] - np.sum(p * np.log(p / p0)) / eta)

    sol = minimize(neg_objective, np.full(4, 0.25), method="SLSQP", bounds=[(0, 1)] * 4,
                   constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1}], options={"ftol": 1e-14})
    np.testing.assert_allclose(new[0, 0], sol.x, atol=1e-5)


# --------------------------------------------------------------------------- schedules


def test_switching_schedule_phases_double():
    sched = SwitchingSchedule(np.zeros((2, 2)), np.ones((2, 2)))
    which = [int(sched(k, [])[0, 0]) for k in range(15)]
    assert which == [0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]


def test_reactive_schedule_penalises_most_played_action():
    base = np.zeros((3, 3))
    sched = ReactiveSchedule(base, 0.5)
    assert np.array_equal(sched(0, []), base)
    traj = Trajectory(np.zeros(5, int), np.array([2, 1, 2, 0]), np.zeros(4))
    g = sched(1, [traj])
    assert np.array_equal(g[:, 2], np.full(3, 0.5)) and np.all(g[:, :2] == 0)


@pytest.mark.parametrize("kind", ["switching", "reactive"])
def test_adversarial_instances_admit_a_common_feasible_policy(kind):
    inst = adversarial_instance(kind, 5, 3, 5, seed=1)
    both = occupancy_lp(inst.P, inst.reward_mean, inst.variants, 0, 5)  # raises if infeasible
    free = occupancy_lp(inst.P, inst.reward_mean, None, 0, 5)
    assert max(np.sum(free.q * v) for v in inst.variants) > 1e-6  # the unconstrained optimum violates one
    assert max(np.sum(both.q * v) for v in inst.variants) <= 1e-8
    if kind == "switching":  # the mean of the two constraints is a constant: averaging cancels them
        mean = (inst.variants[0] + inst.variants[1]) / 2
        assert np.ptp(mean) < 1e-12


# --------------------------------------------------------------------------- reductions and convergence


def test_always_satisfied_constraint_reduces_to_unconstrained_learner(cmdp):
    P, r, _ = cmdp
    runs = []
    for learner in (OMDPD(S, A, H, eta=5.0, eta_dual=1.0), OMDPD(S, A, H, eta=5.0, eta_dual=0.0)):
        env = EpisodicCMDP(P, r, H, 0, constraint_schedule=lambda k, hist: -np.ones((S, A)), seed=11)
        runs.append(run_online(env, learner, 1200))
        assert learner.lam == 0.0
    np.testing.assert_array_equal(runs[0].reward_values, runs[1].reward_values)
    v_star = backward_induction(P, r, horizon=H)[0][0, 0]
    gap = v_star - runs[0].reward_values
    assert gap[-300:].mean() < 0.5 * gap[:300].mean()  # sublinear regret: the per-episode gap shrinks


def test_known_model_average_policy_converges_to_lp_optimum(cmdp):
    P, r, cost = cmdp
    greedy = occupancy_lp(P, r, None, 0, H)
    g = cost - 0.8 * float(np.sum(greedy.q * cost)) / H
    opt = occupancy_lp(P, r, g, 0, H)
    learner = OMDPD(S, A, H, eta=5.0, eta_dual=1.0, model=(P, r), g_range=(g.min(), g.max()))
    env = EpisodicCMDP(P, r, H, 0, constraint_schedule=lambda k, hist: g, seed=0)
    run = run_online(env, learner, 1500)
    tail = slice(500, None)
    assert run.reward_values[tail].mean() == pytest.approx(opt.value, abs=0.03 * H)
    assert np.maximum(run.constraint_values[tail], 0).mean() < 0.02 * H
    assert greedy.value - opt.value > 0.05  # the constraint matters


def test_ucbvi_with_known_model_is_exact_dp(cmdp):
    P, r, _ = cmdp
    learner = UnconstrainedUCBVI(S, A, H, model=(P, r))
    learner.update(Trajectory(np.zeros(H + 1, int), np.zeros(H, int), np.zeros(H)))
    assert policy_value(P, r, learner.policy(), 0) == pytest.approx(backward_induction(P, r, horizon=H)[0][0, 0])


# --------------------------------------------------------------------------- bad input


def test_bad_input_raises(cmdp):
    P, r, cost = cmdp
    bad_P = P.copy()
    bad_P[0, 0, 0] += 0.3
    with pytest.raises(ValueError, match="stochastic"):
        occupancy_lp(bad_P, r, None, 0, H)
    with pytest.raises(ValueError, match="stochastic"):
        EpisodicCMDP(bad_P, r, H)
    with pytest.raises(ValueError, match="shape"):
        occupancy_lp(P, r[:, :2], None, 0, H)
    with pytest.raises(ValueError, match="shape"):
        occupancy_lp(P, r, np.zeros((S + 1, A)), 0, H)
    with pytest.raises(ValueError, match="horizon"):
        occupancy_lp(P, r, None, 0)
    with pytest.raises(ValueError, match="n_states"):
        OMDPD(-1, A, H)
    with pytest.raises(ValueError, match="horizon"):
        OptPrimalDualCMDP(S, A, 0)
    with pytest.raises(ValueError, match="eta"):
        OMDPD(S, A, H, eta=0.0)
    with pytest.raises(ValueError, match="reward_mean"):
        EpisodicCMDP(P, r + 1.0, H)
    with pytest.raises(ValueError, match="n_episodes"):
        run_online(EpisodicCMDP(P, r, H), OMDPD(S, A, H), 0)
    with pytest.raises(ValueError, match="policy"):
        occupancy_from_policy(P, np.ones((H, S, A)), 0)
    learner = OMDPD(S, A, H, g_range=(-1, 1))
    traj = Trajectory(np.zeros(H + 1, int), np.zeros(H, int), np.zeros(H))
    with pytest.raises(ValueError, match="g_k"):
        learner.update(traj, np.zeros((S, A + 1)))
    with pytest.raises(ValueError, match="g_range"):
        learner.update(traj, np.full((S, A), 3.0))
    with pytest.raises(ValueError, match="q must be non-negative"):
        policy_from_occupancy(-np.ones((H, S, A)))


# --------------------------------------------------------------------------- smoke run of the experiment


def test_smoke_growth_experiment():
    from icml25.papers.omdpd.repro import EXPERIMENTS, loglog_slope

    exp = EXPERIMENTS[0]
    cfg = exp.make_config("smoke")
    m = exp.run(cfg, seed=0)
    K = np.array(cfg.K_grid)
    for kind in cfg.schedules:
        for alg in ("omdpd", "pd"):
            p = f"{kind}_{alg}_"
            v = np.array(m[p + "violation"])
            assert np.all(np.diff(v) >= 0) and v[0] >= 0  # a strong violation never cancels
            assert m[p + "violation_slope"] == pytest.approx(loglog_slope(K, v, cfg.horizon))
            assert m[p + "regret_over_sqrtK"] == pytest.approx(m[p + "regret"][-1] / np.sqrt(K[-1]))
        # the comparator is feasible for every revealed g_k, so it cannot beat the unconstrained optimum
        inst = adversarial_instance(kind, cfg.n_states, cfg.n_actions, cfg.horizon,
                                    seed=int(np.random.SeedSequence([0, cfg.schedules.index(kind)]).generate_state(1)[0]))
        assert m[f"{kind}_comparator_value"] <= occupancy_lp(inst.P, inst.reward_mean, None, 0, cfg.horizon).value + 1e-9
        # OMDPD violates less than the stochastic-constraint baseline on this seed
        assert m[f"{kind}_omdpd_minus_pd_violation_over_sqrtK"] < 0
    assert m["pd_max_violation_slope"] == max(m["switching_pd_violation_slope"], m["reactive_pd_violation_slope"])
