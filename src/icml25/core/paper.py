"""Paper metadata and claims.

A :class:`Paper` is one row of the registry. A :class:`Claim` is one statement from
the paper (in our words, with the paper's own number) plus the check that decides it
from the aggregated metrics of a run: the mean over seeds and its 95% interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

Status = Literal["implemented", "partial", "planned", "not-a-system"]
STATUSES: tuple[str, ...] = ("implemented", "partial", "planned", "not-a-system")

Verdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]


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
class Claim:
    """A headline claim and the check that decides it.

    The check compares the 95% interval of ``metric`` (over seeds) with
    ``threshold``: for ``op="<="``, PASS when the whole interval is at or below the
    threshold, FAIL when the whole interval is above it, INCONCLUSIVE otherwise (the
    interval straddles the threshold, or there are fewer than two seeds). ``">="`` is
    the mirror image. Experiments express comparisons with baselines as per-seed
    differences or ratios (e.g. ``mse_pas_minus_best_baseline <= 0``), so the interval
    accounts for the pairing of methods on the same data.

    Attributes:
        id: short identifier, unique within the paper.
        statement: the claim in our words, including the paper's number.
        paper_value: the paper's own number or statement, as text.
        experiment: name of the experiment whose metrics decide the claim.
        metric: the metric compared with the threshold.
        op: ``"<="`` or ``">="``.
        threshold: the value the metric is compared with.
    """

    id: str
    statement: str
    paper_value: str
    experiment: str
    metric: str
    op: Literal["<=", ">="]
    threshold: float

    def __post_init__(self) -> None:
        if self.op not in ("<=", ">="):
            raise ValueError(f"claim {self.id!r}: op must be '<=' or '>=', got {self.op!r}")

    def evaluate(self, summary: Summary) -> Verdict:
        """Decide the claim from the summary of its metric."""
        if summary.n < 2 or not (math.isfinite(summary.lo) and math.isfinite(summary.hi)):
            return "INCONCLUSIVE"
        lo, hi, t = summary.lo, summary.hi, self.threshold
        if self.op == "<=":
            return "PASS" if hi <= t else "FAIL" if lo > t else "INCONCLUSIVE"
        return "PASS" if lo >= t else "FAIL" if hi < t else "INCONCLUSIVE"

    @property
    def check_text(self) -> str:
        return f"{self.metric} {self.op} {self.threshold:g}"
