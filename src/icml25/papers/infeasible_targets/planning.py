"""A LEAP-like target-directed agent: a generator proposes a target, a goal-conditioned policy pursues it.

* :class:`TabularHERAgent`: goal-conditioned Q-learning on a table ``Q(s, g, a)`` with hindsight relabeling
  (``future`` targets, or every target at once); reward -1 per step, 0 on reaching ``g``, death worth
  ``-1/(1-gamma)``.
* :class:`HallucinatingGenerator`: a stand-in for a learned generator. It recalls visited states (which are
  sometimes temporarily infeasible already) and, with probability ``p_hallucinate``, hallucinates: half of
  the time a non-existent state, half of the time a visited position with an irreversibly acquired item
  dropped (temporarily infeasible).
* :class:`RejectingPlanner`: the paper's add-on. It draws candidates from the generator and keeps the first one
  the evaluator does not reject. Official rule (``rule="distance"``): reject when the estimated distance exceeds
  ``dist_cutoff`` (8) or the terminal-state classifier flags the source state; ours (``rule="feasibility"``):
  reject when ``1 - p(inf)`` is below ``threshold``. Without an evaluator it accepts every proposal.
  :class:`RejectionConfig` holds the rule's settings.
* :func:`run_episode`: choose a target, pursue it for up to ``subgoal_steps`` steps or until reached, replan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from icml25.common.checks import check_ranges


class TabularHERAgent:
    """Goal-conditioned tabular Q-learning; ``q[s, a, g]`` holds ``Q(s, g, a)``.

    With ``n_tasks > 1`` (an :class:`~icml25.papers.infeasible_targets.env.SSMTaskSet`), states are global
    indices ``task * n_states + local`` and targets are read within the state's task (``g mod n_states``):
    one table per task, stacked.

    Args:
        n_states: number of states of one task (targets live in the same space).
        n_actions: number of actions.
        gamma: discount.
        lr: step size of the tabular update.
        epsilon: exploration rate of :meth:`act`.
        seed: seed of the fixed random tie-breaking between equal Q-values.
        n_tasks: number of tasks (tables).
    """

    def __init__(self, n_states: int, n_actions: int = 4, gamma: float = 0.95, lr: float = 0.5,
                 epsilon: float = 0.1, seed: int = 0, n_tasks: int = 1):
        if not 0 < gamma < 1 or not 0 < lr <= 1 or not 0 <= epsilon <= 1:
            raise ValueError(f"need 0<gamma<1, 0<lr<=1, 0<=epsilon<=1; got {gamma}, {lr}, {epsilon}")
        for name, value in (("n_states", n_states), ("n_actions", n_actions), ("n_tasks", n_tasks)):
            if int(value) != value or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.gamma, self.lr, self.epsilon, self.n_actions = gamma, lr, epsilon, n_actions
        self.n_local, self.n_tasks = int(n_states), int(n_tasks)
        # stored as q[s, a, g] so that the all-goals update touches contiguous rows; the tie-breaking noise is
        # shared by the tasks' tables
        self.q = np.zeros((self.n_tasks * self.n_local, n_actions, self.n_local), dtype=np.float32)
        self._tie = (np.random.default_rng(seed).random((n_states, n_actions, n_states)) * 1e-4).astype(np.float32)

    def greedy(self, s, g) -> np.ndarray:
        """Greedy actions ``argmax_a Q(s, g, a)`` (fixed random tie-breaking), elementwise over arrays."""
        s, g = np.asarray(s), np.asarray(g) % self.n_local
        return np.argmax(self.q[s, :, g] + self._tie[s % self.n_local, :, g], axis=-1)

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
        g = g % self.n_local
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
        target[np.flatnonzero(ok), s2[ok] % self.n_local] = 0.0  # reached
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
        # a task set: one generator per task, sharing slices of the global memory; proposals stay in the task
        self._per_task = None
        if hasattr(env, "tasks"):
            self._per_task = [HallucinatingGenerator(t, p_hallucinate) for t in env.tasks]
            for k, sub in enumerate(self._per_task):
                sub.visited = self.visited[k * env.n_local:(k + 1) * env.n_local]

    def observe(self, states) -> None:
        """Add visited states to the generator's memory."""
        self.visited[np.asarray(states)] = True

    def generate(self, s, rng: np.random.Generator) -> np.ndarray:
        """One proposal per current state in ``s`` (array); returns target indices of the same shape."""
        s = np.asarray(s)
        shape, s = s.shape, s.reshape(-1)
        if self._per_task is not None:
            out = np.empty(s.size, dtype=np.int64)
            task = self.env.task_of(s)
            for t in np.unique(task):
                m = task == t
                out[m] = self._per_task[int(t)].generate(self.env.local_of(s[m]), rng) + int(t) * self.env.n_local
            return out.reshape(shape)
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


