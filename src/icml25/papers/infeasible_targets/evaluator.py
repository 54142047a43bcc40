"""The target evaluator of Zhao et al. (ICML 2025): a histogram over distances, learned by off-policy TD.

``h(s, a, g)`` is a categorical distribution over ``K = B + 1`` atoms with support ``{1, ..., B, B+1}``: the
number of steps the agent's current policy needs to reach target ``g`` from ``s`` after taking ``a``; the last
atom means "``B+1`` or more, or never". The official code (mila-iqia/Delusions, ``common/evaluator.py``) uses
16 atoms (``B = 15``, our default).

Learning rule (off-policy TD on replayed ``(s_t, a_t, s_{t+1}, g)``), with ``a' = pi(s_{t+1}, g)``, two forms:

* ``td_rule="scalar"`` (the official rule, default): ``d' = E[h(s_{t+1}, a', g)]`` from the target network;
  ``d' = 1000`` when the episode terminated at ``t+1``, ``d' = 0`` when ``s_{t+1}`` satisfies ``g`` (this wins
  over termination); the target is the two-hot projection of ``1 + d'`` (clamped to ``[1, B+1]``) onto the
  support, i.e. scalar TD on distances carried by a histogram (:func:`scalar_td_target`).
* ``td_rule="distributional"`` (ours): one-hot at distance 1 when reached, one-hot at the last atom (``inf``)
  when terminated, else ``h(s_{t+1}, a', g)`` shifted one atom further, mass at ``B`` overflowing into ``inf``
  (a C51-style backup that keeps "unreachable" as probability mass; :func:`distributional_td_target`).

A terminal-state classifier ``omega(s)`` (a second head, trained by cross-entropy on whether ``s_{t+1}`` is a
terminal state) completes the official evaluator: planners never plan onward from a state it flags.

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

from icml25.common.checks import ConfigError, check_ranges

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
        task: task id of each transition (constant within an episode); ``None`` means one task.
    """

    s: np.ndarray
    a: np.ndarray
    s2: np.ndarray
    terminated: np.ndarray
    died: np.ndarray
    episode: np.ndarray
    task: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.s)
        if self.task is None:
            self.task = np.zeros(n, dtype=np.int64)
        for name in ("a", "s2", "terminated", "died", "episode", "task"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"replay field {name!r} has length {len(getattr(self, name))}, expected {n}")
        if n == 0:
            raise ValueError("replay buffer is empty")
        if np.any(np.diff(self.episode) < 0):
            raise ValueError("episode ids must be non-decreasing (episodes stored contiguously)")
        _, first, counts = np.unique(self.episode, return_index=True, return_counts=True)
        inverse = np.searchsorted(np.unique(self.episode), self.episode)
        self.ep_start, self.ep_len = first[inverse], counts[inverse]
        self.task = np.asarray(self.task, dtype=np.int64)
        if np.any(self.task != self.task[self.ep_start]):
            raise ValueError("task ids must be constant within each episode")
        self.task_index = {int(t): np.flatnonzero(self.task == t) for t in np.unique(self.task)}

    def __len__(self) -> int:
        return len(self.s)


