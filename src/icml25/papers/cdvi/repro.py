"""CDVI reproduction: does a censor-dependent encoder q(z | x, y, delta) beat the CVAE encoder q(z | x, y)?

Three experiments, each over random 70/15/15 splits (one per seed):

* ``synthetic``: the official Gibbs generator (posterior censor-dependent by construction) at the
  levels no_censor / medium / high. CVAE (encoder ignores delta), CD-CVAE dense and CD-CVAE split share
  the decoder, the seed and the training budget; test ELBO, IWAE(K) log-likelihood and the variational gap
  IWAE - ELBO are compared per seed.
* ``real``: whas500, gbsg2 and flchain from scikit-survival (log-time, normal primitive, i.e. a mixture of
  log-normal AFTs); C_td (Antolini) and IBS of the three encoders, plus the reference baselines
  log-normal AFT (the decoder with no latent) and Cox PH: stand-ins for the paper's data sets.
* ``paper_data``: the same comparison on the paper's SUPPORT, METABRIC, PBC and WHAS, read from the official
  repository's CSV files under ``data_dir`` (a clone's ``datasets/`` folder), with the official fit's recipe
  (:func:`paper_model`). It runs only when ``data_dir`` is set; without it ``reproduce`` skips it with one line.

On the real data every CD-CVAE / CVAE keeps the weights of its best validation C_td (pycox's, at the 10%..100%
quantiles of the training event times, checked every 2 epochs, patience 30), as the official
``fit(criterion="ctdpycox")`` means to. On the synthetic data, whose claims are about the ELBO and the variational
gap, the kept weights are those of the best validation ELBO (same schedule): validation C_td there kept weights of
epochs 2-20 of 100, so test ELBOs compared under-trained models (see the doc). Each experiment also scores a
trivial predictor in the same run (an intercept-only normal for the synthetic data, the training Kaplan-Meier curve
for the real data) to show that the models learned.

Settings and claim thresholds were fixed before the first quick run of each claim.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

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
from icml25.core.paper import Claim
from icml25.papers.cdvi import metrics as survmetrics
from icml25.papers.cdvi.data import (
    PAPER_DATASETS,
    load_bundled,
    load_paper_dataset,
    simulate_censored_gibbs,
    split_indices,
    split_standardise,
)
from icml25.papers.cdvi.figures import real_figures, synthetic_figures
from icml25.papers.cdvi.model import CDCVAE, CDCVAEConfig, LogNormalAFT, split_survival_array

ENCODERS = ("none", "dense", "split")
"""``none`` is the CVAE baseline; ``dense`` (the official default) and ``split`` are CD-CVAE."""
LEVELS = ("no_censor", "medium", "high")
DATASETS = ("whas500", "gbsg2", "flchain")


def _model(cfg, encoder: str, seed: int, log_time: bool) -> CDCVAE:
    """The CD-CVAE (or CVAE, ``encoder="none"``) of an experiment, on the config's device."""
    return CDCVAE.from_config(cfg.model, encoder=encoder, log_time=log_time, seed=seed, device=cfg.device)


def synthetic_model() -> CDCVAEConfig:
    """The synthetic experiment's model: a 2-D latent (the generator's), batch 512, lr 1e-2, weights kept at the
    best validation ELBO (its claims compare ELBOs and gaps; the official fit's C_td keeps early, under-trained
    weights on this generator); otherwise :class:`CDCVAEConfig`'s defaults."""
    return CDCVAEConfig(latent_dim=2, batch_size=512, lr=1e-2, criterion="elbo")


def real_model() -> CDCVAEConfig:
    """The real-data experiment's model: :class:`CDCVAEConfig`'s defaults (latent 4, the card's; batch 256; the
    official C_td selection) with lr 1e-2."""
    return CDCVAEConfig(lr=1e-2)


def _qmean_r2(model: CDCVAE, X, y, true_mean: np.ndarray) -> float:
    """R^2 of the true posterior mean (first coordinate) regressed on the learned q mean (rotation-invariant)."""
    mean, _ = model.encode(X, y)
    A = np.column_stack([mean, np.ones(len(mean))])
    coef, *_ = np.linalg.lstsq(A, true_mean[:, 0], rcond=None)
    resid = true_mean[:, 0] - A @ coef
    return float(1.0 - resid.var() / true_mean[:, 0].var())


