"""Reproduction of the empirical demonstrations of Wilson (2025), "Deep Learning is Not So Mysterious or Different".

Four experiments, each a demonstration of the position paper's thesis that benign overfitting, double descent
and over-parametrisation appear in simple model classes with a soft inductive bias, and that PAC-Bayes /
countable-hypothesis bounds describe them:

* ``polynomial``: order-dependent polynomial regression fits noise and generalises on structured data;
* ``gp_label_noise``: a GP fits labels at any noise level; test accuracy, marginal likelihood and a
  PAC-Bayes bound track the noise (scikit-learn digits);
* ``double_descent``: min-norm least squares on ReLU random features (digits);
* ``compression``: subspace-trained, quantised MLP compression bounds on true vs random labels (digits).

Every setting (grids, step sizes, gamma, alpha, noise variances) and every claim threshold was fixed in this
file before the first quick run; nothing was re-tuned after seeing a verdict.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

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
from icml25.papers.soft_inductive_bias.compression import CompressionBoundConfig, subspace_compression_bound
from icml25.papers.soft_inductive_bias.figures import (
    compression_figures,
    double_descent_figures,
    gp_figures,
    polynomial_figures,
)
from icml25.papers.soft_inductive_bias.gp import GPStudyConfig, centred_one_hot, gp_label_noise_study
from icml25.papers.soft_inductive_bias.polynomial import OrderDependentPolyRegressor, SoftPolyConfig
from icml25.papers.soft_inductive_bias.random_features import random_features_double_descent

N_DIGITS = 1797
"""Images in scikit-learn's digits; the training sets are drawn from them and the rest is the test set."""


def _check_digits_split(cfg: ExperimentConfig) -> None:
    """``n_train`` leaves at least one digits image for the test set."""
    if cfg.n_train >= N_DIGITS:
        raise ConfigError(f"{type(cfg).__name__}.n_train must be < {N_DIGITS} (the digits images; the rest is the "
                          f"test set), got {cfg.n_train}")


def single_threaded_blas(run):
    """Run an experiment with one BLAS thread: its matrices are small to medium, and multi-threaded BLAS on a
    shared 2-core machine was measured 10-30x slower. Results are unchanged up to rounding."""

    @functools.wraps(run)
    def wrapped(cfg, seed, progress=no_progress):
        with threadpool_limits(limits=1):
            return run(cfg, seed, progress)

    return wrapped


# ---------------------------------------------------------------------------------------------------------
# (a) order-dependent polynomial regression


# Fig. 1 of the paper shows the polynomial on "(a) simple and (b) complex structured data" and on "(c) pure noise".
# The paper's target functions were not found; the two below and their names are the spec card's substitutes
# (second-hand: a third-party reproduction calls sin(x)cos(x^2) "simple" and x + cos(pi x) "structured"). Our
# "simple" target is the wigglier of the two, so our labels may be swapped relative to panels (a) and (b); the
# claims treat both targets alike, so no verdict depends on which is called which.
def simple_target(x: np.ndarray) -> np.ndarray:
    """The card's "simple" target sin(3x) cos(9x^2) (noiseless); stands in for Fig. 1a or 1b (unconfirmed)."""
    return np.sin(3 * x) * np.cos(9 * x**2)


def structured_target(x: np.ndarray) -> np.ndarray:
    """The card's "structured" target x + cos(pi x) (observed with Gaussian noise); Fig. 1a or 1b (unconfirmed)."""
    return x + np.cos(np.pi * x)


TARGETS = ("simple", "structured", "noise")
POLY_METHODS = ("soft", "ridge150", "ls3", "minnorm150")
"""soft: order-dependent (gamma > 1, alpha ~ 0); ridge150: uniform ridge; ls3: cubic least squares;
minnorm150: minimum-norm degree-150 interpolant."""


