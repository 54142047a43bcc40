"""Sword-Shield-Monster (SSM-lite): a small, fully observable gridworld with irreversible events.

A NumPy re-creation of the paper's MiniGrid SSM environment (Zhao et al., ICML 2025, Sec. 5), kept
small enough for exact ground truth. The agent moves on a ``size x size`` grid with lava. Stepping on the
sword (shield) cell picks it up for good; the monster cell kills an agent that lacks either item and ends
the episode in success for one that holds both. Lava kills.

A state is ``(row, col, has_sword, has_shield)``, encoded as one integer by :meth:`SwordShieldMonster.encode`.
Infeasible targets come in the paper's two kinds:

* never-feasible / non-existent states: the agent on lava, on the monster without both items, or on the
  sword (shield) cell without the sword (shield);
* temporarily infeasible states: states that exist but cannot be reached from the current state because an
  irreversible pickup already happened (e.g. any swordless state once the sword is held).
"""

from __future__ import annotations

from collections import deque

import gymnasium as gym
import numpy as np

MOVES = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]])
"""Action ``a`` moves by ``MOVES[a]``: up, right, down, left. Bumping the border leaves the agent in place."""


class SwordShieldMonster(gym.Env):
    """Fully observable SSM gridworld with BFS ground-truth reachability.

    Args:
        size: side of the square grid (>= 4).
        difficulty: the paper's delta in [0, 1); each ordinary cell is lava with probability ``difficulty / 2``
            (layouts whose free cells are not connected are redrawn).
        seed: seed of the layout (the task); episodes draw start cells from ``reset(seed=...)``.
        max_steps: episode length before truncation.

    Observation: the state index (``gymnasium.spaces.Discrete(n_states)``). Reward 1 on slaying the monster.
    """

    metadata = {"render_modes": []}

    def __init__(self, size: int = 8, difficulty: float = 0.4, seed: int = 0, max_steps: int = 100):
        if int(size) != size or size < 4:
            raise ValueError(f"size must be an integer >= 4, got {size!r}")
        if not 0.0 <= difficulty < 1.0:
            raise ValueError(f"difficulty must be in [0, 1), got {difficulty!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
        self.size, self.difficulty, self.max_steps = int(size), float(difficulty), int(max_steps)
        self.n_states = self.size * self.size * 4
        self.observation_space = gym.spaces.Discrete(self.n_states)
        self.action_space = gym.spaces.Discrete(4)
        self._layout(np.random.default_rng([seed, 12345]))
        self._build_tables()
        self._state, self._t = 0, 0

    @classmethod
    def from_layout(cls, lava: np.ndarray, sword: tuple[int, int], shield: tuple[int, int],
                    monster: tuple[int, int], max_steps: int = 100) -> "SwordShieldMonster":
        """An environment with a hand-made layout (``lava``: square bool array); connectivity is not required."""
        lava = np.asarray(lava, dtype=bool)
        if lava.ndim != 2 or lava.shape[0] != lava.shape[1] or lava.shape[0] < 4:
            raise ValueError(f"lava must be a square bool array of side >= 4, got shape {lava.shape}")
        cells = [tuple(int(v) for v in x) for x in (sword, shield, monster)]
        if len(set(cells)) < 3 or any(not (0 <= r < lava.shape[0] and 0 <= c < lava.shape[0]) or lava[r, c]
                                      for r, c in cells):
            raise ValueError(f"sword, shield and monster must be distinct lava-free cells on the grid, got {cells}")
        env = cls.__new__(cls)
        env.size, env.difficulty, env.max_steps = lava.shape[0], float(lava.mean()), int(max_steps)
        env.n_states = env.size * env.size * 4
        env.observation_space = gym.spaces.Discrete(env.n_states)
        env.action_space = gym.spaces.Discrete(4)
        env.lava, (env.sword, env.shield, env.monster) = lava, cells
        env._build_tables()
        env._state, env._t = 0, 0
        return env

    # ----------------------------------------------------------------- layout and tables
    def _layout(self, rng: np.random.Generator) -> None:
        n = self.size
        for _ in range(1000):
            cells = rng.permutation(n * n)
            self.sword, self.shield, self.monster = (divmod(int(c), n) for c in cells[:3])
            lava = rng.random((n, n)) < self.difficulty / 2
            for r, c in (self.sword, self.shield, self.monster):
                lava[r, c] = False
            free = ~lava
            free[self.monster] = False
            if self._connected(free) and any(free[r, c] for r, c in self._neighbours(self.monster)):
                self.lava = lava
                return
        raise RuntimeError("could not draw a connected layout; lower the difficulty")  # pragma: no cover

    def _neighbours(self, cell: tuple[int, int]) -> list[tuple[int, int]]:
        r, c = cell
        return [(r + dr, c + dc) for dr, dc in MOVES if 0 <= r + dr < self.size and 0 <= c + dc < self.size]

    def _connected(self, free: np.ndarray) -> bool:
        start = tuple(np.argwhere(free)[0])
        seen, todo = {start}, [start]
        while todo:
            for nb in self._neighbours(todo.pop()):
                if free[nb] and nb not in seen:
                    seen.add(nb)
                    todo.append(nb)
        return len(seen) == int(free.sum())

    def encode(self, row, col, sword, shield):
        """State index of ``(row, col, has_sword, has_shield)`` (works elementwise on arrays).

        Raises ``ValueError`` when a row or column is off the grid or a flag is not 0/1.
        """
        for name, value, hi in (("row", row, self.size), ("col", col, self.size), ("sword", sword, 2),
                                ("shield", shield, 2)):
            v = np.asarray(value)
            integral = v.dtype == bool or np.issubdtype(v.dtype, np.integer)
            if not integral or np.any((v < 0) | (v >= hi)):
                raise ValueError(f"{name} must be integers in [0, {hi}), got {value!r}")
        return ((np.asarray(row) * self.size + np.asarray(col)) * 2 + np.asarray(sword)) * 2 + np.asarray(shield)

    def decode(self, s):
        """Inverse of :meth:`encode`: ``(row, col, has_sword, has_shield)`` arrays."""
        s = self._check_states(s, "s")
        return s // (4 * self.size), (s // 4) % self.size, (s // 2) % 2, s % 2

    def _build_tables(self) -> None:
        """next_state[s, a], died[s, a] (lava / unarmed monster) and success[s, a] for every state."""
        r, c, sw, sh = self.decode(np.arange(self.n_states))
        self.next_state = np.zeros((self.n_states, 4), dtype=np.int64)
        self.died = np.zeros((self.n_states, 4), dtype=bool)
        self.success = np.zeros((self.n_states, 4), dtype=bool)
        for a, (dr, dc) in enumerate(MOVES):
            r2, c2 = np.clip(r + dr, 0, self.size - 1), np.clip(c + dc, 0, self.size - 1)
            sw2 = sw | ((r2 == self.sword[0]) & (c2 == self.sword[1]))
            sh2 = sh | ((r2 == self.shield[0]) & (c2 == self.shield[1]))
            at_monster = (r2 == self.monster[0]) & (c2 == self.monster[1])
            self.next_state[:, a] = self.encode(r2, c2, sw2, sh2)
            self.died[:, a] = self.lava[r2, c2] | (at_monster & ~(sw2.astype(bool) & sh2.astype(bool)))
            self.success[:, a] = at_monster & sw2.astype(bool) & sh2.astype(bool)
        self.possible = self._possible_mask()
        # transitions out of impossible or terminal states do not exist
        self.terminal_state = ~self.possible | (
            (r == self.monster[0]) & (c == self.monster[1]))

    def _possible_mask(self) -> np.ndarray:
        r, c, sw, sh = self.decode(np.arange(self.n_states))
        ok = ~self.lava[r, c]
        at_monster = (r == self.monster[0]) & (c == self.monster[1])
        ok &= ~at_monster | ((sw == 1) & (sh == 1))
        ok &= ~((r == self.sword[0]) & (c == self.sword[1]) & (sw == 0))
        ok &= ~((r == self.shield[0]) & (c == self.shield[1]) & (sh == 0))
        return ok

    # ----------------------------------------------------------------- ground truth
    def is_state_possible(self, g) -> np.ndarray | bool:
        """Whether state(s) ``g`` can occur in this task at all (False for non-existent states)."""
        g = self._check_states(g, "g")
        out = self.possible[g]
        return bool(out) if out.ndim == 0 else out

    def reachable(self, s: int, g: int) -> bool:
        """Breadth-first search: can the agent, starting in state ``s``, ever be in state ``g``?

        ``s == g`` counts as reachable. Death transitions (lava, unarmed monster) lead nowhere and a terminal
        state (the slain monster) has no successors.
        """
        s, g = int(self._check_states(s, "s")), int(self._check_states(g, "g"))
        if not self.possible[s]:
            raise ValueError(f"s={s} is not a possible state of this task")
        seen, todo = {s}, deque([s])
        while todo:
            u = todo.popleft()
            if u == g:
                return True
            if self.terminal_state[u]:
                continue
            for a in range(4):
                v = int(self.next_state[u, a])
                if not self.died[u, a] and v not in seen:
                    seen.add(v)
                    todo.append(v)
        return False

    def distance_matrix(self) -> np.ndarray:
        """Shortest-path step counts ``D[s, g]`` between all states (``inf`` when unreachable), by
        layer-synchronous BFS from every state at once; rows of impossible states are all ``inf``."""
        n = self.n_states
        adj = np.zeros((n, n), dtype=np.float32)
        live = ~self.terminal_state
        for a in range(4):
            ok = live & ~self.died[:, a]
            adj[np.arange(n)[ok], self.next_state[ok, a]] = 1.0
        dist = np.full((n, n), np.inf)
        frontier = np.eye(n, dtype=bool) & self.possible[:, None]
        seen = frontier.copy()
        d = 0
        while frontier.any():
            dist[frontier] = d
            active = np.flatnonzero(frontier.any(axis=1))  # sources whose search is still growing
            nxt = np.zeros_like(frontier)
            nxt[active] = (frontier[active].astype(np.float32) @ adj > 0) & ~seen[active]
            frontier = nxt
            seen |= frontier
            d += 1
        return dist

    def _check_states(self, s, name: str) -> np.ndarray:
        arr = np.asarray(s)
        if not np.issubdtype(arr.dtype, np.integer) or np.any(arr < 0) or np.any(arr >= self.n_states):
            raise ValueError(f"{name} must be state indices in [0, {self.n_states}), got {s!r}")
        return arr

    def goal_state(self) -> int:
        """The task's target: on the monster with sword and shield."""
        return int(self.encode(*self.monster, 1, 1))

    def start_states(self) -> np.ndarray:
        """Possible start states: any free ordinary cell, no items."""
        r, c, sw, sh = self.decode(np.arange(self.n_states))
        special = np.zeros_like(r, dtype=bool)
        for cell in (self.sword, self.shield, self.monster):
            special |= (r == cell[0]) & (c == cell[1])
        return np.flatnonzero(self.possible & (sw == 0) & (sh == 0) & ~special)

    def state_features(self, kind: str = "cell") -> np.ndarray:
        """Features of every state, ``(n_states, d)``: ``"cell"``: one-hot of the cell plus has_sword,
        has_shield (like a grid observation); ``"factored"``: one-hot row, one-hot column, the two flags."""
        r, c, sw, sh = self.decode(np.arange(self.n_states))
        flags = np.stack([sw, sh], axis=1).astype(np.float32)
        if kind == "cell":
            return np.concatenate([np.eye(self.size * self.size, dtype=np.float32)[r * self.size + c], flags], axis=1)
        if kind == "factored":
            eye = np.eye(self.size, dtype=np.float32)
            return np.concatenate([eye[r], eye[c], flags], axis=1)
        raise ValueError(f"kind must be 'cell' or 'factored', got {kind!r}")

    # ----------------------------------------------------------------- gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode in a random free cell without items; returns ``(state, info)``."""
        super().reset(seed=seed)
        starts = self.start_states()
        self._state, self._t = int(starts[self.np_random.integers(len(starts))]), 0
        return self._state, {}

    def step(self, action: int):
        """Move; returns ``(state, reward, terminated, truncated, info)``; ``info['died']`` marks deaths
        (the returned state is then the last state the agent occupied)."""
        if not 0 <= int(action) < 4:
            raise ValueError(f"action must be in 0..3, got {action!r}")
        s, a = self._state, int(action)
        died, won = bool(self.died[s, a]), bool(self.success[s, a])
        self._t += 1
        if not died:
            self._state = int(self.next_state[s, a])
        return self._state, float(won), died or won, self._t >= self.max_steps and not (died or won), {"died": died}


class SSMTaskSet:
    """A set of SSM training tasks (layouts) of one size; every episode samples one task uniformly.

    Gymnasium-style (``reset``/``step``, ``observation_space``, ``action_space``) but not registered as a
    ``gym.Env`` (the registry lives outside this row's files).

    The paper's protocol (official ``--size_world 12 --difficulty 0.4 --num_envs_train 50``): per seed, 50
    training tasks of size 12x12 with delta = 0.4, kept for the run, one drawn per episode. A global state
    index is ``task * n_local + local`` with ``local`` the task's own :meth:`SwordShieldMonster.encode` index,
    so states of different tasks never coincide; targets in another task are unreachable.

    Args:
        size, difficulty, max_steps: as for :class:`SwordShieldMonster`.
        n_tasks: number of training tasks (>= 1).
        seed: seed of the task layouts.

    The transition tables ``next_state``, ``died``, ``success``, ``terminal_state`` and ``possible`` are
    global (one row per global state), like those of a single :class:`SwordShieldMonster`.
    """

    def __init__(self, size: int = 12, difficulty: float = 0.4, n_tasks: int = 50, seed: int = 0,
                 max_steps: int = 100):
        if isinstance(n_tasks, bool) or int(n_tasks) != n_tasks or n_tasks < 1:
            raise ValueError(f"n_tasks must be a positive integer, got {n_tasks!r}")
        task_seeds = np.random.default_rng([seed, 777]).integers(2**31, size=int(n_tasks))
        self.tasks = [SwordShieldMonster(size, difficulty, seed=int(x), max_steps=max_steps) for x in task_seeds]
        first = self.tasks[0]
        self.size, self.difficulty, self.max_steps = first.size, first.difficulty, first.max_steps
        self.n_tasks, self.n_local = int(n_tasks), first.n_states
        self.n_states = self.n_tasks * self.n_local
        self.observation_space = gym.spaces.Discrete(self.n_states)
        self.action_space = gym.spaces.Discrete(4)
        offsets = np.arange(self.n_tasks)[:, None] * self.n_local
        self.next_state = np.concatenate([t.next_state + o for t, o in zip(self.tasks, offsets)])
        self.died = np.concatenate([t.died for t in self.tasks])
        self.success = np.concatenate([t.success for t in self.tasks])
        self.terminal_state = np.concatenate([t.terminal_state for t in self.tasks])
        self.possible = np.concatenate([t.possible for t in self.tasks])
        self._dist: dict[int, np.ndarray] = {}
        self.task, self._state = 0, 0
        self.np_random = np.random.default_rng([seed, 778])

    # ----------------------------------------------------------------- indices
    def task_of(self, s) -> np.ndarray:
        """Task of global state(s) ``s``."""
        return self._check(s) // self.n_local

    def local_of(self, s) -> np.ndarray:
        """Index of global state(s) ``s`` within its task."""
        return self._check(s) % self.n_local

    def to_global(self, task, local) -> np.ndarray:
        """Global index of ``local`` state(s) of ``task``."""
        return np.asarray(task) * self.n_local + np.asarray(local)

    def _check(self, s) -> np.ndarray:
        arr = np.asarray(s)
        if not np.issubdtype(arr.dtype, np.integer) or np.any(arr < 0) or np.any(arr >= self.n_states):
            raise ValueError(f"states must be indices in [0, {self.n_states}), got {s!r}")
        return arr

    # ----------------------------------------------------------------- ground truth
    def task_distances(self, task: int) -> np.ndarray:
        """Shortest-path step counts within ``task`` (``(n_local, n_local)``, ``inf`` when unreachable), cached.

        Computed by breadth-first search over the task's live transitions (``scipy.sparse.csgraph``; equal to
        :meth:`SwordShieldMonster.distance_matrix`).
        """
        task = int(task)
        if task not in self._dist:
            from scipy.sparse import csr_matrix
            from scipy.sparse.csgraph import shortest_path

            env, n = self.tasks[task], self.n_local
            rows, cols = [], []
            live = ~env.terminal_state
            for a in range(4):
                ok = live & ~env.died[:, a] & (env.next_state[:, a] != np.arange(n))
                rows.append(np.flatnonzero(ok))
                cols.append(env.next_state[ok, a])
            r, c = np.concatenate(rows), np.concatenate(cols)
            graph = csr_matrix((np.ones(r.size), (r, c)), shape=(n, n))
            d = shortest_path(graph, method="D", directed=True, unweighted=True).astype(np.float32)
            d[~env.possible] = np.inf
            np.fill_diagonal(d, np.where(env.possible, 0.0, np.inf))
            self._dist[task] = d
        return self._dist[task]

    def distance(self, s, g) -> np.ndarray:
        """Ground-truth distance from global state(s) ``s`` to ``g`` (``inf`` across tasks or when unreachable)."""
        s, g = np.broadcast_arrays(self._check(s), self._check(g))
        out = np.full(s.shape, np.inf)
        ts, tg = s // self.n_local, g // self.n_local
        for t in np.unique(ts):
            m = (ts == t) & (tg == t)
            if m.any():
                out[m] = self.task_distances(int(t))[s[m] % self.n_local, g[m] % self.n_local]
        return out

    def distance_row(self, s: int) -> np.ndarray:
        """Distances from one global state to every global state."""
        t, ls = divmod(int(self._check(s)), self.n_local)
        row = np.full(self.n_states, np.inf)
        row[t * self.n_local:(t + 1) * self.n_local] = self.task_distances(t)[ls]
        return row

    def state_features(self, kind: str = "cell") -> np.ndarray:
        """``(n_states, d)``: the task's own state features (see :meth:`SwordShieldMonster.state_features`)
        followed by its layout (lava map, sword, shield and monster cells, one ``size x size`` plane each), the
        fully observable grid the paper's agents see."""
        out = []
        for env in self.tasks:
            planes = np.zeros((4, env.size, env.size), dtype=np.float32)
            planes[0] = env.lava
            for k, cell in enumerate((env.sword, env.shield, env.monster), start=1):
                planes[k][cell] = 1.0
            layout = np.broadcast_to(planes.reshape(1, -1), (env.n_states, planes.size))
            out.append(np.concatenate([env.state_features(kind), layout], axis=1))
        return np.concatenate(out)

    def goal_state(self) -> int:
        """The current task's target: on the monster with sword and shield (global index)."""
        return int(self.to_global(self.task, self.tasks[self.task].goal_state()))

    # ----------------------------------------------------------------- gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Draw a task uniformly, then start an episode in it; returns ``(global state, {"task": k})``.

        ``seed`` reseeds the draw (as gymnasium's ``reset(seed=...)``); without it the set's own stream goes on.
        """
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.task = int(self.np_random.integers(self.n_tasks))
        local, _ = self.tasks[self.task].reset(seed=int(self.np_random.integers(2**31)))
        self._state = int(self.to_global(self.task, local))
        return self._state, {"task": self.task}

    def step(self, action: int):
        """Step the current task; the state is returned as a global index."""
        local, reward, term, trunc, info = self.tasks[self.task].step(action)
        self._state = int(self.to_global(self.task, local))
        return self._state, reward, term, trunc, {**info, "task": self.task}