# ----------------------------------------------------------------------------- synthetic
@dataclass
class SyntheticConfig(TorchConfig):
    n: int = 10000
    """Samples kept from the Gibbs chain (split 70/15/15)."""
    burn_in: int = 25000
    """Gibbs sweeps discarded (official: 25000)."""
    model: CDCVAEConfig = field(default_factory=synthetic_model)
    """Every encoder's model settings (``model.latent_dim`` 2, the generator's; ``model.epochs``,
    ``model.batch_size`` 512, ``model.lr`` 1e-2, ``model.n_mc``; ``model.criterion`` ``elbo``: the claims compare
    ELBOs and gaps, and the official fit's pycox C_td keeps early, under-trained weights on this generator)."""
    iwae_k: int = 100
    """Importance samples of the IWAE log-likelihood."""

    MIN_N: ClassVar[int] = 20
    """Fewest samples for a 70/15/15 split with a few rows in each part."""
    OPEN_FIELDS: ClassVar[tuple[str, ...]] = ("model.enc_hidden", "model.dec_hidden")
    """An empty tuple of hidden widths is a valid value (a linear encoder or decoder)."""

    def validate(self) -> None:
        super().validate()
        # bounds: a job beyond these would need > ~100 GB or days (the Gibbs chain is a Python loop over
        # n + burn_in sweeps; IWAE and S(t | x) hold iwae_k / n_mc draws per test row)
        check_fields(self, positive=("iwae_k",), nonnegative=("burn_in",), at_least={"n": self.MIN_N},
                     at_most={"n": 10**7, "burn_in": 10**7, "iwae_k": 10**5})


