"""infeasible_targets: BFS ground truth, the official scalar TD target and our distributional one (closed form +
convergence), the terminal classifier, relabeling (per task), both rejection rules, the task set, the tabular
agent against BFS, bad input, and a smoke run.

The method's defining elements (the target evaluator and its use in planning, as the paper's text and the
official mila-iqia/Delusions code give them, see docs/papers/infeasible_targets.md, "The method") and the tests
that fail when one is removed or altered:

1. The histogram evaluator h(s, a, g) over B + 1 distance atoms (the last: "B+1 or more, or never"), trained by
   cross-entropy to its TD target: ``test_td_converges_on_corridor_with_one_way_door`` (loss on probabilities
   instead of log-probabilities).
2. The TD target. Official scalar rule: two-hot of 1 + d', d' the mean of h^-(s', a', g), 1000 when terminated,
   0 when reached (reached wins); ours: shift by one atom, overflow into the last:
   ``test_scalar_td_target_matches_the_official_rule_by_hand``,
   ``test_scalar_td_target_matches_the_released_evaluator`` (terminated wins; mode instead of mean; without the
   + 1, also ``test_td_converges_on_corridor_with_one_way_door``), ``test_td_target_closed_form`` (no overflow),
   ``test_td_loss_bootstraps_from_the_frozen_copy_under_the_agents_policy`` (reached counted on deaths).
3. Off-policy bootstrap: a' = pi(s', g), the agent's action, read from a frozen copy synced every
   ``target_every`` updates (Adam, gradient-norm clip):
   ``test_td_loss_bootstraps_from_the_frozen_copy_under_the_agents_policy`` (replayed action, also
   ``test_td_converges_on_corridor_with_one_way_door``; online net),
   ``test_train_evaluator_is_clipped_adam_td_with_periodic_target_syncs`` (never synced; no clipping).
4. The terminal-state classifier omega, trained on terminated & ~died:
   ``test_terminal_classifier_learns_terminal_states``,
   ``test_td_loss_bootstraps_from_the_frozen_copy_under_the_agents_policy`` (loss dropped; deaths labelled
   terminal).
5. Hindsight relabeling that shows the evaluator infeasible targets: ``generate`` (the generator's proposals),
   ``pertask`` (any episode of the task), ``future``, ``episode``, and weighted mixtures:
   ``test_relabel_sources`` (generate replaced by episode; future including the past),
   ``test_relabel_mixture_weights_and_pertask_draws_from_every_episode`` (mixture weights ignored; pertask from the
   own episode only).
6. Rejection: official, the mean distance under the best first action > ``dist_cutoff`` (8) or omega flags the
   source; ours, 1 - p(inf) < threshold; the first candidate not rejected is kept:
   ``test_distance_rule_rejects_beyond_cutoff_and_from_terminal_sources`` (omega ignored; >= cutoff; last accepted
   candidate, also ``test_rejection_keeps_first_feasible_candidate``), ``test_rejection_keeps_first_feasible_candidate``
   (threshold inverted), ``test_planner_scores_take_the_best_first_action`` (worst first action).
"""

from __future__ import annotations

import copy

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.papers.infeasible_targets import (
    EvaluatorConfig,
    HallucinatingGenerator,
    RejectingPlanner,
    RejectionConfig,
    ReplayBuffer,
    SSMTaskSet,
    SwordShieldMonster,
    TabularHERAgent,
    TargetEvaluator,
    distributional_td_target,
    relabel,
    scalar_td_target,
    train_evaluator,
    two_hot,
)
from icml25.papers.infeasible_targets.planning import policy_reaches
from icml25.papers.infeasible_targets.repro import EXPERIMENTS


@pytest.fixture(scope="module")
def hand_env():
    """5x5: cell (0,0) walled in by lava at (0,1) and (1,0); sword (4,0), shield (4,4), monster (2,2)."""
    lava = np.zeros((5, 5), dtype=bool)
    lava[0, 1] = lava[1, 0] = True
    return SwordShieldMonster.from_layout(lava, sword=(4, 0), shield=(4, 4), monster=(2, 2))


def test_bfs_lava_enclosure(hand_env):
    e = hand_env
    inside, outside = int(e.encode(0, 0, 0, 0)), int(e.encode(3, 3, 0, 0))
    assert e.is_state_possible(inside)  # it exists...
    assert not e.reachable(outside, inside)  # ...but nobody outside can get in
    assert not e.reachable(inside, outside)  # and from inside every move kills or bumps
    assert e.reachable(inside, inside)
    assert not e.is_state_possible(int(e.encode(0, 1, 0, 0)))  # standing in lava: non-existent


def test_bfs_irreversible_pickups(hand_env):
    e = hand_env
    armed = int(e.encode(3, 0, 1, 0))
    assert not e.reachable(armed, int(e.encode(3, 1, 0, 0)))  # swordless again: temporarily infeasible
    assert e.reachable(int(e.encode(3, 1, 0, 0)), armed)
    assert not e.is_state_possible(int(e.encode(4, 0, 0, 0)))  # on the sword without it: non-existent
    assert not e.is_state_possible(int(e.encode(2, 2, 1, 0)))  # alive on the monster, half armed
    both = int(e.encode(3, 3, 1, 1))
    assert e.reachable(both, e.goal_state()) and not e.reachable(int(e.encode(3, 3, 1, 0)), int(e.encode(3, 3, 0, 1)))


