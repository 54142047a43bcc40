"""A small continuous-control task for the CPU quick preset: a damped 2-D point mass that must reach the origin."""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np


class PointMassReach(gym.Env):
    """Damped 2-D point mass; observation ``(x, y, vx, vy)``, action a force in ``[-1, 1]^2``.

    Dynamics: ``v' = 0.8 v + 0.5 a``, ``p' = p + 0.1 v'``; reward ``-||p'||_2``; start ``p ~ U(-1, 1)^2``,
    ``v = 0``; episodes are truncated after ``horizon`` steps (never terminated). Momentum makes a
    high-gain (bang-bang) controller overshoot when its position reading is off by a few hundredths,
    which is what an observation adversary exploits.
    """

    metadata = {"render_modes": []}

    def __init__(self, horizon: int = 50):
        if horizon < 1:
            raise ValueError(f"horizon must be >= 1, got {horizon}")
        self.horizon = horizon
        high = np.array([2.0, 2.0, 5.0, 5.0], np.float32)
        self.observation_space = gym.spaces.Box(-high, high, dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
        self._state = np.zeros(4)
        self._t = 0

    def reset(self, *, seed: int | None = None, options=None):
        super().reset(seed=seed)
        self._state = np.concatenate([self.np_random.uniform(-1, 1, 2), np.zeros(2)])
        self._t = 0
        return self._state.astype(np.float32), {}

    def step(self, action):
        a = np.clip(np.asarray(action, dtype=float), -1.0, 1.0)
        v = 0.8 * self._state[2:] + 0.5 * a
        p = np.clip(self._state[:2] + 0.1 * v, -2.0, 2.0)
        self._state = np.concatenate([p, v])
        self._t += 1
        return self._state.astype(np.float32), -float(np.linalg.norm(p)), False, self._t >= self.horizon, {}


MUJOCO_MODULE = "mujoco"
"""The MuJoCo tasks (``Hopper-v5``, ``HalfCheetah-v5``, ``Walker2d-v5``, ``Ant-v5``) need ``pip install
'icml25[mujoco]'`` (gymnasium's MuJoCo environments; their model files ship inside gymnasium)."""


def make_env(name: str, max_episode_steps: int | None = None) -> gym.Env:
    """``"PointMassReach"`` (this module) or any gymnasium id (e.g. ``"Pendulum-v1"``, ``"Hopper-v5"``).

    ``max_episode_steps`` truncates episodes earlier than the task's own limit (``None``: the task's limit;
    for ``PointMassReach`` it is the horizon).
    """
    if max_episode_steps is not None and max_episode_steps < 1:
        raise ValueError(f"max_episode_steps must be >= 1 (or None), got {max_episode_steps}")
    if name == "PointMassReach":
        return PointMassReach() if max_episode_steps is None else PointMassReach(horizon=max_episode_steps)
    return gym.make(name, max_episode_steps=max_episode_steps)


EnvSpec = str | gym.Env | Callable[[], gym.Env]
