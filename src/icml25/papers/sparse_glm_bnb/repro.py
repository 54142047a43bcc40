"""sparse_glm_bnb reproduction: relaxation accuracy/speed/restart, and BnB certification.

(a) ``relaxation``: the card's synthetic regression (n=1000, AR(1) design with rho=0.5,
k=10 equal nonzeros, SNR 5, lam2 = 1e-3 n, M = 2 max|beta_ridge|). The perspective
relaxation is solved by restarted FISTA with the exact prox (to a 1e-6 relative
duality gap), by plain FISTA, and by cvxpy + Clarabel as an SOCP, on the same data.
(b) ``certification``: branch-and-bound on a small synthetic instance (p=25, k=4,
squared loss) and on scikit-learn's breast-cancer data (p=30, k=3, logistic, a seeded
80% row subsample), each checked against brute-force enumeration of all C(p, k)
supports. Settings and claim thresholds were fixed before the first quick run.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from icml25.core.experiment import (
    ConfigError,
    Experiment,
    ExperimentConfig,
    Fidelity,
    Metrics,
    ProgressFn,
    check_fields,
    no_progress,
)
from icml25.core.paper import Claim
from icml25.papers.sparse_glm_bnb.baselines import cvxpy_perspective_relaxation
from icml25.papers.sparse_glm_bnb.bnb import BnBConfig, brute_force_best_subset
from icml25.papers.sparse_glm_bnb.data import breast_cancer_logistic, ridge_coefficients, synthetic_sparse_regression
from icml25.papers.sparse_glm_bnb.relaxation import FISTAConfig, solve_perspective_relaxation


@dataclass
class RelaxationConfig(ExperimentConfig):
    n: int = 1000
    """Samples."""
    p_values: tuple[int, ...] = (500, 2000)
    """Feature counts; the speed claim uses the largest."""
    k: int = 10
    """Sparsity budget (and number of true nonzeros)."""
    rho: float = 0.5
    """Feature correlation, Sigma_ij = rho^|i-j|."""
    snr: float = 5.0
    """Signal-to-noise ratio Var(X beta*) / noise variance."""
    lam2_per_n: float = 1e-3
    """Ridge weight as a multiple of n (lam2 = lam2_per_n * n)."""
    M_factor: float = 2.0
    """Box bound M = M_factor * max|beta_ridge|."""
    solver: FISTAConfig = field(default_factory=FISTAConfig)
    """The relaxation solver's settings, for both variants (``solver.tol``: the relative duality gap at which FISTA
    stops; ``solver.max_iter``: its iteration cap)."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("n", "p_values", "k", "snr", "M_factor"),
                     nonnegative=("lam2_per_n",), nonempty=("p_values",))
        # bounds: a job beyond these would need > ~100 GB or days (dense n x p designs; FISTA's cap is solver's)
        check_fields(self, at_most={"n": 10**6, "p_values": 10**6, "k": 10**6})
        _check_ar1(self)
        if self.k > min(self.p_values):
            raise ConfigError(f"RelaxationConfig.k must be <= every p in p_values, got k={self.k}, "
                              f"p_values={self.p_values}")
        if self.lam2_per_n == 0 and max(self.p_values) > self.n:
            raise ConfigError(f"RelaxationConfig.lam2_per_n must be > 0 when a p exceeds n={self.n} (the ridge "
                              f"fit that sets M is singular), got {self.lam2_per_n}")


