"""AlphaQCM's agent: QR-DQN quantiles + a separate mean (Q) network + the QCM variance bonus.

Action choice (paper, Sec. 3): ``argmax_a Q(s,a) + lambda * std(s,a)`` over valid tokens,
where ``std`` is the quantiled conditional moment (QCM) scale estimate of the quantile
network's output, ``epsilon``-greedy. ``std_lam = 0`` is plain (mean-greedy) distributional DQN.

Training loop (:meth:`AlphaQCMAgent.train`, the official ``qrqcm_agent.py`` / ``base_agent.py``
read for facts at ZhuZhouFan/AlphaQCM@dffc695):

1. act: uniform random valid tokens while ``steps < learning_starts``, then epsilon-greedy on the
   score (epsilon decays linearly from step 0);
2. store n-step transitions in a prioritised replay (new ones at priority 1);
3. every ``update_every`` steps from ``learning_starts``: one quantile-Huber step of the quantile
   net (importance-weighted), one MSE step of the mean net, new priorities from the quantile TD errors;
4. every ``target_update`` steps: copy both online nets to their targets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import norm
from torch import nn

from icml25.common.checks import ConfigError, check_fields, check_ranges

# ----------------------------------------------------------------------------- pure functions


def quantile_midpoints(n: int) -> np.ndarray:
    """``tau_i = (2i - 1) / (2n)``, i = 1..n."""
    if n < 1:
        raise ValueError(f"number of quantiles must be >= 1, got {n}")
    return (2 * np.arange(1, n + 1) - 1) / (2.0 * n)


def qcm_design(taus) -> torch.Tensor:
    """Hermite (Cornish-Fisher) design ``X = [1, x, x^2 - 1, x^3 - 3x]``, ``x = Phi^{-1}(tau)``, shape ``(N, 4)``."""
    taus = np.asarray(taus, dtype=float)
    if taus.ndim != 1 or len(taus) < 4 or not np.all((taus > 0) & (taus < 1)):  # NaN fails too
        raise ValueError("taus must be a 1-d array of at least 4 levels strictly inside (0, 1)")
    x = norm.ppf(taus)
    return torch.tensor(np.stack([np.ones_like(x), x, x**2 - 1, x**3 - 3 * x], 1), dtype=torch.float64)


def qcm_moments(quantiles, taus) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Quantiled conditional moments: regress quantiles on the Hermite design.

    ``beta = (X'X)^{-1} X' q``; ``std = beta_1``, ``skew = 6 beta_2 / beta_1``,
    ``kurt = 24 beta_3 / beta_1 + 3``. Adding a constant to every quantile changes only
    ``beta_0``, so the scale estimate is unaffected by a bias of the quantile network.

    Args:
        quantiles: ``(..., N)`` quantile values at levels ``taus`` (tensor or array).
        taus: ``(N,)`` levels in (0, 1), N >= 4.

    Returns:
        ``(std, skew, kurt)``, each of shape ``(...)`` (same dtype as ``quantiles``).
    """
    q = torch.as_tensor(quantiles)
    X = qcm_design(taus).to(q.device)
    if q.shape[-1] != X.shape[0]:
        raise ValueError(f"quantiles have {q.shape[-1]} levels but taus has {X.shape[0]}")
    proj = torch.linalg.solve(X.T @ X, X.T).to(q.dtype if q.is_floating_point() else torch.float64)  # (4, N)
    beta = q.to(proj.dtype) @ proj.T
    b1 = beta[..., 1]
    return b1, 6 * beta[..., 2] / b1, 24 * beta[..., 3] / b1 + 3


