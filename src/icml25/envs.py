"""gymnasium registration of icml25's environments.

``import icml25.envs`` registers every environment under the ``icml25/`` namespace,
so that::

    import gymnasium as gym
    import icml25.envs  # noqa: F401
    env = gym.make("icml25/PointMassReach-v0")

works, and so does ``gym.make("icml25.envs:icml25/PointMassReach-v0")`` without the
import (gymnasium imports the module before the id's ``:``). Registering is lazy:
an entry point is a string, so nothing of the paper is imported until ``make``.

``icml25/Garnet-v0`` is a random tabular MDP (``icml25.common.mdp.TabularEnv``; pass
``P=..., r=...`` to ``icml25.common.mdp.TabularEnv`` for your own). The episodic MDP classes
of the RL rows (UCBVI, R1-VI, robust Markov games) are plain simulators, not gymnasium
environments: their algorithms need the transition and reward arrays, not spaces.
"""

from __future__ import annotations

import gymnasium as gym

ENVS: dict[str, tuple[str, int | None]] = {
    "icml25/PointMassReach-v0": ("icml25.papers.valt_sac.envs:PointMassReach", None),
    "icml25/SwordShieldMonster-v0": ("icml25.papers.infeasible_targets.env:SwordShieldMonster", None),
    "icml25/AlphaEnv-v0": ("icml25.papers.alphaqcm.env:make_synthetic_env", None),
    "icml25/Garnet-v0": ("icml25.common.mdp:make_garnet_env", None),
}
"""Environment id -> (entry point, ``max_episode_steps`` or ``None`` when the environment ends itself).

Every one ends its episodes itself (PointMassReach truncates after ``horizon`` steps,
SwordShieldMonster after ``max_steps``, Garnet after ``max_episode_steps``, AlphaEnv terminates
within ``max_len`` tokens), so no ``TimeLimit`` is added: an outer limit would cut a longer
``horizon=``/``max_steps=`` passed to ``gym.make``."""


def register_envs() -> None:
    """Register every environment of :data:`ENVS` with gymnasium (idempotent)."""
    for env_id, (entry_point, max_steps) in ENVS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, max_episode_steps=max_steps)


register_envs()
