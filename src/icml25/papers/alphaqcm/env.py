"""AlphaGen's MDP as a gymnasium environment: write one alpha token by token."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from icml25.papers.alphaqcm.data import synthetic_market
from icml25.papers.alphaqcm.expressions import RPNBuilder, TokenSet, evaluate_rpn, reduced_token_set
from icml25.papers.alphaqcm.pool import AlphaPool


class AlphaEnv(gym.Env):
    """One episode writes one formulaic alpha in reverse-Polish order (at most ``max_len`` tokens).

    Observation: ``int64[max_len]``, the action ids so far shifted by one (0 = padding).
    Reward: 0 until the expression ends (``SEP``, or ``max_len`` tokens forming a complete
    expression); then the alpha is offered to ``pool`` and the reward is the new pool IC.
    An invalid action or hitting ``max_len`` with an incomplete expression ends the episode
    with reward -1 (never happens when actions respect :meth:`action_masks`).

    Args:
        pool: the :class:`AlphaPool` (its target fixes the training period).
        panel: feature name -> ``(days, stocks)`` training-period array.
        tokens: the vocabulary (action ``i`` = ``tokens.tokens[i]``).
        max_len: maximum expression length (20 in the paper).
    """

    metadata = {"render_modes": []}

    def __init__(self, pool: AlphaPool, panel: dict[str, np.ndarray], tokens: TokenSet | None = None,
                 max_len: int = 20):
        if not isinstance(pool, AlphaPool):
            raise TypeError(f"pool must be an AlphaPool, got {type(pool).__name__}")
        self.tokens = tokens or pool.tokens or TokenSet()
        for name in self.tokens.features:
            if name not in panel:
                raise ValueError(f"panel has no feature {name!r} (the token set uses {self.tokens.features})")
            if np.shape(panel[name]) != pool.target.shape:
                raise ValueError(f"panel[{name!r}] must have the pool target's shape {pool.target.shape}, "
                                 f"got {np.shape(panel[name])}")
        self.pool, self.panel = pool, panel
        self.builder = RPNBuilder(self.tokens, max_len)
        self.max_len = int(max_len)
        self.action_space = gym.spaces.Discrete(len(self.tokens))
        self.observation_space = gym.spaces.Box(0, len(self.tokens), shape=(self.max_len,), dtype=np.int64)
        self.last_expr = ""

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.max_len, dtype=np.int64)
        obs[:len(self.builder.seq)] = np.asarray(self.builder.seq, dtype=np.int64) + 1
        return obs

    def reset(self, *, seed: int | None = None, options=None):
        """Start a new expression."""
        super().reset(seed=seed)
        self.builder.reset()
        return self._obs(), {}

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the tokens that keep the expression completable."""
        return self.builder.valid_mask()

    def step(self, action: int):
        """Append token ``action``; returns ``(obs, reward, terminated, truncated, info)``."""
        if not 0 <= int(action) < len(self.tokens):
            raise ValueError(f"action must be in [0, {len(self.tokens)}), got {action!r}")
        action = int(action)
        if not self.builder.valid_mask()[action]:
            return self._obs(), -1.0, True, False, {"invalid": True}
        self.builder.add(action)
        ended = action == self.tokens.sep_id or len(self.builder.seq) >= self.max_len
        if not ended:
            return self._obs(), 0.0, False, False, {}
        if not self.builder.is_complete:
            return self._obs(), -1.0, True, False, {"invalid": True}
        self.last_expr = self.builder.to_string()
        values = evaluate_rpn(self.builder.seq, self.tokens, self.panel)
        reward = self.pool.try_new_expr(values, self.last_expr)
        return self._obs(), float(reward), True, False, {"expr": self.last_expr}


def make_synthetic_env(n_stocks: int = 30, n_days: int = 200, capacity: int = 5, max_len: int = 12,
                       reduced_tokens: bool = True, noise: float = 1.0, train_fraction: float = 0.6,
                       seed: int = 0) -> AlphaEnv:
    """An :class:`AlphaEnv` over a small generated market: the entry point of ``icml25/AlphaEnv-v0``.

    Builds :func:`~icml25.papers.alphaqcm.data.synthetic_market` (planted reversal and price-volume
    alphas), keeps its first ``train_fraction`` of days as the training period and offers every
    finished alpha to a fresh :class:`AlphaPool` of ``capacity`` alphas on that period. The
    episode ends by itself (``SEP`` or ``max_len`` tokens), so no time limit is needed.

    Args:
        n_stocks, n_days: market size (``n_days * train_fraction > 80``: rolling windows need history).
        capacity: alpha-pool capacity K.
        max_len: maximum expression length.
        reduced_tokens: the ~30-token vocabulary of the quick reproduction (False: the paper's full set).
        noise: return-noise scale of the market (larger = weaker planted signals).
        train_fraction: share of the days, from the start, that the pool fits on (in (0, 1]).
        seed: seed of the market (the environment itself is deterministic given its actions).

    Example:
        >>> import gymnasium as gym, icml25.envs
        >>> env = gym.make("icml25/AlphaEnv-v0", seed=1)
        >>> obs, info = env.reset(seed=0)
    """
    if not 0 < train_fraction <= 1:
        raise ValueError(f"train_fraction must be in (0, 1], got {train_fraction!r}")
    tokens = reduced_token_set() if reduced_tokens else TokenSet()
    market = synthetic_market(n_stocks, n_days, noise=noise, seed=seed)
    panel, target = market.split(0, int(train_fraction * n_days))
    return AlphaEnv(AlphaPool(capacity, target, tokens=tokens), panel, tokens, max_len)
