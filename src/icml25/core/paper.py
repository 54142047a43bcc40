"""Paper metadata and claims.

A :class:`Paper` is one row of the registry. A :class:`Claim` is one statement from
the paper (in our words, with the paper's own number) plus the check that decides it
from the per-seed values of one metric (see :meth:`Claim.decide`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy import stats

Status = Literal["implemented", "partial", "planned", "not-a-system"]
STATUSES: tuple[str, ...] = ("implemented", "partial", "planned", "not-a-system")

Verdict = Literal["PASS", "FAIL", "TIE", "INCONCLUSIVE"]
VERDICTS: tuple[str, ...] = ("PASS", "FAIL", "TIE", "INCONCLUSIVE")
Aggregate = Literal["mean", "every_seed"]


@dataclass(frozen=True)
class Paper:
    """One ICML 2025 paper in the registry.

    Attributes:
        slug: short identifier, the file name of its spec card (``pas``, ``r1vi``...).
        title: the paper's title.
        arxiv: arXiv id, or ``None`` when the paper has none.
        openreview: OpenReview id, or ``None``.
        code: official code repository as ``owner/name``, or ``None``.
        kind: what the paper contributes (algorithm, model, benchmark, theory...).
        status: ``implemented``, ``partial``, ``planned`` or ``not-a-system``.
        note: for ``partial``, what is missing; for ``not-a-system``, why there is
            nothing to run.
    """

    slug: str
    title: str
    arxiv: str | None
    openreview: str | None
    code: str | None
    kind: str
    status: Status = "planned"
    note: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"paper {self.slug!r}: status must be one of {STATUSES}, got {self.status!r}")
        if self.status in ("partial", "not-a-system") and not self.note:
            raise ValueError(f"paper {self.slug!r}: status {self.status!r} needs a note saying why")

    @property
    def runnable(self) -> bool:
        """Whether the paper has experiments that ``icml25 reproduce`` can run."""
        return self.status in ("implemented", "partial")

    @property
    def url(self) -> str:
        if self.arxiv:
            return f"https://arxiv.org/abs/{self.arxiv}"
        if self.openreview:
            return f"https://openreview.net/forum?id={self.openreview}"
        return ""


@dataclass(frozen=True)
class Summary:
    """Mean and two-sided 95% Student-t interval of one metric over seeds."""

    mean: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: np.ndarray | list[float], level: float = 0.95) -> "Summary":
        x = np.asarray(values, dtype=float)
        x = x[np.isfinite(x)]
        n = int(x.size)
        if n == 0:
            return cls(math.nan, math.nan, math.nan, 0)
        mean = float(x.mean())
        if n == 1:  # no interval from one seed
            return cls(mean, math.nan, math.nan, 1)
        half = float(stats.t.ppf(0.5 + level / 2, df=n - 1) * x.std(ddof=1) / math.sqrt(n))
        return cls(mean, mean - half, mean + half, n)

    @property
    def half_width(self) -> float:
        """Half the width of the interval (0.0 with fewer than two seeds, for error bars)."""
        return (self.hi - self.lo) / 2 if self.n > 1 else 0.0

    def __str__(self) -> str:
        if self.n == 0:
            return "n/a"
        if self.n == 1:
            return f"{self.mean:.4g} (1 seed)"
        return f"{self.mean:.4g} ± {self.half_width:.2g}"


@dataclass(frozen=True)
class Decision:
    """A claim's verdict with what it was decided on.

    Attributes:
        verdict: PASS, FAIL, TIE or INCONCLUSIVE.
        n: seeds the verdict rests on.
        mean: mean of the per-seed values (NaN when a seed gave no number).
        lo, hi: the confidence interval used (``mean`` claims; NaN otherwise).
        level: its confidence level at this look (``mean`` claims; NaN otherwise).
        reason: one line saying why, e.g. ``"seed 2 gave NaN"`` or ``"interval within ±0.05 of 0"``.
        seeds_to_decide: for INCONCLUSIVE ``mean`` claims, a rough estimate of the seeds that would
            decide the claim if the spread and the mean stayed as they are; ``None`` otherwise.
    """

    verdict: Verdict
    n: int
    mean: float
    lo: float = math.nan
    hi: float = math.nan
    level: float = math.nan
    reason: str = ""
    seeds_to_decide: int | None = None

    @property
    def interval(self) -> str:
        """The value as text: ``mean [lo, hi]``, or the mean alone when there is no interval."""
        if self.n == 0:
            return "n/a"
        if math.isfinite(self.lo) and math.isfinite(self.hi):
            return f"{self.mean:.4g} [{self.lo:.4g}, {self.hi:.4g}]"
        return f"{self.mean:.4g}"


@dataclass(frozen=True)
class Claim:
    """A headline claim and the check that decides it from per-seed values.

    ``aggregate="every_seed"`` (exact and correctness claims: certificates, oracle
    agreement, equal step counts): PASS when every seed satisfies
    ``metric op threshold``, FAIL when one seed violates it or gives NaN.

    ``aggregate="mean"`` (comparisons): decided on a confidence interval for the mean
    of the per-seed values that stays valid when seeds are added adaptively (the
    group-sequential rule of :mod:`icml25.core.sequential`). PASS when the interval
    lies on the claimed side of ``threshold``; FAIL when it lies wholly on the other
    side; TIE when it lies within ``± resolution`` of the threshold (any effect is
    smaller than what the claim says matters); INCONCLUSIVE otherwise. A NaN seed is a
    FAIL: the method produced no number. Experiments express comparisons with
    baselines as per-seed differences or ratios (``mse_pas_minus_best_baseline <= 0``),
    so the interval accounts for the pairing of methods on the same data.

    Attributes:
        id: short identifier, unique within the paper.
        statement: the claim in our words, including the paper's number.
        paper_value: the paper's own number or statement, as text.
        experiment: name of the experiment whose metrics decide the claim.
        metric: the metric compared with the threshold.
        op: ``"<="`` or ``">="``.
        threshold: the value the metric is compared with.
        aggregate: ``"mean"`` or ``"every_seed"``.
        resolution: for ``mean`` claims, the smallest distance from the threshold that
            matters, fixed from the paper's effect size or the claim's meaning before any
            run (never from our results); ``None`` means no TIE verdict.
    """

    id: str
    statement: str
    paper_value: str
    experiment: str
    metric: str
    op: Literal["<=", ">="]
    threshold: float
    aggregate: Aggregate = "mean"
    resolution: float | None = None

    def __post_init__(self) -> None:
        if self.op not in ("<=", ">="):
            raise ValueError(f"claim {self.id!r}: op must be '<=' or '>=', got {self.op!r}")
        if self.aggregate not in ("mean", "every_seed"):
            raise ValueError(f"claim {self.id!r}: aggregate must be 'mean' or 'every_seed', got {self.aggregate!r}")
        if not math.isfinite(self.threshold):
            raise ValueError(f"claim {self.id!r}: threshold must be finite, got {self.threshold!r}")
        if self.resolution is not None:
            if self.aggregate == "every_seed":
                raise ValueError(f"claim {self.id!r}: an every_seed claim takes no resolution")
            if not (math.isfinite(self.resolution) and self.resolution > 0):
                raise ValueError(f"claim {self.id!r}: resolution must be a positive number, got {self.resolution!r}")

    def holds(self, value: float) -> bool:
        """Whether one value satisfies ``metric op threshold`` (False for NaN)."""
        return bool(value <= self.threshold) if self.op == "<=" else bool(value >= self.threshold)

    def decide(self, values: Sequence[float], schedule: Sequence[int] | None = None) -> Verdict:
        """The verdict from the per-seed values of the metric (NaN included).

        ``schedule`` is the planned looks of an adaptive run (see
        :func:`icml25.core.sequential.looks`); ``None`` means one look at ``len(values)``.
        """
        return self.assess(values, schedule).verdict

    def assess(self, values: Sequence[float], schedule: Sequence[int] | None = None) -> Decision:
        """Like :meth:`decide`, with the interval and the reason."""
        from icml25.core import sequential

        x = np.asarray(values, dtype=float).ravel()
        n = int(x.size)
        mean = float(x.mean()) if n else math.nan
        if n == 0:
            return Decision("INCONCLUSIVE", 0, math.nan, reason="no seed finished")
        bad = np.flatnonzero(~np.isfinite(x))
        if bad.size:
            return Decision("FAIL", n, mean, reason=f"seed {int(bad[0])} gave {x[bad[0]]}: the method produced no number")
        if self.aggregate == "every_seed":
            violating = [i for i, v in enumerate(x) if not self.holds(v)]
            if violating:
                return Decision("FAIL", n, mean, reason=f"{len(violating)} of {n} seeds violate "
                                f"{self.check_text} (first: seed {violating[0]}, {x[violating[0]]:.4g})")
            return Decision("PASS", n, mean, reason=f"all {n} seeds satisfy {self.check_text}")
        return sequential.decide_mean(self, x, schedule)

    @property
    def check_text(self) -> str:
        text = f"{self.metric} {self.op} {self.threshold:g}"
        if self.aggregate == "every_seed":
            return text + " (every seed)"
        if self.resolution is not None:
            return text + f" (tie ±{self.resolution:g})"
        return text


def metric_values(per_seed: Sequence[dict], metric: str) -> list[float]:
    """One claim's values over seeds: NaN where a seed's metrics lack ``metric`` or it is not a number."""
    out = []
    for metrics in per_seed:
        value = metrics.get(metric)
        out.append(float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan)
    return out
