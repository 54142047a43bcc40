"""NAIAD reproduction on synthetic growth screens: small-sample regression and active learning.

* ``small_sample``: test RMSE of NAIAD (adaptive embedding size) against the official linear
  baseline (two free coefficients on s_a, s_b), the linear model with a product term, an SVR on
  the single effects, the single-effect branch alone, the embedding branch alone and NAIAD with
  a fixed d = 128, for nested training sets of increasing size, with 10% validation and 10% test
  pairs (the official ``paper_reproduce/table1`` protocol on its real screens).
* ``active_learning``: after a random start and four rounds of recommendation by MPE ('mean'),
  'std', UCB ('mean+std'), 'residual+std' and random batches (30% of the pairs never offered, as
  ``paper_reproduce/fig4``): the number of true top-100 (most negative) pairs measured (ours) and
  the official top-N TPR of "measured + predicted" over the whole screen.

The real CRISPR screens are CSV files of the official repository and cannot be fetched at
run time; the generator mimics a growth screen (see :func:`make_synthetic_screen`).
Settings and claim thresholds were fixed before the first quick run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
from sklearn.svm import SVR

from icml25.core.experiment import (
    ConfigError,
    Experiment,
    Fidelity,
    Metrics,
    ProgressFn,
    TorchConfig,
    check_fields,
    no_progress,
)
from icml25.core.paper import Claim, Summary
from icml25.core.plots import save_figure
from icml25.papers.naiad.active_learning import (
    ACQUISITIONS,
    TPR_N_VALUES,
    ActiveLearner,
    ActiveLearnerConfig,
    top_n_recall,
)
from icml25.papers.naiad.data import CombinatorialScreen, load_screen_csv, make_synthetic_screen
from icml25.papers.naiad.figures import active_learning_figure, small_sample_figure
from icml25.papers.naiad.model import NAIADConfig, NAIADRegressor, SingleEffectLinearRegressor

MODELS = ("additive", "linear_product", "svr", "pheno_only", "embed_only", "naiad_d128", "naiad")
"""Models of the small-sample study; ``naiad`` uses the adaptive embedding size. ``additive`` is the
official linear baseline (b0 + b1 s_a + b2 s_b), ``svr`` the official SVR(epsilon=0.01) on (s_a, s_b)."""

PAPER_BASELINES = ("additive", "svr")
"""The paper's own Table 1 baselines that run here (GEARS and RECOVER do not): the claim compares NAIAD with
these only. ``linear_product`` (the synthetic generator's own main-effect form), ``naiad_d128`` and the two
branches alone are reported but are not the paper's baselines."""


@dataclass
class SmallSampleConfig(TorchConfig):
    OPEN_FIELDS: ClassVar[tuple[str, ...]] = ("model.d_embed",)  # empty is valid: the package's adaptive table
    n_genes: int = 150
    """Genes in the synthetic screen (all n(n-1)/2 pairs are measured)."""
    n_train: tuple[int, ...] = (150, 400, 1000, 3000)
    """Nested training-set sizes."""
    test_frac: float = 0.1
    """Share of the pairs held out for the test RMSE (fixed per seed; official Table 1: 10%)."""
    n_val: int = 1117
    """Validation pairs used to keep the best epoch of the neural models (official: 10%, 1117 of 11,175)."""
    model: NAIADConfig = field(default_factory=lambda: NAIADConfig(n_epoch=100, d_pheno_hid=64))
    """NAIAD's training settings, shared by the neural models (``model.n_epoch``: official tutorial 100, Table 1
    notebook on Norman 500; ``model.d_pheno_hid``: H, NAIAD's 256, the Table 1 notebook's 64 on Norman;
    ``model.d_embed``: the embedding size of ``naiad`` per training size, one per ``n_train``, the Table 1
    notebook's hand-set schedule, empty for the package's adaptive table; ``model.lr``, ``model.batch_size``,
    ``model.p_dropout``, ``model.weight_decay``: the official trainer's)."""
    recall_n: int = 50
    """N of the top-N recall reported on the test pairs."""
    additive_check_n: int = 1000
    """Training size of the sanity check on a purely additive screen (0 to skip)."""

    def validate(self) -> None:
        super().validate()
        # bounds: a job beyond these would need > ~100 GB or days (n_genes (n_genes - 1) / 2 pairs, H x H layers,
        # a Python loop over epochs); sizes of pairs stay below 10**7 (a user's screen included)
        # (the model's own ranges: NAIADConfig)
        check_fields(self, positive=("n_train", "n_val", "recall_n"),
                     nonnegative=("additive_check_n",), open_fraction=("test_frac",), nonempty=("n_train",),
                     at_least={"n_genes": 3},
                     at_most={"n_genes": 10**4, "n_train": 10**7, "n_val": 10**7, "recall_n": 10**7,
                              "additive_check_n": 10**7})
        if self.model.d_embed and len(self.model.d_embed) != len(self.n_train):
            raise ConfigError(f"SmallSampleConfig.model.d_embed must be empty or hold one size per n_train, got "
                              f"model.d_embed={self.model.d_embed}, n_train={self.n_train}")
        self.check_screen()

    def check_screen(self) -> None:
        """The synthetic screen's size is known: every split must fit in it."""
        pairs = self.n_genes * (self.n_genes - 1) // 2
        n_test = int(self.test_frac * pairs)
        left = pairs - n_test - self.n_val
        if max(self.n_train) > left or self.additive_check_n > left:
            raise ConfigError(f"SmallSampleConfig.n_train must be <= the {left} pairs left after test and "
                              f"validation ({pairs} pairs of {self.n_genes} genes), got n_train={self.n_train}, "
                              f"additive_check_n={self.additive_check_n}")
        if self.recall_n > n_test:
            raise ConfigError(f"SmallSampleConfig.recall_n must be <= the {n_test} test pairs, got {self.recall_n}")


@dataclass
class PaperSmallSampleConfig(SmallSampleConfig):
    """``small_sample`` on a real screen of the paper (the experiment ``paper_data_small_sample``)."""

    data_path: str = ""
    """A real screen CSV of the official repository (``tutorials/data/<screen>_gamma.csv``: id1, id2, score; the
    single-gene effects are the rows paired with ``negative``), read by :func:`load_screen_csv`. ``n_genes`` is
    not used: the screen's own genes are."""

    def check_screen(self) -> None:
        """The screen's size is known only when it is read: check the file exists (the run checks the sizes)."""
        _check_data_path(self)


def _check_data_path(cfg: PaperSmallSampleConfig | PaperActiveLearningConfig) -> None:
    """A given screen file must exist (checked before any job runs)."""
    if cfg.data_path and not Path(cfg.data_path).is_file():
        raise ConfigError(f"{type(cfg).__name__}.data_path must be an existing CSV file, got {cfg.data_path!r}")


def _fit_predict(name: str, cfg: SmallSampleConfig, seed: int, train, val, test, n_genes: int,
                 d_auto="auto") -> np.ndarray:
    """Fit model ``name`` on ``train`` (and ``val`` for the neural models); predict ``test``.

    ``d_auto`` is the embedding size of ``naiad`` and ``embed_only`` (``'auto'``: the adaptive table)."""
    if name == "additive":
        return SingleEffectLinearRegressor(False).fit(*train).predict(*test[:2])
    if name == "linear_product":
        return SingleEffectLinearRegressor(True).fit(*train).predict(*test[:2])
    if name == "svr":  # the official Table 1 baseline: scikit-learn SVR(epsilon=0.01) on the two single effects
        return SVR(epsilon=0.01).fit(train[1], train[2]).predict(test[1])
    mode = {"pheno_only": "pheno", "embed_only": "embed"}.get(name, "both")
    d_embed = 128 if name == "naiad_d128" else d_auto
    model = NAIADRegressor.from_config(cfg.model, d_embed=d_embed, seed=seed, n_genes=n_genes, mode=mode,
                                       device=cfg.device)
    model.fit(*train, X_val=val[:2], y_val=val[2])
    return model.predict(*test[:2])


def run_small_sample(cfg: SmallSampleConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Test RMSE of every model at every training size, on one synthetic screen."""
    order = np.argsort(cfg.n_train, kind="stable")
    sizes = [int(cfg.n_train[i]) for i in order]
    d_sched = [int(cfg.model.d_embed[i]) for i in order] if cfg.model.d_embed else ["auto"] * len(sizes)
    screen = _screen(cfg, seed)
    rng = np.random.default_rng([seed, 3])
    perm = rng.permutation(len(screen))
    n_test = int(cfg.test_frac * len(screen))
    test_idx, val_idx, rest = perm[:n_test], perm[n_test:n_test + cfg.n_val], perm[n_test + cfg.n_val:]
    if sizes[-1] > rest.size:  # a real screen (data_path); the config checks the synthetic one
        raise ValueError(f"n_train {sizes[-1]} exceeds the {rest.size} pairs left after test and validation")
    test, val = screen.subset(test_idx), screen.subset(val_idx)
    rmse = {m: [] for m in MODELS}
    recall = {m: [] for m in MODELS}
    total, done = len(sizes) * len(MODELS), 0
    for k, n in enumerate(sizes):
        train = screen.subset(rest[:n])  # nested training sets
        for j, name in enumerate(MODELS):
            pred = _fit_predict(name, cfg, seed * 100 + 10 * k + j, train, val, test, screen.n_genes, d_sched[k])
            rmse[name].append(float(np.sqrt(np.mean((pred - test[2]) ** 2))))
            recall[name].append(top_n_recall(test[2], pred, cfg.recall_n))
            done += 1
            progress(done, total)
    out: Metrics = {"n_train": [float(n) for n in sizes]}
    for m in MODELS:
        out[f"rmse_{m}"] = rmse[m]
        out[f"recall_{m}"] = recall[m]
    table = np.array([rmse[m] for m in MODELS])  # (models, sizes)
    ratio = table[MODELS.index("naiad")] / table.min(axis=0)
    out["naiad_over_best_worst_n"] = float(ratio.max())  # every model, ours included (not a claim)
    out["naiad_over_best"] = ratio.tolist()
    base = np.array([rmse[m] for m in PAPER_BASELINES]).min(axis=0)  # the paper's baselines only
    out["naiad_over_best_baseline"] = (table[MODELS.index("naiad")] / base).tolist()
    out["naiad_over_best_baseline_worst_n"] = float(max(out["naiad_over_best_baseline"]))
    out["naiad_minus_d128_smallest_n"] = rmse["naiad"][0] - rmse["naiad_d128"][0]
    out["naiad_minus_additive_largest_n"] = rmse["naiad"][-1] - rmse["additive"][-1]
    out["naiad_over_linear_product_largest_n"] = rmse["naiad"][-1] / rmse["linear_product"][-1]
    if screen.y_clean is not None:
        out["noise_floor_rmse"] = float(np.sqrt(np.mean((screen.y[test_idx] - screen.y_clean[test_idx]) ** 2)))
    # sanity (synthetic screens only): an additive screen, where s_a + s_b is the truth
    if cfg.additive_check_n > 0 and not isinstance(cfg, PaperSmallSampleConfig):
        add = make_synthetic_screen(n_genes=cfg.n_genes, product_coef=0.0, interaction_scale=0.0,
                                    synergy_frac=0.0, seed=seed)
        tr, va, te = add.subset(rest[:cfg.additive_check_n]), add.subset(val_idx), add.subset(test_idx)
        r_lin = np.sqrt(np.mean((_fit_predict("additive", cfg, seed, tr, va, te, add.n_genes) - te[2]) ** 2))
        r_nai = np.sqrt(np.mean((_fit_predict("naiad", cfg, seed, tr, va, te, add.n_genes) - te[2]) ** 2))
        out["additive_screen_naiad_over_linear"] = float(r_nai / r_lin)
    return out


@dataclass
class ActiveLearningConfig(TorchConfig):
    OPEN_FIELDS: ClassVar[tuple[str, ...]] = ("model.d_embed",)  # empty is valid: the package's adaptive table
    n_genes: int = 150
    """Genes in the synthetic screen."""
    test_frac: float = 0.3
    """Share of pairs never offered for measurement (test RMSE of the ensembles; official Fig. 4: 30%)."""
    schedule: tuple[int, ...] = (300, 600, 900, 1200, 1500)
    """Cumulative number of measured pairs after each round (round 0 is random)."""
    model: NAIADConfig = field(default_factory=lambda: NAIADConfig(n_epoch=50, d_pheno_hid=64))
    """Training settings of every ensemble member (``model.n_epoch``: the Fig. 4 notebook's 200 on Norman, 100 on
    the other screens; ``model.d_pheno_hid``: H, NAIAD's 256, the Fig. 4 notebook's 64 on Norman;
    ``model.d_embed``: the embedding size per round, one per ``schedule`` entry, the Fig. 4 notebook's hand-set
    sizes, empty for the package's adaptive table; ``model.batch_size``: NAIAD's 1024, the Fig. 4 notebook's
    4096)."""
    learner: ActiveLearnerConfig = field(default_factory=ActiveLearnerConfig)
    """The ensemble loop (``learner.n_ensemble``: models per round; ``learner.beta``: UCB weight of the ensemble
    standard deviation)."""
    top_n: int = 100
    """The target: the top_n most negative measured pairs among the candidates."""
    methods: tuple[str, ...] = ("mean", "std", "mean+std", "residual+std", "random")
    """Acquisitions compared on the same random start (official Fig. 4: mean, std, residual+std, random)."""
    tpr_n: tuple[int, ...] = TPR_N_VALUES
    """N values of the official top-N TPR of measured + predicted over the whole screen (10, 15, ..., 195)."""

    def validate(self) -> None:
        super().validate()
        # bounds: a job beyond these would need > ~100 GB or days (n_genes (n_genes - 1) / 2 pairs, H x H layers,
        # ensembles retrained every round); counts of pairs stay below 10**7 (a user's screen included)
        # (the model's and the loop's own ranges: NAIADConfig, ActiveLearnerConfig)
        check_fields(self, positive=("schedule", "top_n", "tpr_n"),
                     nonempty=("schedule", "methods", "tpr_n"), at_least={"n_genes": 3},
                     at_most={"n_genes": 10**4, "schedule": 10**7, "top_n": 10**7, "tpr_n": 10**7},
                     choices={"methods": ACQUISITIONS})
        if not 0 <= self.test_frac < 1:
            raise ConfigError(f"ActiveLearningConfig.test_frac must be in [0, 1), got {self.test_frac}")
        if any(b <= a for a, b in zip(self.schedule, self.schedule[1:])):
            raise ConfigError(f"ActiveLearningConfig.schedule must be strictly increasing, got {self.schedule}")
        if self.model.d_embed and len(self.model.d_embed) != len(self.schedule):
            raise ConfigError(f"ActiveLearningConfig.model.d_embed must be empty or hold one size per schedule entry, "
                              f"got model.d_embed={self.model.d_embed}, schedule={self.schedule}")
        self.check_screen()

    def check_screen(self) -> None:
        """The synthetic screen's size is known: the schedule, the target and the TPR grid must fit in it."""
        pairs = self.n_genes * (self.n_genes - 1) // 2
        candidates = pairs - int(self.test_frac * pairs)
        if self.schedule[-1] > candidates or self.top_n > candidates:
            raise ConfigError(f"ActiveLearningConfig.schedule and top_n must be <= the {candidates} candidate "
                              f"pairs, got schedule={self.schedule}, top_n={self.top_n}")
        if max(self.tpr_n) > pairs:
            raise ConfigError(f"ActiveLearningConfig.tpr_n must be <= the {pairs} pairs, got {self.tpr_n}")


@dataclass
class PaperActiveLearningConfig(ActiveLearningConfig):
    """``active_learning`` on a real screen of the paper (the experiment ``paper_data_active_learning``)."""

    data_path: str = ""
    """A real screen CSV of the official repository (``tutorials/data/<screen>_gamma.csv``), read by
    :func:`load_screen_csv`. ``n_genes`` is not used: the screen's own genes are."""

    def check_screen(self) -> None:
        """The screen's size is known only when it is read: check the file exists."""
        _check_data_path(self)


def _screen(cfg, seed: int) -> CombinatorialScreen:
    """The real screen of a ``paper_data_*`` config, else the synthetic screen of this seed."""
    if isinstance(cfg, (PaperSmallSampleConfig, PaperActiveLearningConfig)):
        return load_screen_csv(cfg.data_path)
    return make_synthetic_screen(n_genes=cfg.n_genes, seed=seed)


def run_active_learning(cfg: ActiveLearningConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """True top-N pairs discovered per round by each acquisition, on one synthetic screen."""
    screen = _screen(cfg, seed)
    rng = np.random.default_rng([seed, 5])
    test_idx = np.sort(rng.permutation(len(screen))[: int(cfg.test_frac * len(screen))])
    candidates = np.setdiff1d(np.arange(len(screen)), test_idx)
    targets = candidates[np.argsort(screen.y[candidates], kind="stable")[: cfg.top_n]]

    def factory(s: int) -> NAIADRegressor:
        return NAIADRegressor.from_config(cfg.model, seed=s, n_genes=screen.n_genes, device=cfg.device)

    round_params = [{"d_embed": int(d)} for d in cfg.model.d_embed] if cfg.model.d_embed else None

    out: Metrics = {"expected_random_final": cfg.top_n * cfg.schedule[-1] / candidates.size}
    for i, method in enumerate(cfg.methods):
        learner = ActiveLearner(factory, n_ensemble=cfg.learner.n_ensemble, method=method, beta=cfg.learner.beta,
                                round_params=round_params)
        hist = learner.run(screen, list(cfg.schedule), seed=seed, test_idx=test_idx, tpr_n=cfg.tpr_n)
        found = hist.found(targets)
        out[f"found_{method}"] = [float(f) for f in found]
        out[f"found_final_{method}"] = float(found[-1])
        out[f"test_rmse_{method}"] = hist.test_rmse  # every arm trains an ensemble per round (official loop)
        out[f"tpr_{method}"] = [float(t.mean()) for t in hist.tpr]  # mean over the N grid, per round
        out[f"tpr_final_{method}"] = float(hist.tpr[-1].mean())
        out[f"tpr_curve_final_{method}"] = hist.tpr[-1].tolist()
        progress(i + 1, len(cfg.methods))
    out["tpr_n"] = [float(n) for n in cfg.tpr_n]
    for other in ("random", "std", "mean+std", "residual+std"):
        if "mean" in cfg.methods and other in cfg.methods:
            out[f"mean_minus_{other}_final"] = out["found_final_mean"] - out[f"found_final_{other}"]
            out[f"mean_minus_{other}_tpr_final"] = out["tpr_final_mean"] - out[f"tpr_final_{other}"]
    return out


def _summ(per_seed: list[Metrics], key: str) -> tuple[np.ndarray, np.ndarray]:
    arr = np.array([m[key] for m in per_seed], dtype=float)
    s = [Summary.of(arr[:, j]) for j in range(arr.shape[1])]
    mean = np.array([x.mean for x in s])
    half = np.array([(x.hi - x.lo) / 2 if x.n > 1 else 0.0 for x in s])
    return mean, np.nan_to_num(half)


def small_sample_figures(per_seed: list[Metrics], cfg: SmallSampleConfig, outdir: Path) -> list[Path]:
    """Test RMSE against the training size for every model (mean and 95% interval over seeds)."""
    return [save_figure(small_sample_figure(per_seed, cfg, _summ, MODELS), outdir / "small_sample_rmse.png")]


def active_learning_figures(per_seed: list[Metrics], cfg: ActiveLearningConfig, outdir: Path) -> list[Path]:
    """True top-N pairs measured after each round, per acquisition."""
    return [save_figure(active_learning_figure(per_seed, cfg, _summ), outdir / "active_learning_found.png")]


def paper_small_sample_figures(per_seed: list[Metrics], cfg: SmallSampleConfig, outdir: Path) -> list[Path]:
    """As :func:`small_sample_figures`, for the real screen (its own file)."""
    return [save_figure(small_sample_figure(per_seed, cfg, _summ, MODELS), outdir / "paper_data_small_sample_rmse.png")]


def paper_active_learning_figures(per_seed: list[Metrics], cfg: ActiveLearningConfig, outdir: Path) -> list[Path]:
    """As :func:`active_learning_figures`, for the real screen (its own file)."""
    return [save_figure(active_learning_figure(per_seed, cfg, _summ),
                        outdir / "paper_data_active_learning_found.png")]


_DATA = ("The full preset runs the Table 1 / Fig. 4 Norman protocols on a synthetic stand-in of Norman's size "
         "(113 genes, 6,328 pairs): reduced fidelity. The real screens run in the paper_data_* experiments.")
_PAPER_DATA = ("The real screens ship as CSV files in the official repository (github.com/NeptuneBio/NAIAD, "
               "tutorials/data/<screen>_gamma.csv: Norman, Horlbeck K562/Jurkat, Simpson; columns id1, id2, score; "
               "single-gene effects are the rows paired with 'negative'); nothing is downloaded: pass the file with "
               "--set data_path=<dir>/norman_gamma.csv. The presets follow the Norman notebooks (G = 112 genes; "
               "Table 1: 500 epochs, H = 64; Fig. 4: 200 epochs, batch 4096): on another screen set its notebook "
               "values (H = 256, 200 epochs, G = 437 / 448 / 543) and read the verdicts as reduced. CPU: a full "
               "small-sample seed about 6 CPU-minutes, an active-learning seed about 2.5 (one thread).")
_NORMAN_SIZES = (112, 224, 448, 1120, 1680, 2240, 3360)
"""Table 1 notebook's training sizes on Norman: G, 2G, 4G, 10G, 15G, 20G, 30G with its n_gene = 112."""

EXPERIMENTS = [
    Experiment(
        name="small_sample",
        description="Synthetic growth screen (quick: 150 genes; full: 113 genes, Norman's size): test RMSE of "
                    "NAIAD (adaptive d) vs the paper's baselines (official linear model, SVR), and a linear model "
                    "with a product term, single-effect-only, embedding-only and NAIAD d=128, for nested training "
                    "sets (quick 150..3000 pairs; full G..30G as Table 1), 10% validation, 10% test.",
        config=SmallSampleConfig,
        run=run_small_sample,
        presets={
            "smoke": {"n_genes": 40, "n_train": (40, 200), "n_val": 100, "model.n_epoch": 8, "model.d_pheno_hid": 16,
                      "recall_n": 10, "additive_check_n": 200},
            "quick": {},
            "full": {"n_genes": 113, "n_train": (113, 226, 452, 1130, 1695, 2260, 3390), "n_val": 632,
                     "model.n_epoch": 500, "model.d_pheno_hid": 64, "model.d_embed": (2, 4, 16, 32, 32, 64, 64)},
        },
        seeds={"smoke": 2, "quick": 5, "full": 3},  # full: the Table 1 notebook's three seeds per run
        fidelity={
            "smoke": Fidelity("mechanism", "a 40-gene synthetic screen, 8 epochs, H=16 stand in for the paper's real "
                                           "CRISPR screens"),
            "quick": Fidelity("mechanism", "a synthetic 150-gene growth screen (11,175 pairs) stands in for the "
                                           "paper's four real CRISPR screens; H=64, 100 of Table 1's 500 epochs, "
                                           "the package's embedding table"),
            "full": Fidelity("reduced", "the Table 1 notebook's Norman protocol (10% validation, 10% test, training "
                                        "sizes G, 2G, 4G, 10G, 15G, 20G, 30G, 500 epochs, H=64, its embedding sizes "
                                        "2, 4, 16, 32, 32, 64, 64, batch 1024, best validation epoch) on a synthetic "
                                        "stand-in of the Norman screen's size (113 genes, 6,328 pairs): the real "
                                        "screen runs in paper_data_small_sample"),
        },
        figures=small_sample_figures,
        full_requirements=_DATA,
    ),
    Experiment(
        name="active_learning",
        description="Synthetic screen (quick: 150 genes; full: 113 genes, Norman's size), 30% of the pairs never "
                    "offered: true top-100 (most negative) pairs measured and the official top-N TPR of measured + "
                    "predicted, after a random start and four rounds (quick 300 + 4 x 300; full 100 + 4 x 100 as "
                    "Fig. 4) chosen by a 5-model NAIAD ensemble with MPE ('mean'), 'std', UCB ('mean+std') or "
                    "'residual+std', against random batches.",
        config=ActiveLearningConfig,
        run=run_active_learning,
        presets={
            "smoke": {"n_genes": 40, "schedule": (60, 100, 140), "learner.n_ensemble": 2, "model.n_epoch": 10,
                      "model.d_pheno_hid": 16, "top_n": 20},
            "quick": {},
            "full": {"n_genes": 113, "schedule": (100, 200, 300, 400, 500), "model.n_epoch": 200,
                     "model.batch_size": 4096, "model.d_pheno_hid": 64, "model.d_embed": (2, 4, 4, 8, 16)},
        },
        seeds={"smoke": 2, "quick": 5, "full": 5},  # full: Fig. 4's five replicates
        fidelity={
            "smoke": Fidelity("mechanism", "a 40-gene synthetic screen, 2-model ensembles, 10 epochs stand in for "
                                           "Fig. 4's Norman screen"),
            "quick": Fidelity("mechanism", "a synthetic 150-gene screen stands in for Fig. 4's Norman screen; 50 of "
                                           "its 200 epochs per model, the package's embedding table, batch 1024, "
                                           "300..1500 pairs"),
            "full": Fidelity("reduced", "the Fig. 4 notebook's Norman protocol (5-model ensembles, 200 epochs, "
                                        "batch 4096, H=64, embedding sizes 2, 4, 4, 8, 16 per round, 100..500 "
                                        "measured pairs, 30% held out, no early stopping) on a synthetic stand-in of "
                                        "the Norman screen's size (113 genes, 6,328 pairs): the real screen runs in "
                                        "paper_data_active_learning"),
        },
        figures=active_learning_figures,
        full_requirements=_DATA,
    ),
    Experiment(
        name="paper_data_small_sample",
        description="small_sample on a real screen of the paper (a CSV of the official repository, given by "
                    "data_path; the presets follow Table 1's Norman notebook): test RMSE of NAIAD (the notebook's "
                    "embedding sizes) vs the official linear model and SVR and the other models, for nested "
                    "training sets G..30G, 10% validation, 10% test.",
        config=PaperSmallSampleConfig,
        run=run_small_sample,
        presets={
            "smoke": {"n_train": (30, 60), "n_val": 40, "model.n_epoch": 8, "model.d_pheno_hid": 16, "recall_n": 10,
                      "additive_check_n": 0},
            "quick": {"n_train": _NORMAN_SIZES, "n_val": 632, "model.n_epoch": 100, "model.d_pheno_hid": 64,
                      "model.d_embed": (2, 4, 16, 32, 32, 64, 64), "additive_check_n": 0},
            "full": {"n_train": _NORMAN_SIZES, "n_val": 632, "model.n_epoch": 500, "model.d_pheno_hid": 64,
                     "model.d_embed": (2, 4, 16, 32, 32, 64, 64), "additive_check_n": 0},
        },
        seeds={"smoke": 2, "quick": 3, "full": 3},  # the Table 1 notebook's three seeds per run
        fidelity={
            "smoke": Fidelity("mechanism", "sizes 30 and 60, 8 epochs, H=16 on the given screen"),
            "quick": Fidelity("reduced", "the Table 1 notebook's Norman protocol on the real screen at 100 of its "
                                         "500 epochs"),
            "full": Fidelity("paper", "the Table 1 notebook's Norman protocol on the real screen (norman_gamma.csv: "
                                      "10% validation, 10% test, training sizes 112 x (1, 2, 4, 10, 15, 20, 30), 500 "
                                      "epochs, H=64, its embedding sizes 2, 4, 16, 32, 32, 64, 64, batch 1024, best "
                                      "validation epoch); GEARS and RECOVER are not run"),
        },
        figures=paper_small_sample_figures,
        full_requirements=_PAPER_DATA,
        data_setting="data_path",
    ),
    Experiment(
        name="paper_data_active_learning",
        description="active_learning on a real screen of the paper (data_path; the presets follow Fig. 4's Norman "
                    "notebook): 30% of the pairs never offered, true top-100 pairs measured and the official top-N "
                    "TPR after a random start of 100 and four rounds of 100 chosen by a 5-model NAIAD ensemble with "
                    "MPE, 'std', UCB or 'residual+std', against random batches.",
        config=PaperActiveLearningConfig,
        run=run_active_learning,
        presets={
            "smoke": {"schedule": (60, 100, 140), "learner.n_ensemble": 2, "model.n_epoch": 10,
                      "model.d_pheno_hid": 16, "top_n": 20},
            "quick": {"schedule": (100, 200, 300, 400, 500), "model.n_epoch": 50, "model.batch_size": 4096,
                      "model.d_pheno_hid": 64, "model.d_embed": (2, 4, 4, 8, 16)},
            "full": {"schedule": (100, 200, 300, 400, 500), "model.n_epoch": 200, "model.batch_size": 4096,
                     "model.d_pheno_hid": 64, "model.d_embed": (2, 4, 4, 8, 16)},
        },
        seeds={"smoke": 2, "quick": 5, "full": 5},  # Fig. 4's five replicates
        fidelity={
            "smoke": Fidelity("mechanism", "2-model ensembles, 10 epochs, 60..140 pairs on the given screen"),
            "quick": Fidelity("reduced", "the Fig. 4 notebook's Norman protocol on the real screen at 50 of its 200 "
                                         "epochs per model"),
            "full": Fidelity("paper", "the Fig. 4 notebook's Norman protocol on the real screen (norman_gamma.csv: "
                                      "5-model ensembles, 200 epochs, batch 4096, H=64, embedding sizes 2, 4, 4, 8, 16 "
                                      "per round, 100..500 measured pairs, 30% held out, no early stopping)"),
        },
        figures=paper_active_learning_figures,
        full_requirements=_PAPER_DATA,
        data_setting="data_path",
    ),
]

# The paper's numbers beyond the abstract were not retrieved. The small-sample study also runs models outside the
# paper's baselines (linear_product, the synthetic generator's own main-effect + product form; naiad_d128; the two
# branches alone); naiad_best_every_n compares NAIAD with the paper's own baselines only (PAPER_BASELINES).
_REAL_SCREENS = ("the abstract's comparison is an empirical result of the Table 1 protocol (10% validation, 10% test, "
                 "sizes G..30G, 500 epochs, H=64 and the hand-set embedding sizes on Norman) against the paper's "
                 "baselines; it needs that protocol and budget (full; its data there is a synthetic stand-in of "
                 "Norman's size)")
_FIG4 = ("the ranking of acquisitions in Fig. 4 is an empirical result of its Norman protocol (5-model ensembles, "
         "200 epochs, H=64, embedding sizes 2, 4, 4, 8, 16, 100..500 measured pairs, 30% held out); it needs that "
         "protocol and budget (full; its data there is a synthetic stand-in of Norman's size)")
_MPE_RANDOM = ("choosing the pairs with the largest predicted effect finds top pairs faster than random batches on any "
               "screen whose top pairs the model can predict")
_MPE_STD = ("uncertainty sampling does not target the largest effects, MPE does; any screen with predictable top "
            "pairs shows the difference")
CLAIMS = [
    Claim(id="naiad_best_every_n",
          statement="NAIAD has a test RMSE below, or within 2% of, the best of the paper's own baselines that run "
          "here (the official linear model and SVR) at every training size (worst ratio over the sizes <= 1.02).",
          paper_value="outperforms existing models by up to 40% relative to the second best, trained on small data "
          "(abstract; real screens)",
          experiment="small_sample", metric="naiad_over_best_baseline_worst_n", op="<=", threshold=1.02, kind="paper",
          source="abstract", resolution=0.01,
          resolution_reason="RMSE ratio; half the 2% tolerance (paper gap up to 40% is on real screens)",
          fair_at="paper", fair_at_reason=_REAL_SCREENS),
    Claim(id="adaptive_beats_d128_small_n",
          statement="With the fewest data (as many pairs as genes: each gene seen twice) NAIAD's adaptive "
          "embedding size beats a fixed d = 128.",
          paper_value="adaptive embeddings mitigate overfitting in small-sample learning (abstract)",
          experiment="small_sample", metric="naiad_minus_d128_smallest_n", op="<=", threshold=0.0, kind="paper",
          source="abstract", resolution=0.001,
          resolution_reason="RMSE difference; 5% of the generator's noise std 0.02 (the RMSE floor)",
          fair_at="mechanism", fair_at_reason="overfitting of a large embedding when each gene is seen twice is a "
                                               "capacity effect any screen with that few pairs shows"),
    Claim(id="naiad_beats_additive_large_n",
          statement="At the largest training size (3000 pairs in quick, 30 G = 3390 in full) NAIAD beats the "
          "official linear baseline b0 + b1 s_a + b2 s_b.",
          paper_value="embeddings capture complex gene interactions as more data is collected (abstract)",
          experiment="small_sample", metric="naiad_minus_additive_largest_n", op="<=", threshold=0.0, kind="paper",
          source="abstract", resolution=0.001,
          resolution_reason="RMSE difference; 5% of the generator's noise std 0.02 (the RMSE floor)",
          fair_at="mechanism", fair_at_reason="an additive model cannot fit pair interactions that the embeddings "
                                               "can; any screen with non-additive effects and enough pairs shows it"),
    Claim(id="mpe_beats_random",
          statement="MPE ('mean') has measured more of the true top-100 pairs than random batches after round 4 (our "
          "count of measured top pairs).",
          paper_value="MPE gives the highest marginal gain in each AI-experiment round (abstract; Fig. 4)",
          experiment="active_learning", metric="mean_minus_random_final", op=">=", threshold=0.0, kind="ours",
          resolution=2.0,
          resolution_reason="count of the 100 true top pairs found; under 2% of the targets does not matter",
          fair_at="mechanism", fair_at_reason=_MPE_RANDOM),
    Claim(id="mpe_beats_std",
          statement="MPE has measured more of the true top-100 pairs than uncertainty sampling ('std') after round 4.",
          paper_value="MPE outperforms uncertainty-based selection (abstract; Fig. 4)",
          experiment="active_learning", metric="mean_minus_std_final", op=">=", threshold=0.0, kind="ours",
          resolution=2.0,
          resolution_reason="count of the 100 true top pairs found; under 2% of the targets does not matter",
          fair_at="mechanism", fair_at_reason=_MPE_STD),
    Claim(id="mpe_beats_ucb",
          statement="MPE has measured at least as many true top-100 pairs as UCB ('mean+std', beta = 1) after round 4.",
          paper_value="MPE (beta = 0) outperforms UCB with beta > 0 (rebuttal analysis of beta, "
          "paper_reproduce/rebuttals)",
          experiment="active_learning", metric="mean_minus_mean+std_final", op=">=", threshold=0.0, kind="ours",
          resolution=2.0,
          resolution_reason="count of the 100 true top pairs found; under 2% of the targets does not matter",
          fair_at="paper", fair_at_reason=_FIG4),
    Claim(id="mpe_beats_random_tpr",
          statement="Official metric: after round 4 MPE's top-N TPR of measured + predicted over the whole screen "
          "(mean over N = 10..195) exceeds the random arm's (an ensemble trained on random batches).",
          paper_value="MPE gives the highest marginal gain in each AI-experiment round (abstract; Fig. 4, TPR on "
          "'overall')",
          experiment="active_learning", metric="mean_minus_random_tpr_final", op=">=", threshold=0.0, kind="paper",
          source="abstract; Fig. 4", resolution=0.02,
          resolution_reason="TPR is a fraction; 2 points, the same share as 2 of the 100 targets of the count claims",
          fair_at="mechanism", fair_at_reason=_MPE_RANDOM),
    Claim(id="mpe_beats_std_tpr",
          statement="Official metric: after round 4 MPE's top-N TPR (mean over N) exceeds that of 'std' selection.",
          paper_value="MPE outperforms uncertainty-based selection (Fig. 4: mean vs std vs residual+std)",
          experiment="active_learning", metric="mean_minus_std_tpr_final", op=">=", threshold=0.0, kind="paper",
          source="abstract; Fig. 4", resolution=0.02,
          resolution_reason="TPR is a fraction; 2 points, the same share as 2 of the 100 targets of the count claims",
          fair_at="mechanism", fair_at_reason=_MPE_STD),
    Claim(id="mpe_beats_residual_std_tpr",
          statement="Official metric: after round 4 MPE's top-N TPR (mean over N) exceeds that of 'residual+std' "
          "selection.",
          paper_value="MPE gives the highest marginal gain (Fig. 4: mean vs std vs residual+std)",
          experiment="active_learning", metric="mean_minus_residual+std_tpr_final", op=">=", threshold=0.0,
          kind="paper", source="Fig. 4", resolution=0.02,
          resolution_reason="TPR is a fraction; 2 points, the same share as 2 of the 100 targets of the count claims",
          fair_at="paper", fair_at_reason=_FIG4),
    Claim(id="mpe_beats_ucb_tpr",
          statement="Official metric: after round 4 MPE's top-N TPR (mean over N) is at least UCB's ('mean+std', "
          "beta = 1).",
          paper_value="MPE (beta = 0) outperforms UCB with beta > 0 (rebuttal analysis of beta on TPR 'overall')",
          experiment="active_learning", metric="mean_minus_mean+std_tpr_final", op=">=", threshold=0.0, kind="paper",
          source="second-hand: a third-party copy of the ICML reviews; the authors' rebuttal notebooks "
                 "(paper_reproduce/rebuttals)",
          resolution=0.02,
          resolution_reason="TPR is a fraction; 2 points, the same share as 2 of the 100 targets of the count claims",
          fair_at="paper", fair_at_reason="the beta comparison of the rebuttal notebooks is an empirical result on "
                                           "the paper's real screen at its budget; it needs that screen"),
]

_REAL = "on the paper's real screen given by data_path (the presets follow the Norman notebooks)"
_TWIN_TABLE1 = ("the Table 1 protocol on the real screen at its budget (500 epochs, H=64, the hand-set embedding "
                "sizes, G..30G): the full preset on norman_gamma.csv")
_TWIN_FIG4 = ("the Fig. 4 ranking on the real screen at its budget (5-model ensembles, 200 epochs, 100..500 measured "
              "pairs): the full preset on norman_gamma.csv")
CLAIMS += [
    Claim(id="paper_data_naiad_best_every_n",
          statement=f"{_REAL[0].upper()}{_REAL[1:]}: NAIAD has a test RMSE below, or within 2% of, the best of the "
          "paper's own baselines that run here (the official linear model and SVR) at every training size G..30G "
          "(worst ratio over the sizes <= 1.02).",
          paper_value="outperforms existing models by up to 40% relative to the second best, trained on small data "
          "(abstract; real screens)",
          experiment="paper_data_small_sample", metric="naiad_over_best_baseline_worst_n", op="<=", threshold=1.02,
          kind="paper", source="abstract", resolution=0.01, resolution_reason="as naiad_best_every_n: half the 2% "
          "tolerance", fair_at="paper", fair_at_reason=_TWIN_TABLE1),
    Claim(id="paper_data_adaptive_beats_d128_small_n",
          statement=f"{_REAL[0].upper()}{_REAL[1:]}: with the fewest data (G pairs, each gene seen about twice) "
          "NAIAD's embedding size beats a fixed d = 128.",
          paper_value="adaptive embeddings mitigate overfitting in small-sample learning (abstract)",
          experiment="paper_data_small_sample", metric="naiad_minus_d128_smallest_n", op="<=", threshold=0.0,
          kind="paper", source="abstract", resolution=0.001, resolution_reason="as adaptive_beats_d128_small_n",
          fair_at="mechanism", fair_at_reason="as adaptive_beats_d128_small_n: a capacity effect any screen with "
                                               "that few pairs shows"),
    Claim(id="paper_data_naiad_beats_additive_large_n",
          statement=f"{_REAL[0].upper()}{_REAL[1:]}: at the largest training size (30 G) NAIAD beats the official "
          "linear baseline b0 + b1 s_a + b2 s_b.",
          paper_value="embeddings capture complex gene interactions as more data is collected (abstract)",
          experiment="paper_data_small_sample", metric="naiad_minus_additive_largest_n", op="<=", threshold=0.0,
          kind="paper", source="abstract", resolution=0.001, resolution_reason="as naiad_beats_additive_large_n",
          fair_at="mechanism", fair_at_reason="as naiad_beats_additive_large_n: any screen with non-additive effects "
                                               "and enough pairs shows it"),
    Claim(id="paper_data_mpe_beats_random_tpr",
          statement=f"{_REAL[0].upper()}{_REAL[1:]}: after round 4 MPE's top-N TPR of measured + predicted over the "
          "whole screen (mean over N = 10..195) exceeds the random arm's.",
          paper_value="MPE gives the highest marginal gain in each AI-experiment round (abstract; Fig. 4, TPR on "
          "'overall')",
          experiment="paper_data_active_learning", metric="mean_minus_random_tpr_final", op=">=", threshold=0.0,
          kind="paper", source="abstract; Fig. 4", resolution=0.02, resolution_reason="as mpe_beats_random_tpr",
          fair_at="mechanism", fair_at_reason=f"as mpe_beats_random_tpr: {_MPE_RANDOM}"),
    Claim(id="paper_data_mpe_beats_std_tpr",
          statement=f"{_REAL[0].upper()}{_REAL[1:]}: after round 4 MPE's top-N TPR (mean over N) exceeds that of "
          "'std' selection.",
          paper_value="MPE outperforms uncertainty-based selection (Fig. 4: mean vs std vs residual+std)",
          experiment="paper_data_active_learning", metric="mean_minus_std_tpr_final", op=">=", threshold=0.0,
          kind="paper", source="abstract; Fig. 4", resolution=0.02, resolution_reason="as mpe_beats_std_tpr",
          fair_at="mechanism", fair_at_reason=f"as mpe_beats_std_tpr: {_MPE_STD}"),
    Claim(id="paper_data_mpe_beats_residual_std_tpr",
          statement=f"{_REAL[0].upper()}{_REAL[1:]}: after round 4 MPE's top-N TPR (mean over N) exceeds that of "
          "'residual+std' selection.",
          paper_value="MPE gives the highest marginal gain (Fig. 4: mean vs std vs residual+std)",
          experiment="paper_data_active_learning", metric="mean_minus_residual+std_tpr_final", op=">=",
          threshold=0.0, kind="paper", source="Fig. 4", resolution=0.02,
          resolution_reason="as mpe_beats_residual_std_tpr", fair_at="paper", fair_at_reason=_TWIN_FIG4),
    Claim(id="paper_data_mpe_beats_ucb_tpr",
          statement=f"{_REAL[0].upper()}{_REAL[1:]}: after round 4 MPE's top-N TPR (mean over N) is at least UCB's "
          "('mean+std', beta = 1).",
          paper_value="MPE (beta = 0) outperforms UCB with beta > 0 (rebuttal analysis of beta on TPR 'overall')",
          experiment="paper_data_active_learning", metric="mean_minus_mean+std_tpr_final", op=">=", threshold=0.0,
          kind="paper", source="second-hand: a third-party copy of the ICML reviews; the authors' rebuttal notebooks "
                               "(paper_reproduce/rebuttals)",
          resolution=0.02, resolution_reason="as mpe_beats_ucb_tpr", fair_at="paper", fair_at_reason=_TWIN_FIG4),
]

API_EXAMPLE = """
import numpy as np
from icml25.papers.naiad import NAIADRegressor, SingleEffectLinearRegressor, make_synthetic_screen, top_n_recall

screen = make_synthetic_screen(n_genes=60, seed=0)              # all 1770 pairs of 60 genes
idx = np.random.default_rng(0).permutation(len(screen))
train, test = screen.subset(idx[:600]), screen.subset(idx[-500:])
model = NAIADRegressor(n_epoch=30, d_pheno_hid=32, n_genes=screen.n_genes).fit(*train)
pred = model.predict(*test[:2])
lin = SingleEffectLinearRegressor().fit(*train).predict(*test[:2])
print("embedding size", model.d_embed_)
print("RMSE NAIAD", np.sqrt(np.mean((pred - test[2]) ** 2)), "additive", np.sqrt(np.mean((lin - test[2]) ** 2)))
print("top-20 recall", top_n_recall(test[2], pred, 20))
"""
