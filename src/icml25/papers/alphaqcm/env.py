"""AlphaGen's MDP as a gymnasium environment: write one alpha token by token."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from icml25.papers.alphaqcm.expressions import RPNBuilder, TokenSet, evaluate_rpn
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

    def __init__(self, pool: AlphaPool, panel: dict[str, np.ndarray], tokens: TokenSet | None = None, max_len: int = 20):
        self.pool, self.panel = pool, panel
        self.tokens = tokens or pool.tokens or TokenSet()
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