def test_distance_matrix_matches_networkx_and_bfs():
    e = SwordShieldMonster(size=6, difficulty=0.4, seed=3)
    graph = nx.DiGraph()
    for s in np.flatnonzero(e.possible & ~e.terminal_state):
        for a in range(4):
            if not e.died[s, a]:
                graph.add_edge(int(s), int(e.next_state[s, a]))
    dist = e.distance_matrix()
    for s in np.flatnonzero(e.possible):
        ref = nx.single_source_shortest_path_length(graph, int(s)) if int(s) in graph else {int(s): 0}
        expect = np.full(e.n_states, np.inf)
        expect[list(ref)] = list(ref.values())
        np.testing.assert_array_equal(dist[s], expect)
    rng = np.random.default_rng(0)
    for s, g in zip(rng.choice(np.flatnonzero(e.possible), 60), rng.integers(0, e.n_states, 60)):
        assert e.reachable(int(s), int(g)) == np.isfinite(dist[s, g])


def test_td_target_closed_form():
    p = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.0, 0.5, 0.0], [0.25, 0.25, 0.25, 0.25]])
    out = distributional_td_target(p, torch.tensor([False, True, False]), torch.tensor([False, False, True]))
    # B = 3 distance bins + inf: shift one step, distance 3 overflows into inf (0.3 + 0.4)
    torch.testing.assert_close(out[0], torch.tensor([0.0, 0.1, 0.2, 0.7]))
    torch.testing.assert_close(out[1], torch.tensor([1.0, 0.0, 0.0, 0.0]))  # reached: distance 1
    torch.testing.assert_close(out[2], torch.tensor([0.0, 0.0, 0.0, 1.0]))  # terminated: never


def test_scalar_td_target_matches_the_official_rule_by_hand():
    """Official rule re-derived on fixed inputs: d' = sum_k p_k k on the support 1..K, d' = 1000 when done,
    0 when reached (reached wins), then the two-hot of clamp(1 + d', 1, K)."""
    p = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.0, 0.5, 0.0], [0.25, 0.25, 0.25, 0.25], [1.0, 0, 0, 0]])
    reached = torch.tensor([False, True, False, True])
    done = torch.tensor([False, False, True, True])
    out = scalar_td_target(p, reached, done)
    # row 0: d' = .1 + .4 + .9 + 1.6 = 3.0 -> 1 + d' = 4 -> one-hot on atom 4
    torch.testing.assert_close(out[0], torch.tensor([0.0, 0.0, 0.0, 1.0]))
    torch.testing.assert_close(out[1], torch.tensor([1.0, 0.0, 0.0, 0.0]))  # reached: 1 + 0 = distance 1
    torch.testing.assert_close(out[2], torch.tensor([0.0, 0.0, 0.0, 1.0]))  # done: 1 + 1000, clamped to K
    torch.testing.assert_close(out[3], torch.tensor([1.0, 0.0, 0.0, 0.0]))  # reached overrides done
    # a fractional mean: p = (.5, 0, .5, 0) without flags gives d' = 2, 1 + d' = 3; (.5, .5, 0, 0) gives 2.5
    half = scalar_td_target(torch.tensor([[0.5, 0.5, 0.0, 0.0]]), torch.tensor([False]), torch.tensor([False]))
    torch.testing.assert_close(half[0], torch.tensor([0.0, 0.5, 0.5, 0.0]))
    # the two rules differ exactly where the official one collapses a bimodal distribution to its mean
    bimodal = torch.tensor([[0.0, 0.5, 0.0, 0.5]])  # half at distance 2, half "never"
    flags = torch.tensor([False])
    torch.testing.assert_close(distributional_td_target(bimodal, flags, flags)[0], torch.tensor([0.0, 0.0, 0.5, 0.5]))
    torch.testing.assert_close(scalar_td_target(bimodal, flags, flags)[0], torch.tensor([0.0, 0.0, 0.0, 1.0]))


@pytest.mark.parametrize("values", [[1.0, 2.5, 3.75, 7.0], [0.2, 9.0, 4.0, 1.01]])
def test_two_hot_mean_is_the_clamped_value(values):
    x = torch.tensor(values)
    h = two_hot(x, 5)
    torch.testing.assert_close(h.sum(1), torch.ones(4))
    torch.testing.assert_close(h @ torch.arange(1.0, 6.0), x.clamp(1, 5))
    assert ((h > 0).sum(1) <= 2).all()