def run_synthetic(cfg: SyntheticConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Test ELBO / IWAE / gap of CVAE vs CD-CVAE (dense, split) at three censoring levels."""
    out: Metrics = {}
    step = 0
    for li, level in enumerate(LEVELS):
        sim = simulate_censored_gibbs(cfg.n, level, burn_in=cfg.burn_in, seed=1000 * seed + li)
        (Xtr, ytr), (Xva, yva), (Xte, yte) = split_standardise(sim.X, sim.y, seed=seed)
        truth = sim.posterior_mean[split_indices(cfg.n, seed=seed)[2]]  # true posterior mean of the test rows
        out[f"{level}_event_rate"] = float(split_survival_array(sim.y)[0].mean())
        for enc in ENCODERS:
            m = _model(cfg, enc, seed, log_time=False).fit(Xtr, ytr, Xva, yva)
            elbo, iwae = m.elbo(Xte, yte), m.iwae_loglik(Xte, yte, K=cfg.iwae_k)
            out[f"{level}_elbo_{enc}"], out[f"{level}_iwae_{enc}"] = elbo, iwae
            out[f"{level}_gap_{enc}"] = iwae - elbo
            out[f"{level}_qmean_r2_{enc}"] = _qmean_r2(m, Xte, yte, truth)
            step += 1
            progress(step, 3 * len(ENCODERS))
        aft = LogNormalAFT(log_time=False).fit(Xtr, ytr)
        out[f"{level}_loglik_aft"] = aft.loglik(Xte, yte)
        # trivial predictor: one normal for everybody (intercept-only AFT, covariates ignored)
        null = LogNormalAFT(log_time=False).fit(np.zeros((len(Xtr), 1)), ytr)
        out[f"{level}_loglik_null"] = null.loglik(np.zeros((len(Xte), 1)), yte)
        out[f"{level}_elbo_over_null_dense"] = out[f"{level}_elbo_dense"] - out[f"{level}_loglik_null"]
        out[f"{level}_iwae_over_null_dense"] = out[f"{level}_iwae_dense"] - out[f"{level}_loglik_null"]
        for enc in ("dense", "split"):
            out[f"{level}_elbo_gain_{enc}"] = out[f"{level}_elbo_{enc}"] - out[f"{level}_elbo_none"]
            out[f"{level}_iwae_gain_{enc}"] = out[f"{level}_iwae_{enc}"] - out[f"{level}_iwae_none"]
            out[f"{level}_gap_reduction_{enc}"] = out[f"{level}_gap_none"] - out[f"{level}_gap_{enc}"]
        out[f"{level}_dense_wins"] = float(out[f"{level}_elbo_dense"] > out[f"{level}_elbo_none"])
    out["no_censor_abs_elbo_diff_dense"] = abs(out["no_censor_elbo_gain_dense"])
    out["min_elbo_over_null_dense"] = min(out[f"{level}_elbo_over_null_dense"] for level in LEVELS)
    out["min_iwae_over_null_dense"] = min(out[f"{level}_iwae_over_null_dense"] for level in LEVELS)
    return out


# ----------------------------------------------------------------------------- real data
def paper_model() -> CDCVAEConfig:
    """The paper-data experiment's model: the official fit's recipe (``fit(criterion="ctdpycox")`` and the Demo
    notebook): Gumbel-min primitive (a Weibull mixture on log-time) with temperature beta 0.9, Adam at lr 1e-3 with
    weight decay 0.01, batch 200, up to 5,000 epochs, validation C_td every 2 epochs with patience 30; latent 4 and
    hidden widths (32, 16) as :class:`CDCVAEConfig`'s defaults."""
    return CDCVAEConfig(primitive="gumbel", beta=0.9, lr=1e-3, batch_size=200, epochs=5000, criterion="ctd")


@dataclass
class SurvivalDataConfig(TorchConfig):
    """What the two real-data experiments share: the model and the evaluation of every data set they run."""

    max_rows: int = 0
    """Subsample each data set to at most this many rows (0 = all)."""
    model: CDCVAEConfig = field(default_factory=real_model)
    """Every encoder's model settings (``model.latent_dim``, ``model.epochs``, ``model.batch_size``, ``model.lr``,
    ``model.n_mc``; ``model.criterion`` ``ctd``, the official fit's pycox C_td; ``model.primitive`` ``normal``, a
    log-normal mixture, or ``gumbel``, a Weibull mixture, the official demo's choice with ``model.beta`` 0.9)."""
    iwae_k: int = 100
    """Importance samples of the IWAE log-likelihood."""
    grid_points: int = 20
    """Times of the IBS grid (10%..90% quantiles of the training event times)."""

    OPEN_FIELDS: ClassVar[tuple[str, ...]] = ("model.enc_hidden", "model.dec_hidden")
    """An empty tuple of hidden widths is a valid value (a linear encoder or decoder)."""
    FIGURE: ClassVar[str] = ""
    """File name of the experiment's IBS / C_td figure."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("iwae_k",), at_least={"grid_points": 2}, nonnegative=("max_rows",))
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, at_most={"max_rows": 10**7, "iwae_k": 10**5, "grid_points": 10**4})
        if 0 < self.max_rows < SyntheticConfig.MIN_N:
            raise ConfigError(f"{type(self).__name__}.max_rows must be 0 (all rows) or >= {SyntheticConfig.MIN_N}, "
                              f"got {self.max_rows}")

    def run_datasets(self) -> tuple[str, ...]:
        """The data sets a run uses."""
        raise NotImplementedError

    def load(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(X, y)`` of data set ``name``."""
        raise NotImplementedError


@dataclass
class RealConfig(SurvivalDataConfig):
    """The bundled scikit-survival data sets (stand-ins for the paper's)."""

    datasets: tuple[str, ...] = DATASETS
    """Data sets bundled in scikit-survival (``whas500``, ``gbsg2``, ``flchain``)."""

    FIGURE: ClassVar[str] = "real_ibs_ctd.png"

    def validate(self) -> None:
        super().validate()
        if isinstance(self.datasets, tuple) and set(self.datasets) & set(PAPER_DATASETS):
            raise ConfigError(f"{type(self).__name__}.datasets holds the paper's sets {PAPER_DATASETS}: they are "
                              f"read by the paper_data experiment with data_dir, got {self.datasets!r}")
        check_fields(self, nonempty=("datasets",), choices={"datasets": DATASETS})
        _no_repeats(self, "datasets")

    def run_datasets(self) -> tuple[str, ...]:
        return self.datasets

    def load(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        return load_bundled(name)


@dataclass
class PaperDataConfig(SurvivalDataConfig):
    """The paper's data sets, read from the official repository's CSV files under ``data_dir``."""

    data_dir: str = ""
    """Folder with the paper's CSV files in the official repository's layout (the ``datasets/`` folder of a clone of
    github.com/ChuanhuiLiu/CDVI; see :func:`~icml25.papers.cdvi.data.load_paper_dataset`). The experiment runs only
    when it is set."""
    paper_datasets: tuple[str, ...] = PAPER_DATASETS
    """The paper's data sets to run (``support``, ``metabric``, ``pbc``, ``whas``)."""
    model: CDCVAEConfig = field(default_factory=paper_model)
    """Every encoder's model settings: the official fit's recipe (:func:`paper_model`)."""

    FIGURE: ClassVar[str] = "paper_data_ibs_ctd.png"

    def validate(self) -> None:
        super().validate()
        check_fields(self, nonempty=("paper_datasets",), choices={"paper_datasets": PAPER_DATASETS})
        _no_repeats(self, "paper_datasets")
        if not isinstance(self.data_dir, str) or (self.data_dir and not Path(self.data_dir).is_dir()):
            raise ConfigError(f"{type(self).__name__}.data_dir must be an existing folder with the paper's CSV "
                              f"files (empty: the experiment does not run), got {self.data_dir!r}")

    def run_datasets(self) -> tuple[str, ...]:
        return self.paper_datasets

    def load(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        return load_paper_dataset(name, self.data_dir)


def _no_repeats(cfg: SurvivalDataConfig, key: str) -> None:
    if len(set(getattr(cfg, key))) != len(getattr(cfg, key)):
        raise ConfigError(f"{type(cfg).__name__}.{key} must not repeat a data set, got {getattr(cfg, key)!r}")


def _cox_survival(cox, X, times) -> np.ndarray:
    """Breslow survival of a fitted sksurv Cox model at arbitrary times (step function, 1 before the first event)."""
    S = cox.predict_survival_function(X, return_array=True)
    idx = np.searchsorted(cox.unique_times_, times, side="right") - 1
    return np.where(idx[None, :] >= 0, S[:, np.maximum(idx, 0)], 1.0)


def _km_survival(y_train, times) -> np.ndarray:
    """Kaplan-Meier survival of the training data at ``times`` (step function, 1 before the first time)."""
    from sksurv.nonparametric import kaplan_meier_estimator

    event, time = split_survival_array(y_train)
    t, s = kaplan_meier_estimator(event, time)
    idx = np.searchsorted(t, times, side="right") - 1
    return np.where(idx >= 0, s[np.maximum(idx, 0)], 1.0)


def run_real(cfg: SurvivalDataConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """C_td and IBS of CVAE, CD-CVAE dense/split, log-normal AFT and Cox PH on the bundled data sets
    (:class:`RealConfig`) or the paper's (:class:`PaperDataConfig`); metrics are named by data set
    (``<name>_ctd_dense``, ...)."""
    try:
        from sksurv.linear_model import CoxPHSurvivalAnalysis
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("the real-data experiment needs scikit-survival: pip install 'icml25[survival]'") from exc
    out: Metrics = {}
    names = cfg.run_datasets()
    step, total = 0, len(names) * (len(ENCODERS) + 2)
    for name in names:
        X, y = cfg.load(name)
        if cfg.max_rows and len(y) > cfg.max_rows:
            keep = np.random.default_rng([seed, 5]).choice(len(y), cfg.max_rows, replace=False)
            X, y = X[keep], y[keep]
        (Xtr, ytr), (Xva, yva), (Xte, yte) = split_standardise(X, y, seed=seed)
        event, t_te = split_survival_array(yte)
        t_ev = t_te[event]
        grid = survmetrics.evaluation_grid(ytr, yte, cfg.grid_points)
        y_cens = np.concatenate([ytr, yte])  # censoring KM of the IBS weights (pycox's EvalSurv uses the test set)
        models = {enc: _model(cfg, enc, seed, log_time=True).fit(Xtr, ytr, Xva, yva) for enc in ENCODERS}
        for enc, m in models.items():
            out[f"{name}_elbo_{enc}"] = m.elbo(Xte, yte)
            out[f"{name}_iwae_{enc}"] = m.iwae_loglik(Xte, yte, K=cfg.iwae_k)
        models["aft"] = LogNormalAFT().fit(Xtr, ytr)
        out[f"{name}_loglik_aft"] = models["aft"].loglik(Xte, yte)
        cox = CoxPHSurvivalAnalysis(alpha=1e-2).fit(Xtr, ytr)
        for key, m in models.items():
            out[f"{name}_ctd_{key}"] = survmetrics.ctd(yte, m.predict_survival_function(Xte, t_ev))
            out[f"{name}_ibs_{key}"] = survmetrics.ibs(y_cens, yte, m.predict_survival_function(Xte, grid), grid)
            step += 1
            progress(step, total)
        # trivial predictor: the training Kaplan-Meier curve for everybody (C_td 0.5 by construction)
        km = _km_survival(ytr, grid)
        out[f"{name}_ibs_km"] = survmetrics.ibs(y_cens, yte, np.repeat(km[None], len(yte), 0), grid)
        out[f"{name}_ctd_cox"] = survmetrics.ctd(yte, _cox_survival(cox, Xte, t_ev))
        out[f"{name}_ibs_cox"] = survmetrics.ibs(y_cens, yte, _cox_survival(cox, Xte, grid), grid)
        step += 1
        progress(step, total)
        for enc in ("dense", "split"):
            out[f"{name}_ibs_diff_{enc}"] = out[f"{name}_ibs_{enc}"] - out[f"{name}_ibs_none"]
            out[f"{name}_ctd_diff_{enc}"] = out[f"{name}_ctd_{enc}"] - out[f"{name}_ctd_none"]
    out["min_ctd_dense"] = min(out[f"{d}_ctd_dense"] for d in names)
    out["mean_ibs_km_minus_dense"] = float(np.mean([out[f"{d}_ibs_km"] - out[f"{d}_ibs_dense"] for d in names]))
    for enc in ("dense", "split"):
        out[f"mean_ibs_diff_{enc}"] = float(np.mean([out[f"{d}_ibs_diff_{enc}"] for d in names]))
        out[f"mean_ctd_diff_{enc}"] = float(np.mean([out[f"{d}_ctd_diff_{enc}"] for d in names]))
        out[f"datasets_ibs_not_worse_{enc}"] = float(sum(
            out[f"{d}_ibs_diff_{enc}"] <= 0 and out[f"{d}_ctd_diff_{enc}"] >= -0.01 for d in names))
    return out


def _real_figures(per_seed: list[Metrics], cfg: SurvivalDataConfig, outdir: Path) -> list[Path]:
    """:func:`real_figures` over the data sets the run used, in the experiment's own file."""
    return real_figures(per_seed, cfg.run_datasets(), outdir / cfg.FIGURE)


_PAPER_DATA_NOTE = ("the paper's SUPPORT, METABRIC, PBC and WHAS (4 of its 6 data sets; NWTCO and survival-MNIST "
                    "are not in the official repository) with the official preprocessing and the official fit's "
                    "recipe (Gumbel, beta 0.9, lr 1e-3, batch 200, up to 5,000 epochs, C_td selection, patience "
                    "30); one random 70/15/15 split per seed: the paper's split protocol and number of repetitions "
                    "are not known")

EXPERIMENTS = [
    Experiment(
        name="synthetic",
        description="Official Gibbs generator (x ~ N(1,1), u = x z1 + z2 + e*N(0,1), censoring c_level + e^2 N(0,1), "
                    "p(z|x,y,delta) = N(+-3/(1+e^{y+x}) (1,1), I)) at no_censor/medium/high; test ELBO, IWAE(100) and "
                    "gap of CVAE vs CD-CVAE dense/split with the same decoder, seed and budget.",
        config=SyntheticConfig,
        run=run_synthetic,
        presets={"smoke": {"n": 600, "burn_in": 500, "model.epochs": 8, "iwae_k": 20},
                 "quick": {"n": 3000, "model.epochs": 100},
                 "full": {"n": 10000, "model.epochs": 300, "model.batch_size": 256}},
        seeds={"smoke": 2, "quick": 5, "full": 10},
        fidelity={
            "smoke": Fidelity("mechanism", "the official generator with 500 of its 25,000 burn-in sweeps, 600 "
                                           "samples, 8 epochs: a harness run"),
            "quick": Fidelity("reduced", "the official code's Gibbs generator (25,000 burn-in), 3,000 samples, up to "
                                         "100 epochs at lr 1e-2 against the official fit's up to 5,000 at 1e-3 "
                                         "(patience 30); the paper's own sample size is not known"),
            "full": Fidelity("reduced", "the official generator, 10,000 samples, up to 300 of the official fit's "
                                        "5,000 epochs at lr 1e-2 (official 1e-3)"),
        },
        figures=synthetic_figures,
    ),
    Experiment(
        name="real",
        description="whas500, gbsg2, flchain (scikit-survival; stand-ins for the paper's data sets); log-time: C_td "
                    "(Antolini) and IBS of CVAE, CD-CVAE dense/split, log-normal AFT and Cox PH on 70/15/15 splits.",
        config=RealConfig,
        run=run_real,
        presets={"smoke": {"datasets": ("whas500",), "model.epochs": 5, "model.n_mc": 20, "iwae_k": 10},
                 "quick": {"max_rows": 2000, "model.epochs": 100, "model.n_mc": 50},
                 "full": {"model.epochs": 500}},
        seeds={"smoke": 2, "quick": 5, "full": 10},
        fidelity={
            "smoke": Fidelity("mechanism", "whas500 alone, 5 epochs: a harness run on a stand-in data set"),
            "quick": Fidelity("mechanism", "three scikit-survival sets (whas500, gbsg2, flchain at 2,000 rows) stand "
                                           "in for SUPPORT/METABRIC/PBC/WHAS/NWTCO; up to 100 epochs, one split per "
                                           "seed"),
            "full": Fidelity("mechanism", "the three scikit-survival sets at full size, up to 500 epochs; the "
                                          "paper's data sets are not bundled"),
        },
        figures=_real_figures,
        requires=("sksurv", "pandas"),
        full_requirements="The paper's own data sets are the paper_data experiment's (it runs when data_dir is set); "
                          "this one runs the three bundled sets at full size.",
    ),
    Experiment(
        name="paper_data",
        description="The paper's SUPPORT, METABRIC, PBC and WHAS, read from the official repository's CSV files "
                    "(data_dir) with its preprocessing; the official fit's recipe; C_td (Antolini) and IBS of CVAE, "
                    "CD-CVAE dense/split, log-normal AFT and Cox PH on 70/15/15 splits, as the real experiment.",
        config=PaperDataConfig,
        run=run_real,
        presets={"smoke": {"model.epochs": 5, "model.n_mc": 20, "iwae_k": 10},
                 "quick": {},
                 "full": {}},
        seeds={"smoke": 2, "quick": 5, "full": 10},
        fidelity={
            "smoke": Fidelity("mechanism", "5 epochs: a harness run on the paper's files"),
            "quick": Fidelity("reduced", _PAPER_DATA_NOTE + "; 5 seeds (up to 8)"),
            "full": Fidelity("reduced", _PAPER_DATA_NOTE + "; 10 seeds (up to 20)"),
        },
        figures=_real_figures,
        requires=("sksurv", "pandas"),
        data_setting="data_dir",
        full_requirements="The paper's SUPPORT, METABRIC, PBC and WHAS, as CSV files in the official repository's "
                          "datasets/ folder: clone github.com/ChuanhuiLiu/CDVI and run `icml25 reproduce cdvi "
                          "--preset full --set data_dir=/path/to/CDVI/datasets` (support2.csv, metabric_feat.csv + "
                          "metabric_label.csv, pbc2.csv, whas.csv, read with the official code's preprocessing; --set "
                          "paper_datasets=support,whas picks some); without data_dir the experiment is skipped with "
                          "one line. CPU cost, measured on 1 thread: the official recipe's early stopping ends a fit "
                          "after ~30-250 epochs (SUPPORT ~7 s, the others 2-5 s), so a seed of 4 sets x 3 encoders "
                          "takes about 1-2 minutes with the evaluation; no GPU needed. Still not available: NWTCO "
                          "(the official code downloads it through pycox at run time) and survival-MNIST (built from "
                          "a torchvision MNIST download).",
    ),
]

_NO_TABLE = "the paper's tables were not retrieved"
_ELBO_TIE = ("nats/sample: no paper number; the generator's delta shift +-3/(1+e^{y+x}) allows O(0.1-1) nat gains")
_GAP_TIE = "the gap IWAE - ELBO is in the same per-sample nats as the ELBO (no paper number)"
_Q_DEPENDS = ("the abstract's claim is that the tight q depends on the censoring indicator; in the official generator "
              "the true posterior depends on delta by construction, so any faithful run must show it")
_REAL_FAIR = ("the abstract's improvements are measured on the paper's survival data sets (SUPPORT, METABRIC, ...); "
              "fewer epochs or splits of that protocol still test the direction")
CLAIMS = [
    Claim(id="medium_elbo", kind="paper", source="abstract (Sec. 3 per the card, not read first-hand)",
          statement="Medium censoring (~30% censored): CD-CVAE (dense) has a higher test ELBO than the CVAE "
                    "whose encoder ignores delta (per-seed difference >= 0).",
          paper_value=f"optimal q depends on delta; q(z|x,y) is sub-optimal (Sec. 3; {_NO_TABLE})",
          experiment="synthetic", metric="medium_elbo_gain_dense", op=">=", threshold=0.0, aggregate="mean",
          resolution=0.02, resolution_reason=_ELBO_TIE,
          fair_at="mechanism", fair_at_reason=_Q_DEPENDS,
          requires=("synthetic_learned",)),
    Claim(id="high_elbo", kind="paper", source="abstract (Sec. 3 per the card, not read first-hand)",
          statement="High censoring (~50% censored): CD-CVAE (dense) test ELBO >= CVAE test ELBO.",
          paper_value=f"optimal q depends on delta (Sec. 3; {_NO_TABLE})", experiment="synthetic",
          metric="high_elbo_gain_dense", op=">=", threshold=0.0, aggregate="mean",
          resolution=0.02, resolution_reason="same per-sample ELBO scale as medium_elbo (no paper number)",
          fair_at="mechanism", fair_at_reason=_Q_DEPENDS,
          requires=("synthetic_learned",)),
    Claim(id="high_gap", kind="paper", source="abstract (Sec. 3-4 per the card, not read first-hand)",
          statement="High censoring: the variational gap IWAE(100) - ELBO is smaller for CD-CVAE (dense) than "
                    "for the CVAE (gap reduction >= 0).",
          paper_value=f"CDVI tightens the bound (Sec. 3-4; {_NO_TABLE})", experiment="synthetic",
          metric="high_gap_reduction_dense", op=">=", threshold=0.0, aggregate="mean",
          resolution=0.02, resolution_reason=_GAP_TIE,
          fair_at="mechanism", fair_at_reason=_Q_DEPENDS,
          requires=("synthetic_learned",)),
    Claim(id="medium_gap", kind="paper", source="abstract",
          statement="Medium censoring: the variational gap is smaller for CD-CVAE (dense) than for the CVAE.",
          paper_value=f"CDVI tightens the bound ({_NO_TABLE})", experiment="synthetic",
          metric="medium_gap_reduction_dense", op=">=", threshold=0.0, aggregate="mean",
          resolution=0.02, resolution_reason=_GAP_TIE,
          fair_at="mechanism", fair_at_reason=_Q_DEPENDS,
          requires=("synthetic_learned",)),
    # every seed: with delta constant the two models are the same by construction; 0.05 already absorbs training noise
    # (under validation-C_td selection the two kept different epochs, 2 vs 16 of 100: the cause of its earlier FAIL)
    Claim(id="no_censor_equal", kind="check",
          statement="(ours, beyond the paper) No censoring (delta constant): CD-CVAE and CVAE are the "
                    "same model, |ELBO difference| <= 0.05 nats/sample.",
          paper_value="not a claim of the paper; implied by the method (delta carries no information)",
          experiment="synthetic", metric="no_censor_abs_elbo_diff_dense", op="<=", threshold=0.05,
          aggregate="every_seed"),
    # every seed: the IWAE(100) estimate of the model's log-likelihood (a lower bound that tends to it as K grows;
    # its gap to the ELBO is reported as *_gap_*) against the exact log-likelihood of the covariate-free normal.
    # Earlier this compared the ELBO, a looser bound, with the exact likelihood. It gates the synthetic claims.
    Claim(id="synthetic_learned", kind="check",
          statement="(ours, sanity) At every censoring level CD-CVAE's (dense) test IWAE(100) log-likelihood is "
                    "above the exact test log-likelihood of the trivial predictor, one normal for everybody "
                    "(difference >= 0).",
          paper_value="implied: the model uses x (u = x z1 + z2 + noise)", experiment="synthetic",
          metric="min_iwae_over_null_dense", op=">=", threshold=0.0, aggregate="every_seed"),
    Claim(id="real_ibs", kind="paper", source="abstract",
          statement="Bundled real data (whas500, gbsg2, flchain): CD-CVAE (dense) IBS, averaged over the three "
                    "data sets, is no worse than the CVAE's (difference <= 0).",
          paper_value=f"significant improvements in individual survival distributions (abstract; {_NO_TABLE})",
          experiment="real", metric="mean_ibs_diff_dense", op="<=", threshold=0.0, aggregate="mean",
          resolution=0.005,
          resolution_reason="IBS lies in [0, 0.25] (0.25 = uninformative); no paper number; <0.005 (2% of it) does "
                            "not matter",
          requires=("real_learned",), fair_at="reduced", fair_at_reason=_REAL_FAIR),
    Claim(id="real_ctd", kind="paper", source="second-hand: the task card (Sec. 6, not read first-hand)",
          statement="Bundled real data: CD-CVAE (dense) C_td, averaged over the three data sets, is not worse than "
                    "the CVAE's by more than 0.01.",
          paper_value=f"competitive C_td (Sec. 6; {_NO_TABLE})", experiment="real", metric="mean_ctd_diff_dense",
          op=">=", threshold=-0.01, aggregate="mean",
          resolution=0.005, resolution_reason="half the claim's own 0.01 C_td non-inferiority margin (no paper number)",
          requires=("real_learned",), fair_at="reduced", fair_at_reason=_REAL_FAIR),
    # the paper's own data sets: the same statistics, thresholds and resolutions as real_ibs / real_ctd (fixed before
    # any paper_data run); they are decided only when a user gives data_dir
    Claim(id="paper_data_ibs", kind="paper", source="abstract",
          statement="The paper's SUPPORT, METABRIC, PBC and WHAS: CD-CVAE (dense) IBS, averaged over the four data "
                    "sets, is no worse than the CVAE's (difference <= 0).",
          paper_value=f"significant improvements in individual survival distributions (abstract; {_NO_TABLE})",
          experiment="paper_data", metric="mean_ibs_diff_dense", op="<=", threshold=0.0, aggregate="mean",
          resolution=0.005,
          resolution_reason="IBS lies in [0, 0.25] (0.25 = uninformative); no paper number; <0.005 (2% of it) does "
                            "not matter (as real_ibs)",
          requires=("paper_data_learned",), fair_at="reduced", fair_at_reason=_REAL_FAIR),
    Claim(id="paper_data_ctd", kind="paper", source="second-hand: the task card (Sec. 6, not read first-hand)",
          statement="The paper's SUPPORT, METABRIC, PBC and WHAS: CD-CVAE (dense) C_td, averaged over the four data "
                    "sets, is not worse than the CVAE's by more than 0.01.",
          paper_value=f"competitive C_td (Sec. 6; {_NO_TABLE})", experiment="paper_data",
          metric="mean_ctd_diff_dense", op=">=", threshold=-0.01, aggregate="mean",
          resolution=0.005, resolution_reason="half the claim's own 0.01 C_td non-inferiority margin (no paper number)",
          requires=("paper_data_learned",), fair_at="reduced", fair_at_reason=_REAL_FAIR),
    # every seed: 0.5 is the C_td of any covariate-free predictor (the Kaplan-Meier curve for everybody)
    Claim(id="paper_data_learned", kind="check",
          statement="(ours, sanity) On every one of the paper's data sets CD-CVAE's (dense) test C_td is above 0.5, "
                    "the C_td of the trivial predictor (smallest of the four >= 0.5).",
          paper_value="implied: the model ranks risk",
          experiment="paper_data", metric="min_ctd_dense", op=">=", threshold=0.5, aggregate="every_seed"),
    # every seed: 0.5 is the C_td of any covariate-free predictor (the Kaplan-Meier curve for everybody)
    Claim(id="real_learned", kind="check",
          statement="(ours, sanity) On every bundled data set CD-CVAE's (dense) test C_td is above 0.5, the "
                    "C_td of the trivial predictor (smallest of the three >= 0.5).",
          paper_value="implied: the model ranks risk",
          experiment="real", metric="min_ctd_dense", op=">=", threshold=0.5, aggregate="every_seed"),
]

API_EXAMPLE = """
from icml25.papers.cdvi import CDCVAE, simulate_censored_gibbs, split_standardise

sim = simulate_censored_gibbs(1500, "high", burn_in=1000, seed=0)
(X_tr, y_tr), (X_va, y_va), (X_te, y_te) = split_standardise(sim.X, sim.y, seed=0)
for encoder in ("none", "dense"):  # CVAE q(z|x,y) vs CD-CVAE q(z|x,y,delta)
    model = CDCVAE(encoder=encoder, latent_dim=2, log_time=False, epochs=20, batch_size=256, lr=1e-2).fit(X_tr, y_tr)
    print(encoder, "test ELBO", round(model.elbo(X_te, y_te), 3), "IWAE", round(model.iwae_loglik(X_te, y_te), 3))
print("S(t|x) at t = -2, 0, 2:", model.predict_survival_function(X_te[:2], [-2.0, 0.0, 2.0]).round(3))
"""