@dataclass
class PolynomialConfig(ExperimentConfig):
    n_train: tuple[int, ...] = (10, 30, 100)
    """Training-set sizes; inputs form a jittered grid on [-1, 1] (one point per cell, offset U(0.25, 0.75))."""
    model: SoftPolyConfig = field(default_factory=SoftPolyConfig)
    """The soft-bias polynomial (``model.degree``, ``model.gamma``, ``model.alpha``); the uniform ridge and the
    min-norm interpolant use the same order ``model.degree``."""
    ridge_alpha: float = 1.0
    """Penalty of the uniform degree-150 ridge competitor (scikit-learn's Ridge default)."""
    low_degree: int = 3
    """Degree of the hard-restricted least-squares competitor."""
    structured_noise: float = 0.1
    """Standard deviation of the noise on the structured target."""
    n_test: int = 1000
    """Equispaced test points on [-1, 1]; test MSE is against the noiseless function."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("n_train", "n_test"),
                     nonnegative=("ridge_alpha", "low_degree", "structured_noise"), nonempty=("n_train",))
        # bounds: a job beyond these would need > ~100 GB or days (dense n x (degree + 1) designs; model.degree is
        # bounded by SoftPolyConfig)
        check_fields(self, at_most={"n_train": 10**6, "low_degree": 10**4, "n_test": 10**6})


def poly_models(cfg: PolynomialConfig) -> dict[str, OrderDependentPolyRegressor]:
    degree = cfg.model.degree
    return {
        "soft": OrderDependentPolyRegressor(degree, cfg.model.gamma, cfg.model.alpha),
        "ridge150": OrderDependentPolyRegressor(degree, 1.0, cfg.ridge_alpha),
        "ls3": OrderDependentPolyRegressor(cfg.low_degree, 1.0, 0.0),
        "minnorm150": OrderDependentPolyRegressor(degree, 1.0, 0.0),
    }


def poly_data(target: str, n: int, cfg: PolynomialConfig, rng: np.random.Generator):
    x = -1 + (np.arange(n) + rng.uniform(0.25, 0.75, n)) * 2 / n
    if target == "simple":
        return x, simple_target(x), simple_target
    if target == "structured":
        return x, structured_target(x) + cfg.structured_noise * rng.normal(size=n), structured_target
    return x, rng.normal(size=n), lambda t: np.zeros_like(t)


@single_threaded_blas
def run_polynomial(cfg: PolynomialConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Fit all four models to each target and n; test MSE against the noiseless function."""
    x_test = np.linspace(-1, 1, cfg.n_test)
    m: Metrics = {}
    worst = {k: 0.0 for k in POLY_METHODS}  # max over structured settings of mse_k / best other mse
    noise_fit = []
    jobs = [(t, n) for t in TARGETS for n in cfg.n_train]
    for i, (target, n) in enumerate(jobs):
        rng = np.random.default_rng([seed, TARGETS.index(target), n])
        x, y, f = poly_data(target, n, cfg, rng)
        mse = {}
        for name, model in poly_models(cfg).items():
            model.fit(x[:, None], y)
            mse[name] = float(np.mean((model.predict(x_test[:, None]) - f(x_test)) ** 2))
            m[f"{target}_n{n}_test_mse_{name}"] = mse[name]
            m[f"{target}_n{n}_train_mse_{name}"] = float(np.mean((model.predict(x[:, None]) - y) ** 2))
        if target == "noise":
            noise_fit.append(m[f"noise_n{n}_train_mse_soft"] / np.var(y))
        else:
            for name in POLY_METHODS:
                best_other = min(v for k, v in mse.items() if k != name)
                worst[name] = max(worst[name], mse[name] / best_other)
        progress(i + 1, len(jobs))
    m["noise_train_mse_over_var_max"] = max(noise_fit)
    for name in POLY_METHODS:
        m[f"worst_ratio_{name}"] = worst[name]
    m["soft_worst_ratio_to_best_competitor"] = worst["soft"]
    m["best_competitor_worst_ratio"] = min(worst[k] for k in POLY_METHODS if k != "soft")
    return m


# ---------------------------------------------------------------------------------------------------------
# (b) GP label-noise study on digits


def _digits_split(n_train: int, seed: int):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng([seed, 101]).permutation(len(y))
    tr, te = perm[:n_train], perm[n_train:]
    return X[tr], y[tr], X[te], y[te]