def relabel(batch: np.ndarray, strategy: str | Mapping[str, float], replay: ReplayBuffer,
            generator=None, rng: np.random.Generator | None = None, pertask_own_episode: bool = True) -> np.ndarray:
    """Hindsight targets for the transitions ``batch`` (indices into ``replay``).

    Args:
        batch: ``(m,)`` transition indices.
        strategy: one of :data:`STRATEGIES` or a mixture ``{strategy: weight}`` (weights are normalised;
            each transition draws its strategy independently).
            ``episode``: a state of the same trajectory (past or future); ``future``: a state at or after
            ``t+1``; ``pertask``: a state observed in any episode of the same task (``replay.task``), the
            transition's own episode included as in the official per-task buffer; ``generate``:
            ``generator.generate(s_t, rng)``.
        replay: the buffer.
        generator: needed for ``generate``; anything with ``generate(states, rng) -> targets``.
        rng: random generator.
        pertask_own_episode: False (ours, earlier default) draws ``pertask`` targets only from the task's
            other episodes.

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
                out[pick == k] = relabel(batch[pick == k], name, replay, generator, rng, pertask_own_episode)
        return out
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES} or a mixture dict, got {strategy!r}")
    start, length = replay.ep_start[batch], replay.ep_len[batch]
    if strategy == "episode":
        j = start + rng.integers(0, length)
    elif strategy == "future":
        j = batch + rng.integers(0, start + length - batch)
    elif strategy == "pertask":
        j = np.empty(batch.size, dtype=np.int64)
        for t in np.unique(replay.task[batch]):
            here = replay.task[batch] == t
            pool = replay.task_index[int(t)]  # sorted; each episode is a contiguous run of it
            if pertask_own_episode:
                j[here] = pool[rng.integers(0, pool.size, size=int(here.sum()))]
                continue
            own = length[here]
            if np.any(pool.size - own == 0):
                raise ValueError("pertask relabeling without the own episode needs two episodes of the task")
            first = np.searchsorted(pool, start[here])
            k = rng.integers(0, pool.size - own)
            j[here] = pool[np.where(k >= first, k + own, k)]  # skip the transition's own episode
    else:
        if generator is None:
            raise ValueError("strategy 'generate' needs a generator")
        return np.asarray(generator.generate(replay.s[batch], rng), dtype=np.int64)
    return replay.s2[j]


TD_RULES = ("scalar", "distributional")
"""Forms of the evaluator's TD target: the official scalar rule and our distributional one."""


def two_hot(values: torch.Tensor, n_atoms: int) -> torch.Tensor:
    """Two-hot histograms of ``values`` on the support ``{1, ..., n_atoms}`` (values clamped to it).

    ``x`` between atoms ``j`` and ``j+1`` puts ``j + 1 - x`` on ``j`` and ``x - j`` on ``j+1``; an integer ``x``
    gives a one-hot. The mean of the histogram is the clamped value.
    """
    if n_atoms < 2:
        raise ValueError(f"n_atoms must be >= 2, got {n_atoms}")
    x = values.reshape(-1).clamp(1.0, float(n_atoms)) - 1.0  # 0-based position
    lower = x.floor().long().clamp(max=n_atoms - 1)
    upper = x.ceil().long().clamp(max=n_atoms - 1)
    w_up = x - lower.to(x.dtype)
    out = torch.zeros(x.shape[0], n_atoms, dtype=x.dtype, device=x.device)
    out.scatter_add_(1, lower[:, None], (1.0 - w_up)[:, None])
    out.scatter_add_(1, upper[:, None], w_up[:, None])
    return out


def _check_td_inputs(next_probs: torch.Tensor, reached: torch.Tensor, terminated: torch.Tensor) -> None:
    if next_probs.ndim != 2 or next_probs.shape[1] < 2:
        raise ValueError(f"next_probs must be (m, B+1) with B >= 1, got shape {tuple(next_probs.shape)}")
    m = next_probs.shape[0]
    if reached.shape != (m,) or terminated.shape != (m,):
        raise ValueError(f"reached and terminated must have shape ({m},), got {tuple(reached.shape)} and "
                         f"{tuple(terminated.shape)}")


def scalar_td_target(next_probs: torch.Tensor, reached: torch.Tensor, terminated: torch.Tensor) -> torch.Tensor:
    """The official TD target: the two-hot histogram of ``1 + d'`` (mila-iqia/Delusions, ``common/evaluator.py``).

    Args:
        next_probs: ``(m, K)`` probabilities ``h(s_{t+1}, pi(s_{t+1}, g), g)`` over the support ``1..K``.
        reached: ``(m,)`` bool, ``s_{t+1}`` satisfies ``g`` (``d' = 0``; overrides ``terminated``).
        terminated: ``(m,)`` bool, the episode ended at ``t+1`` (``d' = 1000``, so the target is the last atom).

    Returns:
        ``(m, K)``: ``two_hot(1 + d', K)`` with ``d' = sum_k p_k k`` (the mean distance) elsewhere.
    """
    _check_td_inputs(next_probs, reached, terminated)
    k = next_probs.shape[1]
    support = torch.arange(1, k + 1, dtype=next_probs.dtype, device=next_probs.device)
    d_next = next_probs @ support
    d_next = torch.where(terminated, torch.full_like(d_next, 1000.0), d_next)
    d_next = torch.where(reached, torch.zeros_like(d_next), d_next)
    return two_hot(1.0 + d_next, k)


