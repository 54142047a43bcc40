"""RE-Bench evaluation methodology: score transforms, normalisation, score@k and budget curves.

Wijk et al., "RE-Bench: Evaluating frontier AI R&D capabilities of language model agents
against human experts" (ICML 2025, arXiv 2411.15114), Sec. 3:

* a task's raw score ``x`` is transformed (``log x``, ``log(x - floor)`` or identity);
* the transformed score is normalised so that the starting solution maps to 0 and the
  reference solution to 1: ``s_norm = (s - s_start) / (s_ref - s_start)`` (Sec. 3.2.2); a solution
  worse than the starting one scores 0;
* an attempt is assessed by the highest score in its score log, except on the Scaling Law
  Experiment, where only the final submission counts (Sec. 3.2.1);
* with a total budget ``B`` split into ``k`` attempts, ``score@k`` is the mean over tasks of
  ``E[max of k attempts' normalised scores]``, the k attempts sampled with replacement; on the
  Scaling Law Experiment the agent cannot see its scores and one of the k is taken at random
  (Sec. 4.2); intervals are percentile bootstraps (Fig. 2).

The loss tasks of the benchmark (Fix Embedding, Restricted Architecture MLM) are scored
``log(loss - 1.5)``, 1.5 being an estimate of the irreducible OpenWebText loss (METR/RE-Bench
README); :func:`fix_embedding_score` is that transform and :data:`METR_PUBLISHED_SCORES`
lists the starting/reference scores the README publishes, which our transforms reproduce.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class ScoreRecord:
    """One call of an environment's scoring function.

    Attributes:
        raw: the task's raw measurement (a runtime in seconds, a loss...); NaN when none.
        transformed: ``transform(raw)``, the quantity that is normalised; NaN when invalid.
        valid: whether the submission passed every correctness and integrity check.
        message: why a submission is invalid, or a short note.
        t_elapsed: time of the call since the attempt started (seconds or score calls).
        normalized: ``normalize(transformed, s_start, s_ref)``; NaN when invalid or unknown.
    """

    raw: float
    transformed: float
    valid: bool
    message: str = ""
    t_elapsed: float = 0.0
    normalized: float = math.nan


# ----------------------------------------------------------------------------- transforms
def identity_transform(x: float) -> float:
    """The identity transform (tasks scored directly, e.g. a win rate)."""
    return float(x)


def log_transform(x: float) -> float:
    """``log x`` for positive ``x`` (runtimes); raises ValueError otherwise."""
    if not (x > 0 and math.isfinite(x)):
        raise ValueError(f"log transform needs a positive finite value, got {x!r}")
    return math.log(x)


def log_minus_floor(floor: float) -> Callable[[float], float]:
    """Return ``x -> log(x - floor)``; values at or below ``floor`` raise ValueError (invalid, never NaN)."""
    if not math.isfinite(floor):
        raise ValueError(f"floor must be finite, got {floor!r}")

    def transform(x: float) -> float:
        if not (math.isfinite(x) and x > floor):
            raise ValueError(f"loss {x!r} is not above the floor {floor!r}")
        return math.log(x - floor)

    transform.floor = floor  # type: ignore[attr-defined]
    return transform


OPENWEBTEXT_LOSS_FLOOR = 1.5
"""The loss floor of RE-Bench's Fix Embedding and Restricted MLM scores: ``log(loss - 1.5)``."""


def fix_embedding_score(loss: float) -> float:
    """Fix Embedding's score ``log(loss - 1.5)`` (lower is better); ``loss <= 1.5`` raises ValueError.

    Published anchors (METR/RE-Bench README): starting model loss 10.5 -> 2.2, reference
    solution loss 2.8 -> 0.26.
    """
    return log_minus_floor(OPENWEBTEXT_LOSS_FLOOR)(loss)