def run_relaxation(cfg: RelaxationConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Accuracy against cvxpy + Clarabel, wall-clock ratio, restart vs plain FISTA, bound validity."""
    out: Metrics = {}
    rel_errs, ratios, lb_excess = [], [], []
    for i, p in enumerate(cfg.p_values):
        data = synthetic_sparse_regression(cfg.n, p, cfg.k, cfg.rho, cfg.snr, seed=[seed, p])
        lam2 = cfg.lam2_per_n * cfg.n
        M = cfg.M_factor * float(np.max(np.abs(ridge_coefficients(data.X, data.y, lam2))))
        start = time.perf_counter()
        ours = solve_perspective_relaxation(data.X, data.y, cfg.k, lam2, M, **asdict(cfg.solver))
        ours_time = time.perf_counter() - start
        plain = solve_perspective_relaxation(data.X, data.y, cfg.k, lam2, M, restart=False, **asdict(cfg.solver))
        socp = cvxpy_perspective_relaxation(data.X, data.y, cfg.k, lam2, M)
        ref = abs(socp.value)
        out[f"p{p}_rel_err"] = abs(ours.primal_value - socp.value) / ref
        out[f"p{p}_lb_rel_err"] = abs(ours.lower_bound - socp.value) / ref
        out[f"p{p}_lb_excess"] = float(np.max(ours.history["lower_bound"]) - socp.value) / ref
        out[f"p{p}_time_ours"] = ours_time
        out[f"p{p}_time_cvxpy"] = socp.wall_time
        out[f"p{p}_time_clarabel_only"] = socp.solver_time
        out[f"p{p}_speedup"] = socp.wall_time / ours_time
        out[f"p{p}_speedup_vs_solver_only"] = socp.solver_time / ours_time
        out[f"p{p}_iters_restart"] = ours.n_iter
        out[f"p{p}_iters_plain"] = plain.n_iter
        out[f"p{p}_plain_converged"] = float(plain.converged)
        out[f"p{p}_restart_iter_ratio"] = ours.n_iter / plain.n_iter
        rel_errs.append(out[f"p{p}_rel_err"])
        ratios.append(out[f"p{p}_restart_iter_ratio"])
        lb_excess.append(out[f"p{p}_lb_excess"])
        progress(i + 1, len(cfg.p_values))
    out["max_rel_err"] = max(rel_errs)
    out["speedup_largest_p"] = out[f"p{max(cfg.p_values)}_speedup"]
    out["max_restart_iter_ratio"] = max(ratios)
    out["max_lb_excess"] = max(lb_excess)
    return out


@dataclass
class CertificationConfig(ExperimentConfig):
    n: int = 100
    """Samples of the synthetic instance."""
    p: int = 25
    """Features of the synthetic instance."""
    k: int = 4
    """Sparsity budget of the synthetic instance."""
    rho: float = 0.5
    """Feature correlation of the synthetic instance."""
    snr: float = 5.0
    """Signal-to-noise ratio of the synthetic instance."""
    lam2_per_n: float = 1e-3
    """Synthetic ridge weight as a multiple of n."""
    M_factor: float = 2.0
    """Synthetic box bound M = M_factor * max|beta_ridge|."""
    bc_fraction: float = 0.8
    """Share of the 569 breast-cancer rows used per seed (seeded subsample)."""
    bc_k: int = 3
    """Sparsity budget on breast cancer (logistic)."""
    bc_lam2: float = 1.0
    """Ridge weight on breast cancer."""
    bc_M: float = 5.0
    """Box bound on breast cancer (standardised features)."""
    bnb: BnBConfig = field(default_factory=BnBConfig)
    """The branch-and-bound's settings, for both instances (``bnb.gap_tol``: the relative optimality gap at which
    it certifies; ``bnb.time_limit``: seconds per solve; ``bnb.max_iter``: FISTA iterations per node)."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("n", "p", "k", "snr", "M_factor", "bc_k", "bc_M"),
                     nonnegative=("lam2_per_n", "bc_lam2"))
        # bounds: a job beyond these would need > ~100 GB or days (the brute-force oracle enumerates all
        # C(p, k) supports; bc_k is bounded by the breast-cancer features below)
        check_fields(self, at_most={"n": 10**6, "p": 10**3, "k": 10**3})
        _check_ar1(self)
        if self.k > self.p:
            raise ConfigError(f"CertificationConfig.k must be <= p={self.p}, got {self.k}")
        if self.lam2_per_n == 0 and self.p > self.n:
            raise ConfigError(f"CertificationConfig.lam2_per_n must be > 0 when p={self.p} exceeds n={self.n}, "
                              f"got {self.lam2_per_n}")
        if not 0 < self.bc_fraction <= 1 or round(self.bc_fraction * BREAST_CANCER_ROWS) < 2:
            raise ConfigError(f"CertificationConfig.bc_fraction must be in (0, 1] and keep at least 2 of the "
                              f"{BREAST_CANCER_ROWS} rows, got {self.bc_fraction}")
        if self.bc_k > BREAST_CANCER_FEATURES:
            raise ConfigError(f"CertificationConfig.bc_k must be <= {BREAST_CANCER_FEATURES} (features of breast "
                              f"cancer), got {self.bc_k}")


BREAST_CANCER_ROWS, BREAST_CANCER_FEATURES = 569, 30
"""Size of scikit-learn's breast-cancer data."""


def _check_ar1(cfg: ExperimentConfig) -> None:
    """The AR(1) design needs ``-1 < rho < 1``."""
    if not -1 < cfg.rho < 1:
        raise ConfigError(f"{type(cfg).__name__}.rho must be in (-1, 1), got {cfg.rho}")