def distributional_td_target(next_probs: torch.Tensor, reached: torch.Tensor, terminated: torch.Tensor) -> torch.Tensor:
    """Our distributional TD target (``td_rule="distributional"``): a C51-style shift with an ``inf`` bin.

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
    _check_td_inputs(next_probs, reached, terminated)
    m, nb = next_probs.shape
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
    """``h(s, a, g)``: an MLP from (state features, target features) to ``A x (B+1)`` logits, plus ``omega(s)``.

    The distance network is the official one: three linear layers of width ``hidden`` with ReLU, each linear
    layer preceded by a LayerNorm (``layernorm=True``). ``omega`` is a terminal-state classifier on the state
    features alone (two logits: not terminal / terminal).

    Args:
        state_features: ``(n_states, d)`` feature table; inputs are state indices.
        n_actions: number of actions ``A``.
        n_bins: distance atoms ``B`` before the last one; ``B + 1`` atoms in all (official: 16 atoms, ``B = 15``).
        hidden: width of the hidden layers (official: 256).
        layernorm: LayerNorm before every linear layer (official: True).
    """

    def __init__(self, state_features: np.ndarray, n_actions: int = 4, n_bins: int = 15, hidden: int = 256,
                 layernorm: bool = True):
        super().__init__()
        feats = np.asarray(state_features, dtype=np.float32)
        if feats.ndim != 2:
            raise ValueError(f"state_features must be a 2-D (n_states, d) array, got shape {feats.shape}")
        if not np.isfinite(feats).all():
            raise ValueError("state_features must be finite (found NaN or inf)")
        if n_bins < 2 or n_actions < 1 or hidden < 1:
            raise ValueError(f"need n_bins >= 2, n_actions >= 1, hidden >= 1; got {n_bins}, {n_actions}, {hidden}")
        if not isinstance(layernorm, bool):
            raise TypeError(f"layernorm must be a bool, got {layernorm!r}")
        self.n_actions, self.n_bins, self.layernorm = int(n_actions), int(n_bins), layernorm
        self.register_buffer("features", torch.from_numpy(feats))
        d = feats.shape[1]

        def norm(width: int) -> nn.Module:
            return nn.LayerNorm(width) if layernorm else nn.Identity()

        self.net = nn.Sequential(norm(2 * d), nn.Linear(2 * d, hidden), nn.ReLU(), norm(hidden),
                                 nn.Linear(hidden, hidden), nn.ReLU(), norm(hidden),
                                 nn.Linear(hidden, n_actions * (n_bins + 1)))
        self.omega = nn.Sequential(norm(d), nn.Linear(d, hidden), nn.ReLU(), norm(hidden), nn.Linear(hidden, 2))

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

    @property
    def support(self) -> torch.Tensor:
        """Distances of the atoms, ``1, ..., B+1`` (the last atom: ``B+1`` or more, or never)."""
        return torch.arange(1, self.n_bins + 2, dtype=self.features.dtype, device=self.features.device)

    @torch.no_grad()
    def expected_distance(self, s, g, actions=None) -> np.ndarray:
        """Mean distance ``sum_k p_k k`` for each ``(s, g)``: under ``actions`` or, when None, the action with
        the smallest mean (as the official LEAP planner does)."""
        s, g = np.broadcast_arrays(np.asarray(s), np.asarray(g))
        mean = self(s.reshape(-1), g.reshape(-1)).softmax(-1) @ self.support  # (m, A)
        if actions is None:
            d = mean.min(dim=1).values
        else:
            a = self._idx(np.broadcast_to(np.asarray(actions), s.shape), "action", self.n_actions)
            d = mean[torch.arange(len(a), device=mean.device), a]
        return d.cpu().numpy().reshape(s.shape)

    def terminal_logits(self, s) -> torch.Tensor:
        """``(m, 2)`` logits of ``omega``: is state ``s`` terminal?"""
        return self.omega(self.features[self._idx(s)])

    @torch.no_grad()
    def is_terminal(self, s) -> np.ndarray:
        """``omega``'s decision (bool array shaped like ``s``): the state is terminal, nothing is reached from it."""
        s = np.asarray(s)
        return (self.terminal_logits(s.reshape(-1)).argmax(-1) == 1).cpu().numpy().reshape(s.shape)

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
                target_net: "TargetEvaluator | None" = None, td_rule: str = "scalar") -> torch.Tensor:
        """Cross-entropy between ``h(s, a, g)`` and the TD target, plus ``omega``'s cross-entropy.

        Args:
            batch: ``s, a, s2, g`` (state/action/target indices), ``terminated``, ``died`` (bool); ``(m,)`` each.
                Optional ``s2_terminal`` (bool): whether ``s2`` is a terminal state (``omega``'s label); default
                ``terminated & ~died`` (in SSM-lite a death leaves ``s2`` at the last non-terminal state).
            policy: ``policy(s2, g) -> actions`` of the agent being evaluated (off-policy: ``a`` may differ).
            target_net: network that gives ``h(s_{t+1}, ., g)`` (default: this one, without gradient).
            td_rule: ``"scalar"`` (:func:`scalar_td_target`, official) or ``"distributional"``
                (:func:`distributional_td_target`, ours).
        """
        if td_rule not in TD_RULES:
            raise ValueError(f"td_rule must be one of {TD_RULES}, got {td_rule!r}")
        s, a, s2, g = (np.asarray(batch[k]) for k in ("s", "a", "s2", "g"))
        died = np.asarray(batch["died"], dtype=bool)
        device = self.features.device
        reached = torch.as_tensor((s2 == g) & ~died, device=device)
        terminated = torch.as_tensor(np.asarray(batch["terminated"], dtype=bool), device=device)
        s2_terminal = np.asarray(batch["s2_terminal"], dtype=bool) if "s2_terminal" in batch else \
            np.asarray(batch["terminated"], dtype=bool) & ~died
        with torch.no_grad():
            nxt = (target_net or self).distance_distribution(s2, g, policy(s2, g))
            rule = scalar_td_target if td_rule == "scalar" else distributional_td_target
            target = rule(nxt, reached, terminated)
        logits = self(s, g)[torch.arange(len(a), device=device), self._idx(a, "action", self.n_actions)]
        loss_distance = -(target * F.log_softmax(logits, -1)).sum(-1).mean()
        loss_omega = F.cross_entropy(self.terminal_logits(s2), torch.as_tensor(s2_terminal, device=device).long())
        return loss_distance + loss_omega


