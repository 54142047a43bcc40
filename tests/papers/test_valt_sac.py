"""VALT-SAC: symmetry theorem on a tabular SA-MDP, the Gibbs adversary against a convex solver,
PGD / MAD properties, reduction to SAC at eps = 0, log-densities against torch.distributions, bad input, smoke run.

The method's defining elements (symmetric policy evaluation and the SAC loop's steps 1-4, see the module docstring
of valt_sac.py and docs/papers/valt_sac.md, "The method") and the tests that fail when one is removed or altered:

1. Symmetric policy evaluation with the KL-constrained adversary: nu* ∝ p exp(-G / alpha_attk) and the soft
   worst-case value -alpha_attk log E_p exp(-G / alpha_attk) = E_nu*[G] + alpha_attk KL(nu* || p), minus the
   adversary's own soft-optimal value: ``test_gibbs_closed_form_matches_explicit_formula_and_convex_solver``
   (Gibbs weights favouring high G; with ``test_symmetric_policy_evaluation``, the value without the KL price).
2. The critic target (step 2): r + gamma (1 - d) [min_j Qbar_j(s', a') - alpha log pi(a'|s~')], the target critics
   read at the true s', a' ~ pi(.|s~'), Polyak-averaged targets: ``test_soft_critic_target_adds_alpha_attk_kl``
   (critic at s~'; a' from the clean s'; Q_1 in place of the twin minimum),
   ``test_nu_loss_is_the_kl_to_the_gibbs_adversary_and_update_steps_every_network`` (no Polyak step).
3. VALT-SOFT's KL price + gamma alpha_attk (log nu(s~'|s') - log p(s~'|s')) in that target:
   ``test_soft_critic_target_adds_alpha_attk_kl`` (dropped; sign flipped; the prior's d log 2 missing, also
   ``test_perturbation_model_density_and_kl_to_prior_by_quadrature``).
4. The actor step under the adversary (step 3): E[alpha log pi(a|s~) - min_j Q_j(s, a)], s~ ~ nu(.|s), the critic
   at the true s: ``test_actor_improves_against_the_adversary_with_the_critic_at_the_true_state`` (critic at s~;
   the adversary removed from the improvement step, the ablation of the paper's Table 8).
5. The virtual adversaries. VALT-EPS: PGD min-Q worst case with probability kappa_worst, else uniform on B_eps(s):
   ``test_valt_eps_adversary_mixes_the_pgd_worst_case_and_the_uniform_prior`` (never or always the worst case),
   ``test_pgd_stays_in_ball_and_never_increases_q``, ``test_mad_attack_in_ball_and_beats_its_random_start`` (PGD
   ascending). VALT-SOFT: nu_model minimises KL(nu || nu*) = E[log nu + G / alpha_attk] + const:
   ``test_nu_loss_is_the_kl_to_the_gibbs_adversary_and_update_steps_every_network`` (sign of G flipped; entropy
   term dropped; nu_model never stepped).
6. No extra environment steps (step 1): the behaviour policy acts on s~ ~ nu(.|s) with probability adv_ratio, the
   buffer keeps the clean (s, a, r, s'): ``test_behaviour_acts_on_perturbed_observations_but_stores_clean_transitions``
   (perturbed observation stored; adv_ratio ignored).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.common.checks import ConfigError
from icml25.papers.valt_sac import (
    Actor,
    PerturbationModel,
    PerturbedObservation,
    PointMassReach,
    TwinCritic,
    ValtSAC,
    ValtSACConfig,
    adversary_soft_optimal_value,
    agent_soft_worst_case_value,
    evaluate_under_attack,
    gibbs_adversary,
    mad_attack,
    pgd_q_attack,
    policy_kl,
    random_attack,
    random_sa_mdp,
    valt_sac_train,
)
from icml25.papers.valt_sac.repro import EXPERIMENTS, RobustnessConfig, run_robustness
from icml25.papers.valt_sac.tabular import _policy_entropy

torch.set_num_threads(1)


# ------------------------------------------------------------------ tabular theory

@pytest.mark.parametrize("seed,alpha_ent,alpha_attk,ball", [(0, 0.3, 0.5, 3), (1, 0.0, 2.0, 5), (2, 1.0, 0.05, 3)])
def test_symmetric_policy_evaluation(seed, alpha_ent, alpha_attk, ball):
    """Theorem: the adversary's soft-optimal value (its own MDP, independent DP) is minus the agent's."""
    m = random_sa_mdp(n_states=7, n_actions=3, ball_size=ball, gamma=0.9, seed=seed)
    v_agent, _ = agent_soft_worst_case_value(m, alpha_ent, alpha_attk)
    v_adv = adversary_soft_optimal_value(m, alpha_ent, alpha_attk)
    np.testing.assert_allclose(v_adv, -v_agent, rtol=0, atol=1e-8)
    assert np.ptp(v_agent) > 1e-3  # not a degenerate constant


def _soft_g(m, v, alpha_ent):
    q = m.R + m.gamma * m.P @ v
    return q @ m.pi.T + alpha_ent * _policy_entropy(m.pi)[None, :]


def test_gibbs_closed_form_matches_explicit_formula_and_convex_solver():
    """nu* = p exp(-(E_pi Q + alpha_ent H)/alpha_attk) / Z, and it solves min_nu E_nu G + alpha_attk KL(nu||p)."""
    cp = pytest.importorskip("cvxpy")
    m = random_sa_mdp(n_states=5, n_actions=3, ball_size=3, seed=4)
    alpha_ent, alpha_attk = 0.2, 0.7
    v, nu = agent_soft_worst_case_value(m, alpha_ent, alpha_attk)
    G = _soft_g(m, v, alpha_ent)
    q = m.R + m.gamma * m.P @ v
    H = -(m.pi * np.log(m.pi)).sum(1)
    w = m.prior * np.exp(-(q @ m.pi.T + alpha_ent * H[None, :]) / alpha_attk)
    np.testing.assert_allclose(nu, w / w.sum(1, keepdims=True), atol=1e-12)
    for s in range(5):
        support = np.flatnonzero(m.prior[s] > 0)
        x = cp.Variable(support.size, nonneg=True)
        p = m.prior[s, support]
        obj = G[s, support] @ x + alpha_attk * cp.sum(cp.kl_div(x, p))  # kl_div(x,p)=x log(x/p)-x+p; sums cancel
        cp.Problem(cp.Minimize(obj), [cp.sum(x) == 1]).solve()
        np.testing.assert_allclose(x.value, nu[s, support], atol=1e-4)
        assert obj.value == pytest.approx(v[s], abs=1e-4)  # the agent's value is the adversary's minimum


def test_soft_adversary_tends_to_hard_worst_case():
    """As alpha_attk -> 0 the soft worst-case value approaches the hard robust value min_{s~ in B(s)} G(s, s~)."""
    m = random_sa_mdp(n_states=6, n_actions=2, ball_size=3, seed=7)
    v_hard = np.zeros(6)
    mask = m.prior > 0
    for _ in range(600):
        v_hard = np.where(mask, _soft_g(m, v_hard, 0.0), np.inf).min(1)
    v_soft, _ = agent_soft_worst_case_value(m, 0.0, 1e-4)
    np.testing.assert_allclose(v_soft, v_hard, atol=1e-2)
    v_weak, _ = agent_soft_worst_case_value(m, 0.0, 10.0)
    assert np.all(v_weak > v_hard + 1e-3)  # a heavily constrained adversary hurts less


def test_gibbs_adversary_bad_input():
    with pytest.raises(ValueError, match="alpha_attk"):
        gibbs_adversary(np.zeros((2, 2)), np.full((2, 2), 0.5), 0.0)
    with pytest.raises(ValueError, match="ball_size"):
        random_sa_mdp(n_states=4, ball_size=2)


# ------------------------------------------------------------------ networks and attacks

def _nets(obs_dim=3, act_dim=2, seed=0):
    torch.manual_seed(seed)
    low, high = -2 * np.ones(act_dim), 2 * np.ones(act_dim)
    return Actor(obs_dim, act_dim, 16, low, high), TwinCritic(obs_dim, act_dim, 16)


def test_actor_log_prob_matches_torch_distributions():
    actor, _ = _nets()
    obs = torch.randn(50, 3)
    torch.manual_seed(3)
    a, logp = actor.sample(obs)
    mean, log_std = actor.gaussian(obs)
    dist = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean, log_std.exp()),
        [torch.distributions.TanhTransform(), torch.distributions.AffineTransform(actor.bias, actor.scale)])
    ref = dist.log_prob(a.clamp(-2 + 1e-5, 2 - 1e-5)).sum(-1)
    np.testing.assert_allclose(logp.detach(), ref.detach(), atol=2e-3)


def test_policy_kl_matches_torch_distributions():
    actor, _ = _nets()
    s, st = torch.randn(20, 3), torch.randn(20, 3)
    m1, l1 = actor.gaussian(s)
    m2, l2 = actor.gaussian(st)
    ref = torch.distributions.kl_divergence(torch.distributions.Normal(m1, l1.exp()),
                                            torch.distributions.Normal(m2, l2.exp())).sum(-1)
    np.testing.assert_allclose(policy_kl(actor, s, st).detach(), ref.detach(), atol=1e-5)


def test_pgd_stays_in_ball_and_never_increases_q():
    actor, critic = _nets()
    obs = torch.randn(200, 3)
    eps = 0.3
    adv = pgd_q_attack(actor, critic, obs, eps, steps=10)
    assert torch.all((adv - obs).abs() <= eps + 1e-6)
    with torch.no_grad():
        q_clean = critic.min_q(obs, actor.mean_action(obs))
        q_adv = critic.min_q(obs, actor.mean_action(adv))
        q_rand = critic.min_q(obs, actor.mean_action(random_attack(obs, eps, torch.Generator().manual_seed(0))))
    assert torch.all(q_adv <= q_clean + 1e-6)
    assert (q_adv < q_clean - 1e-4).float().mean() > 0.9  # it actually attacks
    assert q_adv.mean() < q_rand.mean()                   # and beats random noise
    assert torch.equal(pgd_q_attack(actor, critic, obs, 0.0), obs)


def test_mad_attack_in_ball_and_beats_its_random_start():
    actor, _ = _nets()
    obs = torch.randn(100, 3)
    eps = 0.2
    adv = mad_attack(actor, obs, eps, steps=10, generator=torch.Generator().manual_seed(5))
    start = random_attack(obs, eps, torch.Generator().manual_seed(5))
    assert torch.all((adv - obs).abs() <= eps + 1e-6)
    with torch.no_grad():
        kl_adv, kl_start = policy_kl(actor, obs, adv), policy_kl(actor, obs, start)
    assert torch.all(kl_adv >= kl_start - 1e-6)
    assert kl_adv.mean() > 1.5 * kl_start.mean()


def test_soft_perturbation_model_stays_in_ball():
    torch.manual_seed(0)
    model = PerturbationModel(3, 16, eps=0.05)
    obs = 10 * torch.randn(100, 3)
    st, logp = model.sample(obs)
    assert torch.all((st - obs).abs() <= 0.05 + 1e-6) and torch.isfinite(logp).all()


def _batch(seed=0, n=32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, 3, generator=g), torch.rand(n, 1, generator=g) * 4 - 2, torch.randn(n, generator=g),
            torch.randn(n, 3, generator=g), (torch.rand(n, generator=g) < 0.1).float())


def _agent(variant, eps):
    torch.manual_seed(11)
    return ValtSAC(3, 1, np.array([-2.0]), np.array([2.0]), ValtSACConfig(variant=variant, eps=eps, hidden=16))


@pytest.mark.parametrize("variant", ["eps", "soft"])
def test_eps_zero_reduces_to_sac(variant):
    """With eps = 0 the virtual adversary is the identity: same critic, actor and alpha losses as SAC."""
    batch = _batch()
    out = {}
    for name, v, e in [("sac", "none", 0.1), ("valt0", variant, 0.0), ("valt", variant, 0.2)]:
        agent = _agent(v, e)
        agent.critic_target.load_state_dict(_agent("none", 0.0).critic_target.state_dict())
        torch.manual_seed(5)
        critic = agent.critic_loss(*batch)
        actor, alpha = agent.actor_losses(batch[0])
        out[name] = torch.stack([critic, actor, alpha]).detach()
    torch.testing.assert_close(out["valt0"], out["sac"], rtol=0, atol=0)
    assert not torch.allclose(out["valt"], out["sac"])


def test_soft_critic_target_adds_alpha_attk_kl():
    """VALT-SOFT's target is r + gamma (1-d) [min Qbar(s', a') - alpha log pi(a'|s~') + alpha_attk (log nu - log p)],
    re-derived here by hand on a fixed batch; soft_critic_kl=False drops exactly the last term."""
    obs, act, rew, nxt, done = _batch(seed=3)
    losses = {}
    for flag in (True, False):
        torch.manual_seed(11)
        agent = ValtSAC(3, 1, np.array([-2.0]), np.array([2.0]),
                        ValtSACConfig(variant="soft", eps=0.2, hidden=16, alpha_attk=0.7, soft_critic_kl=flag))
        torch.manual_seed(1)
        s_tilde, _ = agent.nu_model.sample(nxt)
        torch.manual_seed(2)
        losses[flag] = agent.critic_loss(obs, act, rew, nxt, done, next_obs_tilde=s_tilde.detach())
        with torch.no_grad():  # the same target, by hand
            torch.manual_seed(2)
            a2, logpi = agent.actor.sample(s_tilde)
            q1, q2 = agent.critic_target(nxt, a2)
            mean, log_std = agent.nu_model.net(nxt).chunk(2, dim=-1)
            y_unit = (s_tilde - nxt) / 0.2
            base = torch.distributions.Normal(mean, log_std.clamp(-5, 2).exp())
            # density of y = tanh(u) on (-1, 1)^3, then of the uniform prior on the unit ball: 2^-3
            log_nu = (base.log_prob(torch.atanh(y_unit)) - torch.log(1 - y_unit**2)).sum(-1)
            kl = log_nu - 3 * np.log(0.5)
            v = torch.min(q1, q2) - agent.alpha * logpi + (0.7 * kl if flag else 0.0)
            y = rew + agent.cfg.gamma * (1 - done) * v
            p1, p2 = agent.critic(obs, act)
            expected = ((p1 - y) ** 2).mean() + ((p2 - y) ** 2).mean()
        torch.testing.assert_close(losses[flag], expected, rtol=1e-4, atol=1e-4)
    assert not torch.allclose(losses[True], losses[False])


def test_actor_improves_against_the_adversary_with_the_critic_at_the_true_state(monkeypatch):
    """Step 3 by hand on a fixed batch: the actor loss E[alpha log pi(a|s~) - min_j Q_j(s, a)], a ~ pi(.|s~), with
    s~ drawn by perturb(s) (the adversary stays in the improvement step) and the critic read at the true s; the
    temperature loss -log alpha (log pi + target entropy). float32, the same operations: tolerance 1e-6."""
    obs = _batch(seed=6)[0]
    agent = _agent("eps", 0.2)
    s_tilde = random_attack(obs, 0.2, torch.Generator().manual_seed(7))
    seen = []
    monkeypatch.setattr(agent, "perturb", lambda o, critic=None: (seen.append(o), s_tilde)[1])
    torch.manual_seed(8)
    actor_loss, alpha_loss = agent.actor_losses(obs)
    assert len(seen) == 1 and torch.equal(seen[0], obs)
    with torch.no_grad():
        torch.manual_seed(8)
        a, logp = agent.actor.sample(s_tilde)
        expected = (agent.alpha * logp - agent.critic.min_q(obs, a)).mean()
        at_tilde = (agent.alpha * logp - agent.critic.min_q(s_tilde, a)).mean()
        expected_alpha = -(agent.log_alpha * (logp + agent.target_entropy)).mean()
    assert abs(float(expected - at_tilde)) > 1e-3  # reading the critic at s~ would be visible
    torch.testing.assert_close(actor_loss.detach(), expected, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(alpha_loss.detach(), expected_alpha, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kappa", [0.0, 0.3, 1.0])
def test_valt_eps_adversary_mixes_the_pgd_worst_case_and_the_uniform_prior(kappa):
    """VALT-EPS's nu: each row is, with probability kappa_worst, the PGD min-Q worst case of its own state, else a
    uniform draw of B_eps(s). The draws are replayed from the same torch seed (uniform noise, then the row coin)."""
    torch.manual_seed(11)
    agent = ValtSAC(3, 1, np.array([-2.0]), np.array([2.0]),
                    ValtSACConfig(variant="eps", eps=0.2, hidden=16, kappa_worst=kappa, pgd_steps=3))
    obs = torch.randn(400, 3, generator=torch.Generator().manual_seed(9))
    torch.manual_seed(10)
    out = agent.perturb(obs)
    torch.manual_seed(10)
    uniform = random_attack(obs, 0.2)
    coin = torch.rand(400) < kappa
    assert torch.all((out - obs).abs() <= 0.2 + 1e-6)
    assert abs(coin.float().mean().item() - kappa) <= 4 * np.sqrt(kappa * (1 - kappa) / 400)
    torch.testing.assert_close(out[~coin], uniform[~coin], rtol=0, atol=0)
    if coin.any():
        worst = pgd_q_attack(agent.actor, agent.critic, obs[coin], 0.2, 3)
        torch.testing.assert_close(out[coin], worst, rtol=0, atol=0)
        assert not torch.allclose(worst, uniform[coin])


def test_nu_loss_is_the_kl_to_the_gibbs_adversary_and_update_steps_every_network():
    """VALT-SOFT's nu_model loss E[log nu(s~|s) + (min_j Q_j(s, a) - alpha log pi(a|s~)) / alpha_attk] (KL(nu || nu*)
    up to a constant) by hand; then one update moves actor, critics and nu_model, and the target critics are the
    Polyak average (1 - tau) old + tau new (float32, tolerance 1e-6)."""
    torch.manual_seed(11)
    agent = ValtSAC(3, 1, np.array([-2.0]), np.array([2.0]),
                    ValtSACConfig(variant="soft", eps=0.2, hidden=16, alpha_attk=0.5, tau=0.1))
    obs = _batch(seed=8)[0]
    torch.manual_seed(3)
    loss = agent.nu_loss(obs)
    with torch.no_grad():
        torch.manual_seed(3)
        s_tilde, log_nu = agent.nu_model.sample(obs)
        a, logp = agent.actor.sample(s_tilde)
        expected = (log_nu + (agent.critic.min_q(obs, a) - agent.alpha * logp) / 0.5).mean()
    torch.testing.assert_close(loss.detach(), expected, rtol=1e-6, atol=1e-6)
    nets = {"actor": agent.actor, "critic": agent.critic, "nu_model": agent.nu_model}
    before = {k: [p.detach().clone() for p in net.parameters()] for k, net in nets.items()}
    target_before = [p.detach().clone() for p in agent.critic_target.parameters()]
    agent.update(_batch(seed=9))
    for k, net in nets.items():
        assert any(not torch.equal(p, q) for p, q in zip(net.parameters(), before[k])), f"{k} did not move"
    for pt, old, p in zip(agent.critic_target.parameters(), target_before, agent.critic.parameters()):
        torch.testing.assert_close(pt.detach(), 0.9 * old + 0.1 * p.detach(), rtol=1e-6, atol=1e-6)


def test_behaviour_acts_on_perturbed_observations_but_stores_clean_transitions(monkeypatch):
    """Step 1: after the warm-up, with adv_ratio = 1 every action is taken on s~ ~ nu(.|s), yet every replayed
    transition is the environment's own (s, a, r, s'): PointMassReach's dynamics hold on each sampled batch."""
    from icml25.papers.valt_sac import valt_sac as module

    calls, batches = [], []
    perturb, update = module.ValtSAC.perturb, module.ValtSAC.update
    monkeypatch.setattr(module.ValtSAC, "perturb",
                        lambda self, o, critic=None: (calls.append(o.shape[0]), perturb(self, o, critic))[1])
    monkeypatch.setattr(module.ValtSAC, "update", lambda self, b: (batches.append(b), update(self, b))[1])
    cfg = ValtSACConfig(variant="eps", total_steps=60, learning_starts=20, hidden=8, batch_size=16, pgd_steps=1,
                        adv_ratio=1.0, eps=0.3)
    valt_sac_train("PointMassReach", cfg, seed=0)
    assert calls.count(1) == 40 and len(batches) == 40  # one behaviour perturbation per post-warm-up step
    for obs, act, rew, nxt, _ in batches:
        v = 0.8 * obs[:, 2:] + 0.5 * act.clamp(-1, 1)
        p = (obs[:, :2] + 0.1 * v).clamp(-2, 2)
        torch.testing.assert_close(nxt, torch.cat([p, v], 1), rtol=0, atol=1e-5)  # float32 storage
        torch.testing.assert_close(rew, -p.norm(dim=1), rtol=0, atol=1e-5)