@pytest.mark.parametrize("td_rule", ["scalar", "distributional"])
def test_td_converges_on_corridor_with_one_way_door(td_rule):
    """Cells 0..4, actions left/right; from cell 2 'left' bumps (one-way door), so 0 and 1 are unreachable
    from 2, 3, 4. The fixed point is a one-hot at the true distance under the optimal policy, p(inf) = 1 when
    the target cannot be reached (the overflow alone carries the mass there: no terminal signals)."""
    torch.set_num_threads(1)
    n, nb = 5, 6
    nxt = np.array([[max(s - 1, 0) if s != 2 else 2, min(s + 1, n - 1)] for s in range(n)])
    g_dist = np.full((n, n), np.inf)
    for s in range(n):  # BFS distances
        g_dist[s, s], frontier = 0, [s]
        while frontier:
            new = []
            for u in frontier:
                for v in nxt[u]:
                    if not np.isfinite(g_dist[s, v]):
                        g_dist[s, v] = g_dist[s, u] + 1
                        new.append(v)
            frontier = new
    policy_table = np.array([[int(np.argmin([g_dist[nxt[s, a], g] for a in range(2)])) for g in range(n)]
                             for s in range(n)])
    S, A, G = np.meshgrid(np.arange(n), np.arange(2), np.arange(n), indexing="ij")
    S, A, G = S.ravel(), A.ravel(), G.ravel()
    S2 = nxt[S, A]
    batch = {"s": S, "a": A, "s2": S2, "g": G, "terminated": np.zeros_like(S, bool), "died": np.zeros_like(S, bool)}
    torch.manual_seed(0)
    ev = TargetEvaluator(np.eye(n, dtype=np.float32), n_actions=2, n_bins=nb, hidden=64)
    opt = torch.optim.Adam(ev.parameters(), lr=1e-2)
    target = copy.deepcopy(ev)
    for step in range(400):
        loss = ev.td_loss(batch, lambda s, g: policy_table[s, g], target, td_rule)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 12 == 11:
            target.load_state_dict(ev.state_dict())
    probs = ev.distance_distribution(S, G, A).detach().numpy()
    true = np.where(S2 == G, 1, 1 + g_dist[S2, G])  # steps after taking A, then acting optimally
    finite = np.isfinite(true)
    assert finite.any() and (~finite).any()
    np.testing.assert_array_equal(probs[finite].argmax(1), true[finite].astype(int) - 1)
    assert probs[finite, (true[finite] - 1).astype(int)].min() > 0.9
    assert probs[~finite, -1].min() > 0.9
    # the mean the official planner reads is the true distance (finite) or the last atom (unreachable)
    mean = ev.expected_distance(S, G, A)
    np.testing.assert_allclose(mean, probs @ np.arange(1, nb + 2), rtol=1e-5)
    assert np.all(np.abs(mean[finite] - true[finite]) < 0.3) and mean[~finite].min() > nb + 0.5


def test_terminal_classifier_learns_terminal_states():
    torch.manual_seed(0)
    ev = TargetEvaluator(np.eye(6, dtype=np.float32), n_actions=2, n_bins=3, hidden=32)
    opt = torch.optim.Adam(ev.parameters(), lr=1e-2)
    s2 = np.arange(6).repeat(4)
    batch = {"s": s2, "a": np.zeros_like(s2), "s2": s2, "g": s2, "terminated": np.isin(s2, [2, 5]),
             "died": s2 == 5}  # 2 ends the episode by success (terminal); 5 by a death that leaves s2 in place
    for _ in range(150):
        loss = ev.td_loss(batch, lambda s, g: np.zeros_like(s))
        opt.zero_grad()
        loss.backward()
        opt.step()
    np.testing.assert_array_equal(ev.is_terminal(np.arange(6)), np.arange(6) == 2)
    labels = {**batch, "s2_terminal": np.isin(s2, [2, 5])}  # an explicit label overrides the default
    for _ in range(150):
        loss = ev.td_loss(labels, lambda s, g: np.zeros_like(s))
        opt.zero_grad()
        loss.backward()
        opt.step()
    np.testing.assert_array_equal(ev.is_terminal(np.arange(6)), np.isin(np.arange(6), [2, 5]))


def test_evaluator_architecture_is_the_official_one():
    ev = TargetEvaluator(np.eye(4, dtype=np.float32), n_actions=3)
    linears = [m for m in ev.net if isinstance(m, torch.nn.Linear)]
    norms = [m for m in ev.net if isinstance(m, torch.nn.LayerNorm)]
    assert [m.out_features for m in linears] == [256, 256, 3 * 16] and len(norms) == 3  # 16 atoms, 3 layers
    plain = TargetEvaluator(np.eye(4, dtype=np.float32), layernorm=False)
    assert not any(isinstance(m, torch.nn.LayerNorm) for m in plain.modules())