def _certify(X, y, k, lam2, M, loss, cfg: CertificationConfig, prefix: str) -> Metrics:
    start = time.perf_counter()
    bf_value, bf_beta = brute_force_best_subset(X, y, k, lam2, M, loss)
    bf_time = time.perf_counter() - start
    model = cfg.bnb.estimator(k, lam2, M, loss).fit(X, y)
    rel_diff = (model.upper_bound_ - bf_value) / abs(bf_value)
    same_support = set(model.support_.tolist()) == set(np.flatnonzero(bf_beta).tolist())
    # the certified lower bound must not exceed the true optimum (up to solver round-off)
    lb_valid = model.lower_bound_ <= bf_value * (1 + 1e-9)
    return {
        f"{prefix}certified": float(model.certified_),
        f"{prefix}gap": model.gap_,
        f"{prefix}same_support": float(same_support),
        f"{prefix}rel_obj_diff": rel_diff,
        f"{prefix}lower_bound_valid": float(lb_valid),
        f"{prefix}certified_matches_bruteforce": float(model.certified_ and same_support and lb_valid
                                                      and abs(rel_diff) <= cfg.bnb.gap_tol),
        f"{prefix}nodes": float(model.n_nodes_),
        f"{prefix}subproblems_bruteforce": float(np.prod(range(X.shape[1] - k + 1, X.shape[1] + 1))
                                                 / np.prod(range(1, k + 1))),
        f"{prefix}time_bnb": model.solve_time_,
        f"{prefix}time_bruteforce": bf_time,
    }


