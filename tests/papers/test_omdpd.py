"""OMDPD: the Euclidean occupancy projection and one OMDPD step against cvxpy re-derivations, the exponential
potential and dual update, the occupancy LP against exact DP and cvxpy, flow constraints, schedules (incl. the
paper's i.i.d. costs and the strong-violation floor they imply), reductions, bad input, smoke runs.

OMDPD's defining elements (the update as the sources describe it, docs/papers/omdpd.md, "The method as implemented",
steps 1-5; the paper's Algorithm 1 and equation numbers were not readable first-hand) and the tests that fail when
one is removed or altered:

1. The exponential Lyapunov potential ``Phi(x) = exp(beta x) - 1``: the constraint term of the gradient is weighted
   by ``Phi'(lambda_k) = beta exp(beta lambda_k)`` (step 2; replaced by the quadratic potential's ``lambda_k``):
   ``test_exponential_potential_and_positive_part_dual``,
   ``test_omdpd_steps_match_a_rederivation_with_cvxpy_projections``,
   ``test_omdpd_step_uses_optimistic_estimates_and_the_hinge``.
2. The hinge ``[d_tilde^T q]_+`` of the surrogate: no constraint term while ``d_tilde^T q_k <= 0`` (step 2):
   ``test_omdpd_step_uses_optimistic_estimates_and_the_hinge``,
   ``test_known_model_average_policy_converges_to_lp_optimum[OMDPD]``.
3. Optimistic estimates ``r_tilde = r_hat + b`` and ``d_tilde = d_k - b`` (step 1; bonus dropped from either, or
   added to the cost): ``test_omdpd_step_uses_optimistic_estimates_and_the_hinge`` (also
   ``test_omdpd_with_always_satisfied_costs_has_zero_dual_and_learns`` for the reward bonus).
4. Optimistic OMD in two Euclidean steps onto the occupancy polytope: correction from ``q_hat_k``, then prediction
   with the hint ``M_{k+1} = G_k`` (step 4; prediction skipped, correction started from ``q_k``, or the projection
   replaced by clipping at 0): ``test_omdpd_steps_match_a_rederivation_with_cvxpy_projections``,
   ``test_omdpd_step_uses_optimistic_estimates_and_the_hinge``, ``test_learner_occupancies_satisfy_flow_constraints``,
   ``test_projection_matches_cvxpy``.
5. The step size adapted to the gradient *variation*, ``eta sqrt(2H) / sqrt(sum ||G_j - G_{j-1}||^2)`` (step 3;
   AdaGrad on ``||G_j||^2`` instead, or the ``sqrt(2H)`` dropped):
   ``test_omdpd_steps_match_a_rederivation_with_cvxpy_projections`` (the only one for the AdaGrad swap: it needs two
   steps), ``test_omdpd_step_uses_optimistic_estimates_and_the_hinge`` (the ``sqrt(2H)``).
6. The dual ``lambda_{k+1} = lambda_k + alpha [d_k^T q_k]_+`` on the revealed cost (step 5; positive part dropped, or
   lambda frozen): ``test_exponential_potential_and_positive_part_dual``,
   ``test_omdpd_with_always_satisfied_costs_has_zero_dual_and_learns``,
   ``test_omdpd_step_uses_optimistic_estimates_and_the_hinge``,
   ``test_omdpd_steps_match_a_rederivation_with_cvxpy_projections``.
"""

from __future__ import annotations

import numpy as np
import pytest