def test_td_loss_bootstraps_from_the_frozen_copy_under_the_agents_policy():
    """One batch's loss re-derived: the target is the rule applied to h^-(s', pi(s', g), g) of the *target* network
    under the policy's action (not the replayed one), reached = (s' == g) & ~died; cross-entropy to h(s, a, g), plus
    omega's cross-entropy with the label terminated & ~died (float32, the same operations: rtol 1e-6)."""
    from torch.nn import functional as F

    torch.manual_seed(0)
    n, m = 6, 24
    ev = TargetEvaluator(np.eye(n, dtype=np.float32), n_actions=2, n_bins=4, hidden=16)
    target = copy.deepcopy(ev)
    with torch.no_grad():
        for p in target.parameters():
            p.add_(0.5 * torch.randn_like(p))
    rng = np.random.default_rng(0)
    s, a, s2, g = (rng.integers(0, k, m) for k in (n, 2, n, n))
    g[:6] = s2[:6]  # some targets reached
    terminated = rng.random(m) < 0.4
    died = terminated & (np.arange(m) % 2 == 0)

    def policy(s_, g_):
        return (s_ + g_) % 2

    assert (policy(s2, g) != a).any() and (terminated & ~died).any() and (died & (s2 == g)).any()
    batch = {"s": s, "a": a, "s2": s2, "g": g, "terminated": terminated, "died": died}
    rows = torch.arange(m)
    for td_rule, rule in (("scalar", scalar_td_target), ("distributional", distributional_td_target)):
        with torch.no_grad():
            nxt = target(s2, g).softmax(-1)[rows, torch.as_tensor(policy(s2, g))]
            y = rule(nxt, torch.as_tensor((s2 == g) & ~died), torch.as_tensor(terminated))
            logp = ev(s, g).log_softmax(-1)[rows, torch.as_tensor(a)]
            omega = F.cross_entropy(ev.terminal_logits(s2), torch.as_tensor(terminated & ~died).long())
            expected = float(-(y * logp).sum(-1).mean() + omega)
        assert float(ev.td_loss(batch, policy, target, td_rule).detach()) == pytest.approx(expected, rel=1e-6)


def test_train_evaluator_is_clipped_adam_td_with_periodic_target_syncs(three_episodes):
    """train_evaluator re-run by hand on a copy: uniform replay draws, relabeled targets, td_loss against a frozen
    copy synced every target_every updates, gradient-norm clip, Adam (lr, eps 1e-5); float32, the same operations
    in the same order, so the parameters agree to rounding (rtol 1e-5)."""
    replay, _ = three_episodes
    torch.manual_seed(0)
    ev = TargetEvaluator(np.eye(24, dtype=np.float32), n_actions=2, n_bins=4, hidden=16)
    ref = copy.deepcopy(ev)

    def policy(s_, g_):
        return (s_ + g_) % 2

    train_evaluator(ev, replay, policy, "future", updates=9, batch_size=8, lr=1e-2, target_every=3,
                    rng=np.random.default_rng(5), max_grad_norm=0.5)
    rng = np.random.default_rng(5)
    opt = torch.optim.Adam(ref.parameters(), lr=1e-2, eps=1e-5)
    frozen = copy.deepcopy(ref).requires_grad_(False)
    for step in range(9):
        idx = rng.integers(0, len(replay), size=8)
        batch = {"s": replay.s[idx], "a": replay.a[idx], "s2": replay.s2[idx], "terminated": replay.terminated[idx],
                 "died": replay.died[idx], "g": relabel(idx, "future", replay, None, rng)}
        loss = ref.td_loss(batch, policy, frozen, "scalar")
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
        opt.step()
        if step % 3 == 2:
            frozen.load_state_dict(ref.state_dict())
    for p_ours, p_ref in zip(ev.parameters(), ref.parameters()):
        torch.testing.assert_close(p_ours, p_ref, rtol=1e-5, atol=1e-6)


def test_planner_scores_take_the_best_first_action():
    """expected_distance / feasibility without actions: the best first action (smallest mean distance, as the
    official LEAP planner; largest 1 - p(inf)); with actions: that action's histogram (float32, rtol 1e-6)."""
    torch.manual_seed(1)
    ev = TargetEvaluator(np.eye(5, dtype=np.float32), n_actions=3, n_bins=4, hidden=16)
    s, g = np.arange(5), np.arange(5)[::-1].copy()
    with torch.no_grad():
        probs = ev(s, g).softmax(-1)  # (5, 3, 5)
    mean = (probs @ torch.arange(1.0, 6.0)).numpy()
    assert (mean.max(1) - mean.min(1)).min() > 1e-3  # the actions disagree
    np.testing.assert_allclose(ev.expected_distance(s, g), mean.min(1), rtol=1e-6)
    np.testing.assert_allclose(ev.feasibility(s, g), 1 - probs[..., -1].min(1).values.numpy(), rtol=1e-6)
    acts = np.array([0, 1, 2, 0, 1])
    np.testing.assert_allclose(ev.expected_distance(s, g, acts), mean[np.arange(5), acts], rtol=1e-6)


@pytest.fixture(scope="module")
def three_episodes():
    """Three episodes whose state sets are disjoint: 0..4, 10..15, 20..23."""
    eps = [np.arange(0, 5), np.arange(10, 16), np.arange(20, 24)]
    s = np.concatenate([e[:-1] for e in eps])
    s2 = np.concatenate([e[1:] for e in eps])
    ep = np.concatenate([np.full(len(e) - 1, k) for k, e in enumerate(eps)])
    return ReplayBuffer(s, np.zeros_like(s), s2, np.zeros_like(s, bool), np.zeros_like(s, bool), ep), eps