def quantile_huber_loss(pred: torch.Tensor, target: torch.Tensor, taus: torch.Tensor, kappa: float = 1.0,
                        weights: torch.Tensor | None = None) -> torch.Tensor:
    """QR-DQN loss ``mean_b w_b sum_i mean_j |tau_i - 1{u_ij < 0}| L_kappa(u_ij) / kappa``.

    ``u_ij = target_j - pred_i``.

    Args:
        pred: ``(B, N)`` predicted quantiles at levels ``taus``.
        target: ``(B, N')`` target samples (no gradient).
        taus: ``(N,)`` quantile levels.
        kappa: Huber threshold (> 0).
        weights: optional ``(B,)`` importance weights ``w_b`` of prioritised replay (``None``: all 1).
    """
    if not kappa > 0:
        raise ValueError(f"kappa must be > 0, got {kappa}")
    if pred.ndim != 2 or target.ndim != 2 or pred.shape[0] != target.shape[0]:
        raise ValueError(f"pred and target must be (B, N) and (B, N') with the same B, got {tuple(pred.shape)} "
                         f"and {tuple(target.shape)}")
    if taus.shape != (pred.shape[1],):
        raise ValueError(f"taus must have one level per predicted quantile ({pred.shape[1]}), got {tuple(taus.shape)}")
    if weights is not None and weights.shape != (pred.shape[0],):
        raise ValueError(f"weights must have shape ({pred.shape[0]},), got {tuple(weights.shape)}")
    u = target.unsqueeze(1) - pred.unsqueeze(2)  # (B, N, N')
    huber = torch.where(u.abs() <= kappa, 0.5 * u**2, kappa * (u.abs() - 0.5 * kappa))
    w = (taus.view(1, -1, 1) - (u.detach() < 0).to(u.dtype)).abs()
    per_sample = (w * huber / kappa).mean(2).sum(1)
    return (per_sample if weights is None else per_sample * weights).mean()


# ----------------------------------------------------------------------------- networks
ENCODERS = ("official", "last_token")


def sinusoidal_encoding(length: int, d_model: int) -> torch.Tensor:
    """Sinusoidal positional encoding ``PE[p, 2k] = sin(p / 10000^(2k/d))``, ``PE[p, 2k+1] = cos(...)``, ``(L, d)``."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    pe = torch.zeros(length, d_model)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)[:, : d_model // 2]
    return pe


class TokenLSTMNet(nn.Module):
    """LSTM encoder over [start] + token prefix, then MLP ``d -> hidden -> n_actions * n_out``.

    ``encoder="official"`` (the official ``LSTMBase``): token embedding (0 = padding, a zero vector)
    plus a sinusoidal positional encoding, an ``lstm_layers``-layer LSTM with ``dropout`` between
    layers, and the output averaged over the start token and the real tokens of each sequence.
    ``encoder="last_token"``: no positional encoding, the LSTM output at the last real token
    (with ``lstm_layers=1, dropout=0`` this is the net of earlier versions of this package).
    """

    def __init__(self, n_tokens: int, n_out: int = 1, d_model: int = 128, hidden: int = 64,
                 encoder: str = "official", lstm_layers: int = 2, dropout: float = 0.1, max_len: int = 256):
        super().__init__()
        check_ranges("TokenLSTMNet", {"n_tokens": n_tokens, "n_out": n_out, "d_model": d_model, "hidden": hidden,
                                      "lstm_layers": lstm_layers, "max_len": max_len}, integer=True, positive=True)
        check_ranges("TokenLSTMNet", {"encoder": encoder}, choices={"encoder": ENCODERS})
        if not 0 <= dropout < 1:
            raise ConfigError(f"TokenLSTMNet.dropout must be in [0, 1), got {dropout!r}")
        self.n_actions, self.n_out, self.encoder = n_tokens, n_out, encoder
        self.embed = nn.Embedding(n_tokens + 2, d_model, padding_idx=0)  # 0 pad, 1..n tokens, n+1 start
        self.register_buffer("pos", sinusoidal_encoding(max_len + 1, d_model) if encoder == "official"
                             else torch.zeros(max_len + 1, d_model), persistent=False)
        self.lstm = nn.LSTM(d_model, d_model, num_layers=lstm_layers, batch_first=True,
                            dropout=dropout if lstm_layers > 1 else 0.0)
        self.head = nn.Sequential(nn.Linear(d_model, hidden), nn.ReLU(), nn.Linear(hidden, n_tokens * n_out))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``obs`` ``(B, L)`` int64 (0 = padding) -> ``(B, n_actions, n_out)``."""
        if obs.ndim != 2 or obs.shape[1] + 1 > self.pos.shape[0]:
            raise ValueError(f"obs must be (B, L) with L <= {self.pos.shape[0] - 1}, got {tuple(obs.shape)}")
        start = torch.full((obs.shape[0], 1), self.n_actions + 1, dtype=obs.dtype, device=obs.device)
        seq = torch.cat([start, obs], 1)
        x = self.embed(seq) + self.pos[: seq.shape[1]]
        h, _ = self.lstm(x)
        n_real = (obs > 0).sum(1)  # real tokens after the start token
        if self.encoder == "official":  # mean over positions 0..n_real of each sequence
            keep = (torch.arange(seq.shape[1], device=obs.device)[None] <= n_real[:, None]).to(h.dtype)
            h = (h * keep[..., None]).sum(1) / keep.sum(1, keepdim=True)
        else:
            h = h[torch.arange(obs.shape[0], device=obs.device), n_real]
        return self.head(h).view(-1, self.n_actions, self.n_out)