def run_certification(cfg: CertificationConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """BnB certificate vs brute force: synthetic squared loss, then breast cancer logistic."""
    data = synthetic_sparse_regression(cfg.n, cfg.p, cfg.k, cfg.rho, cfg.snr, seed=[seed, 1])
    lam2 = cfg.lam2_per_n * cfg.n
    M = cfg.M_factor * float(np.max(np.abs(ridge_coefficients(data.X, data.y, lam2))))
    out = _certify(data.X, data.y, cfg.k, lam2, M, "squared", cfg, "syn_")
    progress(1, 2)
    X, y = breast_cancer_logistic(cfg.bc_fraction, seed=seed)
    out.update(_certify(X, y, cfg.bc_k, cfg.bc_lam2, cfg.bc_M, "logistic", cfg, "bc_"))
    progress(2, 2)
    return out


EXPERIMENTS = [
    Experiment(
        name="relaxation",
        description="Perspective relaxation on the card's synthetic regression (n=1000, AR(1) rho=0.5, k=10, "
                    "SNR 5): restarted FISTA with the exact log-linear prox vs plain FISTA vs cvxpy + Clarabel "
                    "(SOCP), same data; accuracy, wall-clock ratio, iterations, dual-bound validity.",
        config=RelaxationConfig,
        run=run_relaxation,
        presets={"smoke": {"n": 200, "p_values": (60, 300)}, "quick": {},
                 "full": {"p_values": (500, 1000, 2000)}},
        seeds={"smoke": 2, "quick": 3, "full": 10},
        fidelity={
            "smoke": Fidelity("mechanism", "n=200, p in {60, 300}: a tiny AR(1) synthetic regression stands in for "
                                           "the paper's instances (not retrieved)"),
            "quick": Fidelity("mechanism", "the card's AR(1) synthetic regression (n=1000, p in {500, 2000}) stands in "
                                           "for the paper's synthetic and real instances (not retrieved); cvxpy + "
                                           "Clarabel stands in for the paper's conic solvers"),
            "full": Fidelity("mechanism", "as quick with p = 1000 added and 10 seeds; the paper's instances, its "
                                          "large p and its solvers are still missing"),
        },
        full_requirements="Runs on a CPU; the paper's larger instances (p up to 1e4-1e5) and its real data sets "
                          "are out of reach of the cvxpy baseline and were not retrieved.",
        timed=True,
        requires=("cvxpy", "clarabel"),
    ),
    Experiment(
        name="certification",
        description="Branch-and-bound certificates vs brute-force enumeration: synthetic squared loss "
                    "(p=25, k=4, 12,650 supports) and breast cancer logistic (p=30, k=3, 4,060 supports).",
        config=CertificationConfig,
        run=run_certification,
        presets={"smoke": {"n": 60, "p": 12, "k": 3, "bc_fraction": 0.4, "bc_k": 2}, "quick": {}, "full": {}},
        seeds={"smoke": 2, "quick": 3, "full": 10},
        fidelity={
            "smoke": Fidelity("mechanism", "p=12, k=3 synthetic and a 40% breast-cancer subsample with k=2, small "
                                           "enough for brute force; stand-ins for the paper's certification instances"),
            "quick": Fidelity("mechanism", "p=25 synthetic and breast cancer (p=30), small enough for brute-force "
                                           "enumeration; stand-ins for the paper's (not retrieved) instances"),
            "full": Fidelity("mechanism", "as quick with 10 seeds"),
        },
    ),
]

# Only the abstract and the opening of the introduction were read (no tables, no official code): the paper claims
# below are the abstract's qualitative statements; the thresholds are ours. The exactness claims compare our code
# with an oracle (Clarabel, brute force) and are checks.
_SCALE = ("the abstract's claim is about scaling to large p against conic solvers on the paper's instances (not "
          "retrieved); it needs those instances, at least at a fraction of their size")
CLAIMS = [
    # every seed: agreement with the SOCP oracle (Clarabel) must hold in every run
    Claim(id="relax_accuracy",
          statement="The first-order solver (exact prox, restarts) reaches the SOCP optimum of the "
          "perspective relaxation: relative error against cvxpy + Clarabel at most 1e-5 at every p.",
          paper_value="same bound as the SOCP solvers, no conic solver needed (abstract; tables not retrieved)",
          experiment="relaxation", metric="max_rel_err", op="<=", threshold=1e-5, kind="check", aggregate="every_seed"),
    Claim(id="relax_speedup", statement="At p=2000 the first-order solver reaches that accuracy at least 10x faster "
          "(wall clock) than cvxpy + Clarabel on the SOCP.",
          paper_value="dual bounds 'significantly faster' than SOCP solvers (abstract; exact speedups not retrieved)",
          experiment="relaxation", metric="speedup_largest_p", op=">=", threshold=10.0, kind="paper", source="abstract",
          aggregate="mean", resolution=0.5,
          resolution_reason="no paper speedup retrieved; a speedup within 5% of the 10x threshold does not matter",
          requires=("relax_accuracy",), fair_at="reduced", fair_at_reason=_SCALE),
    Claim(id="restart_helps", statement="Restarted FISTA needs no more iterations than plain FISTA to reach a 1e-6 "
          "relative duality gap (ratio <= 1 at every p).",
          paper_value="restarts speed up convergence at low per-iteration cost (abstract)",
          experiment="relaxation", metric="max_restart_iter_ratio", op="<=", threshold=1.0, kind="paper",
          source="abstract", aggregate="mean", resolution=0.05,
          resolution_reason="iteration-count ratio; a restart effect under 5% of the iterations does not matter (no "
                            "paper number)",
          fair_at="mechanism", fair_at_reason="a property of the solver (restarted vs plain FISTA on the same "
                                               "relaxation) that any instance of the composite problem should show"),
    # every seed: weak duality makes every dual bound valid, a guarantee that must hold in every run
    Claim(id="bound_valid", statement="The Fenchel dual bound is valid at every iteration: it never exceeds the SOCP "
          "optimum by more than 1e-7 (relative, solver round-off).",
          paper_value="a valid lower bound at every iteration, usable for early pruning (Sec. 3)",
          experiment="relaxation", metric="max_lb_excess", op="<=", threshold=1e-7, kind="check",
          aggregate="every_seed"),
    # every seed: an optimality certificate matching brute force is a correctness check of each run
    Claim(id="certify_synthetic",
          statement="BnB certifies optimality (gap <= 1e-4) on the synthetic p=25, k=4 instance "
          "and returns the brute-force support and objective.",
          paper_value="optimality certificates on synthetic data (abstract)",
          experiment="certification", metric="syn_certified_matches_bruteforce", op=">=", threshold=1.0, kind="check",
          aggregate="every_seed"),
    # every seed: as certify_synthetic
    Claim(id="certify_breast_cancer",
          statement="BnB certifies optimality (gap <= 1e-4) for logistic regression on breast "
          "cancer (p=30, k=3) and returns the brute-force support and objective.",
          paper_value="optimality certificates on real data (abstract)",
          experiment="certification", metric="bc_certified_matches_bruteforce", op=">=", threshold=1.0, kind="check",
          aggregate="every_seed"),
]

API_EXAMPLE = """
import numpy as np
from icml25.papers.sparse_glm_bnb import SparseGLMBnB, solve_perspective_relaxation, synthetic_sparse_regression

data = synthetic_sparse_regression(n=200, p=40, k=4, seed=0)
relax = solve_perspective_relaxation(data.X, data.y, k=4, lam2=0.2, M=3.0)
print("root dual bound", relax.lower_bound, "relaxation value", relax.primal_value)
model = SparseGLMBnB(k=4, lam2=0.2, M=3.0).fit(data.X, data.y)
print("support", model.support_, "certified", model.certified_, "gap", model.gap_, "nodes", model.n_nodes_)
"""