def test_relabel_sources(three_episodes):
    replay, eps = three_episodes
    rng = np.random.default_rng(0)
    idx = np.repeat(np.arange(len(replay)), 50)
    home = [set(eps[k][1:]) for k in replay.episode[idx]]
    g = relabel(idx, "episode", replay, rng=rng)
    assert all(x in h for x, h in zip(g, home))
    g = relabel(idx, "future", replay, rng=rng)
    assert all(x in h and x > s for x, h, s in zip(g, home, replay.s[idx]))
    g = relabel(idx, "pertask", replay, rng=rng)  # official: any episode of the task, the own one included
    assert set(g) == set(replay.s2)
    assert any(x in h for x, h in zip(g, home))
    g = relabel(idx, "pertask", replay, rng=rng, pertask_own_episode=False)
    assert not any(x in h for x, h in zip(g, home))
    assert set(g) == set(replay.s2)  # every other episode's states are drawn

    class Stub:
        def generate(self, s, rng):
            return s + 1000

    g = relabel(idx, "generate", replay, Stub(), rng)
    np.testing.assert_array_equal(g, replay.s[idx] + 1000)
    g = relabel(idx, {"episode": 0.5, "generate": 0.5}, replay, Stub(), rng)
    is_gen = g >= 1000
    assert 0.4 < is_gen.mean() < 0.6
    np.testing.assert_array_equal(g[is_gen], replay.s[idx][is_gen] + 1000)


def test_relabel_mixture_weights_and_pertask_draws_from_every_episode(three_episodes):
    """A mixture draws each strategy with its normalised weight (binomial, 4 sigma), and ``pertask`` (the official
    per-task buffer, own episode included) draws a state of another episode with probability 1 - len_own / n."""
    replay, eps = three_episodes

    class Stub:
        def generate(self, s, rng):
            return s + 1000

    idx = np.repeat(np.arange(len(replay)), 200)
    rng = np.random.default_rng(3)
    g = relabel(idx, {"episode": 4.0, "generate": 1.0}, replay, Stub(), rng)  # weights 0.8 / 0.2
    assert abs((g >= 1000).mean() - 0.2) < 4 * np.sqrt(0.2 * 0.8 / idx.size)
    g = relabel(idx, "pertask", replay, rng=rng)
    other = np.array([x not in set(eps[k][1:]) for x, k in zip(g, replay.episode[idx])])
    p_other = 1 - replay.ep_len[idx] / len(replay)
    assert abs(other.mean() - p_other.mean()) < 4 * np.sqrt(p_other.mean() * (1 - p_other.mean()) / idx.size)


def test_pertask_stays_within_the_task(three_episodes):
    replay0, eps = three_episodes
    replay = ReplayBuffer(replay0.s, replay0.a, replay0.s2, replay0.terminated, replay0.died, replay0.episode,
                          task=np.where(replay0.episode == 1, 1, 0))  # episodes 0 and 2 are task 0, episode 1 task 1
    idx = np.repeat(np.arange(len(replay)), 40)
    task_states = {0: set(eps[0][1:]) | set(eps[2][1:]), 1: set(eps[1][1:])}
    g = relabel(idx, "pertask", replay, rng=np.random.default_rng(1))
    assert all(x in task_states[t] for x, t in zip(g, replay.task[idx]))
    idx0 = idx[replay.task[idx] == 0]
    g = relabel(idx0, "pertask", replay, rng=np.random.default_rng(1), pertask_own_episode=False)
    others = [set(eps[2 - k][1:]) for k in replay.episode[idx0]]  # episode 0 <-> episode 2
    assert all(x in o for x, o in zip(g, others))
    with pytest.raises(ValueError, match="two episodes of the task"):  # task 1 has a single episode
        relabel(idx, "pertask", replay, pertask_own_episode=False)
    with pytest.raises(ValueError, match="constant within each episode"):
        ReplayBuffer(replay0.s, replay0.a, replay0.s2, replay0.terminated, replay0.died, replay0.episode,
                     task=np.arange(len(replay0)) % 2)


class FixedEvaluator:
    """Stub evaluator: feasibility and mean distance looked up per target, terminal flags per source."""

    def __init__(self, table, distances=None, terminal=()):
        self.table, self.distances, self.terminal = table, distances, set(terminal)

    def feasibility(self, s, g, actions=None):
        return self.table[np.asarray(g)]

    def expected_distance(self, s, g, actions=None):
        return self.distances[np.asarray(g)]

    def is_terminal(self, s):
        return np.isin(np.asarray(s), list(self.terminal))


class ZeroAgent:
    def greedy(self, s, g):
        return np.zeros(np.shape(g), dtype=int)