@dataclass
class GPConfig(ExperimentConfig):
    n_train: int = 1000
    """Training images from scikit-learn digits (the remaining images are the test set)."""
    noise_fracs: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    """Fractions of training labels replaced by uniform random labels (nested sets)."""
    gp: GPStudyConfig = field(default_factory=GPStudyConfig)
    """The GP and its PAC-Bayes bound (``gp.noise``, ``gp.bound_noises``, ``gp.delta``)."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("n_train",), fraction=("noise_fracs",), nonempty=("noise_fracs",))
        _check_digits_split(self)


@single_threaded_blas
def run_gp(cfg: GPConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """RBF GP (median-heuristic lengthscale on test inputs) at each label-noise fraction."""
    X, y, X_test, y_test = _digits_split(cfg.n_train, seed)
    r = gp_label_noise_study(X, y, X_test, y_test, cfg.noise_fracs, noise=cfg.gp.noise,
                             bound_noises=cfg.gp.bound_noises, delta=cfg.gp.delta, seed=seed)
    progress(1, 1)
    m: Metrics = {k: v.tolist() for k, v in r.items() if k != "lengthscale"}
    m["lengthscale"] = float(r["lengthscale"])
    m["train_acc_min"] = float(r["train_acc"].min())
    m["test_acc_min_decrease"] = float(np.min(-np.diff(r["test_acc"])))
    m["lml_min_decrease"] = float(np.min(-np.diff(r["lml"])))
    m["bound_p0"] = float(r["bound"][0])
    m["bound_p1"] = float(r["bound"][-1])
    return m


# ---------------------------------------------------------------------------------------------------------
# (c) double descent with random features


@dataclass
class DoubleDescentConfig(ExperimentConfig):
    n_train: int = 400
    """Training images from digits (the rest are the test set)."""
    p_min: int = 40
    """Smallest number of random features."""
    p_max: int = 8000
    """Largest number of random features."""
    n_grid: int = 25
    """Points of the log-spaced feature grid (p = n_train is added)."""
    neff_alpha_rel: float = 1e-3
    """N_eff regulariser alpha as a fraction of the mean nonzero eigenvalue of H = Phi^T Phi / n."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("n_train", "p_min", "p_max", "n_grid", "neff_alpha_rel"))
        # bounds: a job beyond these would need > ~100 GB or days (dense digits x p feature matrices;
        # n_train is bounded by the digits split below)
        check_fields(self, at_most={"p_min": 10**6, "p_max": 10**6, "n_grid": 10**4})
        _check_digits_split(self)
        if self.p_max < self.p_min:
            raise ConfigError(f"{type(self).__name__}.p_max must be >= p_min={self.p_min}, got {self.p_max}")


def p_grid_of(cfg: DoubleDescentConfig) -> list[int]:
    grid = np.unique(np.round(np.geomspace(cfg.p_min, cfg.p_max, cfg.n_grid)).astype(int))
    return sorted(set(grid.tolist()) | {cfg.n_train})


