"""PAS reproduction: the synthetic good/bad-predictor study and a bundled-data study.

Every estimator runs on the same replicate data. A replicate's compound MSE is
``mean_j (theta_hat_j - theta_j)^2``; a seed's metric is the mean over its
replicates; claims use the 95% interval over seeds. Settings and claim thresholds
were fixed before the first run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar

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
from icml25.papers.pas.data import (
    CompoundMeanData,
    PredictionProblems,
    digits_problems,
    gaussian_synthetic,
    load_amazon_reviews,
    load_galaxy_zoo,
    split_labelled,
    split_labelled_fraction,
)
from icml25.papers.pas.estimators import (
    PASConfig,
    classical_mean_pointestimate,
    cure,
    pas_fit,
    prediction_mean_pointestimate,
    pt_ppi_mean_pointestimate,
    shrink_to_grand_mean_pointestimate,
    shrinkage_only_pointestimate,
    vanilla_ppi_mean_pointestimate,
)
from icml25.papers.pas.figures import digits_figures, paper_data_figures, synthetic_figures

BASELINES_TO_BEAT = ("classical", "pt", "shrinkage", "grand_mean")
"""The baselines of the claims "PAS is lowest": the official benchmark's estimators that do not return the
prediction mean or vanilla PPI (reported, not gated: one is the limit omega = 0, the other lambda = 1)."""


def compound_mse(data: CompoundMeanData, use_known_moments: bool = False, pas: PASConfig | None = None
                 ) -> dict[str, float]:
    """Compound MSE of every method on one replicate.

    With ``use_known_moments`` the moment-based methods (PT-PPI, shrinkage-only, PAS)
    use the data's true moments, as in the paper's synthetic study; PAS and
    shrinkage-only with estimated moments are reported too (``pas_estimated_moments``
    and ``shrinkage_estimated_moments`` with ``pas.variance``, ``pas_estimated_per_problem``
    with per-problem A_j). Without known moments, ``pas.variance`` is the estimation of A_j
    for shrinkage-only and PAS, and ``pas_per_problem`` is reported as well. PAS and the
    baselines that are its stages (PT-PPI, shrinkage-only, shrink-to-grand-mean) take
    ``pas``'s settings (default :class:`PASConfig`, the official ones).
    """
    pas = pas or PASConfig()
    args = data.arrays
    known = data.known_moments if use_known_moments else None
    if use_known_moments and known is None:
        raise ValueError("use_known_moments needs data whose true moments are known")
    settings = asdict(pas)  # variance, clip_lambda, cutoff, share_var
    per_problem = {**settings, "variance": "per_problem"}
    shrinkage = {"cutoff": pas.cutoff, "share_var": pas.share_var, "variance": pas.variance}
    estimates = {
        "classical": classical_mean_pointestimate(*args),
        "prediction": prediction_mean_pointestimate(*args),
        "ppi": vanilla_ppi_mean_pointestimate(*args),
        "pt": pt_ppi_mean_pointestimate(*args, clip_lambda=pas.clip_lambda, share_var=pas.share_var,
                                        known_moments=known),
        "shrinkage": shrinkage_only_pointestimate(*args, **shrinkage, known_moments=known),
        "grand_mean": shrink_to_grand_mean_pointestimate(*args, **settings, known_moments=known),
        "pas": pas_fit(*args, **settings, known_moments=known).theta,
    }
    if use_known_moments:
        estimates["pas_estimated_moments"] = pas_fit(*args, **settings).theta
        estimates["pas_estimated_per_problem"] = pas_fit(*args, **per_problem).theta
        estimates["shrinkage_estimated_moments"] = shrinkage_only_pointestimate(*args, **shrinkage)
    else:
        estimates["pas_per_problem"] = pas_fit(*args, **per_problem).theta
    return {k: float(np.mean((v - data.theta) ** 2)) for k, v in estimates.items()}


def _summarise(per_replicate: list[dict[str, float]], prefix: str) -> Metrics:
    """Seed-level metrics: mean MSE per method and the paired comparisons the claims use."""
    mse = {k: float(np.mean([r[k] for r in per_replicate])) for k in per_replicate[0]}
    best = min(mse[k] for k in BASELINES_TO_BEAT)
    out: Metrics = {f"{prefix}mse_{k}": v for k, v in mse.items()}
    out[f"{prefix}pas_minus_best_baseline"] = mse["pas"] - best
    out[f"{prefix}pas_over_best_baseline"] = mse["pas"] / best
    out[f"{prefix}pas_over_prediction"] = mse["pas"] / mse["prediction"]
    out[f"{prefix}pas_minus_pt"] = mse["pas"] - mse["pt"]
    return out


@dataclass
class SyntheticConfig(ExperimentConfig):
    m: int = 100
    """Number of problems."""
    n: int = 20
    """Labelled points per problem."""
    N: int = 80
    """Unlabelled points per problem."""
    replicates: int = 100
    """Independent data sets per seed (fresh mu_j, X, Y each time)."""
    known_moments: bool = True
    """Give PT-PPI, shrinkage-only and PAS the true variances (the paper's synthetic setting)."""
    pas: PASConfig = field(default_factory=PASConfig)
    """PAS's settings, shared by the baselines that are its stages (``pas.variance``, ``pas.clip_lambda``,
    ``pas.cutoff``, ``pas.share_var``); with known moments ``pas.variance`` only affects the estimated-moment
    variants."""

    def validate(self) -> None:
        super().validate()
        # each problem needs two labelled points (sample variances) and one unlabelled point;
        # bounds: a job beyond these would need > ~100 GB or days (m (n + N) draws per data set, a Python loop
        # over replicates, each with a CURE search)
        check_fields(self, positive=("m", "N", "replicates"), at_least={"n": 2},
                     at_most={"m": 10**6, "n": 10**6, "N": 10**7, "replicates": 10**6})


LAMBDA_GRID = np.linspace(0.0, 1.0, 2001)
"""The lambdas over which :func:`theory_quantities` minimises the PT-PPI variance (independently of the method's
closed-form lambda_j)."""


def theory_quantities(data: CompoundMeanData, pas: PASConfig | None = None) -> dict[str, float]:
    """What the theory says on one replicate with known moments, computed beside the method (with the method's
    settings ``pas``, default :class:`PASConfig`, so the CURE check concerns the lambdas the experiment uses).

    * ``cure``, ``loss``: CURE / m and the compound loss of PAS at a fixed omega (the median A_j, which depends on
      the true moments only, not on Y): CURE is unbiased for the risk (abstract: "an unbiased estimate of risk"),
      so over many replicates their means agree. Removing CURE's correlation term biases CURE down.
    * ``pt_min_variance``: mean_j of min over lambda in [0, 1] (a grid, :data:`LAMBDA_GRID`) of the PT-PPI
      variance ``sigma2/n + lambda^2 tau2 (n+N)/(nN) - 2 lambda gamma/n`` with the true moments: the MSE PT-PPI
      reaches when its lambda_j is the variance-minimising (power-tuned) one.
    """
    if data.known_moments is None:
        raise ValueError("theory_quantities needs data whose true moments are known")
    fit = pas_fit(*data.arrays, known_moments=data.known_moments, **asdict(pas or PASConfig()))
    omega = float(np.median(fit.variances))
    m = fit.theta.size
    risk_estimate = cure(omega, fit.theta_pt, fit.prediction_mean, fit.variances, fit.lambdas,
                         fit.variance_moments.var_f, fit.moments.N) / m
    w = omega / (fit.variances + omega)
    loss = float(np.mean((w * fit.theta_pt + (1 - w) * fit.prediction_mean - data.theta) ** 2))
    var_y, cov_yf, var_f = data.known_moments
    n, N = fit.moments.n[:, None], fit.moments.N[:, None]
    lam = LAMBDA_GRID[None, :]
    variances = var_y[:, None] / n + lam**2 * var_f[:, None] * (n + N) / (n * N) - 2 * lam * cov_yf[:, None] / n
    return {"cure": float(risk_estimate), "loss": loss, "pt_min_variance": float(np.mean(variances.min(axis=1)))}


def run_synthetic(cfg: SyntheticConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Both predictor regimes of the Gaussian model on the same random draws.

    Besides the MSEs: ``*_cure_rel_bias`` = (mean CURE/m - mean loss) / mean loss at a fixed omega (0 in
    expectation: CURE is unbiased), ``*_cure_abs_rel_bias`` its absolute value, and ``*_pt_over_min_variance`` =
    PT-PPI's MSE over the smallest variance any lambda in [0, 1] gives (1 in expectation: power tuning).
    """
    metrics: Metrics = {}
    for good in (True, False):
        prefix = "good_" if good else "bad_"
        rng = np.random.default_rng([seed, 7])
        reps, theory = [], []
        for r in range(cfg.replicates):
            data = gaussian_synthetic(cfg.m, cfg.n, cfg.N, good_predictor=good, seed=int(rng.integers(2**63)))
            reps.append(compound_mse(data, use_known_moments=cfg.known_moments, pas=cfg.pas))
            theory.append(theory_quantities(data, cfg.pas))
            progress(r + 1 + (0 if good else cfg.replicates), 2 * cfg.replicates)
        metrics.update(_summarise(reps, prefix))
        mean = {k: float(np.mean([t[k] for t in theory])) for k in theory[0]}
        metrics[f"{prefix}cure_rel_bias"] = (mean["cure"] - mean["loss"]) / mean["loss"]
        metrics[f"{prefix}cure_abs_rel_bias"] = abs(metrics[f"{prefix}cure_rel_bias"])
        metrics[f"{prefix}pt_over_min_variance"] = metrics[f"{prefix}mse_pt"] / mean["pt_min_variance"]
    return metrics


@dataclass
class DigitsConfig(ExperimentConfig):
    n_clusters: int = 30
    """Problems: k-means clusters of the evaluation images."""
    n_labelled: int = 10
    """Labelled images per problem; the rest of the cluster is unlabelled."""
    train_fraction: float = 0.3
    """Share of the images used to fit the ridge predictor (never used for estimation)."""
    replicates: int = 100
    """Random labelled/unlabelled splits per seed."""
    pas: PASConfig = field(default_factory=PASConfig)
    """PAS's settings, shared by the baselines that are its stages (``pas.variance``: the estimation of A_j for
    shrinkage-only and PAS, ``pooled`` as the official code or ``per_problem``; ``pas.clip_lambda``,
    ``pas.cutoff``, ``pas.share_var``)."""

    def validate(self) -> None:
        super().validate()
        # bounds: a job beyond these would need > ~100 GB or days (k-means clusters and labelled points far beyond
        # any data set here, a Python loop over replicates, each with a CURE search)
        check_fields(self, positive=("n_clusters", "replicates"), at_least={"n_labelled": 2},
                     at_most={"n_clusters": 10**4, "n_labelled": 10**5, "replicates": 10**6},
                     open_fraction=("train_fraction",))


@dataclass
class PaperDataConfig(ExperimentConfig):
    """The paper's real-data studies (Galaxy Zoo, Amazon Food Reviews) on the official repository's prediction files."""

    replicates: int = 20
    """Random labelled/unlabelled splits per seed (seed s runs the official trials 42 + 20 s, ..., 42 + 20 s + 19)."""
    labelled_fraction: float = 0.2
    """Labelled share of every problem (the official ``train_test_split=0.2``; theta is the unlabelled mean)."""
    pas: PASConfig = field(default_factory=PASConfig)
    """PAS's settings, shared by the baselines that are its stages (as in ``digits``)."""

    SUFFIXES: ClassVar[tuple[str, ...]] = ()

    @property
    def path(self) -> str:
        """The study's file (its own setting)."""
        raise NotImplementedError

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("replicates",), at_most={"replicates": 10**6},
                     open_fraction=("labelled_fraction",))
        if self.path and (not Path(self.path).is_file() or Path(self.path).suffix.lower() not in self.SUFFIXES):
            name = "galaxy_path" if isinstance(self, GalaxyConfig) else "amazon_path"
            raise ConfigError(f"{type(self).__name__}.{name} must be an existing {'/'.join(self.SUFFIXES)} file, "
                              f"got {self.path!r}")