METR_PUBLISHED_SCORES: dict[str, dict[str, float | str]] = {
    # task: its transform, the raw start/reference measurements and the scores published for them
    # (METR/RE-Bench README), with the rounding step of each printed number (its last digit)
    "fix_embedding": {"transform": "log(loss - 1.5)", "start_raw": 10.5, "start_raw_step": 0.1,
                      "start_score": 2.2, "start_score_step": 0.1, "ref_raw": 2.8, "ref_raw_step": 0.1,
                      "ref_score": 0.26, "ref_score_step": 0.01},
    "restricted_mlm": {"transform": "log(loss - 1.5)", "start_raw": 7.64, "start_raw_step": 0.01,
                       "start_score": 1.81, "start_score_step": 0.01, "ref_raw": 4.6, "ref_raw_step": 0.1,
                       "ref_score": 1.13, "ref_score_step": 0.01},
    "triton_cumsum": {"transform": "log(time in ms)", "start_raw": 4.76, "start_raw_step": 0.01,
                      "start_score": 1.56, "start_score_step": 0.01, "ref_raw": 1.6, "ref_raw_step": 0.1,
                      "ref_score": 0.47, "ref_score_step": 0.01},
    "optimize_llm_foundry": {"transform": "log(time in s)", "start_raw": 272.0, "start_raw_step": 1.0,
                             "start_score": 5.6, "start_score_step": 0.1, "ref_raw": 94.0, "ref_raw_step": 1.0,
                             "ref_score": 4.54, "ref_score_step": 0.01},
}
"""Raw start/reference measurements of four RE-Bench tasks and the scores METR publishes for them."""


def published_score_deviation() -> float:
    """Largest deviation of our transforms from :data:`METR_PUBLISHED_SCORES`, in rounding units.

    For each published pair ``(raw, score)``: ``|T(raw) - score| / (score_step / 2 + |T'(raw)| raw_step / 2)``,
    i.e. how far apart they are relative to what rounding both printed numbers allows; ``<= 1``
    means our ``T`` reproduces the published score. ``T`` is :func:`fix_embedding_score`
    (``T' = 1 / (x - 1.5)``) for the loss tasks and :func:`log_transform` (``T' = 1 / x``) for the timed ones.
    """
    worst = 0.0
    for row in METR_PUBLISHED_SCORES.values():
        loss_task = row["transform"] == "log(loss - 1.5)"
        t = fix_embedding_score if loss_task else log_transform
        for which in ("start", "ref"):
            raw = float(row[f"{which}_raw"])
            slope = 1.0 / (raw - OPENWEBTEXT_LOSS_FLOOR) if loss_task else 1.0 / raw
            allowed = float(row[f"{which}_score_step"]) / 2 + slope * float(row[f"{which}_raw_step"]) / 2
            worst = max(worst, abs(t(raw) - float(row[f"{which}_score"])) / allowed)
    return worst


def best_intermediate_score(scores: Sequence[float], lower_is_better: bool) -> float:
    """An attempt's score: the best of its intermediate scores (NaN = an invalid call, skipped).

    For a lower-is-better task the best is the minimum (intermediate scores 5, 4, 3, 2, 1
    give 1); NaN when no call was valid. :meth:`AttemptLog.final_normalized` applies the
    same rule to normalised scores (higher is better there), counting no valid call as 0.
    """
    if not isinstance(lower_is_better, bool):
        raise TypeError(f"lower_is_better must be a bool, got {lower_is_better!r}")
    x = np.asarray(scores, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"scores must be 1-D (one per score call), got shape {x.shape}")
    if np.any(np.isinf(x)):
        raise ValueError("scores must be finite or NaN (NaN marks an invalid call)")
    x = x[np.isfinite(x)]
    if x.size == 0:
        return math.nan
    return float(x.min() if lower_is_better else x.max())