def test_perturbation_model_density_and_kl_to_prior_by_quadrature():
    """In 1-D, exp(log_prob) integrates to 1 over the ball and the mean of log_ratio_to_prior over samples
    is KL(nu || uniform) computed by quadrature."""
    torch.manual_seed(4)
    model = PerturbationModel(1, 8, eps=0.3)
    obs = torch.tensor([[0.7]])
    grid = torch.linspace(-1 + 1e-5, 1 - 1e-5, 200_001, dtype=torch.float32)[:, None]
    with torch.no_grad():
        dens = model.log_prob(obs.expand(len(grid), 1), obs + 0.3 * grid).exp().double()  # density of y = offset/eps
        dy = float(grid[1, 0] - grid[0, 0])
        assert float(dens.sum() * dy) == pytest.approx(1.0, abs=2e-3)
        kl_quad = float((dens * (torch.log(dens) - np.log(0.5))).sum() * dy)
        st_, logp = model.sample(obs.expand(40_000, 1))
        inner = ((st_ - obs).abs() < 0.99 * 0.3)[:, 0]  # float32 atanh loses precision at the very edge
        torch.testing.assert_close(model.log_prob(obs.expand(40_000, 1), st_)[inner], logp[inner], rtol=1e-3, atol=1e-3)
        kl_mc = float(model.log_ratio_to_prior(logp).mean())
    assert kl_quad > 0.01 and kl_mc == pytest.approx(kl_quad, abs=0.02)
    with pytest.raises(ValueError, match="shape"):
        model.log_prob(obs, torch.zeros(2, 1))