REJECTION_RULES = ("distance", "feasibility")
"""Rejection rules of :class:`RejectingPlanner`: the official distance cutoff, and our feasibility threshold."""


@dataclass
class RejectionConfig:
    """How the planner rejects proposals with an evaluator (the settings of :class:`RejectingPlanner`'s rule).

    An experiment nests it as ``rejection`` (``--set rejection.dist_cutoff=8``); :meth:`planner` builds the
    planner.
    """

    rule: str = "distance"
    """"distance" (official: reject when the estimated distance exceeds ``dist_cutoff`` or the source is flagged
    terminal) or "feasibility" (ours: reject when 1 - p(inf) is below ``threshold``)."""
    dist_cutoff: float = 8.0
    """The official distance cutoff of the "distance" rule, in steps."""
    threshold: float = 0.5
    """"feasibility" rule: reject a target when its feasibility 1 - p(inf) is below this."""

    def __post_init__(self) -> None:
        # named as the settings are typed (``--set rejection.threshold=...``)
        check_ranges("rejection", vars(self), finite=("dist_cutoff",), positive=("dist_cutoff",),
                     fraction=("threshold",), choices={"rule": REJECTION_RULES})

    def planner(self, agent, generator, evaluator=None) -> RejectingPlanner:
        """A :class:`RejectingPlanner` with this rule (``evaluator=None`` accepts every proposal)."""
        return RejectingPlanner(agent, generator, evaluator, self.threshold, rule=self.rule,
                                dist_cutoff=self.dist_cutoff)


class RejectingPlanner:
    """Filter generator proposals with a target evaluator (the paper's add-on; agent and generator unchanged).

    Args:
        agent: the agent (its greedy policy picks the action under which ``rule="feasibility"`` judges).
        generator: anything with ``generate(states, rng)``.
        evaluator: a :class:`~icml25.papers.infeasible_targets.evaluator.TargetEvaluator`, or None to accept all.
        threshold: ``rule="feasibility"``: reject a target whose feasibility ``1 - p(inf)`` is below this.
        n_candidates: proposals drawn per decision; when all are rejected the most promising one is kept
            (smallest estimated distance, or largest feasibility).
        rule: ``"distance"`` (official, default): reject ``g`` when the estimated distance from ``s`` (mean of
            the histogram, best first action, as in the official LEAP planner) exceeds ``dist_cutoff``, or when
            the terminal-state classifier flags ``s`` (nothing is reached from a terminal state);
            ``"feasibility"`` (ours): reject when ``1 - p(inf) < threshold`` under the agent's greedy action.
        dist_cutoff: the official cutoff, 8 steps.
    """

    def __init__(self, agent, generator, evaluator=None, threshold: float = 0.5, n_candidates: int = 8,
                 rule: str = "distance", dist_cutoff: float = 8.0):
        if not 0 <= threshold <= 1 or n_candidates < 1:
            raise ValueError(f"need threshold in [0, 1] and n_candidates >= 1; got {threshold}, {n_candidates}")
        if rule not in REJECTION_RULES:
            raise ValueError(f"rule must be one of {REJECTION_RULES}, got {rule!r}")
        if not (np.isfinite(dist_cutoff) and dist_cutoff > 0):
            raise ValueError(f"dist_cutoff must be a positive number, got {dist_cutoff!r}")
        self.agent, self.generator, self.evaluator = agent, generator, evaluator
        self.threshold, self.n_candidates = float(threshold), int(n_candidates)
        self.rule, self.dist_cutoff = rule, float(dist_cutoff)

    def scores(self, s, g) -> np.ndarray:
        """Per pair: the estimated distance (``rule="distance"``) or the feasibility (``rule="feasibility"``)."""
        s, g = np.broadcast_arrays(np.asarray(s), np.asarray(g))
        if self.rule == "distance":
            return self.evaluator.expected_distance(s, g)
        return self.evaluator.feasibility(s, g, self.agent.greedy(s, g))

    def rejects(self, s, g) -> np.ndarray:
        """Bool array: whether each target ``g`` is rejected from state ``s`` (all False without an evaluator)."""
        s, g = np.broadcast_arrays(np.asarray(s), np.asarray(g))
        if self.evaluator is None:
            return np.zeros(s.shape, dtype=bool)
        if self.rule == "distance":
            return (self.scores(s, g) > self.dist_cutoff) | self.evaluator.is_terminal(s)
        return self.scores(s, g) < self.threshold

    def choose(self, s: int, candidates: np.ndarray) -> int:
        """The first candidate that is not rejected (the most promising one if all are)."""
        candidates = np.asarray(candidates)
        if self.evaluator is None:
            return int(candidates[0])
        states = np.full(candidates.shape, s)
        ok = np.flatnonzero(~self.rejects(states, candidates))
        if ok.size:
            return int(candidates[ok[0]])
        score = self.scores(states, candidates)
        return int(candidates[np.argmin(score) if self.rule == "distance" else np.argmax(score)])

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
    task: int = 0


