"""CDVI: Censor Dependent Variational Inference (Liu & Wang, ICML 2025, arXiv 2502.09591).

A V-structure CVAE for survival data (z and x both point to the event time) whose variational posterior
q(z | x, y, delta) sees the censoring indicator: the tight variational family is the true posterior,
which depends on delta. ``CDCVAE(encoder="none")`` is the plain CVAE baseline that ignores delta.
"""

from icml25.papers.cdvi import metrics
from icml25.papers.cdvi.data import (
    BUNDLED,
    CENSOR_LEVELS,
    PAPER_DATASETS,
    SyntheticSurvival,
    load_bundled,
    load_paper_dataset,
    simulate_censored_gibbs,
    split_indices,
    split_standardise,
    true_posterior_mean,
)
from icml25.papers.cdvi.model import (
    CDCVAE,
    CDCVAEConfig,
    CDCVAENet,
    LogNormalAFT,
    censored_loglik,
    make_survival_array,
    primitive_logpdf,
    primitive_logsf,
    split_survival_array,
    survival_target,
)

__all__ = [
    "BUNDLED", "CDCVAE", "CDCVAEConfig", "CDCVAENet", "CENSOR_LEVELS", "LogNormalAFT", "PAPER_DATASETS",
    "SyntheticSurvival", "censored_loglik", "load_bundled", "load_paper_dataset", "make_survival_array", "metrics",
    "primitive_logpdf", "primitive_logsf", "simulate_censored_gibbs", "split_indices", "split_standardise",
    "split_survival_array", "survival_target", "true_posterior_mean",
]