def test_rejection_keeps_first_feasible_candidate():
    table = np.array([0.1, 0.6, 0.2, 0.9, 0.5])
    planner = RejectingPlanner(ZeroAgent(), None, FixedEvaluator(table), threshold=0.5, rule="feasibility")
    rng = np.random.default_rng(0)
    for _ in range(200):
        cand = rng.integers(0, 5, size=4)
        ok = table[cand] >= 0.5
        chosen = planner.choose(0, cand)
        if ok.any():
            assert chosen == cand[np.argmax(ok)]  # the first target above threshold is never dropped
        else:
            assert chosen == cand[np.argmax(table[cand])]
    assert RejectingPlanner(ZeroAgent(), None, None).choose(0, np.array([0, 3])) == 0  # no evaluator: accept


def test_distance_rule_rejects_beyond_cutoff_and_from_terminal_sources():
    dist = np.array([3.0, 8.0, 8.5, 15.0, 1.0])
    ev = FixedEvaluator(None, dist, terminal=[7])
    planner = RejectingPlanner(ZeroAgent(), None, ev)  # the official defaults: rule "distance", cutoff 8
    assert planner.rule == "distance" and planner.dist_cutoff == 8.0
    np.testing.assert_array_equal(planner.rejects(np.zeros(5, int), np.arange(5)), dist > 8)
    assert planner.rejects(np.full(5, 7), np.arange(5)).all()  # nothing is reached from a terminal state
    rng = np.random.default_rng(0)
    for _ in range(200):
        cand = rng.integers(0, 5, size=3)
        ok = dist[cand] <= 8
        chosen = planner.choose(0, cand)
        assert chosen == (cand[np.argmax(ok)] if ok.any() else cand[np.argmin(dist[cand])])


def test_all_goals_agent_reaches_every_feasible_target():
    """Value-iteration sweeps with the all-goals update give a greedy policy that reaches every target BFS
    says is reachable (checked by deterministic rollouts)."""
    e = SwordShieldMonster(size=5, difficulty=0.4, seed=1)
    agent = TabularHERAgent(e.n_states, lr=1.0)
    live = np.flatnonzero(e.possible & ~e.terminal_state)
    s, a = np.repeat(live, 4), np.tile(np.arange(4), live.size)
    for _ in range(40):
        agent.update_all_goals(s, a, e.next_state[s, a], e.died[s, a], e.success[s, a])
    dist = e.distance_matrix()
    S, G = np.nonzero(np.isfinite(dist))
    assert policy_reaches(e, agent, S, G, horizon=e.n_states).all()
    # closed form: reward -1 per step and 0 on arrival give Q* = -(1 - gamma^(d-1)) / (1 - gamma) at distance d
    q = agent.q[live].max(axis=1)  # (live states, targets)
    d = dist[live]
    far = np.isfinite(d) & (d >= 1)
    np.testing.assert_allclose(q[far], -(1 - 0.95 ** (d[far] - 1)) / 0.05, atol=1e-4)
    assert (~np.isfinite(d)).any() and q[~np.isfinite(d)].max() < q[far].min()  # unreachable targets look worst


def test_task_set_ground_truth_and_sampling():
    ts = SSMTaskSet(size=5, difficulty=0.4, n_tasks=3, seed=4)
    assert ts.n_states == 3 * ts.n_local and len({t.lava.tobytes() for t in ts.tasks}) > 1
    for k, task in enumerate(ts.tasks):  # per-task BFS against the single-task distance matrix
        np.testing.assert_array_equal(ts.task_distances(k), task.distance_matrix().astype(np.float32))
    s = ts.to_global(0, ts.tasks[0].start_states()[:4])
    assert np.isinf(ts.distance(s, ts.to_global(1, ts.tasks[1].start_states()[:4]))).all()  # across tasks
    np.testing.assert_array_equal(ts.distance(s, s), 0.0)
    np.testing.assert_array_equal(ts.distance_row(int(s[0]))[:ts.n_local], ts.task_distances(0)[ts.local_of(s[0])])
    seen = [ts.reset(seed=i)[1]["task"] for i in range(300)]
    assert set(seen) == {0, 1, 2} and min(np.bincount(seen)) > 70  # one task per episode, uniformly
    f = ts.state_features()
    same_local = ts.to_global(np.arange(3), 0)
    assert f.shape[0] == ts.n_states and len({f[i].tobytes() for i in same_local}) == 3  # the layout is visible
    state, info = ts.reset(seed=0)
    s2, _, _, _, info2 = ts.step(1)
    assert ts.task_of(state) == info["task"] == info2["task"] == ts.task_of(s2)


def test_multi_task_agent_reaches_every_feasible_target():
    ts = SSMTaskSet(size=4, difficulty=0.4, n_tasks=2, seed=1)
    agent = TabularHERAgent(ts.n_local, lr=1.0, n_tasks=2)
    live = np.flatnonzero(ts.possible & ~ts.terminal_state)
    s, a = np.repeat(live, 4), np.tile(np.arange(4), live.size)
    for _ in range(30):
        agent.update_all_goals(s, a, ts.next_state[s, a], ts.died[s, a], ts.success[s, a])
    for k in range(2):
        S, G = np.nonzero(np.isfinite(ts.task_distances(k)))
        assert policy_reaches(ts, agent, ts.to_global(k, S), ts.to_global(k, G), horizon=ts.n_local).all()