@dataclass(frozen=True)
class AlphaQCMConfig:
    """Hyperparameters of :class:`AlphaQCMAgent`, passed to it whole (defaults: the official qrdqn.yaml where stated).

    Validated on construction; :class:`~icml25.common.checks.ConfigError` (a ``ValueError``) names the field.
    """

    n_quantiles: int = 200
    """N quantiles at tau_i = (2i-1)/(2N)."""
    std_lam: float = 1.0
    """lambda: weight of the QCM std bonus (0 = plain distributional DQN)."""
    skew_lam: float = 0.0
    """Weight of the QCM skewness (paper default 0)."""
    kurt_lam: float = 0.0
    """Weight of the QCM kurtosis (paper default 0)."""
    d_model: int = 128
    """LSTM embedding/hidden width."""
    hidden: int = 64
    """MLP hidden width."""
    encoder: str = "official"
    """``official``: positional encoding + mean over time steps; ``last_token``: last-token readout, no encoding."""
    lstm_layers: int = 2
    """LSTM layers (official 2)."""
    dropout: float = 0.1
    """Dropout between LSTM layers (official 0.1; the nets stay in training mode, as in the official code)."""
    lr: float = 5e-5
    """Adam learning rate."""
    batch_size: int = 128
    """Replay minibatch size."""
    gamma: float = 1.0
    """Discount."""
    multi_step: int = 3
    """n of n-step returns."""
    memory_size: int = 100_000
    """Replay capacity."""
    use_per: bool = True
    """Prioritised replay (official); False: uniform replay."""
    per_alpha: float = 0.5
    """PER priority exponent: priority ``min(1, (|TD error| + per_eps)^per_alpha)``."""
    per_beta: float = 0.4
    """Initial PER importance exponent, annealed linearly to 1 over the updates of :meth:`AlphaQCMAgent.train`."""
    per_eps: float = 0.01
    """PER priority offset."""
    learning_starts: int = 10_000
    """Env steps before the first update."""
    update_every: int = 1
    """Env steps between updates."""
    target_update: int = 5_000
    """Env steps between target-network copies."""
    eps_start: float = 1.0
    """Initial epsilon."""
    eps_end: float = 0.01
    """Final epsilon."""
    eps_decay_steps: int = 25_000
    """Env steps of the linear epsilon decay."""
    kappa: float = 1.0
    """Quantile-Huber threshold."""
    mask_target: bool = True
    """Restrict the target's argmax/max to valid next tokens (False: the official unmasked target)."""

    def __post_init__(self) -> None:
        ints = ("n_quantiles", "d_model", "hidden", "lstm_layers", "batch_size", "multi_step", "memory_size",
                "learning_starts", "update_every", "target_update", "eps_decay_steps")
        check_fields(self, integer=ints, finite=("std_lam", "skew_lam", "kurt_lam", "lr", "kappa", "per_alpha",
                                                 "per_eps"),
                     positive=(*(n for n in ints if n != "learning_starts"), "lr", "kappa", "per_alpha", "per_eps"),
                     nonnegative=("std_lam", "learning_starts"),
                     fraction=("gamma", "per_beta", "eps_start", "eps_end"),
                     at_least={"n_quantiles": 4},  # the QCM regression has 4 coefficients
                     choices={"encoder": ENCODERS})
        if not 0 <= self.dropout < 1:  # at 1 the LSTM would drop every activation between layers
            raise ConfigError(f"AlphaQCMConfig.dropout must be in [0, 1), got {self.dropout!r}")
        # bounds: a run beyond these would need > ~100 GB or days (replay memory, network widths, schedules)
        check_fields(self, at_most={"n_quantiles": 10**4, "d_model": 10**4, "hidden": 10**4, "lstm_layers": 10**3,
                                    "batch_size": 10**5, "multi_step": 10**4, "memory_size": 10**7,
                                    "learning_starts": 10**7, "update_every": 10**7, "target_update": 10**7,
                                    "eps_decay_steps": 10**7})