def test_pointmass_dynamics_closed_form():
    env = PointMassReach(horizon=3)
    obs, _ = env.reset(seed=0)
    p0 = obs[:2].astype(float)
    obs1, r, term, trunc, _ = env.step(np.array([1.0, -0.5]))
    v1 = 0.5 * np.array([1.0, -0.5])
    np.testing.assert_allclose(obs1, np.r_[p0 + 0.1 * v1, v1], atol=1e-6)
    assert r == pytest.approx(-np.linalg.norm(p0 + 0.1 * v1), abs=1e-6) and not term and not trunc
    obs2, *_ = env.step(np.array([3.0, 0.0]))  # action clipped to 1
    np.testing.assert_allclose(obs2[2:], 0.8 * v1 + 0.5 * np.array([1.0, 0.0]), atol=1e-6)


def test_registered_gym_env_makes_and_steps():
    import gymnasium as gym

    import icml25.envs  # noqa: F401

    env = gym.make("icml25/PointMassReach-v0", horizon=60)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs) and env.spec.max_episode_steps is None
    env.action_space.seed(0)
    for t in range(1, 61):
        obs, r, term, trunc, _ = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and r <= 0 and not term
        assert trunc == (t == 60)  # the env's own horizon, not an outer TimeLimit, ends the episode


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 5), st.floats(0.0, 0.5))
def test_module_forwards_match_their_samplers(batch, eps):
    actor, pert = Actor(4, 2, 8, -np.ones(2), 2 * np.ones(2)), PerturbationModel(4, 8, eps)
    obs = torch.randn(batch, 4)
    torch.manual_seed(0)
    a = actor(obs)
    torch.manual_seed(0)
    assert torch.equal(a, actor.sample(obs)[0]) and a.shape == (batch, 2)
    assert bool(((a >= -1) & (a <= 2)).all())
    assert torch.equal(actor(obs, deterministic=True), actor.mean_action(obs))
    assert bool(((pert(obs) - obs).abs() <= eps + 1e-6).all())


