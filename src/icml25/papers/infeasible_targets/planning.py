"""A LEAP-like target-directed agent: a generator proposes a target, a goal-conditioned policy pursues it.

* :class:`TabularHERAgent`: goal-conditioned Q-learning on a table ``Q(s, g, a)`` with hindsight relabeling
  (``future`` targets, or every target at once); reward -1 per step, 0 on reaching ``g``, death worth
  ``-1/(1-gamma)``.
* :class:`HallucinatingGenerator`: a stand-in for a learned generator. It recalls visited states (which are
  sometimes temporarily infeasible already) and, with probability ``p_hallucinate``, hallucinates: half of
  the time a non-existent state, half of the time a visited position with an irreversibly acquired item
  dropped (temporarily infeasible).
* :class:`RejectingPlanner`: the paper's add-on. It draws candidates from the generator and keeps the first
  whose evaluator feasibility is at least ``threshold``; without an evaluator it accepts every proposal.
* :func:`run_episode`: choose a target, pursue it for up to ``subgoal_steps`` steps or until reached, replan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class TabularHERAgent:
    """Goal-conditioned tabular Q-learning; ``q[s, a, g]`` holds ``Q(s, g, a)``.

    Args:
        n_states: number of states (targets live in the same space).
        n_actions: number of actions.
        gamma: discount.
        lr: step size of the tabular update.
        epsilon: exploration rate of :meth:`act`.
        seed: seed of the fixed random tie-breaking between equal Q-values.
    """

    def __init__(self, n_states: int, n_actions: int = 4, gamma: float = 0.95, lr: float = 0.5,
                 epsilon: float = 0.1, seed: int = 0):
        if not 0 < gamma < 1 or not 0 < lr <= 1 or not 0 <= epsilon <= 1:
            raise ValueError(f"need 0<gamma<1, 0<lr<=1, 0<=epsilon<=1; got {gamma}, {lr}, {epsilon}")
        for name, value in (("n_states", n_states), ("n_actions", n_actions)):
            if int(value) != value or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.gamma, self.lr, self.epsilon, self.n_actions = gamma, lr, epsilon, n_actions
        # stored as q[s, a, g] so that the all-goals update touches contiguous rows
        self.q = np.zeros((n_states, n_actions, n_states), dtype=np.float32)
        self._tie = (np.random.default_rng(seed).random((n_states, n_actions, n_states)) * 1e-4).astype(np.float32)

    def greedy(self, s, g) -> np.ndarray:
        """Greedy actions ``argmax_a Q(s, g, a)`` (fixed random tie-breaking), elementwise over arrays."""
        s, g = np.asarray(s), np.asarray(g)
        return np.argmax(self.q[s, :, g] + self._tie[s, :, g], axis=-1)

    def act(self, s: int, g: int, rng: np.random.Generator, epsilon: float | None = None) -> int:
        """Epsilon-greedy action towards target ``g``."""
        eps = self.epsilon if epsilon is None else epsilon
        return int(rng.integers(self.n_actions)) if rng.random() < eps else int(self.greedy(s, g))

    def update(self, s, a, s2, g, died, terminated=None) -> None:
        """One tabular Q-learning step on a batch of (relabeled) transitions.

        ``terminated`` (default: ``died``) marks episode ends; a target not reached there is never reached,
        worth ``-1/(1-gamma)`` like a death.
        """
        s, a, s2, g, died = (np.asarray(x) for x in (s, a, s2, g, died))
        terminated = died if terminated is None else np.asarray(terminated) | died
        reached = (s2 == g) & ~died
        boot = self.q[s2, :, g].max(axis=-1)
        target = np.where(reached, 0.0, np.where(terminated, -1.0 / (1.0 - self.gamma), -1.0 + self.gamma * boot))
        self.q[s, a, g] += self.lr * (target - self.q[s, a, g])

    def update_all_goals(self, s, a, s2, died, terminated=None) -> None:
        """Hindsight relabeling with every target at once (Kaelbling's all-goals update): each transition
        ``(s, a, s2)`` updates ``Q(s, g, a)`` for all ``g``; it reaches ``g`` iff ``s2 == g`` and it did not
        kill the agent; other targets get ``-1 + gamma max_a' Q(s2, g, a')``, or ``-1/(1-gamma)`` when the
        episode ended (``terminated``, default ``died``)."""
        s, a, s2, died = (np.asarray(x) for x in (s, a, s2, died))
        terminated = died if terminated is None else np.asarray(terminated) | died
        boot = self.q[s2].max(axis=1)  # (m, n_targets)
        target = -1.0 + self.gamma * boot
        target[terminated] = -1.0 / (1.0 - self.gamma)
        ok = ~died
        target[np.flatnonzero(ok), s2[ok]] = 0.0  # reached
        cur = self.q[s, a]
        self.q[s, a] = cur + self.lr * (target - cur)


class HallucinatingGenerator:
    """Target proposals: remembered states plus hallucinated infeasible ones.

    Args:
        env: a :class:`~icml25.papers.infeasible_targets.env.SwordShieldMonster`.
        p_hallucinate: probability that a proposal is a hallucination.
    """

    def __init__(self, env, p_hallucinate: float = 0.3):
        if not 0 <= p_hallucinate <= 1:
            raise ValueError(f"p_hallucinate must be in [0, 1], got {p_hallucinate!r}")
        self.env, self.p_hallucinate = env, float(p_hallucinate)
        self.visited = np.zeros(env.n_states, dtype=bool)
        self.nonexistent = np.flatnonzero(~env.possible)

    def observe(self, states) -> None:
        """Add visited states to the generator's memory."""
        self.visited[np.asarray(states)] = True

    def generate(self, s, rng: np.random.Generator) -> np.ndarray:
        """One proposal per current state in ``s`` (array); returns target indices of the same shape."""
        s = np.asarray(s)
        shape, s = s.shape, s.reshape(-1)
        memory = np.flatnonzero(self.visited)
        if memory.size == 0:
            memory = np.asarray(self.env.start_states())
        out = memory[rng.integers(0, memory.size, size=s.size)]
        halluc = rng.random(s.size) < self.p_hallucinate
        _, _, sw, sh = self.env.decode(s)
        r, c, _, _ = self.env.decode(out)
        # temporarily infeasible: drop one irreversibly acquired item (both when both held, half of the time)
        drop_sw = (sw == 1) & ((sh == 0) | (rng.random(s.size) < 0.5))
        drop_sh = (sh == 1) & (~drop_sw | (rng.random(s.size) < 0.5))
        temporal = halluc & (sw + sh > 0) & (rng.random(s.size) < 0.5)
        out = np.where(temporal, self.env.encode(r, c, sw * ~drop_sw, sh * ~drop_sh), out)
        never = halluc & ~temporal
        out[never] = self.nonexistent[rng.integers(0, self.nonexistent.size, size=int(never.sum()))]
        return out.reshape(shape)


