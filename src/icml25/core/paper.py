"""Paper metadata and claims.

A :class:`Paper` is one row of the registry. A :class:`Claim` is one statement from
the paper (in our words, with the paper's own number) plus the check that decides it
from the per-seed values of one metric (see :meth:`Claim.decide`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Literal

import numpy as np
from scipy import stats

from icml25.core import sequential

Verdict = Literal["PASS", "FAIL", "TIE", "INCONCLUSIVE", "NOT_TESTED"]
VERDICTS: tuple[str, ...] = ("PASS", "FAIL", "TIE", "INCONCLUSIVE", "NOT_TESTED")
"""The five verdicts. NOT_TESTED always comes with a one-line reason (see :func:`decide_claims`)."""
Aggregate = Literal["mean", "every_seed"]

Kind = Literal["paper", "ours", "check"]
KINDS: tuple[str, ...] = ("paper", "ours", "check")
"""What a claim is: ``paper`` (the paper states it), ``ours`` (a claim beyond the paper) or ``check``
(a precondition, sanity or harness check, or a property that holds by construction)."""

FidelityLevel = Literal["mechanism", "reduced", "paper"]
FIDELITIES: tuple[str, ...] = ("mechanism", "reduced", "paper")
"""Fidelity of a preset to the paper's experiment, lowest first: ``mechanism`` (a stand-in for the
paper's setting), ``reduced`` (the paper's protocol at a stated fraction of its budget or size) and
``paper`` (the paper's protocol at its scale, or a documented equivalent)."""


def fidelity_rank(level: str) -> int:
    """Position of ``level`` in :data:`FIDELITIES` (higher is closer to the paper)."""
    try:
        return FIDELITIES.index(level)
    except ValueError:
        raise ValueError(f"fidelity must be one of {', '.join(FIDELITIES)}, got {level!r}") from None


MethodStatus = Literal["verified", "partly-verified", "inferred", "not-a-system"]
METHOD_STATUSES: tuple[str, ...] = ("verified", "partly-verified", "inferred", "not-a-system")
"""How far a row's method was checked against a first-hand source (the paper's text or the official
code): ``verified``, ``partly-verified`` or ``inferred``; ``not-a-system`` for a paper with nothing to run."""


@dataclass(frozen=True)
class Paper:
    """One ICML 2025 paper in the registry.

    A row's status has two parts: ``method`` says how far our implementation was checked
    against a first-hand source, ``reproduction`` the highest fidelity at which its paper
    claims are tested (see :data:`FIDELITIES`); each has a one-line note.

    Attributes:
        slug: short identifier, the file name of its spec card (``pas``, ``r1vi``...).
        title: the paper's title.
        arxiv: arXiv id, or ``None`` when the paper has none.
        openreview: OpenReview id, or ``None``.
        code: official code repository as ``owner/name``, or ``None``.
        kind: what the paper contributes (algorithm, model, benchmark, theory...).
        method: ``verified``, ``partly-verified``, ``inferred`` or ``not-a-system``.
        method_note: what was compared with which source, and how; for ``not-a-system``, why
            there is nothing to run.
        reproduction: ``paper``, ``reduced`` or ``mechanism``; ``None`` for ``not-a-system``.
        reproduction_note: what the reproduction runs, and what is missing.
    """

    slug: str
    title: str
    arxiv: str | None
    openreview: str | None
    code: str | None
    kind: str
    method: MethodStatus = "inferred"
    method_note: str = ""
    reproduction: FidelityLevel | None = None
    reproduction_note: str = ""

    def __post_init__(self) -> None:
        where = f"paper {self.slug!r}"
        if self.method not in METHOD_STATUSES:
            raise ValueError(f"{where}: method must be one of {METHOD_STATUSES}, got {self.method!r}")
        if not self.method_note:
            raise ValueError(f"{where}: method {self.method!r} needs a method_note saying what was checked (or why "
                             "there is nothing to run)")
        if self.method == "not-a-system":
            if self.reproduction is not None:
                raise ValueError(f"{where}: a not-a-system paper has no reproduction")
            return
        if self.reproduction not in FIDELITIES:
            raise ValueError(f"{where}: reproduction must be one of {FIDELITIES}, got {self.reproduction!r}")
        if not self.reproduction_note:
            raise ValueError(f"{where}: reproduction {self.reproduction!r} needs a reproduction_note")

    @property
    def runnable(self) -> bool:
        """Whether the paper has experiments that ``icml25 reproduce`` can run."""
        return self.method != "not-a-system"

    @property
    def status(self) -> str:
        """Both parts of the status as one short text: ``"verified, reduced"`` or ``"not-a-system"``."""
        return self.method if not self.runnable else f"{self.method}, {self.reproduction}"

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
        verdict: PASS, FAIL, TIE, INCONCLUSIVE or NOT_TESTED.
        n: seeds the verdict rests on.
        mean: mean of the per-seed values (NaN when a seed gave no number).
        lo, hi: the confidence interval used (``mean`` claims; NaN otherwise).
        level: its confidence level at this look (``mean`` claims; NaN otherwise).
        reason: one line saying why, e.g. ``"seed 2 gave NaN"`` or ``"interval within ±0.05 of 0"``.
        seeds_to_decide: for INCONCLUSIVE ``mean`` claims, a rough estimate of the seeds that would
            decide the claim if the spread and the mean stayed as they are; ``None`` otherwise.
        reading: for NOT_TESTED, the verdict the measured values would give if the claim were
            tested (a reduced-scale reading, or a reading without its precondition); ``""`` when the
            values give none (a baseline's NaN) and for every other verdict.
    """

    verdict: Verdict
    n: int
    mean: float
    lo: float = math.nan
    hi: float = math.nan
    level: float = math.nan
    reason: str = ""
    seeds_to_decide: int | None = None
    reading: str = ""

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
    """A claim and the check that decides it from per-seed values.

    Fields are keywords; only ``id`` may be given positionally.

    ``aggregate="every_seed"`` (exact and correctness claims: certificates, oracle
    agreement, equal step counts): PASS when every seed satisfies
    ``metric op threshold``, FAIL when one seed violates it or gives NaN.

    ``aggregate="mean"`` (comparisons): decided on a confidence interval for the mean
    of the per-seed values that stays valid when seeds are added adaptively (the
    group-sequential rule of :mod:`icml25.core.sequential`). TIE when the interval lies
    within ``± resolution`` of the threshold (any effect is smaller than what the claim
    says matters; checked first); PASS when it lies on the claimed side of
    ``threshold``; FAIL when it lies wholly on the other side; INCONCLUSIVE otherwise.
    A NaN seed is a FAIL: the method produced no number (unless ``baseline_metric``
    shows that a baseline produced none: then NOT_TESTED). Experiments express
    comparisons with baselines as per-seed differences or ratios
    (``mse_pas_minus_best_baseline <= 0``), so the interval accounts for the pairing of
    methods on the same data.

    What the values say is one step; whether the claim was tested is another
    (:func:`decide_claims`): a claim is NOT_TESTED, with a reason, when its experiment ran
    below ``fair_at``, when a check it ``requires`` did not PASS, or when a baseline
    produced no number.

    Attributes:
        id: short identifier, unique within the paper.
        statement: the claim in our words, including the paper's number.
        paper_value: the paper's own number or statement, as text.
        experiment: name of the experiment whose metrics decide the claim.
        metric: the metric compared with the threshold.
        op: ``"<="`` or ``">="``.
        threshold: the value the metric is compared with.
        kind: ``paper`` (the paper states it), ``ours`` (a claim beyond the paper) or
            ``check`` (a precondition, sanity or harness check, or a property that holds by
            construction).
        source: for ``paper`` claims (required), where the paper says it: section, table,
            figure or equation, or ``"second-hand: <what>"`` when only a third-party text has it.
        aggregate: ``"mean"`` or ``"every_seed"``.
        resolution: for ``mean`` claims, the smallest distance from the threshold that
            matters, fixed from the paper's effect size or the claim's meaning before any
            run (never from our results); ``None`` means no TIE verdict.
        resolution_reason: why the resolution is what it is (required with a resolution).
        requires: ids of ``check`` claims of the same paper that must PASS for this claim
            to be tested.
        fair_at: for ``paper`` claims (required), the lowest fidelity (:data:`FIDELITIES`) at
            which the claim is a fair test; ``None`` for checks (always tested) and for
            ``ours`` claims that hold at any fidelity.
        fair_at_reason: why, from the paper's budget or protocol (never from our results);
            required with ``fair_at``.
        baseline_metric: a per-seed metric of the baseline alone (e.g. its l2 norm). A seed
            whose ``metric`` is NaN while this is NaN (or missing) has no number because the
            baseline produced none: the claim is NOT_TESTED rather than FAIL.
    """

    id: str
    _: KW_ONLY
    statement: str
    paper_value: str
    experiment: str
    metric: str
    op: Literal["<=", ">="]
    threshold: float
    kind: Kind
    source: str = ""
    aggregate: Aggregate = "mean"
    resolution: float | None = None
    resolution_reason: str = ""
    requires: tuple[str, ...] = ()
    fair_at: FidelityLevel | None = None
    fair_at_reason: str = ""
    baseline_metric: str | None = None

    def __post_init__(self) -> None:
        where = f"claim {self.id!r}"
        if self.op not in ("<=", ">="):
            raise ValueError(f"{where}: op must be '<=' or '>=', got {self.op!r}")
        if self.aggregate not in ("mean", "every_seed"):
            raise ValueError(f"{where}: aggregate must be 'mean' or 'every_seed', got {self.aggregate!r}")
        if not math.isfinite(self.threshold):
            raise ValueError(f"{where}: threshold must be finite, got {self.threshold!r}")
        if self.resolution is not None:
            if self.aggregate == "every_seed":
                raise ValueError(f"{where}: an every_seed claim takes no resolution")
            if not (math.isfinite(self.resolution) and self.resolution > 0):
                raise ValueError(f"{where}: resolution must be a positive number, got {self.resolution!r}")
            if not self.resolution_reason.strip():
                raise ValueError(f"{where}: a resolution needs its resolution_reason")
        elif self.resolution_reason:
            raise ValueError(f"{where}: resolution_reason given without a resolution")
        if self.kind not in KINDS:
            raise ValueError(f"{where}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "paper":
            if not self.source.strip():
                raise ValueError(f"{where}: a paper claim needs its source (section, table, figure, equation, "
                                 "or 'second-hand: <what>')")
            if self.fair_at is None:
                raise ValueError(f"{where}: a paper claim needs fair_at, the lowest fidelity at which it is a fair test")
        if self.fair_at is not None:
            fidelity_rank(self.fair_at)
            if self.kind == "check":
                raise ValueError(f"{where}: a check is always tested: it takes no fair_at")
            if not self.fair_at_reason.strip():
                raise ValueError(f"{where}: fair_at needs its fair_at_reason (from the paper's budget or protocol)")
        elif self.fair_at_reason:
            raise ValueError(f"{where}: fair_at_reason given without fair_at")
        if isinstance(self.requires, str) or not all(isinstance(r, str) for r in self.requires):
            raise ValueError(f"{where}: requires must be a tuple of claim ids, got {self.requires!r}")
        object.__setattr__(self, "requires", tuple(self.requires))
        if self.id in self.requires:
            raise ValueError(f"{where}: a claim cannot require itself")

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
        return self._assess_mean(x, schedule)

    def _assess_mean(self, x: np.ndarray, schedule: Sequence[int] | None) -> Decision:
        """The ``mean`` rule of :meth:`decide` on finite per-seed values ``x``."""
        n = int(x.size)
        mean = float(x.mean())
        lo, hi, level = sequential.interval(x, schedule)
        if n < 2:
            return Decision("INCONCLUSIVE", n, mean, level=level, reason="one seed gives no interval")
        t, r = self.threshold, self.resolution
        pct = f"{100 * level:.3g}%"
        # TIE first: an interval within ± resolution of the threshold says any effect is smaller than what
        # matters, even when it also lies on one side of the threshold
        if r is not None and t - r <= lo and hi <= t + r:
            return Decision("TIE", n, mean, lo, hi, level, f"{pct} interval within ±{r:g} of {t:g}")
        if (self.op == ">=" and lo >= t) or (self.op == "<=" and hi <= t):
            return Decision("PASS", n, mean, lo, hi, level, f"{pct} interval on the claimed side of {t:g}")
        if (self.op == ">=" and hi < t) or (self.op == "<=" and lo > t):
            return Decision("FAIL", n, mean, lo, hi, level, f"{pct} interval wholly on the wrong side of {t:g}")
        return Decision("INCONCLUSIVE", n, mean, lo, hi, level, f"{pct} interval straddles {t:g}",
                        seeds_to_decide=sequential.seeds_to_decide(x, t, r, level))

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


def _level_and_note(fidelity: object) -> tuple[str, str]:
    """``(level, note)`` of a preset's fidelity given as an object with ``level``/``note`` or a bare level."""
    if isinstance(fidelity, str):
        return fidelity, ""
    return str(fidelity.level), str(getattr(fidelity, "note", ""))


def _baseline_nan_reason(claim: Claim, values: Sequence[float], per_seed: Sequence[Mapping]) -> str:
    """The NOT_TESTED reason when a seed's NaN comes from the baseline, else ``""``."""
    if claim.baseline_metric is None:
        return ""
    base = metric_values(per_seed, claim.baseline_metric)
    for seed, (v, b) in enumerate(zip(values, base)):
        if not math.isfinite(v) and not math.isfinite(b):
            return (f"baseline: on seed {seed} the baseline produced no number "
                    f"({claim.baseline_metric} = {b}), so {claim.metric} has none")
    return ""


def decide_claims(
    claims: Sequence[Claim],
    per_seed: Mapping[str, Sequence[Mapping]],
    schedules: Mapping[str, Sequence[int] | None] | None = None,
    fidelity: Mapping[str, object] | None = None,
) -> dict[str, Decision]:
    """Decide one paper's claims: what the values say, then whether each claim was tested.

    Args:
        claims: the paper's claims.
        per_seed: per experiment name, the metrics of each finished seed. A claim whose
            experiment is absent is left out of the result.
        schedules: per experiment, the planned looks of the adaptive rule (``None``: one look).
        fidelity: per experiment, the fidelity of the preset it ran at (an object with
            ``level`` and ``note``, or a level); an experiment left out is not gated by scale.

    Returns:
        ``{claim id: Decision}``. A claim is NOT_TESTED, with a one-line reason and the
        verdict its values would give as ``reading``, when its experiment ran below its
        ``fair_at`` ("scale"), or when a check it ``requires`` did not PASS; and NOT_TESTED
        without a reading when a seed's number is missing because the baseline produced
        none (``baseline_metric``). Otherwise the verdict is :meth:`Claim.assess`'s.
    """
    schedules, fidelity = schedules or {}, fidelity or {}
    by_id = {c.id: c for c in claims}
    out: dict[str, Decision] = {}
    visiting: set[str] = set()

    def decide(claim: Claim) -> Decision | None:
        if claim.id in out:
            return out[claim.id]
        if claim.experiment not in per_seed:
            return None
        if claim.id in visiting:
            raise ValueError(f"claim {claim.id!r}: its requires form a cycle")
        visiting.add(claim.id)
        rows = per_seed[claim.experiment]
        values = metric_values(rows, claim.metric)
        raw = claim.assess(values, schedules.get(claim.experiment))
        baseline = _baseline_nan_reason(claim, values, rows)
        if baseline:
            out[claim.id] = _not_tested(raw, baseline, reading="")
            return out[claim.id]
        reasons = []
        if claim.fair_at is not None and claim.experiment in fidelity:
            level, note = _level_and_note(fidelity[claim.experiment])
            if fidelity_rank(level) < fidelity_rank(claim.fair_at):
                reasons.append(f"scale: ran at {level} fidelity ({note}); a fair test needs {claim.fair_at} "
                               f"({claim.fair_at_reason})" if note else
                               f"scale: ran at {level} fidelity; a fair test needs {claim.fair_at} "
                               f"({claim.fair_at_reason})")
        for rid in claim.requires:
            if rid not in by_id:
                raise ValueError(f"claim {claim.id!r} requires unknown claim {rid!r}")
            req = decide(by_id[rid])
            if req is None:
                reasons.append(f"needs `{rid}`, which was not run")
            elif req.verdict != "PASS":
                word = {"FAIL": "FAILed"}.get(req.verdict, f"was {req.verdict}")
                reasons.append(f"needs `{rid}`, which {word}")
        visiting.discard(claim.id)
        measured = bool(np.isfinite(np.asarray(values, dtype=float)).any())  # no reading when nothing was measured
        out[claim.id] = _not_tested(raw, "; ".join(reasons), raw.verdict if measured else "") if reasons else raw
        return out[claim.id]

    for claim in claims:
        decide(claim)
    return {c.id: out[c.id] for c in claims if c.id in out}


def _not_tested(raw: Decision, reason: str, reading: str) -> Decision:
    return Decision("NOT_TESTED", raw.n, raw.mean, raw.lo, raw.hi, raw.level, reason, None, reading=reading)