def run_episode(env, agent, planner: RejectingPlanner, rng: np.random.Generator, dist: np.ndarray,
                subgoal_steps: int = 12, p_task: float = 0.2, epsilon: float | None = None,
                seed: int | None = None) -> EpisodeLog:
    """Play one episode of the choose-a-target-then-pursue-it loop.

    At each decision point the target is the task goal with probability ``p_task``, else the planner's
    proposal. A step is *delusional* when its target is unreachable from the current state (ground truth
    ``dist[s, g] == inf``; ``dist=None`` asks ``env.distance(s, g)``, e.g. of an ``SSMTaskSet``).
    """
    log = EpisodeLog()
    s, info = env.reset(seed=seed)
    log.task = int(info.get("task", 0))
    done, g, left = False, None, 0
    while not done:
        if g is None or left == 0 or s == g:
            g = env.goal_state() if rng.random() < p_task else planner.propose(s, rng)
            left = subgoal_steps
        a = agent.act(s, g, rng, epsilon)
        s2, reward, term, trunc, info = env.step(a)
        log.s.append(s), log.a.append(a), log.s2.append(s2), log.terminated.append(term)
        log.died.append(info["died"]), log.target.append(g)
        log.delusional.append(not np.isfinite(dist[s, g] if dist is not None else env.distance(s, g)))
        log.success |= reward > 0
        s, left, done = s2, left - 1, term or trunc
    return log


def policy_distance(env, agent, s, g, horizon: int) -> np.ndarray:
    """Steps the agent's greedy policy, started in ``s``, needs to reach ``g`` (``inf`` when it does not within
    ``horizon`` steps; vectorised deterministic rollouts; death or the episode's end stop a rollout)."""
    s, g = np.array(s, dtype=np.int64), np.asarray(g, dtype=np.int64)
    steps = np.where(s == g, 0.0, np.inf)
    alive = ~np.isfinite(steps) & ~env.terminal_state[s]
    for t in range(1, horizon + 1):
        a = agent.greedy(s, g)
        died, s2 = env.died[s, a], env.next_state[s, a]
        hit = alive & ~died & (s2 == g)
        steps[hit] = t
        alive &= ~died & ~hit & ~env.success[s, a]
        s = np.where(alive, s2, s)
    return steps


def policy_reaches(env, agent, s, g, horizon: int) -> np.ndarray:
    """Whether the agent's greedy policy, started in ``s``, reaches ``g`` within ``horizon`` steps (see
    :func:`policy_distance`)."""
    return np.isfinite(policy_distance(env, agent, s, g, horizon))