def test_task_set_generator_stays_in_task_and_hallucinates_infeasible():
    ts = SSMTaskSet(size=5, difficulty=0.4, n_tasks=2, seed=2)
    gen = HallucinatingGenerator(ts, p_hallucinate=1.0)
    gen.observe(np.flatnonzero(ts.possible))
    rng = np.random.default_rng(0)
    s = rng.choice(np.flatnonzero(ts.possible & ~ts.terminal_state), 400)
    g = gen.generate(s, rng)
    np.testing.assert_array_equal(ts.task_of(g), ts.task_of(s))
    assert not np.isfinite(ts.distance(s, g)).any()


def test_generator_hallucinations_are_infeasible():
    e = SwordShieldMonster(size=6, difficulty=0.4, seed=2)
    dist = e.distance_matrix()
    gen = HallucinatingGenerator(e, p_hallucinate=1.0)
    gen.observe(np.flatnonzero(e.possible))
    rng = np.random.default_rng(0)
    s = rng.choice(np.flatnonzero(e.possible & ~e.terminal_state), 500)
    g = gen.generate(s, rng)
    assert not np.isfinite(dist[s, g]).any()
    _, _, sw, sh = e.decode(s)
    temporary = e.possible[g]
    assert temporary.any() and (~temporary).any() and not temporary[(sw + sh) == 0].any()
    gen0 = HallucinatingGenerator(e, p_hallucinate=0.0)
    gen0.observe([5, 9])
    assert set(gen0.generate(s, rng)) <= {5, 9}


def test_bad_input_raises():
    with pytest.raises(ValueError, match="size"):
        SwordShieldMonster(size=3)
    with pytest.raises(ValueError, match="difficulty"):
        SwordShieldMonster(difficulty=1.0)
    e = SwordShieldMonster(size=4, seed=0)
    with pytest.raises(ValueError, match="state indices"):
        e.is_state_possible(e.n_states)
    with pytest.raises(ValueError, match="not a possible state"):
        e.reachable(int(np.flatnonzero(~e.possible)[0]), 0)
    with pytest.raises(ValueError, match="action"):
        e.reset(seed=0) and e.step(4)
    with pytest.raises(ValueError, match="p_hallucinate"):
        HallucinatingGenerator(e, 1.5)
    with pytest.raises(ValueError, match="threshold"):
        RejectingPlanner(None, None, None, threshold=2.0)
    ev = TargetEvaluator(e.state_features(), n_bins=4)
    with pytest.raises(ValueError, match="state indices"):
        ev(np.array([0]), np.array([e.n_states]))
    replay = ReplayBuffer(np.arange(3), np.zeros(3, int), np.arange(1, 4), np.zeros(3, bool), np.zeros(3, bool),
                          np.zeros(3, int))
    with pytest.raises(ValueError, match="strategy"):
        relabel(np.array([0]), "nearest", replay)
    with pytest.raises(ValueError, match="mixture"):
        relabel(np.array([0]), {"episode": -1.0}, replay)
    with pytest.raises(ValueError, match="two episodes"):
        relabel(np.array([0]), "pertask", replay, pertask_own_episode=False)
    with pytest.raises(ValueError, match="td_rule"):
        ev.td_loss({"s": [0], "a": [0], "s2": [1], "g": [1], "terminated": [False], "died": [False]},
                   lambda s, g: np.zeros_like(s), td_rule="c51")
    with pytest.raises(ValueError, match="rule"):
        RejectingPlanner(None, None, None, rule="budget")
    with pytest.raises(ValueError, match="dist_cutoff"):
        RejectingPlanner(None, None, None, dist_cutoff=0.0)
    with pytest.raises(ValueError, match="n_tasks"):
        SSMTaskSet(size=4, n_tasks=0)
    with pytest.raises(ValueError, match="non-decreasing"):
        ReplayBuffer(np.arange(3), np.zeros(3, int), np.arange(3), np.zeros(3, bool), np.zeros(3, bool),
                     np.array([1, 0, 0]))


def test_registered_gym_env_makes_and_steps():
    import gymnasium as gym

    import icml25.envs  # noqa: F401

    env = gym.make("icml25/SwordShieldMonster-v0", size=5, max_steps=7, seed=1)
    state, _ = env.reset(seed=0)
    assert env.observation_space.contains(state) and env.spec.max_episode_steps is None
    env.action_space.seed(0)
    for t in range(1, 8):  # noqa: B007 - the step count reached is checked below
        state, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(state) and reward in (0.0, 1.0) and "died" in info
        if terminated:
            break
    assert terminated or (truncated and t == 7)  # the env's own max_steps ends the episode, not a TimeLimit


@settings(max_examples=30, deadline=None)
@given(st.integers(4, 7), st.data())
def test_encode_decode_round_trip_and_range(size, data):
    env = SwordShieldMonster(size=size, seed=0)
    s = data.draw(st.integers(0, env.n_states - 1))
    assert int(env.encode(*env.decode(s))) == s
    with pytest.raises(ValueError, match="state indices"):
        env.decode(env.n_states + data.draw(st.integers(0, 100)))