class RejectingPlanner:
    """Filter generator proposals with a target evaluator (the paper's add-on; agent and generator unchanged).

    Args:
        agent: the agent (its greedy policy picks the action under which feasibility is judged).
        generator: anything with ``generate(states, rng)``.
        evaluator: a :class:`~icml25.papers.infeasible_targets.evaluator.TargetEvaluator`, or None to accept all.
        threshold: reject a target whose feasibility ``1 - p(inf)`` is below this.
        n_candidates: proposals drawn per decision; when all are rejected the most feasible one is kept.
    """

    def __init__(self, agent, generator, evaluator=None, threshold: float = 0.5, n_candidates: int = 8):
        if not 0 <= threshold <= 1 or n_candidates < 1:
            raise ValueError(f"need threshold in [0, 1] and n_candidates >= 1; got {threshold}, {n_candidates}")
        self.agent, self.generator, self.evaluator = agent, generator, evaluator
        self.threshold, self.n_candidates = float(threshold), int(n_candidates)

    def choose(self, s: int, candidates: np.ndarray) -> int:
        """The first candidate whose feasibility is >= threshold (the most feasible one if none is)."""
        candidates = np.asarray(candidates)
        if self.evaluator is None:
            return int(candidates[0])
        feas = self.evaluator.feasibility(np.full(candidates.shape, s), candidates,
                                          self.agent.greedy(np.full(candidates.shape, s), candidates))
        ok = np.flatnonzero(feas >= self.threshold)
        return int(candidates[ok[0]] if ok.size else candidates[np.argmax(feas)])

    def propose(self, s: int, rng: np.random.Generator) -> int:
        """A target for state ``s``."""
        return self.choose(s, self.generator.generate(np.full(self.n_candidates, s), rng))


@dataclass
class EpisodeLog:
    """What :func:`run_episode` records: transitions and per-step delusion flags."""

    s: list = field(default_factory=list)
    a: list = field(default_factory=list)
    s2: list = field(default_factory=list)
    terminated: list = field(default_factory=list)
    died: list = field(default_factory=list)
    target: list = field(default_factory=list)
    delusional: list = field(default_factory=list)
    success: bool = False


def run_episode(env, agent, planner: RejectingPlanner, rng: np.random.Generator, dist: np.ndarray,
                subgoal_steps: int = 12, p_task: float = 0.2, epsilon: float | None = None,
                seed: int | None = None) -> EpisodeLog:
    """Play one episode of the choose-a-target-then-pursue-it loop.

    At each decision point the target is the task goal with probability ``p_task``, else the planner's
    proposal. A step is *delusional* when its target is unreachable from the current state (ground truth
    ``dist[s, g] == inf``).
    """
    log = EpisodeLog()
    s, _ = env.reset(seed=seed)
    done, g, left = False, None, 0
    while not done:
        if g is None or left == 0 or s == g:
            g = env.goal_state() if rng.random() < p_task else planner.propose(s, rng)
            left = subgoal_steps
        a = agent.act(s, g, rng, epsilon)
        s2, reward, term, trunc, info = env.step(a)
        log.s.append(s), log.a.append(a), log.s2.append(s2), log.terminated.append(term)
        log.died.append(info["died"]), log.target.append(g), log.delusional.append(not np.isfinite(dist[s, g]))
        log.success |= reward > 0
        s, left, done = s2, left - 1, term or trunc
    return log


def policy_reaches(env, agent, s, g, horizon: int) -> np.ndarray:
    """Whether the agent's greedy policy, started in ``s``, reaches ``g`` within ``horizon`` steps (vectorised
    deterministic rollouts; death or the episode's end stop a rollout)."""
    s, g = np.array(s, dtype=np.int64), np.asarray(g, dtype=np.int64)
    reached = s == g
    alive = ~reached & ~env.terminal_state[s]
    for _ in range(horizon):
        a = agent.greedy(s, g)
        died, s2 = env.died[s, a], env.next_state[s, a]
        hit = alive & ~died & (s2 == g)
        reached |= hit
        alive &= ~died & ~hit & ~env.success[s, a]
        s = np.where(alive, s2, s)
    return reached