def normalize(s: float, s_start: float, s_ref: float) -> float:
    """Normalised score: ``(s - s_start) / (s_ref - s_start)`` (start -> 0, reference -> 1).

    The direction of a lower-is-better task is handled by the sign of ``s_ref - s_start``.
    """
    if not (math.isfinite(s_start) and math.isfinite(s_ref)):
        raise ValueError(f"s_start and s_ref must be finite, got {s_start!r}, {s_ref!r}")
    if s_ref == s_start:
        raise ValueError(f"s_ref must differ from s_start, both are {s_start!r}")
    return (float(s) - s_start) / (s_ref - s_start)


# ----------------------------------------------------------------------------- score@k
def _check_k(k: int, n: int, replacement: bool = False) -> int:
    """``k`` as an int in [1, n] (any k >= 1 with replacement); TypeError for a non-integer, ValueError out of range."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer number of attempts, got {k!r}")
    if k < 1 or (not replacement and k > n):
        raise ValueError(f"k must be between 1 and the number of attempts ({n}), got {k}" if not replacement else
                         f"k must be >= 1, got {k}")
    return int(k)


def _as_scores(attempts: Sequence[float | ScoreRecord | "AttemptLog"]) -> np.ndarray:
    """Normalised score of each attempt; invalid or missing scores count as 0 (the starting solution), and so
    does a record worse than the start (Sec. 3.2.2); numbers are taken as given (already attempt scores)."""
    out = []
    for a in attempts:
        if isinstance(a, AttemptLog):
            v = a.final_normalized
        elif isinstance(a, ScoreRecord):
            v = max(0.0, a.normalized) if a.valid else 0.0
        else:
            v = float(a)
        out.append(v if math.isfinite(v) else 0.0)
    return np.asarray(out, dtype=float)


def expected_max_at_k(scores: Sequence[float] | np.ndarray, k: int, replacement: bool = True) -> float:
    """``E[max]`` of ``k`` attempts drawn from ``scores`` (closed form).

    ``replacement=True`` is the paper's score@k ("we sample k results (with replacement) ... and pick the
    highest score", Sec. 4.2): with the scores sorted ascending, the i-th (1-based) is the maximum with
    probability ``(i / n)^k - ((i - 1) / n)^k``, and ``k`` may exceed ``n``. ``replacement=False`` draws a
    k-subset: the i-th is the maximum in ``C(i-1, k-1)`` of the ``C(n, k)`` subsets.
    """
    x = np.asarray(scores, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"scores must be 1-D (one per attempt), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("scores must be finite (score invalid attempts as 0, the starting solution)")
    if x.size == 0:
        raise ValueError("scores must hold at least one attempt")
    k = _check_k(k, x.size, replacement)
    return float(_max_weights(x.size, k, replacement) @ np.sort(x))


def _max_weights(n: int, k: int, replacement: bool = True) -> np.ndarray:
    """``P(the i-th smallest of n is the max of k draws)``, with or without replacement."""
    i = np.arange(1, n + 1)
    if replacement:
        return (i / n) ** k - ((i - 1) / n) ** k
    from scipy.special import comb

    return np.where(i >= k, comb(i - 1, k - 1) / comb(n, k), 0.0)


def expected_max_at_k_bruteforce(scores: Sequence[float], k: int, replacement: bool = True) -> float:
    """``E[max]`` of ``k`` attempts by enumerating every ordered k-tuple (with replacement) or k-subset
    (without); for tests, small n and k only."""
    from itertools import product

    x = list(map(float, scores))
    k = _check_k(k, len(x), replacement)
    draws = list(product(x, repeat=k)) if replacement else list(combinations(x, k))
    return float(np.mean([max(s) for s in draws]))


def _task_selection(run: Sequence, select: str | None) -> str:
    """``max`` (best of k) or ``random`` (one of k at random: the agent cannot see its scores)."""
    if select is None:
        logs = [a for a in run if isinstance(a, AttemptLog)]
        return "random" if logs and all(a.final_only for a in logs) else "max"
    if select not in ("max", "random"):
        raise ValueError(f"select must be 'max' or 'random', got {select!r}")
    return select


def score_at_k(runs: Sequence[Sequence[float | ScoreRecord | "AttemptLog"]], k: int, n_boot: int = 1000,
               seed: int = 0, level: float = 0.95, replacement: bool = True,
               select: Sequence[str | None] | None = None) -> tuple[float, tuple[float, float]]:
    """score@k: mean over tasks of ``E[best of k attempts]``, with a percentile bootstrap interval.

    Args:
        runs: one list per task of its attempts (normalised scores, ScoreRecords or AttemptLogs).
        k: attempts per task (each gets ``1/k`` of the budget).
        n_boot: bootstrap resamples of the attempts (with replacement, within each task).
        seed: seed of the bootstrap.
        level: coverage of the percentile interval.
        replacement: draw the k attempts with replacement (the paper, Sec. 4.2) or without.
        select: per task, ``"max"`` (the best of k) or ``"random"`` (one of the k at random, the paper's rule
            for the Scaling Law Experiment, whose scores the agent cannot see: the mean attempt score);
            ``None`` (default) picks ``"random"`` for a task whose attempts are all
            :attr:`AttemptLog.final_only` and ``"max"`` otherwise.

    Returns:
        ``(mean, (lo, hi))``.
    """
    if len(runs) == 0:
        raise ValueError("runs must hold at least one task")
    if n_boot < 1:
        raise ValueError(f"n_boot must be positive, got {n_boot}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if select is not None and len(select) != len(runs):
        raise ValueError(f"select must name one rule per task ({len(runs)}), got {len(select)}")
    rules = [_task_selection(r, None if select is None else select[j]) for j, r in enumerate(runs)]
    per_task = [_as_scores(r) for r in runs]
    for j, s in enumerate(per_task):
        if s.size == 0 or (not replacement and s.size < k):
            raise ValueError(f"task {j} has {s.size} attempts, fewer than k={k}" if s.size else
                             f"task {j} has no attempts")
    _check_k(k, min(s.size for s in per_task), replacement)

    def task_value(s: np.ndarray) -> float:
        return expected_max_at_k(s, k, replacement)

    mean = float(np.mean([task_value(s) if rule == "max" else float(np.mean(s))
                          for s, rule in zip(per_task, rules)]))
    rng = np.random.default_rng(seed)
    boots = np.zeros(n_boot)
    for s, rule in zip(per_task, rules):  # loop over tasks only; the resamples are vectorised
        idx = rng.integers(0, s.size, size=(n_boot, s.size))
        boots += np.sort(s[idx], axis=1) @ _max_weights(s.size, k, replacement) if rule == "max" else \
            s[idx].mean(axis=1)
    boots /= len(per_task)
    alpha = (1 - level) / 2
    return mean, (float(np.quantile(boots, alpha)), float(np.quantile(boots, 1 - alpha)))


# ----------------------------------------------------------------------------- attempt logs
@dataclass
class AttemptLog:
    """Timestamped score calls of one attempt (one agent run on one environment).

    ``final`` is the score of the solution left in the working directory at the end.
    The attempt's score at time ``t`` is the best valid normalised score so far ("the agent is assessed
    by the highest score registered in the score log", Sec. 3.2.1; the rule of
    :func:`best_intermediate_score`); with ``final_only`` (the Scaling Law Experiment: "only the final
    submission counts") it is the score of the last submission by time ``t`` instead. A score below the
    start's counts as 0 ("we assign solutions that score worse than the starting solution a score of 0",
    Sec. 3.2.2), and so does no valid score.
    """

    env: str
    agent: str
    records: list[ScoreRecord] = field(default_factory=list)
    final: ScoreRecord | None = None
    final_only: bool = False

    def append(self, record: ScoreRecord) -> None:
        """Add one score call."""
        self.records.append(record)

    def best_so_far(self, t: float = math.inf) -> float:
        """The attempt's score at time ``t``: best valid normalised score among calls made by then (the last
        call's with ``final_only``), floored at 0 (0 when none)."""
        recs = [r for r in self.all_records() if r.t_elapsed <= t]
        if self.final_only:
            last = recs[-1] if recs else None
            ok = last is not None and last.valid and math.isfinite(last.normalized)
            return max(0.0, last.normalized) if ok else 0.0
        vals = [r.normalized for r in recs if r.valid and math.isfinite(r.normalized)]
        return max(0.0, max(vals)) if vals else 0.0

    def all_records(self) -> list[ScoreRecord]:
        """Score calls plus the final scoring."""
        return self.records + ([self.final] if self.final is not None else [])

    @property
    def final_normalized(self) -> float:
        """The attempt's score: best valid normalised score over the whole attempt."""
        return self.best_so_far()

    def trace(self) -> tuple[np.ndarray, np.ndarray]:
        """``(times, best-so-far)`` after each call."""
        recs = self.all_records()
        t = np.array([r.t_elapsed for r in recs], dtype=float)
        best = np.array([self.best_so_far(x) for x in t], dtype=float)
        return t, best

    def to_jsonl(self, path: str | Path) -> Path:
        """Write one JSON line per score call (the final scoring last, with ``final: true``)."""
        path = Path(path)
        with path.open("w") as f:
            for r in self.records:
                f.write(json.dumps({"env": self.env, "agent": self.agent, "final": False,
                                    "final_only": self.final_only, **asdict(r)}) + "\n")
            if self.final is not None:
                f.write(json.dumps({"env": self.env, "agent": self.agent, "final": True,
                                    "final_only": self.final_only, **asdict(self.final)}) + "\n")
        return path

    @classmethod
    def from_jsonl(cls, path: str | Path) -> "AttemptLog":
        """Read a log written by :meth:`to_jsonl`."""
        lines = [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]
        if not lines:
            raise ValueError(f"{path} holds no score records")
        log = cls(env=lines[0]["env"], agent=lines[0]["agent"], final_only=bool(lines[0].get("final_only", False)))
        for d in lines:
            final = d.pop("final")
            d.pop("final_only", None)
            d.pop("env"), d.pop("agent")
            rec = ScoreRecord(**d)
            if final:
                log.final = rec
            else:
                log.append(rec)
        return log