class AlphaQCMAgent:
    """QR-DQN quantile net + mean (Q) net, acting by ``Q + lambda * std_QCM`` (epsilon-greedy over valid actions).

    Args:
        cfg: :class:`AlphaQCMConfig`.
        n_actions: size of the token set.
        max_len: observation length.
        seed: torch/numpy seed.
    """

    def __init__(self, cfg: AlphaQCMConfig, n_actions: int, max_len: int, seed: int = 0, device: str = "cpu"):
        check_ranges("AlphaQCMAgent", {"n_actions": n_actions, "max_len": max_len}, integer=True, positive=True)
        torch.manual_seed(seed)
        self.cfg, self.n_actions, self.max_len, self.device = cfg, n_actions, max_len, device
        self.rng = np.random.default_rng(seed)
        mk = lambda n_out: TokenLSTMNet(  # noqa: E731
            n_actions, n_out, d_model=cfg.d_model, hidden=cfg.hidden, encoder=cfg.encoder,
            lstm_layers=cfg.lstm_layers, dropout=cfg.dropout, max_len=max_len).to(device)
        self.qnet, self.mean_net = mk(cfg.n_quantiles), mk(1)
        self.qnet_t, self.mean_net_t = mk(cfg.n_quantiles), mk(1)
        self.qnet_t.load_state_dict(self.qnet.state_dict())
        self.mean_net_t.load_state_dict(self.mean_net.state_dict())
        opt = lambda net: torch.optim.Adam(net.parameters(), lr=cfg.lr, eps=1e-2 / cfg.batch_size)  # noqa: E731
        self.opt_q, self.opt_m = opt(self.qnet), opt(self.mean_net)
        self.taus_np = quantile_midpoints(cfg.n_quantiles)
        self.taus = torch.tensor(self.taus_np, dtype=torch.float32, device=device)
        M = cfg.memory_size
        self.buf_obs = np.zeros((M, max_len), np.int64)
        self.buf_next = np.zeros((M, max_len), np.int64)
        self.buf_next_mask = np.zeros((M, n_actions), bool)
        self.buf_a = np.zeros(M, np.int64)
        self.buf_r = np.zeros(M, np.float32)
        self.buf_done = np.zeros(M, np.float32)
        self.buf_prio = np.zeros(M, np.float64)  # PER priorities (new transitions: 1, the official maximum)
        self.per_beta, self.per_beta_step = cfg.per_beta, 0.0  # train() sets the annealing step
        self.n_stored = 0
        self.steps = 0

    def epsilon(self) -> float:
        """Linear schedule from ``eps_start`` to ``eps_end`` over ``eps_decay_steps``."""
        frac = min(1.0, self.steps / max(1, self.cfg.eps_decay_steps))
        return self.cfg.eps_start + frac * (self.cfg.eps_end - self.cfg.eps_start)

    @torch.no_grad()
    def scores(self, obs: np.ndarray) -> np.ndarray:
        """``Q(s,a) + lambda std + lambda_s skew + lambda_k kurt`` per action (online nets), shape ``(n_actions,)``."""
        o = torch.as_tensor(obs[None], device=self.device)
        q = self.mean_net(o)[0, :, 0].double()
        c = self.cfg
        if c.std_lam or c.skew_lam or c.kurt_lam:
            std, skew, kurt = qcm_moments(self.qnet(o)[0].double(), self.taus_np)
            q = q + c.std_lam * std + c.skew_lam * torch.nan_to_num(skew) + c.kurt_lam * torch.nan_to_num(kurt)
        return q.cpu().numpy()

    def act(self, obs: np.ndarray, mask: np.ndarray, eps: float | None = None) -> int:
        """Epsilon-greedy action among ``mask``-valid tokens."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.n_actions,):
            raise ValueError(f"mask must have shape ({self.n_actions},), got {mask.shape}")
        valid = np.flatnonzero(mask)
        if not valid.size:
            raise ValueError("no valid action in mask")
        eps = self.epsilon() if eps is None else eps
        if self.rng.random() < eps:
            return int(self.rng.choice(valid))
        s = self.scores(obs)
        return int(valid[np.argmax(s[valid])])

    def store_episode(self, obs: list[np.ndarray], actions: list[int], rewards: list[float],
                      masks: list[np.ndarray]) -> None:
        """Store an episode's n-step transitions. ``obs``/``masks`` have one more entry than ``actions``."""
        T, n, g = len(actions), self.cfg.multi_step, self.cfg.gamma
        for t in range(T):
            k = min(n, T - t)
            i = self.n_stored % self.cfg.memory_size
            self.buf_obs[i], self.buf_a[i] = obs[t], actions[t]
            self.buf_r[i] = sum(g**j * rewards[t + j] for j in range(k))
            self.buf_next[i], self.buf_next_mask[i] = obs[t + k], masks[t + k]
            self.buf_done[i] = float(t + k >= T)
            self.buf_prio[i] = 1.0
            self.n_stored += 1

    def sample_indices(self) -> tuple[np.ndarray, np.ndarray | None]:
        """A minibatch of replay indices and, with PER, their importance weights ``(p_i / min_k p_k)^-beta``.

        PER draws index ``i`` with probability ``p_i / sum_k p_k`` (with replacement) and then moves
        ``beta`` one annealing step towards 1; uniform replay draws uniformly and returns no weights.
        """
        c, n = self.cfg, min(self.n_stored, self.cfg.memory_size)
        if not c.use_per:
            return self.rng.integers(0, n, c.batch_size), None
        p = self.buf_prio[:n]
        idx = np.minimum(np.searchsorted(np.cumsum(p), self.rng.random(c.batch_size) * p.sum(), side="right"), n - 1)
        weights = (p[idx] / p.min()) ** -self.per_beta
        self.per_beta = min(1.0, self.per_beta + self.per_beta_step)
        return idx, weights

    def learn(self) -> tuple[float, float]:
        """One minibatch update of both networks; returns (quantile loss, mean-net loss).

        Targets: ``r + gamma^n theta_j^-(s', a*)`` with ``a* = argmax_a mean_j theta_j^-(s', a)`` for the
        quantile net and ``r + gamma^n max_a Q^-(s', a)`` for the mean net (over valid next tokens when
        ``mask_target``). With PER the quantile loss is importance-weighted, the mean net's MSE is not
        (as in the official code), and the new priority of each sampled transition is
        ``min(1, (sum_i mean_j |u_ij| + per_eps)^per_alpha)``.
        """
        c = self.cfg
        idx, is_w = self.sample_indices()
        t = lambda a: torch.as_tensor(a[idx], device=self.device)  # noqa: E731
        obs, nxt, nmask = t(self.buf_obs), t(self.buf_next), t(self.buf_next_mask)
        a, r, done = t(self.buf_a), t(self.buf_r), t(self.buf_done)
        disc = (1 - done) * c.gamma**c.multi_step
        ar = torch.arange(len(idx), device=self.device)
        with torch.no_grad():
            tq = self.qnet_t(nxt)  # (B, A, N)
            tm = self.mean_net_t(nxt)[:, :, 0]  # (B, A)
            q_next = tq.mean(2)
            if c.mask_target:
                q_next, tm = q_next.masked_fill(~nmask, -1e9), tm.masked_fill(~nmask, -1e9)
            a_star = q_next.argmax(1)
            tm = tm.max(1).values
            target_q = r[:, None] + disc[:, None] * tq[ar, a_star]
            target_m = r + disc * torch.where(done > 0, torch.zeros_like(tm), tm)
            target_q = torch.where(done[:, None] > 0, r[:, None].expand_as(target_q), target_q)
        pred_q = self.qnet(obs)[ar, a]
        weights = None if is_w is None else torch.as_tensor(is_w, dtype=pred_q.dtype, device=self.device)
        loss_q = quantile_huber_loss(pred_q, target_q, self.taus, c.kappa, weights)
        self.opt_q.zero_grad()
        loss_q.backward()
        self.opt_q.step()
        loss_m = ((self.mean_net(obs)[ar, a, 0] - target_m) ** 2).mean()
        self.opt_m.zero_grad()
        loss_m.backward()
        self.opt_m.step()
        if c.use_per:
            err = (target_q.unsqueeze(1) - pred_q.detach().unsqueeze(2)).abs().sum(1).mean(1).cpu().numpy()
            self.buf_prio[idx] = np.minimum(1.0, (err + c.per_eps) ** c.per_alpha)
        return float(loss_q.detach()), float(loss_m.detach())

    def train(self, env, total_steps: int, progress=None) -> dict:
        """Run ``total_steps`` env steps of acting + learning on ``env`` (an :class:`AlphaEnv`).

        Returns a dict with ``episodes`` (completed) and ``rewards`` (terminal reward per episode).
        """
        c = self.cfg
        ep_rewards = []
        n_updates = max(1.0, (total_steps - max(c.learning_starts, self.steps)) / c.update_every)
        self.per_beta_step = (1.0 - c.per_beta) / n_updates  # official: beta reaches 1 at the last update
        while self.steps < total_steps:
            o, _ = env.reset()
            m = env.action_masks()
            obs, masks, acts, rews, done = [o], [m], [], [], False
            while not done:
                a = self.act(o, m, eps=1.0 if self.steps < c.learning_starts else None)  # random warm-up
                o, r, done, trunc, _ = env.step(a)
                done = done or trunc
                m = env.action_masks() if not done else np.zeros(self.n_actions, bool)
                obs.append(o)
                masks.append(m)
                acts.append(a)
                rews.append(r)
                self.steps += 1
                learning = self.steps >= c.learning_starts and self.n_stored >= c.batch_size
                if learning and self.steps % c.update_every == 0:
                    self.learn()
                if self.steps % c.target_update == 0:
                    self.qnet_t.load_state_dict(self.qnet.state_dict())
                    self.mean_net_t.load_state_dict(self.mean_net.state_dict())
            self.store_episode(obs, acts, rews, masks)
            ep_rewards.append(rews[-1])
            if progress is not None:
                progress(min(self.steps, total_steps), total_steps)
        return {"episodes": len(ep_rewards), "rewards": ep_rewards}


def random_search(env, n_episodes: int, seed: int = 0) -> list[float]:
    """Baseline: ``n_episodes`` expressions with tokens drawn uniformly among the valid ones."""
    if int(n_episodes) != n_episodes or n_episodes < 0:
        raise ValueError(f"n_episodes must be an integer >= 0, got {n_episodes!r}")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_episodes):
        env.reset()
        done, r = False, 0.0
        while not done:
            a = int(rng.choice(np.flatnonzero(env.action_masks())))
            _, r, done, _, _ = env.step(a)
        out.append(r)
    return out