from icml25.common.mdp import backward_induction
from icml25.papers.omdpd import (
    OMDPD,
    PAPER_COST_VALUES,
    EpisodicCMDP,
    IIDCostSchedule,
    KLPolicyOMDPD,
    KLPolicyOMDPDConfig,
    OMDPDConfig,
    OptimismConfig,
    OptPrimalDualCMDP,
    OptPrimalDualConfig,
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
    paper_instance,
    policy_from_occupancy,
    policy_value,
    project_occupancy,
    random_cmdp,
    run_online,
)
from icml25.papers.omdpd.cmdp import flow_equalities

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
    for learner in (OMDPD(S, A, H, g_range=(-0.5, 0.5)), KLPolicyOMDPD(S, A, H, eta=5.0, g_range=(-0.5, 0.5))):
        for _ in range(30):
            traj, g = env.rollout(learner.policy())
            learner.update(traj, g)
            q = occupancy_from_policy(P, learner.policy(), 0)
            assert q.min() >= 0 and flow_residual(P, q, 0) <= 1e-8
        if isinstance(learner, OMDPD):  # OMDPD's iterates lie in the occupancy polytope of its own model P_hat
            P_hat = learner.model.estimate()[0]
            for q in (learner.q, learner.q_hat):
                assert q.min() >= 0 and flow_residual(P_hat, q, 0) <= 1e-8


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
    for learner in (KLPolicyOMDPD(S, A, H, eta=5.0, eta_dual=1.0), KLPolicyOMDPD(S, A, H, eta=5.0, eta_dual=0.0)):
        env = EpisodicCMDP(P, r, H, 0, constraint_schedule=lambda k, hist: -np.ones((S, A)), seed=11)
        runs.append(run_online(env, learner, 1200))
        assert learner.lam == 0.0
    np.testing.assert_array_equal(runs[0].reward_values, runs[1].reward_values)
    v_star = backward_induction(P, r, horizon=H)[0][0, 0]
    gap = v_star - runs[0].reward_values
    assert gap[-300:].mean() < 0.5 * gap[:300].mean()  # sublinear regret: the per-episode gap shrinks


def test_omdpd_with_always_satisfied_costs_has_zero_dual_and_learns(cmdp):
    P, r, _ = cmdp
    learner = OMDPD(S, A, H)
    env = EpisodicCMDP(P, r, H, 0, constraint_schedule=lambda k, hist: -np.ones((S, A)), seed=11)
    run = run_online(env, learner, 800)
    assert learner.lam == 0.0 and max(learner.estimated_violations) < 0
    v_star = backward_induction(P, r, horizon=H)[0][0, 0]
    gap = v_star - run.reward_values
    assert gap[-200:].mean() < 0.5 * gap[:200].mean()  # the per-episode gap shrinks


@pytest.mark.parametrize("learner_cls", [OMDPD, KLPolicyOMDPD])
def test_known_model_average_policy_converges_to_lp_optimum(cmdp, learner_cls):
    P, r, cost = cmdp
    greedy = occupancy_lp(P, r, None, 0, H)
    g = cost - 0.8 * float(np.sum(greedy.q * cost)) / H
    opt = occupancy_lp(P, r, g, 0, H)
    kw = dict(eta=5.0, eta_dual=1.0) if learner_cls is KLPolicyOMDPD else {}
    learner = learner_cls(S, A, H, model=(P, r), g_range=(g.min(), g.max()), **kw)
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
    with pytest.raises(ValueError, match=r"OMDPDConfig.eta must be > 0, got 0.0"):
        OMDPD(S, A, H, eta=0.0)
    with pytest.raises(ValueError, match=r"OMDPDConfig.alpha must be > 0, got -1.0"):
        OMDPD(S, A, H, alpha=-1.0)
    with pytest.raises(ValueError, match=r"OMDPDConfig.beta must be a finite number, got nan"):
        OMDPD(S, A, H, beta=np.nan)
    with pytest.raises(ValueError, match=r"OMDPDConfig.cost_optimism must be one of True, False, got 'yes'"):
        OMDPD(S, A, H, cost_optimism="yes")
    with pytest.raises(ValueError, match=r"OptimismConfig.delta must be in \(0, 1\), got 1.0"):
        UnconstrainedUCBVI(S, A, H, delta=1.0)
    with pytest.raises(ValueError, match=r"OptPrimalDualConfig.eta_dual must be >= 0, got -1.0"):
        OptPrimalDualCMDP(S, A, H, OptPrimalDualConfig(eta_dual=-1.0))
    with pytest.raises(ValueError, match=r"mirror_descent_step.eta must be >= 0, got -1.0"):
        mirror_descent_step(np.zeros(3), np.zeros(3), -1.0)
    with pytest.raises(TypeError, match="OMDPD got an unexpected setting 'eta_dual'"):
        OMDPD(S, A, H, eta_dual=1.0)
    with pytest.raises(ValueError, match="z must have shape"):
        project_occupancy(np.zeros((H, S, A + 1)), P)
    with pytest.raises(ValueError, match="finite"):
        project_occupancy(np.full((H, S, A), np.nan), P)
    with pytest.raises(ValueError, match="values"):
        IIDCostSchedule([], (H, S, A))
    with pytest.raises(ValueError, match="concentration"):
        paper_instance(S, A, H, concentration=0.0)
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

    exp = next(e for e in EXPERIMENTS if e.name == "growth")
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
        seed = int(np.random.SeedSequence([0, cfg.schedules.index(kind)]).generate_state(1)[0])
        inst = adversarial_instance(kind, cfg.n_states, cfg.n_actions, cfg.horizon, seed=seed)
        unconstrained = occupancy_lp(inst.P, inst.reward_mean, None, 0, cfg.horizon).value
        assert m[f"{kind}_comparator_value"] <= unconstrained + 1e-9
        assert m[f"{kind}_omdpd_minus_pd_violation_over_sqrtK"] == pytest.approx(
            m[f"{kind}_omdpd_violation_over_sqrtK"] - m[f"{kind}_pd_violation_over_sqrtK"])
    assert m["pd_max_violation_slope"] == max(m["switching_pd_violation_slope"], m["reactive_pd_violation_slope"])


