"""Property-based bad-input battery for the shared tabular-MDP toolkit (issue 15, item 4).

Every public solver and checker of ``icml25.common.mdp`` must answer bad input with a
clear ``ValueError``, never a silent wrong answer or an obscure crash.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml25.common import mdp

SOLVERS = [mdp.value_iteration, mdp.policy_iteration, mdp.nesterov_value_iteration, mdp.anderson_value_iteration]
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _valid(n_states=4, n_actions=2, seed=0):
    return mdp.garnet_mdp(n_states, n_actions, 2, seed=seed)


@FAST
@given(gamma=st.one_of(st.floats(max_value=-1e-9), st.floats(min_value=1.0), st.just(float("nan"))))
def test_gamma_outside_unit_interval(gamma):
    P, r = _valid()
    for solver in SOLVERS:
        with pytest.raises(ValueError, match="gamma"):
            solver(P, r, gamma)


@FAST
@given(bad=st.sampled_from([np.nan, np.inf, -np.inf, -0.5, 2.0]), a=st.integers(0, 1), s=st.integers(0, 3),
       s2=st.integers(0, 3))
def test_transitions_not_a_distribution(bad, a, s, s2):
    P, r = _valid()
    P = P.copy()
    P[a, s, s2] = bad
    for solver in SOLVERS:
        with pytest.raises(ValueError, match="P "):
            solver(P, r, 0.9)


@FAST
@given(bad=st.sampled_from([np.nan, np.inf, -np.inf]), s=st.integers(0, 3), a=st.integers(0, 1))
def test_rewards_not_finite(bad, s, a):
    P, r = _valid()
    r = r.copy()
    r[s, a] = bad
    for solver in SOLVERS:
        with pytest.raises(ValueError, match="r must be finite"):
            solver(P, r, 0.9)


@pytest.mark.parametrize("shape", [(4,), (2, 4, 3), (0, 4, 4), (2, 0, 0), (2, 4, 4, 1)])
def test_transition_shapes(shape):
    with pytest.raises(ValueError, match="shape"):
        mdp.check_transitions(np.ones(shape))


@pytest.mark.parametrize("shape", [(2, 4), (4,), (4, 3), ()])
def test_reward_shape_must_match(shape):
    P, _ = _valid()
    with pytest.raises(ValueError, match="r must have shape"):
        mdp.value_iteration(P, np.zeros(shape), 0.9)


@pytest.mark.parametrize("v0", [np.zeros(3), np.full(4, np.nan), np.zeros((4, 1))])
def test_initial_values(v0):
    P, r = _valid()
    with pytest.raises(ValueError, match="v0"):
        mdp.value_iteration(P, r, 0.9, v0=v0)


@pytest.mark.parametrize(("args", "match"), [((0, 2, 2), "n_states"), ((4, 0, 2), "n_actions"),
                                             ((4, 2, 0), "branching"), ((4, 2, 5), "branching"),
                                             ((4.5, 2, 2), "n_states"), ((True, 2, 2), "n_states")])
def test_garnet_sizes(args, match):
    with pytest.raises(ValueError, match=match):
        mdp.garnet_mdp(*args)


def test_tabular_env_bad_input():
    TabularEnv = mdp.TabularEnv
    P, r = _valid()
    with pytest.raises(ValueError, match="initial_distribution"):
        TabularEnv(P, r, initial_distribution=[0.5, 0.5, 0.5, -0.5])
    with pytest.raises(ValueError, match="max_episode_steps"):
        TabularEnv(P, r, max_episode_steps=0)
    env = TabularEnv(P, r)
    env.reset(seed=0)
    for action in (-1, 2, 0.5):
        with pytest.raises(ValueError, match="action"):
            env.step(action)


@pytest.mark.parametrize("bad", [lambda rng: np.full((4, 2), -1), lambda rng: np.full((4, 2), 4),
                                 lambda rng: np.zeros((4, 2)) + 0.5, lambda rng: np.zeros((2, 4), dtype=int)])
def test_q_learning_rejects_a_bad_sampler(bad):
    _, r = _valid()
    with pytest.raises(ValueError, match="sampler"):
        mdp.q_learning(bad, r, 0.9, n_iter=3)


def test_q_learning_generative_model_still_works():
    P, r = _valid()
    res = mdp.q_learning(mdp.generative_model(P), r, 0.9, n_iter=5)
    assert np.all(np.isfinite(res.q))