@single_threaded_blas
def run_double_descent(cfg: DoubleDescentConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Min-norm least squares on centred one-hot digits targets, p from p_min to p_max."""
    X, y, X_test, y_test = _digits_split(cfg.n_train, seed)
    grid = p_grid_of(cfg)
    r = random_features_double_descent(X, centred_one_hot(y, 10), X_test, centred_one_hot(y_test, 10), grid,
                                       seed=seed, neff_alpha_rel=cfg.neff_alpha_rel)
    progress(1, 1)
    peak = int(np.argmax(r["test_mse"]))
    m: Metrics = {k: v.tolist() for k, v in r.items()}
    m["p_grid"] = [float(p) for p in grid]
    m["peak_p_over_n"] = grid[peak] / cfg.n_train
    m["mse_largest_over_peak"] = float(r["test_mse"][-1] / r["test_mse"][peak])
    m["test_mse_largest_p"] = float(r["test_mse"][-1])
    m["test_err_largest_p"] = float(r["test_err"][-1])
    m["train_mse_largest_p"] = float(r["train_mse"][-1])
    return m


# ---------------------------------------------------------------------------------------------------------
# (d) compression bounds


@dataclass
class CompressionConfig(ExperimentConfig):
    n_train: int = 1300
    """Training images from digits (the rest are the test set)."""
    compression: CompressionBoundConfig = field(default_factory=CompressionBoundConfig)
    """The subspace MLP, its training and the bound (``compression.dims``, ``compression.levels``,
    ``compression.n_hidden``, ``compression.steps``, ``compression.lr``, ``compression.delta``)."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("n_train",))
        # n_train is bounded by the digits split; the grid's sizes by CompressionBoundConfig
        _check_digits_split(self)


@single_threaded_blas
def run_compression(cfg: CompressionConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Compression bound with the true labels and with uniformly random labels."""
    X, y, X_test, y_test = _digits_split(cfg.n_train, seed)
    m: Metrics = {}
    for i, name in enumerate(("true", "random")):
        labels = y if name == "true" else np.random.default_rng([seed, 7]).integers(10, size=len(y))
        r = subspace_compression_bound(X, labels, **vars(cfg.compression), seed=seed, X_test=X_test, y_test=y_test)
        for key in ("bits", "train_err", "train_err_float", "bound", "test_err"):
            m[f"{name}_{key}"] = r[key].tolist()
        best = int(np.argmin(r["bound"]))
        m[f"best_bound_{name}"] = float(r["bound"][best])
        m[f"best_bits_{name}"] = float(r["bits"][best])
        m[f"best_train_err_{name}"] = float(r["train_err"][best])
        m[f"best_test_err_{name}"] = float(r["test_err"][best])
        progress(i + 1, 2)
    return m


# ---------------------------------------------------------------------------------------------------------

_DIGITS = "uses scikit-learn's bundled digits; the paper's CIFAR-10/100 and ResNet runs need downloads and a GPU"
EXPERIMENTS = [
    Experiment(
        name="polynomial",
        description="Degree-150 Legendre regression with penalty alpha sum_j gamma^j w_j^2 vs uniform ridge, "
                    "cubic least squares and the min-norm interpolant on a simple, a structured and a pure-noise "
                    "target at n = 10, 30, 100.",
        config=PolynomialConfig,
        run=run_polynomial,
        presets={"smoke": {"n_train": (10, 30)}, "quick": {}, "full": {}},
        seeds={"smoke": 2, "quick": 5, "full": 20},
        figures=polynomial_figures,
        fidelity={
            "smoke": Fidelity("mechanism", "our targets, gamma=1.05, alpha=1e-8, n in {10, 30}; Fig. 1a-c's targets, "
                                           "gamma, n and x-range were not retrieved"),
            "quick": Fidelity("mechanism", "our targets (sin(3x)cos(9x^2), x + cos(pi x) + noise, N(0, 1)), "
                                           "gamma=1.05, alpha=1e-8, n in {10, 30, 100} stand in for Fig. 1a-c's "
                                           "unretrieved settings"),
            "full": Fidelity("mechanism", "as quick with 20 seeds; the paper's settings are still unknown"),
        },
    ),
    Experiment(
        name="gp_label_noise",
        description="RBF GP regression on centred one-hot digits labels with 0-100% random labels: train/test "
                    "accuracy, log marginal likelihood and a PAC-Bayes-kl bound on the Gibbs classifier.",
        config=GPConfig,
        run=run_gp,
        presets={"smoke": {"n_train": 300}, "quick": {}, "full": {}},
        seeds={"smoke": 2, "quick": 5, "full": 10},
        figures=gp_figures,
        fidelity={
            "smoke": Fidelity("mechanism", "RBF GP on 300 digits stands in for Fig. 1d's GP on CIFAR-10"),
            "quick": Fidelity("mechanism", "RBF GP on 1000 digits (5 label-noise levels) stands in for Fig. 1d's GP "
                                           "on CIFAR-10"),
            "full": Fidelity("mechanism", "as quick with 10 seeds; still digits instead of CIFAR-10"),
        },
        full_requirements="The paper's version uses CIFAR-10 (" + _DIGITS + ").",
    ),
    Experiment(
        name="double_descent",
        description="Min-norm least squares on p ReLU random features (digits, n = 400, p = 40..8000): test MSE, "
                    "test error and effective dimensionality against p.",
        config=DoubleDescentConfig,
        run=run_double_descent,
        presets={"smoke": {"n_train": 100, "p_min": 10, "p_max": 1000, "n_grid": 10}, "quick": {}, "full": {}},
        seeds={"smoke": 2, "quick": 5, "full": 10},
        figures=double_descent_figures,
        fidelity={
            "smoke": Fidelity("mechanism", "ReLU random features on 100 digits, p up to 1000; Fig. 1g's data and "
                                           "sizes were not retrieved"),
            "quick": Fidelity("mechanism", "ReLU random features on 400 digits, p = 40..8000, stand in for Fig. 1g's "
                                           "linear random-feature model (its data and sizes were not retrieved)"),
            "full": Fidelity("mechanism", "as quick with 10 seeds"),
        },
        full_requirements="The paper's Fig. 1f is a ResNet-18 width sweep on CIFAR-100 (" + _DIGITS + ").",
    ),
    Experiment(
        name="compression",
        description="Tanh MLP trained in a random k-dim subspace, quantised to 16 levels and arithmetic coded; "
                    "countable-hypothesis kl bound on true vs random digits labels.",
        config=CompressionConfig,
        run=run_compression,
        presets={"smoke": {"n_train": 400, "compression.dims": (8, 16), "compression.steps": 100}, "quick": {},
                 "full": {"compression.steps": 2000}},
        seeds={"smoke": 2, "quick": 5, "full": 10},
        figures=compression_figures,
        fidelity={
            "smoke": Fidelity("mechanism", "a 2,410-parameter MLP on 400 digits, subspaces k in {8, 16}, 100 steps, "
                                           "stands in for Lotfi et al.'s CIFAR-10 subspace compression"),
            "quick": Fidelity("mechanism", "a 2,410-parameter MLP on 1300 digits, subspaces k <= 64, 500 steps, "
                                           "stands in for Lotfi et al.'s CIFAR-10 compression (thousands of "
                                           "subspace dimensions)"),
            "full": Fidelity("mechanism", "as quick with 2000 steps and 10 seeds; still digits and k <= 64"),
        },
        full_requirements="Lotfi et al.'s CIFAR-10 / LLM-scale bounds need the datasets and a GPU (" + _DIGITS + ").",
    ),
]

# Panel letters follow the paper's Fig. 1: (a) simple, (b) complex structured, (c) pure noise (polynomial), (d) GP on
# CIFAR-10, (e) ResNet-20 marginal likelihood, (f) ResNet-18 double descent, (g) linear random features. Quoted text
# is the caption's (or the abstract's) wording; every threshold is ours (the paper's figures give no numbers).
_CAPTION = "Fig. 1 caption, second-hand (verbatim quote in a reproducibility sheet; panel titles first-hand)"
_BOUNDS = "second-hand: Sec. 3 per a machine-generated paper note and review (the section was not read first-hand)"
_RATIO_TIE = "ratio metric (no paper number); within 5% of the 1.25x bar makes no difference"
_MECH_GP = ("the panel shows a mechanism (a GP fits any labels, yet generalisation and marginal likelihood track "
            "label noise) that does not depend on CIFAR-10 or its size")
_MECH_DD = "double descent at the interpolation threshold p ~ n is a mechanism of any min-norm random-feature model"
CLAIMS = [
    # every seed: interpolating pure noise is a per-run property of the near-ridgeless fit; it holds by
    # construction: gamma was chosen (from the inputs only) so that every singular value^2 of the n = 100 design is
    # >= 1e3 alpha, which bounds the relative train residual by about (1e-3)^2 = 1e-6
    Claim(id="poly_fits_noise",
          statement="A 150th-order polynomial with order-dependent regularisation fits pure noise: "
                    "train MSE below 1e-6 of var(y) at every n.",
          paper_value='"able to perfectly fit (c) pure noise" (Fig. 1c)', experiment="polynomial",
          metric="noise_train_mse_over_var_max", op="<=", threshold=1e-6, aggregate="every_seed",
          kind="check", source="Fig. 1c (the paper states it; here it holds by construction, see the comment)"),
    Claim(id="poly_soft_generalises",
          statement="The same model generalises on structured data: its test MSE is within 1.25x "
                    "of the best competitor on both structured targets at every n.",
          paper_value='"reasonably describes (a) simple and (b) complex structured data" (Fig. 1a-b)',
          experiment="polynomial", metric="soft_worst_ratio_to_best_competitor", op="<=", threshold=1.25,
          resolution=0.05, resolution_reason=_RATIO_TIE,
          kind="paper", source=_CAPTION + ", panels (a)-(b); the 1.25x bar is ours",
          fair_at="mechanism",
          fair_at_reason="the panels show qualitatively that a soft-bias polynomial fits structured 1-D data; their "
                         "targets, gamma and n were not retrieved, so any such target is a fair instance"),
    Claim(id="poly_no_hard_competitor",
          statement="No single competitor (uniform ridge, cubic LS, min-norm interpolant) is within "
                    "1.25x of the best other model across all structured targets and n.",
          paper_value='"rather than restricting the hypothesis space to avoid overfitting, embrace a flexible '
                      'hypothesis space, with a soft preference for simpler solutions" (abstract)',
          experiment="polynomial", metric="best_competitor_worst_ratio", op=">=", threshold=1.25, resolution=0.05,
          resolution_reason=_RATIO_TIE,
          kind="ours",
          source="abstract (the thesis); the paper runs no hard-bias competitors, so this test is ours"),
    # every seed: interpolation of the training labels (train accuracy 1.0) must hold in every run
    Claim(id="gp_fits_any_labels",
          statement="A GP with an RBF kernel reaches train accuracy 1.0 at every label-noise level.",
          paper_value='"perfectly fitting noisy labels" (Fig. 1d, GP on CIFAR-10)', experiment="gp_label_noise",
          metric="train_acc_min", op=">=", threshold=0.9995, aggregate="every_seed",
          kind="paper", source=_CAPTION + ", panel (d)", fair_at="mechanism", fair_at_reason=_MECH_GP),
    # every seed: per-run monotonicity of the curve ("decreases at every step"), a min over steps
    Claim(id="gp_test_acc_falls",
          statement="GP test accuracy decreases at every step of label noise.",
          paper_value='"exactly reproduces the CIFAR-10 results in Zhang et al. (2016)" (Fig. 1d): test accuracy '
                      'falls as labels are randomised',
          experiment="gp_label_noise", metric="test_acc_min_decrease", op=">=", threshold=0.0,
          aggregate="every_seed",
          kind="paper", source=_CAPTION + ", panel (d)", fair_at="mechanism", fair_at_reason=_MECH_GP),
    # every seed: per-run monotonicity of the curve ("decreases at every step"), a min over steps
    Claim(id="gp_marglik_falls",
          statement="GP log marginal likelihood decreases at every step of label noise.",
          paper_value='"the marginal likelihood ... decreases with more altered labels" (Fig. 1d for the GP; 1e, the '
                      'ResNet-20, is not reproduced)',
          experiment="gp_label_noise", metric="lml_min_decrease", op=">=", threshold=0.0, aggregate="every_seed",
          kind="paper", source=_CAPTION + ", panel (d)", fair_at="mechanism", fair_at_reason=_MECH_GP),
    # every seed: a generalisation bound is a per-run certificate; an average of bounds is not a bound
    Claim(id="gp_bound_true_nonvacuous",
          statement="PAC-Bayes bound (Gibbs classifier) is non-vacuous on true labels: < 0.6.",
          paper_value="non-vacuous bound on true labels (Sec. 3)", experiment="gp_label_noise", metric="bound_p0",
          op="<=", threshold=0.6, aggregate="every_seed",
          kind="paper", source=_BOUNDS + "; the 0.6 bar is ours", fair_at="mechanism",
          fair_at_reason="the paper argues that PAC-Bayes bounds of models with a soft simplicity bias are "
                         "non-vacuous on real labels; it gives no data set size or bound level for a GP"),
    # every seed: vacuity of the per-run bound certificate must hold in every run
    Claim(id="gp_bound_random_vacuous",
          statement="PAC-Bayes bound is vacuous on fully random labels: > 0.85.",
          paper_value="vacuous on random labels (Sec. 3)", experiment="gp_label_noise", metric="bound_p1", op=">=",
          threshold=0.85, aggregate="every_seed",
          kind="paper", source=_BOUNDS, fair_at="mechanism",
          fair_at_reason="random labels carry no structure to compress, at any scale or data set"),
    # every seed: the peak location is a discrete argmax of each run's curve (theory puts it at p = n)
    Claim(id="dd_peak_low",
          statement="Random-feature test MSE peaks at p >= 0.7 n (interpolation threshold).",
          paper_value='"linear random feature model display[s] double descent" (Fig. 1g): peak at p ~ n',
          experiment="double_descent", metric="peak_p_over_n", op=">=", threshold=0.7, aggregate="every_seed",
          kind="paper", source=_CAPTION + ", panel (g)", fair_at="mechanism", fair_at_reason=_MECH_DD),
    # every seed: the peak location is a discrete argmax of each run's curve (theory puts it at p = n)
    Claim(id="dd_peak_high",
          statement="Random-feature test MSE peaks at p <= 1.4 n.",
          paper_value='"linear random feature model display[s] double descent" (Fig. 1g): peak at p ~ n',
          experiment="double_descent", metric="peak_p_over_n", op="<=", threshold=1.4, aggregate="every_seed",
          kind="paper", source=_CAPTION + ", panel (g)", fair_at="mechanism", fair_at_reason=_MECH_DD),
    Claim(id="dd_second_descent",
          statement="Second descent: test MSE at p = 8000 is below half the peak.",
          paper_value='"linear random feature model display[s] double descent" (Fig. 1g): error descends again for '
                      'p >> n',
          experiment="double_descent", metric="mse_largest_over_peak", op="<=", threshold=0.5, resolution=0.025,
          resolution_reason="ratio metric (no paper number); 5% of the 0.5 bar does not matter",
          kind="paper", source=_CAPTION + ", panel (g)", fair_at="mechanism", fair_at_reason=_MECH_DD),
    # every seed: a compression bound is a per-run certificate; an average of bounds is not a bound
    Claim(id="compression_true_nonvacuous",
          statement="Compression bound on true labels is non-vacuous: best bound < 0.5.",
          paper_value="compression bounds are non-vacuous on real labels (Sec. 3's argument; the paper reports no "
                      "bound of its own and cites Lotfi et al. (2022a)'s 16.6% on CIFAR-10, another paper's number)",
          experiment="compression", metric="best_bound_true", op="<=", threshold=0.5, aggregate="every_seed",
          kind="paper",
          source="second-hand: a machine-generated paper note; the paper cites Lotfi et al. (2022a)'s 16.6% "
                 "CIFAR-10 bound, another paper's number",
          fair_at="paper",
          fair_at_reason="the non-vacuous bounds the paper cites rest on Lotfi et al.'s protocol (CIFAR-10, "
                         "subspaces of thousands of dimensions); a k <= 64 subspace of a tiny MLP is not that "
                         "protocol"),
    # every seed: vacuity of the per-run bound certificate must hold in every run
    Claim(id="compression_random_vacuous",
          statement="Compression bound on random labels is vacuous: best bound > 0.85.",
          paper_value="random labels cannot be compressed (Sec. 3)", experiment="compression",
          metric="best_bound_random", op=">=", threshold=0.85, aggregate="every_seed",
          kind="paper", source=_BOUNDS, fair_at="mechanism",
          fair_at_reason="random labels are incompressible (a counting argument), at any scale or data set"),
]

API_EXAMPLE = """
import numpy as np
from icml25.papers.soft_inductive_bias import OrderDependentPolyRegressor, kl_inverse, pac_bayes_kl_bound

rng = np.random.default_rng(0)
x = np.sort(rng.uniform(-1, 1, 20))[:, None]
y = x[:, 0] + np.cos(np.pi * x[:, 0]) + 0.1 * rng.normal(size=20)
model = OrderDependentPolyRegressor(degree=150, gamma=1.05, alpha=1e-8).fit(x, y)
print("train MSE", np.mean((model.predict(x) - y) ** 2), " penalty", model.penalty_)
print("kl^-1(0.1, 0.05) =", kl_inverse(0.1, 0.05))
print("PAC-Bayes-kl bound, R_hat=0.05, KL=100 nats, n=10000:", pac_bayes_kl_bound(0.05, 100.0, 10000, 0.05))
"""