# --------------------------------------------------------------------------- the paper's algorithm (OMDPD)


def _cvxpy_projection(z, P, mu=0):
    cp = pytest.importorskip("cvxpy")
    Pf = np.broadcast_to(P, (z.shape[0], *P.shape[-3:])) if P.ndim == 3 else P
    M, b = flow_equalities(np.asarray(Pf, dtype=float), np.eye(z.shape[1])[mu])
    x = cp.Variable(z.size)
    cp.Problem(cp.Minimize(cp.sum_squares(x - z.ravel())), [M @ x == b, x >= 0]).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return np.maximum(x.value, 0.0).reshape(z.shape)


@pytest.mark.parametrize("stage_dependent", [False, True])
def test_projection_matches_cvxpy(stage_dependent):
    rng = np.random.default_rng(8)
    if stage_dependent:
        P = rng.dirichlet(np.full(S, 0.5), size=(H, A, S))
    else:
        P = random_cmdp(S, A, H, seed=9, concentration=0.5)[0]
    for scale in (0.3, 3.0, 30.0):
        z = rng.normal(size=(H, S, A)) * scale
        q = project_occupancy(z, P, 0)
        np.testing.assert_allclose(q, _cvxpy_projection(z, P), atol=1e-6)
        assert q.min() >= 0 and flow_residual(P, q, 0) <= 1e-9


def test_projection_fixes_occupancy_measures_and_is_nonexpansive(cmdp):
    P, _, _ = cmdp
    rng = np.random.default_rng(10)
    q0 = occupancy_from_policy(P, _random_policy(rng), 0)
    np.testing.assert_allclose(project_occupancy(q0, P, 0), q0, atol=1e-10)
    z1, z2 = rng.normal(size=(2, H, S, A))
    p1, p2 = project_occupancy(z1, P, 0), project_occupancy(z2, P, 0)
    assert np.linalg.norm(p1 - p2) <= np.linalg.norm(z1 - z2) + 1e-9
    assert np.sum((z1 - p1) * (q0 - p1)) <= 1e-8  # obtuse-angle (variational) inequality of a projection