def train_evaluator(evaluator: TargetEvaluator, replay: ReplayBuffer, policy, strategy, generator=None,
                    updates: int = 2000, batch_size: int = 128, lr: float = 2.5e-4, target_every: int = 500,
                    rng: np.random.Generator | None = None, td_rule: str = "scalar", adam_eps: float = 1e-5,
                    max_grad_norm: float | None = 10.0, pertask_own_episode: bool = True) -> TargetEvaluator:
    """Fit ``evaluator`` by TD on uniformly replayed transitions relabeled with ``strategy``.

    ``strategy`` is passed to :func:`relabel`; a frozen copy of the network, refreshed every ``target_every``
    updates, gives the bootstrap distribution. Defaults are the official ones (Adam, lr 2.5e-4, eps 1e-5,
    gradient-norm clip 10, target sync every 500 updates, the scalar TD rule). ``max_grad_norm=None``
    disables clipping. Returns the trained evaluator.
    """
    if updates < 0 or batch_size < 1 or target_every < 1:
        raise ValueError(f"need updates >= 0, batch_size >= 1, target_every >= 1; got {updates}, {batch_size}, "
                         f"{target_every}")
    if td_rule not in TD_RULES:
        raise ValueError(f"td_rule must be one of {TD_RULES}, got {td_rule!r}")
    if not (lr > 0 and adam_eps > 0) or (max_grad_norm is not None and not max_grad_norm > 0):
        raise ValueError(f"need lr > 0, adam_eps > 0 and max_grad_norm > 0 or None; got {lr}, {adam_eps}, "
                         f"{max_grad_norm}")
    rng = np.random.default_rng() if rng is None else rng
    opt = torch.optim.Adam(evaluator.parameters(), lr=lr, eps=adam_eps)
    target_net = copy.deepcopy(evaluator).requires_grad_(False)
    for step in range(updates):
        idx = rng.integers(0, len(replay), size=batch_size)
        batch = {"s": replay.s[idx], "a": replay.a[idx], "s2": replay.s2[idx], "terminated": replay.terminated[idx],
                 "died": replay.died[idx], "g": relabel(idx, strategy, replay, generator, rng, pertask_own_episode)}
        loss = evaluator.td_loss(batch, policy, target_net, td_rule)
        opt.zero_grad()
        loss.backward()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(evaluator.parameters(), max_grad_norm)
        opt.step()
        if (step + 1) % target_every == 0:
            target_net.load_state_dict(evaluator.state_dict())
    return evaluator