@dataclass
class GalaxyConfig(PaperDataConfig):
    SUFFIXES: ClassVar[tuple[str, ...]] = (".csv",)
    galaxy_path: str = ""
    """The official ``data/galaxy/galaxy_test_prediction.csv`` (see :func:`load_galaxy_zoo`)."""

    @property
    def path(self) -> str:
        return self.galaxy_path


@dataclass
class AmazonConfig(PaperDataConfig):
    SUFFIXES: ClassVar[tuple[str, ...]] = (".h5", ".hdf5", ".npz")
    amazon_path: str = ""
    """The official ``data/amazon/amazon_review.h5`` (h5py), or the same arrays as ``.npz`` (see
    :func:`load_amazon_reviews`)."""

    @property
    def path(self) -> str:
        return self.amazon_path


def load_paper_data(path: str | Path) -> PredictionProblems:
    """The Galaxy Zoo CSV (``.csv``) or the Amazon reviews file (``.h5``/``.hdf5``/``.npz``), by suffix."""
    return load_galaxy_zoo(path) if Path(path).suffix.lower() == ".csv" else load_amazon_reviews(path)


def run_digits(cfg: DigitsConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Compound estimation of mean digit value per cluster, with ridge predictions."""
    problems = digits_problems(cfg.n_clusters, cfg.train_fraction, min_size=cfg.n_labelled + 2, seed=seed)
    rng = np.random.default_rng([seed, 11])
    splits = (split_labelled(problems, cfg.n_labelled, rng) for _ in range(cfg.replicates))
    return _run_splits(cfg, problems, splits, progress)


def run_paper_data(cfg: PaperDataConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """The paper's real-data study on one file: the official benchmark's splits (trial i: seed 42 + i)."""
    problems = load_paper_data(cfg.path)
    splits = (split_labelled_fraction(problems, cfg.labelled_fraction, seed=42 + seed * cfg.replicates + r)
              for r in range(cfg.replicates))
    return _run_splits(cfg, problems, splits, progress)


def _run_splits(cfg: DigitsConfig | PaperDataConfig, problems: PredictionProblems, splits,
                progress: ProgressFn) -> Metrics:
    """Every estimator's compound MSE over the splits, and the predictor's R^2 over all points."""
    reps = []
    for r, data in enumerate(splits):
        reps.append(compound_mse(data, pas=cfg.pas))
        progress(r + 1, cfg.replicates)
    metrics = _summarise(reps, "")
    metrics["n_problems"] = float(len(problems.y))
    # the predictor learned: R^2 of f over all evaluation points against the trivial predictor (their mean)
    y_all, f_all = np.concatenate(problems.y), np.concatenate(problems.pred)
    metrics["predictor_r2"] = float(1 - np.sum((y_all - f_all) ** 2) / np.sum((y_all - y_all.mean()) ** 2))
    return metrics


EXPERIMENTS = [
    Experiment(
        name="synthetic",
        description="Gaussian model of the paper (mu_j ~ U(-1,1), theta_j = mu_j^2) with the good predictor "
                    "x^2 and the bad predictor |x|; compound MSE of seven estimators on the same draws, with the "
                    "true variances known as in the official run_synthetic.py (PAS with estimated moments is "
                    "reported too).",
        config=SyntheticConfig,
        run=run_synthetic,
        presets={"smoke": {"m": 40, "replicates": 4}, "quick": {}, "full": {"replicates": 100}},
        seeds={"smoke": 2, "quick": 5, "full": 20},
        fidelity={
            "smoke": Fidelity("reduced", "the paper's Gaussian model with 40 of its 100 problems, 4 data sets per "
                                         "seed (8 of the official 200 trials)"),
            "quick": Fidelity("paper", "the paper's Gaussian model (m=100, n=20, N=80, true moments as the official "
                                       "run_synthetic.py, computed in closed form), 500 data sets (official: 200)"),
            "full": Fidelity("paper", "as quick with 2,000 data sets"),
        },
        figures=synthetic_figures,
    ),
    Experiment(
        name="digits",
        description="scikit-learn digits: problems are k-means clusters, Y the digit value, f a ridge "
                    "regression fitted on a disjoint 30% of the images; 10 labelled images per problem; moments "
                    "estimated (A_j pooled, as the official code). The paper's Galaxy Zoo and Amazon data run in "
                    "paper_data_galaxy / paper_data_amazon.",
        config=DigitsConfig,
        run=run_digits,
        presets={"smoke": {"replicates": 4}, "quick": {}, "full": {"replicates": 200}},
        seeds={"smoke": 2, "quick": 5, "full": 10},
        fidelity={
            "smoke": Fidelity("mechanism", "scikit-learn digits (k-means clusters as problems, a ridge predictor) "
                                           "stand in for the paper's Galaxy Zoo / Amazon data; 4 splits per seed"),
            "quick": Fidelity("mechanism", "scikit-learn digits (k-means clusters as problems, a ridge predictor, "
                                           "10 labelled per problem) stand in for the paper's Galaxy Zoo / Amazon "
                                           "data"),
            "full": Fidelity("mechanism", "digits as quick with 200 splits per seed; the paper's data run in "
                                          "paper_data_galaxy / paper_data_amazon"),
        },
        figures=digits_figures,
    ),
    *[Experiment(
        name=f"paper_data_{study}",
        description=f"The paper's {title} study on the official repository's prediction file ({setting}): "
                    f"{what}; 20% of each problem labelled, theta its unlabelled mean, the official benchmark's "
                    "splits (trial i: seed 42 + i).",
        config=config,
        run=run_paper_data,
        presets={"smoke": {"replicates": 4}, "quick": {"replicates": 20}, "full": {"replicates": 20}},
        seeds={"smoke": 2, "quick": 5, "full": 10},
        fidelity={
            "smoke": Fidelity("mechanism", "4 splits per seed of the given file"),
            "quick": Fidelity("paper", f"the official {title} protocol (20% labelled, the official splits) on "
                                       "the paper's data, 100 of its 200 trials"),
            "full": Fidelity("paper", f"the official {title} protocol on the paper's data, its 200 trials "
                                      "(seeds 42..241)"),
        },
        figures=paper_data_figures,
        full_requirements=f"The official repository's {file} (github.com/listar2000/prediction-powered-adaptive-"
                          f"shrinkage; not bundled, nothing downloaded): --set {setting}=PATH{extra}. About a "
                          "CPU-second per split.",
        data_setting=setting,
    ) for study, title, config, setting, file, what, extra in (
        ("galaxy", "Galaxy Zoo", GalaxyConfig, "galaxy_path", "data/galaxy/galaxy_test_prediction.csv",
         "problems are the WVT_BIN subgroups, Y = 1 for a spiral galaxy (classes 3-5), f the ResNet's prediction", ""),
        ("amazon", "Amazon Food Reviews", AmazonConfig, "amazon_path", "data/amazon/amazon_review.h5",
         "problems are products, Y the star rating, f the fine-tuned BERT's predicted rating",
         " (h5py needed for .h5; the same (2, n) arrays per product as .npz need nothing)"),
    )],
]

_NOT_RETRIEVED = "MSE tables not retrieved"
_ADAPTS = '"PAS adapts to the reliability of the ML predictions" (abstract; Sec. 6.1 synthetic study)'
# The baselines of the "lowest" claims gained shrink-to-grand-mean (the official benchmark's "shrinkage_mean") after
# the first runs; the thresholds and resolutions below are the ones fixed before the first run, unchanged.
# The paper's MSE tables were not retrieved: no claim carries a paper number. The four synthetic ranking claims alone
# cannot tell a wrong implementation from a right one: with CURE's correction removed, or lambda = n/(n+N) instead of
# N/(n+N), all four stay on the same side of their thresholds (facts note, 2026-12-04). They are therefore gated by
# four checks of the theory the method rests on (pre-registered 2026-12-05, before any run with them): CURE is
# unbiased for the risk at a fixed omega (the correction removed: relative bias about -0.18 with the good predictor)
# and PT-PPI reaches the smallest variance over lambda in [0, 1] (lambda = n/(n+N): MSE about 1.11-1.12x that
# minimum). A wrong implementation then leaves the ranking claims NOT_TESTED instead of PASS.
_THEORY_GOOD = ("good_cure_unbiased", "good_pt_min_variance")
_THEORY_BAD = ("bad_cure_unbiased", "bad_pt_min_variance")
_CURE_RES = ("the per-seed relative bias has a sampling SD of about 0.008 at 100 data sets; a 1% bias is below what "
             "matters, the correction removed gives -0.18 (good f)")
_PT_RES = ("MSE ratio; its sampling SD over 100 data sets x 100 problems is about 1.4%; lambda = n/(n+N) gives "
           "1.11-1.12")
_SYNTH = ("the ranking is Sec. 6.1's result for its Gaussian model at m=100, n=20, N=80; fewer problems change how "
          "much any shrinkage estimator gains")
CLAIMS = [
    Claim(id="good_cure_unbiased", statement="Good predictor: CURE is unbiased for the compound risk at a fixed omega "
          "(median A_j): |mean CURE/m - mean loss| / mean loss <= 5% over a seed's data sets.",
          paper_value='"the amount of shrinkage is determined by minimizing an unbiased estimate of risk" (abstract)',
          experiment="synthetic", metric="good_cure_abs_rel_bias", op="<=", threshold=0.05, kind="check",
          aggregate="mean", resolution=0.01, resolution_reason=_CURE_RES),
    Claim(id="bad_cure_unbiased", statement="Bad predictor: CURE is unbiased for the compound risk at a fixed omega "
          "(median A_j), relative bias <= 5%.",
          paper_value='"an unbiased estimate of risk" (abstract)', experiment="synthetic",
          metric="bad_cure_abs_rel_bias", op="<=", threshold=0.05, kind="check", aggregate="mean", resolution=0.01,
          resolution_reason=_CURE_RES),
    Claim(id="good_pt_min_variance", statement="Good predictor: PT-PPI's MSE is within 5% of the smallest variance any "
          "lambda in [0, 1] gives (power tuning picks the variance-minimising lambda_j).",
          paper_value="PT-PPI, the first stage of PAS: lambda_j minimises the variance of the PPI estimate (PPI++)",
          experiment="synthetic", metric="good_pt_over_min_variance", op="<=", threshold=1.05, kind="check",
          aggregate="mean", resolution=0.01, resolution_reason=_PT_RES),
    Claim(id="bad_pt_min_variance", statement="Bad predictor: PT-PPI's MSE is within 5% of the smallest variance any "
          "lambda in [0, 1] gives.",
          paper_value="PT-PPI, the first stage of PAS: lambda_j minimises the variance of the PPI estimate (PPI++)",
          experiment="synthetic", metric="bad_pt_over_min_variance", op="<=", threshold=1.05, kind="check",
          aggregate="mean", resolution=0.01, resolution_reason=_PT_RES),
    Claim(id="good_pas_best", statement="Good predictor: PAS's compound MSE is no larger than the best of classical, "
          "PT-PPI, shrinkage-only and shrink-to-grand-mean (paired difference <= 0).",
          paper_value=f"PAS lowest among baselines (Sec. 6.1; {_NOT_RETRIEVED})", experiment="synthetic",
          metric="good_pas_minus_best_baseline", op="<=", threshold=0.0, kind="paper", source="Sec. 6.1",
          resolution=1e-5,
          resolution_reason="~4% of the analytic prediction-mean MSE s^4 + E Var(x^2)/N = 2.7e-4 (s=0.1, N=80), the "
                            "good-f level",
          fair_at="paper", fair_at_reason=_SYNTH, requires=_THEORY_GOOD),
    Claim(id="good_pas_near_prediction", statement="Good predictor: PAS adapts to reliable predictions, its MSE within "
          "20% of the prediction mean's (the 20% is ours).", paper_value=_ADAPTS, experiment="synthetic",
          metric="good_pas_over_prediction", op="<=", threshold=1.2, kind="paper", source="abstract; Sec. 6.1",
          resolution=0.05,
          resolution_reason="MSE ratio, a 5% MSE difference is the smallest that matters (paper's ratios not "
                            "retrieved)",
          fair_at="mechanism", fair_at_reason="adapting to a reliable predictor is what CURE-tuned shrinkage does by "
                                               "design, on any compound-mean problem with a good predictor",
          requires=_THEORY_GOOD),
    Claim(id="bad_pas_best", statement="Bad predictor: PAS's compound MSE is no larger than the best of classical, "
          "PT-PPI, shrinkage-only and shrink-to-grand-mean.",
          paper_value=f"PAS lowest among baselines (Sec. 6.1; {_NOT_RETRIEVED})",
          experiment="synthetic", metric="bad_pas_minus_best_baseline", op="<=", threshold=0.0, kind="paper",
          source="Sec. 6.1", resolution=1e-4,
          resolution_reason="~4% of the analytic PT-PPI MSE ~2.6e-3 (Var eps 0.05, n=20, N=80), the bad-f level",
          fair_at="paper", fair_at_reason=_SYNTH, requires=_THEORY_BAD),
    Claim(id="bad_pas_beats_prediction", statement="Bad predictor: PAS is not fooled by biased predictions, its MSE at "
          "most half the prediction mean's (the factor 2 is ours).", paper_value=_ADAPTS,
          experiment="synthetic", metric="bad_pas_over_prediction", op="<=", threshold=0.5, kind="paper",
          source="abstract; Sec. 6.1", resolution=0.025,
          resolution_reason="MSE ratio, 5% of the threshold 0.5 (paper's ratios not retrieved)",
          fair_at="mechanism", fair_at_reason="not trusting a biased predictor is what the PT-PPI anchor and CURE do "
                                               "by design, on any compound-mean problem with a biased predictor",
          requires=_THEORY_BAD),
    Claim(id="digits_pas_best",
          statement="Bundled real data (digits): PAS's compound MSE is no larger than the best of "
          "classical, PT-PPI, shrinkage-only and shrink-to-grand-mean.",
          paper_value='"outperforms traditional and modern baselines in large-scale applications" (abstract; '
          f'{_NOT_RETRIEVED})', experiment="digits", metric="pas_minus_best_baseline", op="<=", threshold=0.0,
          kind="paper", source="abstract", resolution=0.004,
          resolution_reason="~3% of the classical MSE mean_j S_j^2/n (1-n/N_j) ~ 0.12 of the digits clusters (n=10)",
          fair_at="reduced", fair_at_reason="the claim is about the paper's applications (Galaxy Zoo, Amazon); "
                                             "fewer splits of those data still test it, a stand-in data set does not"),
    # Twins of digits_pas_best on the paper's own data (registered 2026-12-05 with the experiments, before any run on
    # them). The digits claim's resolution (0.004, ~3% of the classical MSE) is in the digits' units; on these data
    # the same rule reads as a ratio: PAS's MSE over the best baseline's, resolution 0.03.
    *[Claim(id=f"paper_data_{study}_pas_best",
            statement=f"The paper's {title} data: PAS's compound MSE is no larger than the best of classical, "
            "PT-PPI, shrinkage-only and shrink-to-grand-mean (ratio to the best baseline <= 1), over the official "
            "benchmark's splits.",
            paper_value='"outperforms traditional and modern baselines in large-scale applications" (abstract; '
            f'Sec. 6.2; {_NOT_RETRIEVED})', experiment=f"paper_data_{study}", metric="pas_over_best_baseline",
            op="<=", threshold=1.0, kind="paper", source="abstract", resolution=0.03,
            resolution_reason="as digits_pas_best (3% of a baseline's MSE), as a ratio: these data's MSE scale is "
                              "not the digits'",
            fair_at="paper", fair_at_reason=f"the {title} study's own data, split and estimators")
      for study, title in (("galaxy", "Galaxy Zoo"), ("amazon", "Amazon Food Reviews"))],
]

API_EXAMPLE = """
import numpy as np
from icml25.papers.pas import gaussian_synthetic, pas_mean_pointestimate, classical_mean_pointestimate

data = gaussian_synthetic(m=100, n=20, N=80, good_predictor=False, seed=0)
theta_hat, lambdas, omegas = pas_mean_pointestimate(data.y_labelled, data.pred_labelled, data.pred_unlabelled)
classical = classical_mean_pointestimate(data.y_labelled, data.pred_labelled, data.pred_unlabelled)
print("PAS MSE      ", np.mean((theta_hat - data.theta) ** 2))
print("classical MSE", np.mean((classical - data.theta) ** 2))
"""