def test_omdpd_steps_match_a_rederivation_with_cvxpy_projections(cmdp):
    """Two OMDPD updates on a known model, recomputed from the paper's formulas with cvxpy projections."""
    P, r, cost = cmdp
    d = cost - 0.6
    alpha, beta, eta = 0.3, 0.7, 0.9
    learner = OMDPD(S, A, H, alpha=alpha, beta=beta, eta=eta, model=(P, r), g_range=(d.min(), d.max()))
    Pf = np.broadcast_to(P, (H, A, S, S))
    r_h, d_h = np.broadcast_to(r, (H, S, A)), np.broadcast_to(d, (H, S, A))
    q = occupancy_from_policy(P, np.full((H, S, A), 1.0 / A), 0)
    q_hat, lam, G_prev, variation = q.copy(), 0.0, np.zeros((H, S, A)), 0.0
    traj = Trajectory(np.zeros(H + 1, int), np.zeros(H, int), np.zeros(H))
    for _ in range(2):
        v = float(np.sum(d_h * q))
        weight = beta * np.exp(beta * lam) if v > 0 else 0.0  # Phi'(lambda_k) on the active hinge
        G = alpha * (-r_h + weight * d_h)
        variation += float(np.sum((G - G_prev) ** 2))
        eta_k = eta * np.sqrt(2 * H) / np.sqrt(variation)
        q_hat = _cvxpy_projection(q_hat - eta_k * G, Pf)
        q_new = _cvxpy_projection(q_hat - eta_k * G, Pf)
        lam += alpha * max(v, 0.0)
        learner.update(traj, d)
        np.testing.assert_allclose(learner.q_hat, q_hat, atol=1e-6)
        np.testing.assert_allclose(learner.q, q_new, atol=1e-6)
        assert learner.lam == pytest.approx(lam, abs=1e-7)
        q, G_prev = q_new, G
    assert learner.lam > 0  # the constraint was violated, so the dual moved


@pytest.mark.parametrize("cost_optimism, bonus_scale, d_value, active", [
    (True, 0.1, 0.8, False),   # d_tilde = d_k - b < 0: the optimistic cost switches the hinge off
    (True, 0.01, 0.8, True),   # a small bonus: d_tilde^T q_k > 0, the hinge is on
    (False, 0.1, 0.8, True),   # d_tilde = d_k
    (False, 0.1, -0.8, False),  # satisfied cost: no constraint term at all
])
def test_omdpd_step_uses_optimistic_estimates_and_the_hinge(cost_optimism, bonus_scale, d_value, active):
    """One OMDPD update on a *learned* model (bonus > 0), recomputed from r_tilde = r_hat + b, d_tilde = d_k - b
    (``cost_optimism=False``: d_k) and the hinge 1{d_tilde^T q_k > 0}; the projections by ``project_occupancy``,
    the same solver, so float64 round-off only (atol 1e-8)."""
    rng = np.random.default_rng(12)
    alpha, beta, eta = 0.4, 0.8, 1.3
    learner = OMDPD(S, A, H, alpha=alpha, beta=beta, eta=eta, cost_optimism=cost_optimism, bonus_scale=bonus_scale)
    q0 = learner.q.copy()
    traj = Trajectory(rng.integers(S, size=H + 1), rng.integers(A, size=H), rng.uniform(size=H))
    d = np.full((H, S, A), d_value)
    learner.update(traj, d)
    P_hat, r_hat, bonus = learner.model.estimate()  # the estimates after adding the episode, as the learner used
    assert np.all(bonus > 0)
    d_tilde = d - bonus if cost_optimism else d
    assert (float(np.sum(d_tilde * q0)) > 0) == active  # the case this parameter set is meant to exercise
    G = alpha * (-(r_hat + bonus) + (beta * np.exp(0.0) * d_tilde if active else 0.0))  # lambda_1 = 0
    eta_k = eta * np.sqrt(2 * H) / np.linalg.norm(G)  # first step: the variation is ||G_1 - 0||^2
    q_hat = project_occupancy(q0 - eta_k * G, P_hat, 0)
    np.testing.assert_allclose(learner.q_hat, q_hat, atol=1e-8)
    np.testing.assert_allclose(learner.q, project_occupancy(q_hat - eta_k * G, P_hat, 0), atol=1e-8)
    assert learner.lam == pytest.approx(alpha * max(float(np.sum(d * q0)), 0.0), abs=1e-12)  # dual uses d_k