@dataclass
class EvaluatorConfig:
    """The target evaluator's settings: its network (:class:`TargetEvaluator`) and its TD training
    (:func:`train_evaluator`); the relabeling strategy is the caller's (an experiment compares several).

    The defaults are the reproduction's quick scale (16 atoms as the official code; a narrower network and a
    faster optimisation for 1,200 updates); the official values are in each field's note. An experiment nests it
    as ``evaluator`` (``--set evaluator.lr=2.5e-4``). Adam's eps and the gradient clip keep
    :func:`train_evaluator`'s official defaults.
    """

    n_bins: int = 15
    """Distance atoms B before the last ("B+1 or more / never") atom (official: 16 atoms, B = 15)."""
    hidden: int = 128
    """Width of the evaluator's hidden layers (official: 256)."""
    updates: int = 1200
    """TD updates (official runs train for the whole agent run)."""
    lr: float = 3e-3
    """Adam step size (official: 2.5e-4, with 500-update target syncs; scaled for 1200 updates)."""
    target_every: int = 10
    """Updates between refreshes of the frozen bootstrap copy (official: 500)."""
    batch_size: int = 128
    """Minibatch size."""
    td_rule: str = "scalar"
    """TD target: "scalar" (official two-hot of 1 + E[d']) or "distributional" (ours)."""
    pertask_own_episode: bool = True
    """'pertask' draws from every episode of the task, the own one included (official); False: other episodes
    only."""

    def __post_init__(self) -> None:
        # named as the settings are typed (``--set evaluator.lr=...``); beyond these bounds a job takes days
        check_ranges("evaluator", vars(self), integer=("n_bins", "hidden", "updates", "target_every", "batch_size"),
                     positive=("hidden", "lr", "target_every", "batch_size"), nonnegative=("updates",),
                     finite=("lr",), at_least={"n_bins": 2}, choices={"td_rule": TD_RULES},
                     at_most={"n_bins": 10**4, "hidden": 10**4, "updates": 10**7, "target_every": 10**7,
                              "batch_size": 10**6})
        if not isinstance(self.pertask_own_episode, bool):
            raise ConfigError(f"evaluator.pertask_own_episode must be True or False, got {self.pertask_own_episode!r}")

    def build(self, state_features: np.ndarray) -> TargetEvaluator:
        """An untrained :class:`TargetEvaluator` of this width and number of atoms."""
        return TargetEvaluator(state_features, n_bins=self.n_bins, hidden=self.hidden)

    def train(self, evaluator: TargetEvaluator, replay: ReplayBuffer, policy, strategy, generator=None,
              rng: np.random.Generator | None = None) -> TargetEvaluator:
        """:func:`train_evaluator` with these settings."""
        return train_evaluator(evaluator, replay, policy, strategy, generator, self.updates, self.batch_size,
                               self.lr, self.target_every, rng=rng, td_rule=self.td_rule,
                               pertask_own_episode=self.pertask_own_episode)