def test_wrapper_and_lockstep_evaluation_agree():
    """evaluate_under_attack (batched lockstep) gives what PerturbedObservation gives episode by episode."""
    actor, _ = _nets(obs_dim=4, act_dim=2)
    eps = 0.1
    lock = evaluate_under_attack(actor, "PointMassReach", lambda o: o + eps, eps, n_episodes=2, seed=3)
    ref = []
    for i in range(2):
        env = PerturbedObservation(PointMassReach(), lambda o: o + eps)
        obs, _ = env.reset(seed=3 + i)
        total, done = 0.0, False
        while not done:
            with torch.no_grad():
                act = actor.mean_action(torch.as_tensor(obs).unsqueeze(0)).squeeze(0).numpy()
            obs, r, term, trunc, _ = env.step(act)
            np.testing.assert_allclose(obs, env.clean_obs + eps, atol=1e-6)
            total, done = total + r, term or trunc
        ref.append(total)
    np.testing.assert_allclose(lock, ref, atol=1e-9)
    clean = evaluate_under_attack(actor, "PointMassReach", "none", 0.0, n_episodes=2, seed=3)
    assert not np.allclose(clean, lock)


def test_training_is_deterministic_and_counts_env_steps():
    cfg = ValtSACConfig(variant="eps", total_steps=120, learning_starts=100, hidden=8, batch_size=16, pgd_steps=1)
    a1, _, log1 = valt_sac_train("PointMassReach", cfg, seed=1)
    a2, _, log2 = valt_sac_train("PointMassReach", cfg, seed=1)
    assert log1.env_steps == 120 and log1.updates == 20
    assert log1.episode_returns == log2.episode_returns
    for p1, p2 in zip(a1.parameters(), a2.parameters()):
        assert torch.equal(p1, p2)


