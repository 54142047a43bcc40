"""infeasible_targets: BFS ground truth, distributional TD (closed form + convergence), relabeling,
rejection logic, the tabular agent against BFS, bad input, and a smoke run."""

from __future__ import annotations

import copy

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.papers.infeasible_targets import (
    HallucinatingGenerator,
    RejectingPlanner,
    ReplayBuffer,
    SwordShieldMonster,
    TabularHERAgent,
    TargetEvaluator,
    distributional_td_target,
    relabel,
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


def test_td_converges_on_corridor_with_one_way_door():
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
        loss = ev.td_loss(batch, lambda s, g: policy_table[s, g], target)
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
    g = relabel(idx, "pertask", replay, rng=rng)
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


class FixedEvaluator:
    """Stub evaluator: feasibility looked up per target."""

    def __init__(self, table):
        self.table = table

    def feasibility(self, s, g, actions=None):
        return self.table[np.asarray(g)]


class ZeroAgent:
    def greedy(self, s, g):
        return np.zeros(np.shape(g), dtype=int)


def test_rejection_keeps_first_feasible_candidate():
    table = np.array([0.1, 0.6, 0.2, 0.9, 0.5])
    planner = RejectingPlanner(ZeroAgent(), None, FixedEvaluator(table), threshold=0.5)
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
        relabel(np.array([0]), "pertask", replay)
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
    for t in range(1, 8):
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


def test_smoke_run_is_consistent():
    exp = EXPERIMENTS[0]
    cfg = exp.make_config("smoke")
    m = exp.run(cfg, seed=0)  # determinism: tests/core/test_every_experiment.py
    assert 0 < m["delusion_rate_none"] < 1  # hallucinations are pursued without an evaluator
    assert 0 < m["agent_reach_rate_feasible"] <= 1
    assert m["delusion_none_minus_EGP"] == pytest.approx(m["delusion_rate_none"] - m["delusion_rate_EGP"])
    assert m["recall_min_class_EGP"] == min(m["reject_nonexistent_EGP"], m["reject_temporary_EGP"])
