"""Adaptive seeds: a group-sequential confidence interval for a claim's mean.

A ``mean`` claim is decided on an interval for the mean of its per-seed values. When
the runner adds seeds to an experiment until its claims are decided, a plain 95%
Student-t interval recomputed after every new seed would be too optimistic: checking
it again and again until it clears the threshold inflates the error rate (optional
stopping). We use a group-sequential design instead:

* **A fixed schedule of looks.** :func:`looks` plans the seed counts at which a claim
  may be decided, from the starting count to ``max_seeds``, each about 1.5 times the
  previous one (``3, 5, 8, 12, 18, 27, 40``). Seeds are only ever added up to the next
  look.
* **Alpha spent over the looks.** The total error ``alpha = 0.05`` is split over the
  looks by the linear spending function ``alpha * n_k / n_K`` of Lan & DeMets (1983):
  look ``k`` gets ``alpha_k = alpha * (n_k - n_{k-1}) / n_K``, and the interval at that
  look is the two-sided Student-t interval at level ``1 - alpha_k``. By the union
  bound (Bonferroni over looks), the probability that *any* look's interval misses
  the true mean is at most ``sum_k alpha_k = alpha``, whatever the stopping rule, so
  a verdict reached at any look is wrong with probability at most 5% (2.5% for each
  direction). This is a conservative version of the group-sequential t-test of
  Jennison & Turnbull, *Group Sequential Methods with Applications to Clinical
  Trials* (2000), ch. 7 (which computes exact boundaries from the joint law of the
  looks); the Bonferroni bound needs no such computation and holds for any
  dependence between looks.

Like every t-interval it assumes per-seed values that are roughly normal (or enough
seeds); seeds are independent runs of a deterministic experiment. With a single look
(``schedule=None``) the interval is the ordinary 95% t-interval.

:func:`run_until_decided` is the rule in its simplest form (one claim, one metric
drawn seed by seed); the runner applies the same rule to whole experiments.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
from scipy import stats

ALPHA = 0.05
"""Total two-sided error of the interval over all looks of a schedule."""

GROWTH = 1.5
"""Each look has about this many times the seeds of the previous one."""


def looks(start: int, max_seeds: int) -> tuple[int, ...]:
    """The planned seed counts at which a claim may be decided: ``start`` up to ``max_seeds``.

    >>> looks(3, 40)
    (3, 5, 8, 12, 18, 27, 40)
    >>> looks(5, 5)
    (5,)
    """
    if start < 1:
        raise ValueError(f"the first look needs at least one seed, got {start}")
    if max_seeds < start:
        raise ValueError(f"max_seeds ({max_seeds}) must be at least the starting seeds ({start})")
    out = [start]
    while out[-1] < max_seeds:
        nxt = max(out[-1] + 1, math.ceil(out[-1] * GROWTH))
        # a last step much smaller than its predecessor wastes alpha: merge it into the final look
        if nxt >= max_seeds or (max_seeds - nxt) < (nxt - out[-1]) / 2:
            nxt = max_seeds
        out.append(nxt)
    return tuple(out)


def look_index(n: int, schedule: Sequence[int]) -> int:
    """The look that ``n`` seeds belong to: the first planned count at or above ``n``."""
    for k, n_k in enumerate(schedule):
        if n <= n_k:
            return k
    return len(schedule) - 1


def look_alpha(schedule: Sequence[int], k: int, alpha: float = ALPHA) -> float:
    """Alpha spent at look ``k`` by the linear spending function ``alpha * n_k / n_K``."""
    prev = schedule[k - 1] if k > 0 else 0
    return alpha * (schedule[k] - prev) / schedule[-1]


def interval(values: Sequence[float], schedule: Sequence[int] | None = None,
             alpha: float = ALPHA) -> tuple[float, float, float]:
    """``(lo, hi, level)``: the interval for the mean of ``values`` at its look of ``schedule``.

    NaN bounds with fewer than two values.
    """
    x = np.asarray(values, dtype=float)
    n = x.size
    sched = tuple(schedule) if schedule else (n,)
    a_k = look_alpha(sched, look_index(n, sched), alpha)
    if n < 2:
        return math.nan, math.nan, 1 - a_k
    half = float(stats.t.ppf(1 - a_k / 2, df=n - 1) * x.std(ddof=1) / math.sqrt(n))
    mean = float(x.mean())
    return mean - half, mean + half, 1 - a_k


def seeds_to_decide(x: np.ndarray, threshold: float, resolution: float | None, level: float) -> int | None:
    """Seeds at which the interval would likely clear ``threshold`` or fit the tie band ``± resolution``.

    A rough normal-approximation estimate that keeps the current mean, spread and
    critical value: ``(z * sd / distance)**2``.
    """
    n = x.size
    if n < 2:
        return None
    sd = float(x.std(ddof=1))
    z = float(stats.norm.ppf(1 - (1 - level) / 2))
    dist = abs(float(x.mean()) - threshold)
    candidates = []
    if dist > 0:
        candidates.append((z * sd / dist) ** 2)
    if resolution is not None and dist < resolution:
        candidates.append((z * sd / (resolution - dist)) ** 2)
    if not candidates or sd == 0:
        return None
    return max(n + 1, math.ceil(min(candidates)))


class Decidable(Protocol):
    """What :func:`run_until_decided` needs of a claim (:class:`icml25.core.paper.Claim` is one)."""

    @property
    def aggregate(self) -> str: ...

    def decide(self, values: Sequence[float], schedule: Sequence[int] | None = None) -> str: ...


def run_until_decided(claim: Decidable, draw: Callable[[int], float], max_seeds: int,
                      start: int = 3) -> tuple[str, int]:
    """Draw seeds ``0, 1, ...`` at the looks of ``looks(start, max_seeds)`` until ``claim`` is decided.

    Args:
        claim: the claim; an ``every_seed`` claim is decided at ``start`` seeds.
        draw: ``draw(seed) -> float``, one seed's value of the claim's metric.
        max_seeds: the seed budget.
        start: seeds at the first look.

    Returns:
        ``(verdict, n_used)``: INCONCLUSIVE only when the budget ran out first.
    """
    start = min(start, max_seeds)
    schedule = looks(start, max_seeds)
    values: list[float] = []
    for n_k in schedule:
        values += [float(draw(seed)) for seed in range(len(values), n_k)]
        verdict = claim.decide(values, schedule)
        if verdict != "INCONCLUSIVE" or claim.aggregate == "every_seed":
            return verdict, len(values)
    return "INCONCLUSIVE", len(values)