def test_method_settings_are_nested_configs_reached_by_dotted_keys():
    """The evaluator's settings are one :class:`EvaluatorConfig` (nested as ``evaluator``) and the planner's rule one
    :class:`RejectionConfig` (``rejection``), not flat copies: presets and ``--set``-style overrides reach them by
    dotted keys, a bad nested value raises ConfigError naming the dotted key, and the configs build and train
    exactly what the functions they wrap do."""
    from icml25.core.experiment import ConfigError

    exp = EXPERIMENTS[0]
    flat = {"evaluator_updates", "evaluator_lr", "target_every", "batch_size", "n_bins", "hidden", "td_rule",
            "pertask_own_episode", "rejection_rule", "dist_cutoff", "threshold"}
    assert not flat & set(exp.fields)
    assert exp.make_config("smoke").evaluator == EvaluatorConfig(updates=100, hidden=64)
    assert exp.make_config("full").evaluator == EvaluatorConfig(updates=50000, lr=2.5e-4, target_every=500,
                                                                hidden=256)
    cfg = exp.make_config("smoke", {"rejection.rule": "feasibility", "rejection.threshold": 0.7,
                                    "evaluator.td_rule": "distributional"})
    assert cfg.rejection == RejectionConfig("feasibility", 8.0, 0.7)
    assert cfg.evaluator.td_rule == "distributional" and cfg.evaluator.updates == 100
    for key, bad in (("evaluator.lr", 0.0), ("evaluator.td_rule", "c51"), ("evaluator.n_bins", 1),
                     ("evaluator.pertask_own_episode", 1), ("rejection.threshold", 2.0),
                     ("rejection.dist_cutoff", 0.0), ("rejection.rule", "oracle")):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            exp.make_config("smoke", {key: bad})
    # what the configs build: the planner with the rule, the network with the width and atoms
    planner = cfg.rejection.planner(None, None)
    assert (planner.rule, planner.threshold, planner.dist_cutoff, planner.evaluator) == ("feasibility", 0.7, 8.0, None)
    ev = EvaluatorConfig(n_bins=4, hidden=32).build(np.eye(6, dtype=np.float32))
    assert ev.n_bins == 4 and [m.out_features for m in ev.net if isinstance(m, torch.nn.Linear)] == [32, 32, 4 * 5]
    # and the training: EvaluatorConfig.train is train_evaluator with the config's settings
    replay = ReplayBuffer(s=np.arange(6) % 5, a=np.zeros(6, int), s2=np.arange(1, 7) % 5, terminated=np.zeros(6, bool),
                          died=np.zeros(6, bool), episode=np.zeros(6, int))
    settings = EvaluatorConfig(n_bins=4, hidden=16, updates=5, lr=1e-2, target_every=2, batch_size=8,
                               td_rule="distributional")
    trained = []
    for use_config in (True, False):
        torch.manual_seed(3)
        ev = settings.build(np.eye(6, dtype=np.float32))
        policy = lambda s, g: np.zeros_like(s)  # noqa: E731
        rng = np.random.default_rng(4)
        if use_config:
            trained.append(settings.train(ev, replay, policy, "episode", rng=rng))
        else:
            trained.append(train_evaluator(ev, replay, policy, "episode", None, 5, 8, 1e-2, 2, rng=rng,
                                           td_rule="distributional"))
    for p, q in zip(trained[0].parameters(), trained[1].parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_smoke_run_is_consistent():
    exp = EXPERIMENTS[0]
    cfg = exp.make_config("smoke")
    m = exp.run(cfg, seed=0)  # determinism: tests/core/test_every_experiment.py
    assert 0 < m["delusion_rate_none"] < 1  # hallucinations are pursued without an evaluator
    assert 0 < m["agent_reach_rate_feasible"] <= 1
    assert m["delusion_none_minus_EGP"] == pytest.approx(m["delusion_rate_none"] - m["delusion_rate_EGP"])
    assert m["recall_min_class_EGP"] == min(m["reject_nonexistent_EGP"], m["reject_temporary_EGP"])
    assert m["dist_mae_untrained_minus_EGP"] == pytest.approx(m["dist_mae_untrained"] - m["dist_mae_EGP"])
    assert 0 <= m["agent_reach_rate_untrained"] <= 1


def test_scalar_td_target_matches_the_released_evaluator():
    """Parity with mila-iqia/Delusions (tests/fixtures/official/infeasible_targets/PROVENANCE.md): the official TD
    rule (two-hot of 1 + E[d'], reached overriding terminated) built by the released HistogramConverter on fixed next
    logits (float32; tolerance 1e-6)."""
    from pathlib import Path

    from icml25.papers.infeasible_targets.evaluator import scalar_td_target

    z = np.load(Path(__file__).parents[1] / "fixtures" / "official" / "infeasible_targets" / "td_target.npz")
    probs = torch.softmax(torch.tensor(z["logits"]).double(), -1)
    ours = scalar_td_target(probs, torch.tensor(z["reached"]), torch.tensor(z["terminated"]))
    np.testing.assert_allclose(ours.numpy(), z["target"], atol=1e-6)