def budget_curve(runs: Sequence[Sequence[AttemptLog]], budgets: Sequence[float],
                 split_policy: Callable[[float], Sequence[int]] | Sequence[int] = (1,), n_boot: int = 200,
                 seed: int = 0):
    """Score against total budget: for each ``B``, the best over allowed ``k`` of score@k at ``B/k`` each.

    Args:
        runs: one list per task of its attempts' logs (each long enough for ``B / k``).
        budgets: total budgets per task (same unit as ``ScoreRecord.t_elapsed``).
        split_policy: the allowed numbers of attempts ``k`` (a sequence), or a function of
            ``B`` returning them; the paper reports the best ``k`` for each budget.
        n_boot: bootstrap resamples for the interval.
        seed: bootstrap seed.

    Returns:
        pandas DataFrame with columns ``budget, k, score, lo, hi``.
    """
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("budget_curve returns a pandas DataFrame: pip install 'icml25[tables]'") from exc

    if len(runs) == 0:
        raise ValueError("runs must hold at least one task")
    rules = [_task_selection(r, None) for r in runs]
    rows = []
    for b in budgets:
        if not b > 0:
            raise ValueError(f"budgets must be positive, got {b!r}")
        ks = split_policy(b) if callable(split_policy) else split_policy
        best = None
        for k in ks:
            if k < 1 or any(len(r) < k for r in runs):
                continue
            scores = [[log.best_so_far(b / k) for log in r] for r in runs]
            mean, (lo, hi) = score_at_k(scores, k, n_boot=n_boot, seed=seed, select=rules)
            if best is None or mean > best[2]:
                best = (float(b), int(k), mean, lo, hi)
        if best is None:
            raise ValueError(f"no allowed k fits the number of attempts at budget {b}")
        rows.append(best)
    return pd.DataFrame(rows, columns=["budget", "k", "score", "lo", "hi"])
