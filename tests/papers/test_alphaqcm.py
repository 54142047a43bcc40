"""AlphaQCM: QCM moments, quantile-Huber loss, operators vs pandas, RPN masks (brute force), pool algebra, smoke run."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from icml25.papers.alphaqcm import (
    AlphaEnv,
    AlphaPool,
    AlphaQCMAgent,
    AlphaQCMConfig,
    RPNBuilder,
    TokenSet,
    daily_ic,
    evaluate_rpn,
    forward_return,
    lasso_weights,
    make_synthetic_env,
    normalize_by_day,
    parse_rpn,
    qcm_moments,
    quantile_huber_loss,
    quantile_midpoints,
    reduced_token_set,
    rolling_pair,
    rolling_stat,
    synthetic_market,
)
from icml25.papers.alphaqcm.repro import EXPERIMENTS

TAUS = quantile_midpoints(200)


# ----------------------------------------------------------------------------- QCM moments
def test_qcm_moments_exact_normal_quantiles():
    q = 1.7 + 2.5 * norm.ppf(TAUS)
    std, skew, kurt = qcm_moments(q, TAUS)
    assert abs(float(std) - 2.5) < 1e-3
    assert abs(float(skew)) < 1e-6 and abs(float(kurt) - 3) < 1e-6


def test_qcm_moments_shift_invariant_scale_equivariant_batched():
    rng = np.random.default_rng(0)
    q = np.sort(rng.normal(size=(3, 5, 200)), axis=-1)
    s0, k0, u0 = qcm_moments(q, TAUS)
    s1, k1, u1 = qcm_moments(q + 7.3, TAUS)
    s2, k2, u2 = qcm_moments(3.0 * q, TAUS)
    assert s0.shape == (3, 5)
    np.testing.assert_allclose(s1, s0, atol=1e-10)
    np.testing.assert_allclose(k1, k0, atol=1e-8)
    np.testing.assert_allclose(s2, 3 * s0, atol=1e-10)
    np.testing.assert_allclose(k2, k0, atol=1e-8)
    np.testing.assert_allclose(u2, u0, atol=1e-8)


def test_qcm_moments_recover_cornish_fisher_coefficients():
    x = norm.ppf(TAUS)
    q = 0.5 + 2.0 * x + 0.3 * (x**2 - 1) + 0.1 * (x**3 - 3 * x)  # exact in the Hermite basis
    std, skew, kurt = qcm_moments(q, TAUS)
    assert float(std) == pytest.approx(2.0, abs=1e-9)
    assert float(skew) == pytest.approx(6 * 0.3 / 2.0, abs=1e-9)
    assert float(kurt) == pytest.approx(24 * 0.1 / 2.0 + 3, abs=1e-9)


def test_qcm_bad_input():
    with pytest.raises(ValueError, match="levels"):
        qcm_moments(np.zeros(10), TAUS)
    with pytest.raises(ValueError, match="taus"):
        qcm_moments(np.zeros(3), [0.2, 0.5, 0.8])


# ----------------------------------------------------------------------------- quantile Huber loss
def test_quantile_huber_loss_hand_computed_2x2():
    pred = torch.tensor([[0.0, 1.0]])
    target = torch.tensor([[0.5, 3.0]])
    taus = torch.tensor([0.25, 0.75])
    # u = target_j - pred_i: [[0.5, 3.0], [-0.5, 2.0]]; huber (k=1): [[.125, 2.5], [.125, 1.5]]
    # weights |tau_i - 1{u<0}|: [[.25, .25], [.25, .75]]
    expected = (0.25 * 0.125 + 0.25 * 2.5) / 2 + (0.25 * 0.125 + 0.75 * 1.5) / 2
    assert float(quantile_huber_loss(pred, target, taus)) == pytest.approx(expected, abs=1e-7)


def test_quantile_huber_minimiser_is_the_quantile():
    rng = np.random.default_rng(1)
    target = torch.tensor(rng.normal(size=(1, 4000)), dtype=torch.float64)
    taus = torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64)
    grid = torch.linspace(-2, 2, 401, dtype=torch.float64)
    for i, tau in enumerate(taus):
        losses = [float(quantile_huber_loss(g.view(1, 1), target, tau.view(1), kappa=1e-3)) for g in grid]
        best = float(grid[int(np.argmin(losses))])
        assert best == pytest.approx(float(np.quantile(target.numpy(), float(tau))), abs=0.03)


# ----------------------------------------------------------------------------- operators vs pandas
@pytest.fixture
def panel_pair():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(60, 4)).cumsum(0) + 50
    y = rng.normal(size=(60, 4))
    x[7, 1] = np.nan
    return x, y


@pytest.mark.parametrize("op,fn", [
    ("Mean", lambda r: r.mean()), ("Sum", lambda r: r.sum()), ("Std", lambda r: r.std()), ("Var", lambda r: r.var()),
    ("Max", lambda r: r.max()), ("Min", lambda r: r.min()), ("Med", lambda r: r.median()),
])
def test_rolling_matches_pandas(panel_pair, op, fn):
    x, _ = panel_pair
    np.testing.assert_allclose(rolling_stat(x, 10, op), fn(pd.DataFrame(x).rolling(10)).to_numpy(), atol=1e-9)


def test_weighted_and_shift_operators_match_pandas(panel_pair):
    x, _ = panel_pair
    df, w = pd.DataFrame(x), 5
    lin = np.arange(1, w + 1) / np.arange(1, w + 1).sum()
    a = 2 / (w + 1)
    ew = (1 - a) ** np.arange(w - 1, -1, -1)
    np.testing.assert_allclose(rolling_stat(x, w, "WMA"), df.rolling(w).apply(lambda v: v @ lin, raw=True), atol=1e-9)
    np.testing.assert_allclose(rolling_stat(x, w, "EMA"), df.rolling(w).apply(lambda v: v @ ew / ew.sum(), raw=True),
                               atol=1e-9)
    np.testing.assert_allclose(rolling_stat(x, w, "Ref"), df.shift(w), atol=1e-12)
    np.testing.assert_allclose(rolling_stat(x, w, "Delta"), df.diff(w), atol=1e-12)
    mad = df.rolling(w).apply(lambda v: np.abs(v - v.mean()).mean(), raw=True)
    np.testing.assert_allclose(rolling_stat(x, w, "Mad"), mad, atol=1e-9)


def test_pair_operators_match_pandas(panel_pair):
    x, y = panel_pair
    dx, dy = pd.DataFrame(x), pd.DataFrame(y)
    np.testing.assert_allclose(rolling_pair(x, y, 10, "Corr"), dx.rolling(10).corr(dy), atol=1e-9)
    np.testing.assert_allclose(rolling_pair(x, y, 10, "Cov"), dx.rolling(10).cov(dy), atol=1e-9)


def test_operator_bad_input():
    with pytest.raises(ValueError, match="window"):
        rolling_stat(np.zeros((5, 2)), 0, "Mean")
    with pytest.raises(ValueError, match="panel"):
        rolling_stat(np.zeros(5), 2, "Mean")
    with pytest.raises(ValueError, match="same shape"):
        rolling_pair(np.zeros((5, 2)), np.zeros((5, 3)), 2, "Corr")


# ----------------------------------------------------------------------------- RPN builder and masks
def _tiny_tokens():
    return TokenSet(operators=("Abs", "Add", "Mean", "Corr"), features=("close", "volume"), windows=(5,),
                    constants=(1.0,))


def test_rpn_rejects_invalid_sequences():
    T = reduced_token_set()
    for bad in ("close Add", "5", "1.0", "close 1.0 1.0", "close 10 Abs", "close close", "close 5 close"):
        with pytest.raises(ValueError):
            parse_rpn(bad, T)
    assert len(parse_rpn("close volume 20 Corr", T)) == 4


def test_masks_allow_exactly_completable_prefixes_bruteforce():
    """A token is allowed iff some completion of the prefix within max_len tokens exists (exhaustive search)."""
    T, L = _tiny_tokens(), 4
    n = len(T)
    non_sep = [i for i in range(n) if i != T.sep_id]
    complete = set()
    for k in range(1, L + 1):
        for seq in itertools.product(non_sep, repeat=k):
            b = RPNBuilder(T, 10**6)
            try:
                for a in seq:
                    b.add(a)
            except ValueError:
                continue
            if b.is_complete:
                complete.add(seq)
    prefixes = {s[:j] for s in complete for j in range(len(s) + 1)}
    assert len(prefixes) > 50
    for prefix in sorted(prefixes, key=len):
        b = RPNBuilder(T, L)
        for a in prefix:
            b.add(a)
        mask = b.valid_mask()
        for a in non_sep:
            assert mask[a] == ((prefix + (a,)) in prefixes), (b.to_string(), T.tokens[a].name)
        assert mask[T.sep_id] == (prefix in complete)


def test_env_invalid_action_and_length_limit():
    T = reduced_token_set()
    m = synthetic_market(20, 120, seed=0)
    panel, target = m.split(0, 80)
    env = AlphaEnv(AlphaPool(2, target, tokens=T), panel, T, max_len=3)
    env.reset()
    _, r, done, _, info = env.step(T.index("Add"))
    assert (r, done, info.get("invalid")) == (-1.0, True, True)
    env.reset()
    for name in ("close", "5", "Mean"):
        _, r, done, _, info = env.step(T.index(name))
    assert done and info["expr"] == "close 5 Mean"  # auto-terminates at max_len with a complete expression
    assert r == pytest.approx(env.pool.ic)


def test_registered_gym_env_makes_and_steps():
    import gymnasium as gym

    import icml25.envs  # noqa: F401

    env = gym.make("icml25/AlphaEnv-v0", n_stocks=10, n_days=150, seed=3)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs) and env.spec.max_episode_steps is None
    rng = np.random.default_rng(0)
    done, steps = False, 0
    while not done:
        obs, r, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(env.unwrapped.action_masks()))))
        done, steps = term or trunc, steps + 1
        assert env.observation_space.contains(obs)
    assert term and not trunc and steps <= env.unwrapped.max_len
    assert "expr" in info and 0.0 <= r <= 1.0  # a valid walk always ends in a pool IC, never in -1


_SMALL_ENV = make_synthetic_env(n_stocks=8, n_days=150, capacity=3, max_len=6)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_masked_random_walks_always_finish_a_parseable_alpha(seed):
    env, rng = _SMALL_ENV, np.random.default_rng(seed)
    env.reset()
    done = False
    while not done:
        _, r, done, _, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
    assert not info.get("invalid") and np.isfinite(r)
    assert parse_rpn(info["expr"], env.tokens) == env.builder.seq


def test_make_synthetic_env_is_seeded():
    a, b, c = make_synthetic_env(seed=1), make_synthetic_env(seed=1), make_synthetic_env(seed=2)
    np.testing.assert_array_equal(a.panel["close"], b.panel["close"])
    assert not np.array_equal(a.panel["close"], c.panel["close"])
    with pytest.raises(ValueError, match="train_fraction"):
        make_synthetic_env(train_fraction=0.0)


# ----------------------------------------------------------------------------- pool
def test_pool_single_alpha_ic_equals_abs_ic():
    rng = np.random.default_rng(3)
    y = rng.normal(size=(50, 30))
    a = -0.4 * y + rng.normal(size=(50, 30))
    pool = AlphaPool(1, y)
    ic = pool.try_new_expr(a, "a")
    assert ic == pytest.approx(abs(np.mean(daily_ic(a, y))), abs=1e-10)
    assert pool.weights[0] < 0


def test_pool_weights_normal_equations_and_eviction():
    rng = np.random.default_rng(4)
    y = rng.normal(size=(80, 40))
    alphas = [0.3 * y + rng.normal(size=y.shape), rng.normal(size=y.shape), -0.2 * y + rng.normal(size=y.shape)]
    pool = AlphaPool(2, y)
    for i, a in enumerate(alphas):
        pool.try_new_expr(a, f"a{i}")
    assert pool.exprs == ["a0", "a2"]  # pure noise has the smallest |weight| and is evicted
    np.testing.assert_allclose(pool.mutual @ pool.weights, pool.ics, atol=1e-10)
    assert pool.ic > max(abs(pool.ics))
    assert pool.evaluate(alphas[::2], y)[0] == pytest.approx(np.nanmean(daily_ic(pool.combination(), y)), abs=1e-10)
    w = lasso_weights(pool.mutual, pool.ics, l1_alpha=10.0)
    np.testing.assert_allclose(w, 0.0)


def test_pool_rejects_copies_and_constants_with_zero_reward():
    rng = np.random.default_rng(5)
    y = rng.normal(size=(40, 20))
    a = y + rng.normal(size=y.shape)
    pool = AlphaPool(3, y)
    ic = pool.try_new_expr(a, "a")
    assert ic > 0.3
    assert pool.try_new_expr(-2 * a + 1, "copy") == 0.0 and pool.exprs == ["a"] and pool.ic == ic
    assert pool.try_new_expr(np.full(y.shape, 3.0), "const") == 0.0 and len(pool) == 1


def test_pool_bad_input():
    with pytest.raises(ValueError, match="capacity"):
        AlphaPool(0, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="shape"):
        AlphaPool(2, np.zeros((3, 3))).try_new_expr(np.zeros((3, 4)))


def test_normalize_and_forward_return():
    x = np.array([[1.0, 2.0, np.nan, 3.0]])
    z = normalize_by_day(x)
    assert z[0, 2] == 0 and abs(z.sum()) < 1e-12 and np.sum(z**2) == pytest.approx(3.0)
    c = np.array([[1.0], [2.0], [4.0]])
    np.testing.assert_allclose(forward_return(c, 1), [[1.0], [1.0], [np.nan]])


# ----------------------------------------------------------------------------- data, agent, smoke run
def test_synthetic_market_plants_signals():
    m = synthetic_market(60, 300, seed=0)
    T = TokenSet()
    ics = [np.nanmean(daily_ic(evaluate_rpn(parse_rpn(p, T), T, m.panel), m.target)) for p in m.planted]
    assert ics[0] < -0.05 and ics[1] > 0.05  # reversal (negative loading) and price-volume correlation
    with pytest.raises(ValueError, match="noise"):
        synthetic_market(10, 200, noise=0)


def test_agent_scores_use_std_bonus_and_bad_config():
    T = reduced_token_set()
    cfg = AlphaQCMConfig(n_quantiles=8, d_model=8, hidden=8, std_lam=2.0, memory_size=100)
    ag = AlphaQCMAgent(cfg, len(T), 6, seed=0)
    obs = np.zeros(6, dtype=np.int64)
    with torch.no_grad():
        base = ag.mean_net(torch.as_tensor(obs[None]))[0, :, 0].double()
        std = qcm_moments(ag.qnet(torch.as_tensor(obs[None]))[0].double(), ag.taus_np)[0]
    np.testing.assert_allclose(ag.scores(obs), (base + 2.0 * std).numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="n_quantiles"):
        AlphaQCMAgent(AlphaQCMConfig(n_quantiles=2), len(T), 6)


def test_smoke_run():
    exp = EXPERIMENTS[0]
    m = exp.run(exp.make_config("smoke"), seed=0)
    assert m["test_ic_planted_oracle"] > 0.2  # the planted alphas do predict the test period
    for name in ("alphaqcm", "lam0", "random"):
        assert -1 <= m[f"test_ic_{name}"] <= 1 and 0 <= m[f"train_ic_{name}"] <= 1
    assert m["evaluations_random"] == m["evaluations_alphaqcm"]
    assert m["qcm_minus_random"] == pytest.approx(m["test_ic_alphaqcm"] - m["test_ic_random"])
