"""The target evaluator of Zhao et al. (ICML 2025): distributional TD over distance bins plus an "unreachable" bin.

``h(s, a, g)`` is a categorical distribution over ``{1, ..., B, inf}``: the number of steps the agent's
current policy needs to reach target ``g`` from ``s`` after taking ``a`` (``inf``: never, or not within the
budget ``B``). Feasibility is ``1 - p(inf)``; a planner rejects targets whose feasibility is below a threshold.

Learning rule (off-policy TD on replayed ``(s_t, a_t, s_{t+1}, g)``), with ``a' = pi(s_{t+1}, g)``:

* ``s_{t+1}`` satisfies ``g``  -> target is a one-hot at distance 1;
* the episode terminated at ``t+1`` without reaching ``g`` -> one-hot at ``inf``;
* otherwise -> ``h(s_{t+1}, a', g)`` shifted one step further (C51-style projection; mass at ``B`` overflows
  into ``inf``).

Which ``g`` it trains on is decided by hindsight relabeling (:func:`relabel`): ``episode`` / ``future``
(states of the same trajectory), ``generate`` (the generator's own proposals, hallucinations included) and
``pertask`` (states from other episodes of the same task), or a mixture of them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

STRATEGIES = ("episode", "future", "generate", "pertask")
"""Hindsight relabeling strategies accepted by :func:`relabel`."""


@dataclass
class ReplayBuffer:
    """Transitions stored episode after episode (contiguous).

    Attributes (all shape ``(n,)``):
        s, a, s2: state, action, next state (on death ``s2 == s``: the last state the agent occupied).
        terminated: the episode ended at this transition (death or success; truncation is not termination).
        died: the transition killed the agent (``s2`` is then not a state the agent reached).
        episode: episode id, non-decreasing.
    """

    s: np.ndarray
    a: np.ndarray
    s2: np.ndarray
    terminated: np.ndarray
    died: np.ndarray
    episode: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.s)
        for name in ("a", "s2", "terminated", "died", "episode"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"replay field {name!r} has length {len(getattr(self, name))}, expected {n}")
        if n == 0:
            raise ValueError("replay buffer is empty")
        if np.any(np.diff(self.episode) < 0):
            raise ValueError("episode ids must be non-decreasing (episodes stored contiguously)")
        _, first, counts = np.unique(self.episode, return_index=True, return_counts=True)
        inverse = np.searchsorted(np.unique(self.episode), self.episode)
        self.ep_start, self.ep_len = first[inverse], counts[inverse]

    def __len__(self) -> int:
        return len(self.s)


def relabel(batch: np.ndarray, strategy: str | Mapping[str, float], replay: ReplayBuffer,
            generator=None, rng: np.random.Generator | None = None) -> np.ndarray:
    """Hindsight targets for the transitions ``batch`` (indices into ``replay``).

    Args:
        batch: ``(m,)`` transition indices.
        strategy: one of :data:`STRATEGIES` or a mixture ``{strategy: weight}`` (weights are normalised;
            each transition draws its strategy independently).
            ``episode``: a state of the same trajectory (past or future); ``future``: a state at or after
            ``t+1``; ``pertask``: a state from another episode of the task; ``generate``:
            ``generator.generate(s_t, rng)``.
        replay: the buffer.
        generator: needed for ``generate``; anything with ``generate(states, rng) -> targets``.
        rng: random generator.

    Returns:
        ``(m,)`` target state indices.
    """
    rng = np.random.default_rng() if rng is None else rng
    batch = np.asarray(batch)
    if batch.size and (batch.min() < 0 or batch.max() >= len(replay)):
        raise ValueError(f"batch indices must lie in [0, {len(replay)})")
    if isinstance(strategy, Mapping):
        names = list(strategy)
        w = np.array([strategy[k] for k in names], dtype=float)
        if any(k not in STRATEGIES for k in names) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"mixture must map strategies in {STRATEGIES} to non-negative weights, got {strategy!r}")
        pick = rng.choice(len(names), size=batch.size, p=w / w.sum())
        out = np.empty(batch.size, dtype=np.int64)
        for k, name in enumerate(names):
            if np.any(pick == k):
                out[pick == k] = relabel(batch[pick == k], name, replay, generator, rng)
        return out
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES} or a mixture dict, got {strategy!r}")
    start, length = replay.ep_start[batch], replay.ep_len[batch]
    if strategy == "episode":
        j = start + rng.integers(0, length)
    elif strategy == "future":
        j = batch + rng.integers(0, start + length - batch)
    elif strategy == "pertask":
        others = len(replay) - length
        if np.any(others == 0):
            raise ValueError("pertask relabeling needs at least two episodes in the replay")
        k = rng.integers(0, others)
        j = np.where(k >= start, k + length, k)  # skip the transition's own episode
    else:
        if generator is None:
            raise ValueError("strategy 'generate' needs a generator")
        return np.asarray(generator.generate(replay.s[batch], rng), dtype=np.int64)
    return replay.s2[j]


def distributional_td_target(next_probs: torch.Tensor, reached: torch.Tensor, terminated: torch.Tensor) -> torch.Tensor:
    """The evaluator's TD target distribution.

    Args:
        next_probs: ``(m, B+1)`` probabilities ``h(s_{t+1}, pi(s_{t+1}, g), g)``; bin ``k < B`` is distance
            ``k+1``, bin ``B`` is ``inf``.
        reached: ``(m,)`` bool, ``s_{t+1}`` satisfies ``g``.
        terminated: ``(m,)`` bool, the episode ended at ``t+1`` (ignored where ``reached``).

    Returns:
        ``(m, B+1)`` target probabilities: one-hot at distance 1 where reached, one-hot at ``inf`` where the
        episode terminated without reaching, else ``next_probs`` shifted one bin up (distance ``B+1``
        overflows into ``inf``).
    """
    if next_probs.ndim != 2 or next_probs.shape[1] < 2:
        raise ValueError(f"next_probs must be (m, B+1) with B >= 1, got shape {tuple(next_probs.shape)}")
    m, nb = next_probs.shape
    if reached.shape != (m,) or terminated.shape != (m,):
        raise ValueError(f"reached and terminated must have shape ({m},), got {tuple(reached.shape)} and "
                         f"{tuple(terminated.shape)}")
    shifted = torch.zeros_like(next_probs)
    shifted[:, 1:nb - 1] = next_probs[:, : nb - 2]
    shifted[:, nb - 1] = next_probs[:, nb - 2] + next_probs[:, nb - 1]
    one_inf = torch.zeros_like(next_probs)
    one_inf[:, nb - 1] = 1.0
    one_d1 = torch.zeros_like(next_probs)
    one_d1[:, 0] = 1.0
    out = torch.where(terminated[:, None], one_inf, shifted)
    return torch.where(reached[:, None], one_d1, out)


class TargetEvaluator(nn.Module):
    """``h(s, a, g)``: an MLP from (state features, target features) to ``A x (B+1)`` logits.

    Args:
        state_features: ``(n_states, d)`` feature table; inputs are state indices.
        n_actions: number of actions ``A``.
        n_bins: distance bins ``B`` (an extra bin holds ``inf``).
        hidden: width of the two hidden layers.
    """

    def __init__(self, state_features: np.ndarray, n_actions: int = 4, n_bins: int = 32, hidden: int = 256):
        super().__init__()
        feats = np.asarray(state_features, dtype=np.float32)
        if feats.ndim != 2:
            raise ValueError(f"state_features must be a 2-D (n_states, d) array, got shape {feats.shape}")
        if not np.isfinite(feats).all():
            raise ValueError("state_features must be finite (found NaN or inf)")
        if n_bins < 2 or n_actions < 1 or hidden < 1:
            raise ValueError(f"need n_bins >= 2, n_actions >= 1, hidden >= 1; got {n_bins}, {n_actions}, {hidden}")
        self.n_actions, self.n_bins = int(n_actions), int(n_bins)
        self.register_buffer("features", torch.from_numpy(feats))
        d = feats.shape[1]
        self.net = nn.Sequential(nn.Linear(2 * d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, n_actions * (n_bins + 1)))

    def _idx(self, x, name: str = "state", high: int | None = None) -> torch.Tensor:
        """Integer indices (array, list or tensor) as a flat long tensor on the features' device.

        The range check runs wherever values exist; a meta tensor has none, so it is skipped there.
        """
        high = self.features.shape[0] if high is None else high
        t = x if isinstance(x, torch.Tensor) else torch.as_tensor(np.array(x))
        if t.numel() and (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool):
            raise TypeError(f"{name} indices must be integers, got dtype {t.dtype}")
        t = t.to(device=self.features.device, dtype=torch.long).reshape(-1)
        if t.numel() and not t.is_meta and bool((t.min() < 0) | (t.max() >= high)):
            raise ValueError(f"{name} indices must lie in [0, {high})")
        return t

    def forward(self, s, g) -> torch.Tensor:
        """Logits ``(m, A, B+1)`` for state and target indices ``s``, ``g`` of shape ``(m,)``."""
        s, g = self._idx(s), self._idx(g)
        if s.shape != g.shape:
            raise ValueError(f"s and g must have the same length, got {s.numel()} and {g.numel()}")
        x = torch.cat([self.features[s], self.features[g]], dim=1)
        return self.net(x).view(-1, self.n_actions, self.n_bins + 1)

    def distance_distribution(self, s, g, actions) -> torch.Tensor:
        """``(m, B+1)`` probabilities over distances ``1..B`` and ``inf`` for taking ``actions`` first."""
        logits = self(s, g)
        a = self._idx(actions, "action", self.n_actions)
        if len(a) != len(logits):
            raise ValueError(f"need one action per (s, g) pair: {len(logits)} pairs, {len(a)} actions")
        return logits[torch.arange(len(a), device=logits.device), a].softmax(-1)

    @torch.no_grad()
    def feasibility(self, s, g, actions=None) -> np.ndarray:
        """``1 - p(inf)`` for each ``(s, g)``: under ``actions`` (e.g. the agent's policy) or, when
        ``actions`` is None, the most favourable action."""
        s, g = np.broadcast_arrays(np.asarray(s), np.asarray(g))
        probs = self(s.reshape(-1), g.reshape(-1)).softmax(-1)[..., -1]  # (m, A) p(inf)
        if actions is None:
            p_inf = probs.min(dim=1).values
        else:
            a = self._idx(np.broadcast_to(np.asarray(actions), s.shape), "action", self.n_actions)
            p_inf = probs[torch.arange(len(a), device=probs.device), a]
        return (1.0 - p_inf).cpu().numpy().reshape(s.shape)

    def td_loss(self, batch: Mapping[str, np.ndarray], policy: Callable[[np.ndarray, np.ndarray], np.ndarray],
                target_net: "TargetEvaluator | None" = None) -> torch.Tensor:
        """Cross-entropy between ``h(s, a, g)`` and :func:`distributional_td_target`.

        Args:
            batch: ``s, a, s2, g`` (state/action/target indices), ``terminated``, ``died`` (bool); ``(m,)`` each.
            policy: ``policy(s2, g) -> actions`` of the agent being evaluated (off-policy: ``a`` may differ).
            target_net: network that gives ``h(s_{t+1}, ., g)`` (default: this one, without gradient).
        """
        s, a, s2, g = (np.asarray(batch[k]) for k in ("s", "a", "s2", "g"))
        died = np.asarray(batch["died"], dtype=bool)
        device = self.features.device
        reached = torch.as_tensor((s2 == g) & ~died, device=device)
        terminated = torch.as_tensor(np.asarray(batch["terminated"], dtype=bool), device=device)
        with torch.no_grad():
            nxt = (target_net or self).distance_distribution(s2, g, policy(s2, g))
            target = distributional_td_target(nxt, reached, terminated)
        logits = self(s, g)[torch.arange(len(a), device=device), self._idx(a, "action", self.n_actions)]
        return -(target * F.log_softmax(logits, -1)).sum(-1).mean()


def train_evaluator(evaluator: TargetEvaluator, replay: ReplayBuffer, policy, strategy, generator=None,
                    updates: int = 2000, batch_size: int = 128, lr: float = 1e-3, target_every: int = 100,
                    rng: np.random.Generator | None = None) -> TargetEvaluator:
    """Fit ``evaluator`` by TD on uniformly replayed transitions relabeled with ``strategy``.

    ``strategy`` is passed to :func:`relabel`; a frozen copy of the network, refreshed every ``target_every``
    updates, gives the bootstrap distribution. Returns the trained evaluator.
    """
    if updates < 0 or batch_size < 1 or target_every < 1:
        raise ValueError(f"need updates >= 0, batch_size >= 1, target_every >= 1; got {updates}, {batch_size}, "
                         f"{target_every}")
    rng = np.random.default_rng() if rng is None else rng
    opt = torch.optim.Adam(evaluator.parameters(), lr=lr)
    target_net = copy.deepcopy(evaluator).requires_grad_(False)
    for step in range(updates):
        idx = rng.integers(0, len(replay), size=batch_size)
        batch = {"s": replay.s[idx], "a": replay.a[idx], "s2": replay.s2[idx], "terminated": replay.terminated[idx],
                 "died": replay.died[idx], "g": relabel(idx, strategy, replay, generator, rng)}
        loss = evaluator.td_loss(batch, policy, target_net)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % target_every == 0:
            target_net.load_state_dict(evaluator.state_dict())
    return evaluator