def test_exponential_potential_and_positive_part_dual():
    learner = OMDPD(2, 2, 1, alpha=0.5, beta=2.0, model=(np.full((1, 2, 2, 2), 0.5), np.zeros((1, 2, 2))))
    for x in (0.0, 0.3, 1.7):
        h = 1e-6  # Phi'(x) is the derivative of Phi(x) = exp(beta x) - 1
        phi = lambda t: np.exp(2.0 * t) - 1.0  # noqa: E731
        assert learner.potential_derivative(x) == pytest.approx((phi(x + h) - phi(x - h)) / (2 * h), rel=1e-6)
    traj = Trajectory(np.zeros(2, int), np.zeros(1, int), np.zeros(1))
    learner.update(traj, -np.ones((2, 2)))  # satisfied: no increment
    assert learner.lam == 0.0
    q = learner.q.copy()
    learner.update(traj, np.ones((2, 2)))  # violated by d^T q = 1: lambda += alpha * 1
    assert learner.lam == pytest.approx(0.5 * np.sum(q))


def test_iid_cost_schedule_and_paper_instance():
    sched = IIDCostSchedule(PAPER_COST_VALUES, (H, S, A), seed=3)
    d0 = sched(0, [])
    assert set(np.unique(d0)) <= set(PAPER_COST_VALUES) and d0.shape == (H, S, A)
    np.testing.assert_array_equal(sched(0, [object()]), d0)  # independent of the history
    assert not np.array_equal(sched(1, []), d0)
    env = paper_instance(5, 3, 5, seed=0)
    assert env.P.shape == (5, 3, 5, 5) and env.reward_mean.shape == (5, 5, 3)
    assert not np.allclose(env.reward_mean[0], env.reward_mean[1])  # stage-dependent rewards
    assert env.schedule.g_range == (-1.0, 1.0)


def test_iid_costs_force_linear_strong_violation_for_every_policy():
    """With i.i.d. mean-zero costs revealed after the episode, E[(d^T q)_+] >= c > 0 for every occupancy q
    (Hölder: E|X| >= (E X^2)^{3/2} / (E X^4)^{1/2}), so no learner has sublinear strong violation."""
    vals = np.array(PAPER_COST_VALUES)
    s2, m4 = np.mean(vals ** 2), np.mean(vals ** 4)
    assert abs(vals.mean()) < 1e-12

    def floor(w):
        a2, a4 = np.sum(w ** 2), np.sum(w ** 4)
        return 0.5 * (s2 * a2) ** 1.5 / np.sqrt(m4 * a4 + 3 * s2 ** 2 * (a2 ** 2 - a4))

    rng = np.random.default_rng(12)
    P = rng.dirichlet(np.full(5, 0.5), size=(5, 3, 5))
    draws = rng.choice(vals, size=(20000, 5, 5, 3))
    for _ in range(3):
        q = occupancy_from_policy(P, rng.dirichlet(np.ones(3), size=(5, 5)), 0)
        mc = np.maximum(np.einsum("nhsa,hsa->n", draws, q), 0).mean()
        assert mc >= floor(q) - 4 * 1.5 / np.sqrt(20000)  # Monte Carlo agrees with the bound
        # m4 < 3 s2^2 for this value set, so the bound is >= sqrt(s2 sum q^2 / 12), and sum_{s,a} q_h = 1 gives
        # sum q^2 >= H / (S A): a policy-independent floor per episode
        assert floor(q) >= np.sqrt(s2 * np.sum(q ** 2) / 12) - 1e-12 and np.sum(q ** 2) >= 5 / 15 - 1e-12
    assert m4 < 3 * s2 ** 2 and np.sqrt(s2 * 5 / (12 * 15)) > 0.1