def test_bad_input_raises():
    with pytest.raises(ValueError, match="variant"):
        ValtSACConfig(variant="atla")
    with pytest.raises(ValueError, match="eps"):
        ValtSACConfig(eps=-0.1)
    with pytest.raises(ValueError, match="kappa_worst"):
        ValtSACConfig(kappa_worst=1.5)
    actor, critic = _nets(obs_dim=4)
    with pytest.raises(ValueError, match="attack"):
        evaluate_under_attack(actor, "PointMassReach", "fgsm", 0.1, 1)
    with pytest.raises(ValueError, match="critic"):
        evaluate_under_attack(actor, "PointMassReach", "pgd_q", 0.1, 1)
    with pytest.raises(ValueError, match="eps"):
        random_attack(torch.zeros(2, 3), -1.0)
    with pytest.raises(ValueError, match="horizon"):
        PointMassReach(horizon=0)
    with pytest.raises(ValueError, match="methods"):
        run_robustness(RobustnessConfig(methods=("eps",)), seed=0)


# ------------------------------------------------------------------ experiment

def test_smoke_run():
    exp = EXPERIMENTS[0]
    m = exp.run(exp.make_config("smoke"), seed=0)
    assert m["eps_env_step_difference"] == 0 and m["none_env_steps"] == 300
    for attack in ("none", "random", "mad", "pgd_q"):
        assert m[f"eps_minus_sac_{attack}"] == pytest.approx(m[f"eps_{attack}"] - m[f"none_{attack}"])
        for method in ("none", "eps"):
            assert -50 * 2 * np.sqrt(2) <= m[f"{method}_{attack}"] < 0
    assert m["eps_clean_rel_drop"] == pytest.approx((m["none_none"] - m["eps_none"]) / abs(m["none_none"]))
    assert m["sac_minus_untrained_clean"] == pytest.approx(m["none_none"] - m["untrained_none"])
    assert -50 * 2 * np.sqrt(2) <= m["untrained_none"] < 0
    assert exp.run(exp.make_config("smoke"), seed=0) == m  # deterministic, the untrained baseline included


