"""AlphaQCM: QCM moments, quantile-Huber loss, operators vs pandas, RPN masks (brute force), pool algebra (normal
equations, L1 optimum against cvxpy, AlphaGen's eviction), the official encoder re-derived sequence by sequence,
prioritised replay (sampling law, weights, priorities re-derived by hand), the random warm-up, smoke run.

The method's defining elements (the paper's Sec. 3 and the official qrqcm_agent.py / base_agent.py, see
docs/papers/alphaqcm.md, "The method") and the tests that fail when one is removed or altered:

1. QCM: regress each action's quantiles on the Hermite design X = [1, x, x^2 - 1, x^3 - 3x], x = Phi^-1(tau_hat);
   std = beta_1, skew = 6 beta_2 / beta_1, kurt = 24 beta_3 / beta_1 + 3:
   ``test_qcm_moments_recover_cornish_fisher_coefficients``,
   ``test_qcm_moments_and_quantile_huber_loss_match_the_released_code`` (x^3 in place of x^3 - 3x; skew factor 3).
2. The action rule: argmax over the valid tokens of Q(s,a) + lambda std(s,a), Q from the separate mean net and std
   (not the variance) from the quantile net, both online; uniform random valid tokens until ``learning_starts``:
   ``test_agent_scores_use_std_bonus_and_bad_config`` (variance bonus, sign flipped, Q from the quantile mean),
   ``test_scores_use_the_online_nets_and_greedy_acts_pick_the_best_valid_token`` (bonus from the target net; greedy
   over every token, also ``test_smoke_run``), ``test_random_actions_until_learning_starts`` (no warm-up).
3. The quantile net's QR-DQN loss sum_i mean_j |tau_i - 1{u_ij < 0}| L_kappa(u_ij) / kappa with the target
   r + gamma^n theta^-(s', a*), a* = argmax_a mean_j theta_j^-(s', a) of the target quantile net:
   ``test_quantile_huber_loss_hand_computed_2x2``, ``test_quantile_huber_minimiser_is_the_quantile``,
   ``test_qcm_moments_and_quantile_huber_loss_match_the_released_code`` (1{u > 0}; plain Huber),
   ``test_learn_targets_weights_and_new_priorities_by_hand`` (a* from the online quantile net or the mean net).
4. The separate mean network, one Adam step on the MSE to r + gamma^n max_a' Q^-(s', a'):
   ``test_mean_net_takes_an_adam_step_on_the_mse_to_the_n_step_max_target`` (target from the quantile net's mean,
   no bootstrap, no step).
5. n-step transitions (multi_step 3) and target-net copies every ``target_update`` steps:
   ``test_store_episode_writes_n_step_transitions`` (s' one step ahead; undiscounted sum),
   ``test_mean_net_takes_an_adam_step_on_the_mse_to_the_n_step_max_target`` (bootstrap by gamma, not gamma^n),
   ``test_target_nets_are_copied_every_target_update_steps`` (never copied).
6. Prioritised replay: draws proportional to priority, importance weights on the quantile loss, new priorities
   from the quantile TD errors: ``test_per_sampling_law_and_importance_weights`` (uniform draws),
   ``test_learn_targets_weights_and_new_priorities_by_hand`` (weights dropped; priorities not updated).
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from icml25.common.checks import ConfigError
from icml25.core.experiment import config_from_dict, config_to_dict
from icml25.papers.alphaqcm import (
    AlphaEnv,
    AlphaPool,
    AlphaQCMAgent,
    AlphaQCMConfig,
    RPNBuilder,
    TokenLSTMNet,
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
from icml25.papers.alphaqcm.agent import sinusoidal_encoding
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
    for _i, tau in enumerate(taus):
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
    pool = AlphaPool(2, y, l1_alpha=0.0, refit_after_eviction=True)
    for i, a in enumerate(alphas):
        pool.try_new_expr(a, f"a{i}")
    assert pool.exprs == ["a0", "a2"]  # pure noise has the smallest |weight| and is evicted
    np.testing.assert_allclose(pool.mutual @ pool.weights, pool.ics, atol=1e-10)
    assert pool.ic > max(abs(pool.ics))
    assert pool.evaluate(alphas[::2], y)[0] == pytest.approx(np.nanmean(daily_ic(pool.combination(), y)), abs=1e-10)
    w = lasso_weights(pool.mutual, pool.ics, l1_alpha=10.0)
    np.testing.assert_allclose(w, 0.0)


def test_lasso_weights_match_cvxpy_in_alphagen_scale():
    """min_w w'Mw - 2g'w + l1_alpha |w|_1 (AlphaGen's pool loss), solved independently by cvxpy."""
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(7)
    A = rng.normal(size=(6, 40))
    M = np.corrcoef(A)
    g = rng.uniform(-0.1, 0.1, 6)
    for alpha in (5e-3, 0.05):
        w = cp.Variable(6)
        cp.Problem(cp.Minimize(cp.quad_form(w, cp.psd_wrap(M)) - 2 * g @ w + alpha * cp.norm1(w))).solve()
        np.testing.assert_allclose(lasso_weights(M, g, alpha, iters=2000), w.value, atol=2e-5)
    assert np.count_nonzero(lasso_weights(M, g, 0.05, iters=2000)) < 6  # the penalty does zero some weights


def test_pool_official_eviction_keeps_weights_without_refit():
    """AlphaGen: over capacity the weights of the (K+1)-alpha fit are kept for the survivors; if the new alpha is
    the one evicted, the pool and its weights stay as they were."""
    rng = np.random.default_rng(4)
    y = rng.normal(size=(80, 40))
    alphas = [0.3 * y + rng.normal(size=y.shape), -0.2 * y + rng.normal(size=y.shape), rng.normal(size=y.shape),
              0.25 * y + rng.normal(size=y.shape)]
    pool = AlphaPool(2, y)  # defaults: l1_alpha 5e-3, no refit
    assert pool.l1_alpha == 5e-3 and not pool.refit_after_eviction
    pool.try_new_expr(alphas[0], "a0")
    np.testing.assert_allclose(pool.weights, pool.ics)  # a lone alpha gets its IC as weight
    pool.try_new_expr(alphas[1], "a1")
    before = (list(pool.exprs), pool.weights.copy(), pool.ic)
    assert pool.try_new_expr(alphas[2], "noise") == pytest.approx(before[2])  # noise evicted at once
    assert pool.exprs == before[0] and np.array_equal(pool.weights, before[1])
    pool.try_new_expr(alphas[3], "a3")
    z = [normalize_by_day(a) for a in (alphas[0], alphas[1], alphas[3])]
    days = np.isfinite(y).any(1)
    corr = lambda u, v: np.nanmean(daily_ic(u[days], v[days]))  # noqa: E731
    M3 = np.array([[corr(u, v) if i != j else 1.0 for j, v in enumerate(z)] for i, u in enumerate(z)])
    g3 = np.array([corr(u, y) for u in z])
    w3 = lasso_weights(M3, g3, 5e-3)
    drop = int(np.argmin(np.abs(w3)))
    keep = [i for i in range(3) if i != drop]
    assert pool.exprs == [["a0", "a1", "a3"][i] for i in keep]
    np.testing.assert_allclose(pool.weights, w3[keep], atol=1e-8)  # the 3-alpha fit, not refitted


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


def test_positional_encoding_closed_form():
    pe = sinusoidal_encoding(7, 6).numpy()
    p, k = 5, 2
    assert pe[p, 2 * k] == pytest.approx(np.sin(p / 10000 ** (2 * k / 6)), abs=1e-6)
    assert pe[p, 2 * k + 1] == pytest.approx(np.cos(p / 10000 ** (2 * k / 6)), abs=1e-6)
    assert sinusoidal_encoding(4, 5).shape == (4, 5)


def test_official_encoder_is_the_mean_over_each_sequences_own_steps():
    """encoder='official': embedding + PE -> 2-layer LSTM -> mean over [start] + the sequence's tokens, re-run here
    sequence by sequence on its own length (so padding and batch-mates cannot matter)."""
    torch.manual_seed(0)
    net = TokenLSTMNet(9, n_out=3, d_model=8, hidden=8).eval()  # eval: dropout off for an exact comparison
    assert net.lstm.num_layers == 2 and net.lstm.dropout == 0.1 and net.embed.padding_idx == 0
    obs = torch.tensor([[0, 0, 0, 0, 0], [4, 9, 0, 0, 0], [1, 2, 3, 4, 5]])
    out = net(obs)
    pe = sinusoidal_encoding(6, 8)
    for b in range(3):
        n = int((obs[b] > 0).sum())
        seq = torch.cat([torch.tensor([10]), obs[b, :n]])[None]  # start token id = n_tokens + 1
        h, _ = net.lstm(net.embed(seq) + pe[: n + 1])
        torch.testing.assert_close(out[b], net.head(h.mean(1))[0].view(9, 3), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(net(obs[1:2]), out[1:2], rtol=1e-5, atol=1e-6)  # batch-independent
    last = TokenLSTMNet(9, n_out=3, d_model=8, hidden=8, encoder="last_token", lstm_layers=1, dropout=0.0)
    h, _ = last.lstm(last.embed(torch.tensor([[10, 4, 9]])))
    torch.testing.assert_close(last(obs[1:2])[0], last.head(h[0, -1]).view(9, 3))
    with pytest.raises(ValueError, match="encoder"):
        TokenLSTMNet(9, encoder="gru")
    with pytest.raises(ValueError, match="dropout"):
        AlphaQCMConfig(dropout=1.0)


def _filled_agent(**kw):
    T = reduced_token_set()
    cfg = AlphaQCMConfig(n_quantiles=8, d_model=8, hidden=8, memory_size=64, batch_size=16, dropout=0.0, **kw)
    ag = AlphaQCMAgent(cfg, len(T), 6, seed=0)
    rng = np.random.default_rng(0)
    for _ in range(10):
        L = int(rng.integers(2, 5))
        obs = [np.r_[rng.integers(1, len(T) + 1, size=t), np.zeros(6 - t, np.int64)].astype(np.int64)
               for t in range(L + 1)]
        masks = [rng.random(len(T)) < 0.5 for _ in range(L + 1)]
        ag.store_episode(obs, list(rng.integers(0, len(T), size=L)), [0.0] * (L - 1) + [float(rng.normal())], masks)
    return ag


def test_per_sampling_law_and_importance_weights():
    ag = _filled_agent(per_beta=0.4)
    n = min(ag.n_stored, ag.cfg.memory_size)
    ag.buf_prio[:n] = np.linspace(0.1, 1.0, n)
    p = ag.buf_prio[:n] / ag.buf_prio[:n].sum()
    counts = np.zeros(n)
    for _ in range(3000):
        idx, w = ag.sample_indices()
        counts += np.bincount(idx, minlength=n)
    freq = counts / counts.sum()
    assert np.max(np.abs(freq - p)) < 4 * np.sqrt(p.max() / counts.sum())
    ag.per_beta, ag.per_beta_step = 0.4, 0.0
    idx, w = ag.sample_indices()
    np.testing.assert_allclose(w, (ag.buf_prio[idx] / ag.buf_prio[:n].min()) ** -0.4)
    uni = _filled_agent(use_per=False)
    assert uni.sample_indices()[1] is None


@pytest.mark.parametrize("gamma", [1.0, 0.9])
@pytest.mark.parametrize("mask_target", [True, False])
def test_learn_targets_weights_and_new_priorities_by_hand(mask_target, gamma):
    """One update re-derived: target quantiles r + g^n theta^-(s', a*) (a* masked or not; the paper's gamma = 1 and a
    discounted 0.9, so a wrong power of gamma in the quantile target shows), the importance-weighted quantile-Huber
    loss, and the new priorities min(1, (sum_i mean_j |u_ij| + 0.01)^0.5)."""
    ag = _filled_agent(mask_target=mask_target, gamma=gamma)
    ag.qnet_t.load_state_dict({k: v + 0.3 * torch.randn_like(v) for k, v in ag.qnet.state_dict().items()})
    idx = np.arange(16) % ag.n_stored
    w = np.linspace(0.5, 1.0, 16)
    ag.sample_indices = lambda: (idx, w)
    obs, nxt, a = (torch.as_tensor(x[idx]) for x in (ag.buf_obs, ag.buf_next, ag.buf_a))
    r, done, nmask = (torch.as_tensor(x[idx]) for x in (ag.buf_r, ag.buf_done, ag.buf_next_mask))
    with torch.no_grad():
        pred = ag.qnet(obs)[torch.arange(16), a]
        tq = ag.qnet_t(nxt)
        target = torch.empty(16, 8)
        for b in range(16):
            means = tq[b].mean(1)
            if mask_target:
                means = torch.where(nmask[b], means, torch.tensor(-np.inf))
            target[b] = r[b] + (1 - done[b]) * ag.cfg.gamma**ag.cfg.multi_step * tq[b, int(means.argmax())]
        per_b = torch.stack([quantile_huber_loss(pred[b:b + 1], target[b:b + 1], ag.taus) for b in range(16)])
        expected_loss = float((per_b * torch.as_tensor(w, dtype=per_b.dtype)).mean())
        err = np.array([float((target[b][None, :] - pred[b][:, None]).abs().sum(0).mean()) for b in range(16)])
        # u_ij = target_j - pred_i: sum over i, mean over j (the two orders give the same total / N)
    loss_q, _ = ag.learn()
    assert loss_q == pytest.approx(expected_loss, rel=1e-5)
    np.testing.assert_allclose(ag.buf_prio[idx], np.minimum(1.0, (err + 0.01) ** 0.5), rtol=1e-5)


def test_scores_use_the_online_nets_and_greedy_acts_pick_the_best_valid_token():
    """Action rule (paper Sec. 3, official ``exploit``): argmax over the *valid* tokens of Q(s,a) + lambda std(s,a),
    both from the online nets; perturbing the target nets leaves the scores bit-identical (dropout 0, CPU)."""
    ag = _filled_agent(std_lam=1.0)
    obs = ag.buf_obs[3]
    before = ag.scores(obs)
    torch.manual_seed(1)
    for net in (ag.qnet_t, ag.mean_net_t):
        net.load_state_dict({k: v + 0.5 * torch.randn_like(v) for k, v in net.state_dict().items()})
    np.testing.assert_array_equal(ag.scores(obs), before)
    mask = np.ones(ag.n_actions, bool)
    mask[int(np.argmax(before))] = False  # the overall best token is invalid here
    mask[::3] = False
    valid = np.flatnonzero(mask)
    assert ag.act(obs, mask, eps=0.0) == int(valid[np.argmax(before[valid])])


@pytest.mark.parametrize("use_per", [False, True])
def test_mean_net_takes_an_adam_step_on_the_mse_to_the_n_step_max_target(use_per):
    """The separate mean (Q) network: one Adam step (eps = 0.01 / batch) on mean_b (Q(s,a) - y_b)^2 with
    y_b = r_b + gamma^n max_{valid a'} Q^-(s', a') (y_b = r_b at the end of an episode), re-derived here with
    gamma = 0.9, n = 3 on a copy of the net (float32; the same operations, tolerance a few ulps). Under prioritised
    replay the MSE stays unweighted (the importance weights are the quantile loss's only)."""
    import copy

    ag = _filled_agent(gamma=0.9, use_per=use_per)
    torch.manual_seed(2)
    ag.mean_net_t.load_state_dict({k: v + 0.3 * torch.randn_like(v) for k, v in ag.mean_net.state_dict().items()})
    idx = np.arange(16) % ag.n_stored
    weights = np.linspace(0.2, 1.0, 16) if use_per else None
    ag.sample_indices = lambda: (idx, weights)
    obs, nxt, a = (torch.as_tensor(x[idx]) for x in (ag.buf_obs, ag.buf_next, ag.buf_a))
    r, done, nmask = (torch.as_tensor(x[idx]) for x in (ag.buf_r, ag.buf_done, ag.buf_next_mask))
    assert (done == 0).any() and (done == 1).any()  # both kinds of target occur
    with torch.no_grad():
        q_next = ag.mean_net_t(nxt)[:, :, 0]
        y = torch.stack([r[b] if done[b] else r[b] + 0.9**3 * q_next[b][nmask[b]].max() for b in range(16)])
    ref = copy.deepcopy(ag.mean_net)
    opt = torch.optim.Adam(ref.parameters(), lr=ag.cfg.lr, eps=1e-2 / ag.cfg.batch_size)
    loss = ((ref(obs)[torch.arange(16), a, 0] - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    _, loss_m = ag.learn()
    assert loss_m == pytest.approx(float(loss.detach()), rel=1e-6)
    for p_ours, p_ref in zip(ag.mean_net.parameters(), ref.parameters()):
        torch.testing.assert_close(p_ours, p_ref, rtol=1e-6, atol=1e-7)
    assert any(not torch.equal(p, q) for p, q in zip(ag.mean_net.parameters(), ag.mean_net_t.parameters()))


def test_store_episode_writes_n_step_transitions():
    """n-step returns (qrdqn.yaml: multi_step 3): R_t = sum_{j<k} gamma^j r_{t+j}, s' = s_{t+k}, k = min(n, T - t),
    done iff t + k = T; by hand for gamma = 0.5 on a 5-step episode (exact in binary floating point)."""
    cfg = AlphaQCMConfig(n_quantiles=4, d_model=4, hidden=4, memory_size=10, batch_size=2, gamma=0.5, multi_step=3)
    ag = AlphaQCMAgent(cfg, 5, 4, seed=0)
    obs = [np.full(4, t, np.int64) for t in range(6)]
    masks = [np.arange(5) < t for t in range(6)]
    rewards = [1.0, 2.0, 3.0, 4.0, 5.0]
    ag.store_episode(obs, [4, 3, 2, 1, 0], rewards, masks)
    assert ag.n_stored == 5
    np.testing.assert_array_equal(ag.buf_r[:5], [1 + 1 + 0.75, 2 + 1.5 + 1, 3 + 2 + 1.25, 4 + 2.5, 5])
    np.testing.assert_array_equal(ag.buf_next[:5, 0], [3, 4, 5, 5, 5])
    np.testing.assert_array_equal(ag.buf_next_mask[:5], np.stack([masks[k] for k in (3, 4, 5, 5, 5)]))
    np.testing.assert_array_equal(ag.buf_done[:5], [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(ag.buf_a[:5], [4, 3, 2, 1, 0])


def test_target_nets_are_copied_every_target_update_steps():
    env = _SMALL_ENV
    ag = AlphaQCMAgent(AlphaQCMConfig(n_quantiles=4, d_model=4, hidden=4, batch_size=4, memory_size=100, dropout=0.0,
                                      learning_starts=5, target_update=7, eps_decay_steps=5), len(env.tokens),
                       env.max_len, seed=0)
    copies = {"q": [], "m": []}
    for key, target, online in (("q", ag.qnet_t, ag.qnet), ("m", ag.mean_net_t, ag.mean_net)):
        load = target.load_state_dict

        def spy(sd, *args, _key=key, _online=online, _load=load, **kwargs):
            copies[_key].append((ag.steps, all(torch.equal(v, sd[k]) for k, v in _online.state_dict().items())))
            return _load(sd, *args, **kwargs)

        target.load_state_dict = spy
    ag.train(env, 30)
    for key in ("q", "m"):
        assert [s for s, _ in copies[key]] == list(range(7, ag.steps + 1, 7))
        assert all(same for _, same in copies[key])  # a copy of the online net at that step


def test_weighted_quantile_huber_and_bad_weights():
    rng = np.random.default_rng(2)
    pred, target = torch.tensor(rng.normal(size=(3, 4))), torch.tensor(rng.normal(size=(3, 5)))
    taus, w = torch.tensor(quantile_midpoints(4)), torch.tensor([0.2, 1.0, 3.0], dtype=torch.float64)
    each = [float(quantile_huber_loss(pred[b:b + 1], target[b:b + 1], taus)) for b in range(3)]
    weighted = float(quantile_huber_loss(pred, target, taus, weights=w))
    assert weighted == pytest.approx(np.mean(np.array(each) * w.numpy()))
    with pytest.raises(ValueError, match="weights"):
        quantile_huber_loss(pred, target, taus, weights=torch.ones(2))


def test_random_actions_until_learning_starts():
    env = _SMALL_ENV
    ag = AlphaQCMAgent(AlphaQCMConfig(n_quantiles=4, d_model=4, hidden=4, batch_size=4, memory_size=100,
                                      learning_starts=20, eps_decay_steps=5), len(env.tokens), env.max_len, seed=0)
    scored_at = []
    original = ag.scores
    ag.scores = lambda o: (scored_at.append(ag.steps), original(o))[1]
    ag.train(env, 30)
    assert scored_at and min(scored_at) >= 20  # the network is consulted only from learning_starts on


def test_agent_scores_use_std_bonus_and_bad_config():
    T = reduced_token_set()
    cfg = AlphaQCMConfig(n_quantiles=8, d_model=8, hidden=8, std_lam=2.0, memory_size=100, dropout=0.0)
    ag = AlphaQCMAgent(cfg, len(T), 6, seed=0)
    obs = np.zeros(6, dtype=np.int64)
    with torch.no_grad():
        base = ag.mean_net(torch.as_tensor(obs[None]))[0, :, 0].double()
        std = qcm_moments(ag.qnet(torch.as_tensor(obs[None]))[0].double(), ag.taus_np)[0]
    np.testing.assert_allclose(ag.scores(obs), (base + 2.0 * std).numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="n_quantiles"):
        AlphaQCMAgent(AlphaQCMConfig(n_quantiles=2), len(T), 6)


def test_experiment_config_nests_the_agent_config():
    """The experiment holds AlphaQCMConfig whole: no agent field re-declared, dotted presets reach it, and the
    agent config's own check names the field."""
    exp = EXPERIMENTS[0]
    assert not {f.name for f in dataclasses.fields(exp.config)} & {f.name for f in dataclasses.fields(AlphaQCMConfig)}
    cfg = exp.make_config("smoke", {"agent.std_lam": 2.0})
    assert isinstance(cfg.agent, AlphaQCMConfig) and cfg.agent.std_lam == 2.0 and cfg.agent.n_quantiles == 8
    full = exp.make_config("full").agent  # qrdqn.yaml's settings
    assert (full.n_quantiles, full.lr, full.batch_size, full.learning_starts, full.target_update) == (
        200, 5e-5, 128, 10_000, 5_000)
    assert config_from_dict(type(cfg), config_to_dict(cfg)) == cfg  # a stored job's config rebuilds
    with pytest.raises(ConfigError, match=r"SyntheticSearchConfig\.agent\.lr must be > 0, got -1\.0"):
        exp.make_config("smoke", {"agent.lr": -1.0})
    with pytest.raises(ConfigError, match=r"AlphaQCMConfig\.dropout must be in \[0, 1\)"):
        AlphaQCMConfig(dropout=1.0)


def test_smoke_run(monkeypatch):
    from icml25.papers.alphaqcm import repro

    exp = EXPERIMENTS[0]
    cfg = exp.make_config("smoke")
    seen = []
    monkeypatch.setattr(repro, "AlphaQCMAgent", lambda agent_cfg, *a, **k: (seen.append(agent_cfg),
                                                                            AlphaQCMAgent(agent_cfg, *a, **k))[1])
    m = exp.run(cfg, seed=0)
    assert seen == [cfg.agent, dataclasses.replace(cfg.agent, std_lam=0.0)]  # the config whole; the ablation: lambda 0
    assert m["test_ic_planted_oracle"] > 0.2  # the planted alphas do predict the test period
    for name in ("alphaqcm", "lam0", "random"):
        assert -1 <= m[f"test_ic_{name}"] <= 1 and 0 <= m[f"train_ic_{name}"] <= 1
    assert m["evaluations_random"] == m["evaluations_alphaqcm"]
    assert m["qcm_minus_random"] == pytest.approx(m["test_ic_alphaqcm"] - m["test_ic_random"])


def test_qcm_moments_and_quantile_huber_loss_match_the_released_code():
    """Parity with the released AlphaQCM (tests/fixtures/official/alphaqcm/PROVENANCE.md): the QCM moments of fixed
    quantiles and the quantile-Huber loss, both computed in float32 by the released code (tolerance: float32 rounding
    of a 32-term regression, a few 1e-6 relative)."""
    from pathlib import Path

    from icml25.papers.alphaqcm.agent import qcm_moments, quantile_huber_loss

    z = np.load(Path(__file__).parents[1] / "fixtures" / "official" / "alphaqcm" / "qcm_and_loss.npz")
    std, skew, kurt = qcm_moments(torch.tensor(z["quantiles"]).transpose(1, 2).double(), z["tau_hats"])
    np.testing.assert_allclose(std.numpy(), z["std"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(skew.numpy(), z["skew"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(kurt.numpy(), z["kurt"], rtol=1e-5, atol=1e-5)
    pred, target, taus = (torch.tensor(z[k]).double() for k in ("pred", "target", "tau_hats"))
    loss = quantile_huber_loss(pred, target, taus, float(z["kappa"]))
    weighted = quantile_huber_loss(pred, target, taus, float(z["kappa"]), weights=torch.tensor(z["weights"]).double())
    np.testing.assert_allclose(float(loss), float(z["loss"]), rtol=1e-6)
    np.testing.assert_allclose(float(weighted), float(z["loss_weighted"]), rtol=1e-6)