def test_smoke_fig2_experiment():
    from icml25.papers.omdpd.repro import EXPERIMENTS, loglog_slope

    exp = next(e for e in EXPERIMENTS if e.name == "fig2")
    cfg = exp.make_config("smoke")
    m = exp.run(cfg, seed=0)
    K = np.array(cfg.K_grid)
    v, u = np.array(m["omdpd_violation"]), np.array(m["uniform_violation"])
    assert np.all(np.diff(v) >= 0) and np.all(np.diff(u) >= 0) and u[0] > 0
    assert m["omdpd_violation_slope"] == pytest.approx(loglog_slope(K, v, cfg.horizon))
    assert m["omdpd_minus_uniform_violation_per_episode"] == pytest.approx((v[-1] - u[-1]) / K[-1])
    assert m["uniform_reward"] <= m["unconstrained_optimum"] + 1e-9


# --------------------------------------------------------------------------- settings


def test_configs_and_keywords_build_the_same_learner():
    """A learner takes its config whole; the keyword form builds the same configs (and validates them)."""
    by_cfg = OMDPD(S, A, H, OMDPDConfig(alpha=0.2, eta=2.0), optimism=OptimismConfig(bonus_scale=0.3))
    by_kw = OMDPD(S, A, H, alpha=0.2, eta=2.0, bonus_scale=0.3)
    assert by_cfg.cfg == by_kw.cfg == OMDPDConfig(alpha=0.2, eta=2.0)
    assert by_cfg.optimism == by_kw.optimism and by_cfg.model.bonus_scale == 0.3
    kl = KLPolicyOMDPD(S, A, H, KLPolicyOMDPDConfig(eta=5.0), eta_dual=0.0)  # a keyword overrides the config
    assert (kl.eta, kl.eta_dual) == (5.0, 0.0)
    with pytest.raises(AttributeError):
        OMDPDConfig().eta = 3.0  # frozen


def test_experiment_configs_nest_the_learners_configs():
    """The experiment configs hold each learner's config whole and one shared OptimismConfig; nothing is
    re-declared; a job's stored config (a dict per learner) rebuilds them."""
    import dataclasses

    from icml25.core.experiment import config_from_dict, config_to_dict
    from icml25.papers.omdpd.repro import EXPERIMENTS, Fig2Config, GrowthConfig

    learner_fields = {f.name for c in (OMDPDConfig, KLPolicyOMDPDConfig, OptPrimalDualConfig, OptimismConfig)
                      for f in dataclasses.fields(c)}
    for cfg_type in (Fig2Config, GrowthConfig):
        assert not {f.name for f in dataclasses.fields(cfg_type)} & learner_fields
    growth = {e.name: e for e in EXPERIMENTS}["growth"]
    cfg = growth.make_config("quick")
    assert (cfg.omdpd, cfg.omdpd_kl, cfg.pd, cfg.optimism) == (
        OMDPDConfig(), KLPolicyOMDPDConfig(eta=5.0), OptPrimalDualConfig(eta=5.0), OptimismConfig())
    cfg = growth.make_config("smoke", {"omdpd.eta": 2.0, "optimism.bonus_scale": 0.2})
    assert cfg.omdpd.eta == 2.0 and cfg.optimism.bonus_scale == 0.2 and cfg.n_states == 3
    rebuilt = config_from_dict(GrowthConfig, config_to_dict(cfg))
    assert (rebuilt.omdpd, rebuilt.omdpd_kl, rebuilt.pd, rebuilt.optimism) == (
        cfg.omdpd, cfg.omdpd_kl, cfg.pd, cfg.optimism)
    fig2 = {e.name: e for e in EXPERIMENTS}["fig2"].make_config("smoke")
    rebuilt = config_from_dict(Fig2Config, config_to_dict(fig2))
    assert (rebuilt.omdpd, rebuilt.optimism) == (fig2.omdpd, fig2.optimism) == (OMDPDConfig(), OptimismConfig())