def test_mujoco_experiments_use_the_papers_task_settings():
    """The paper's eps per task (HalfCheetah 0.15, Hopper 0.075) and adversarial share (HalfCheetah 100%), SAC's
    256-unit networks; the budget is a stated fraction of the paper's steps (fidelity reduced)."""
    from icml25.papers.valt_sac.repro import MUJOCO_STEPS, PAPER_STEPS

    by_name = {e.name: e for e in EXPERIMENTS}
    for name, env_id, eps, share in (("hopper", "Hopper-v5", 0.075, 0.5), ("halfcheetah", "HalfCheetah-v5", 0.15, 1.0)):
        exp = by_name[name]
        assert exp.requires == ("mujoco",)
        for preset in ("quick", "full"):
            cfg = exp.make_config(preset)
            sac = cfg.sac
            assert (cfg.env_id, sac.eps, sac.adv_ratio, sac.hidden, sac.batch_size) == (env_id, eps, share, 256, 256)
            assert sac.total_steps == MUJOCO_STEPS[preset] < PAPER_STEPS
            fid = exp.fidelity_of(preset)
            assert fid.level == "reduced" and f"1/{PAPER_STEPS // sac.total_steps}" in fid.note


def test_method_settings_are_one_nested_valt_sac_config():
    """The experiments hold the method's settings as one ValtSACConfig (``sac``): presets and ``--set`` reach it by
    dotted keys, a bad value names the dotted key, and a run trains with exactly those settings."""
    exp = EXPERIMENTS[0]
    assert RobustnessConfig().sac == ValtSACConfig(total_steps=3_000, learning_starts=500)
    assert not {"eps", "hidden", "total_steps", "kappa_worst"} & set(exp.fields)
    assert {"sac.eps", "sac.hidden", "sac.total_steps", "sac.kappa_worst", "sac.gamma"} <= set(exp.fields)
    smoke = exp.make_config("smoke")
    assert (smoke.sac.total_steps, smoke.sac.hidden, smoke.sac.batch_size, smoke.eval_episodes) == (300, 16, 32, 2)
    cfg = exp.make_config("smoke", {"sac.eps": 0.05, "sac.alpha_attk": 0.3})
    assert (cfg.sac.eps, cfg.sac.alpha_attk, cfg.sac.hidden) == (0.05, 0.3, 16)
    with pytest.raises(ConfigError, match=r"RobustnessConfig\.sac\.kappa_worst must be in \[0, 1\]"):
        exp.make_config("smoke", {"sac.kappa_worst": 1.5})
    with pytest.raises(ConfigError, match=r"RobustnessConfig\.sac\.hidden must be > 0"):
        exp.make_config("smoke", {"sac.hidden": 0})
    with pytest.raises(ConfigError, match=r"sac\.variant is set per run from methods"):
        exp.make_config("smoke", {"sac.variant": "soft"})  # it would be ignored: refused instead
    with pytest.raises(ConfigError, match=r"sac\.device is set per run from device"):
        exp.make_config("smoke", {"sac.device": "cuda"})


def test_max_episode_steps_truncates_training_and_evaluation_episodes():
    from icml25.papers.valt_sac import make_env

    env = make_env("PointMassReach", max_episode_steps=7)
    env.reset(seed=0)
    steps = 0
    while True:
        steps += 1
        if env.step(np.zeros(2))[3]:
            break
    assert steps == 7
    with pytest.raises(ValueError, match="max_episode_steps"):
        make_env("PointMassReach", max_episode_steps=0)


@pytest.mark.parametrize("name", ["hopper", "halfcheetah"])
def test_mujoco_smoke_run(name):
    pytest.importorskip("mujoco")
    exp = next(e for e in EXPERIMENTS if e.name == name)
    m = exp.run(exp.make_config("smoke"), seed=0)
    assert m["eps_env_step_difference"] == 0 and m["none_env_steps"] == 300
    for attack in ("none", "random", "mad", "pgd_q"):
        assert np.isfinite(m[f"eps_{attack}"]) and np.isfinite(m[f"none_{attack}"])
        assert m[f"eps_minus_sac_{attack}"] == pytest.approx(m[f"eps_{attack}"] - m[f"none_{attack}"])
