"""PAS: Prediction-Powered Adaptive Shrinkage (Li & Ignatiadis, ICML 2025, arXiv 2502.14166).

Compound estimation of many means from a few labels per problem plus ML predictions:
power-tuned PPI inside each problem, then shrinkage towards the predictions with a
single global strength chosen by an unbiased risk estimate (CURE).
"""

from icml25.papers.pas.data import (
    CompoundMeanData,
    PredictionProblems,
    digits_problems,
    gaussian_synthetic,
    gaussian_true_moments,
    load_amazon_reviews,
    load_galaxy_zoo,
    split_labelled_fraction,
)
from icml25.papers.pas.estimators import (
    VARIANCES,
    PASConfig,
    PASEstimator,
    PASFit,
    ProblemMoments,
    classical_mean_pointestimate,
    cure,
    grand_mean_sure,
    minimise_cure,
    pas_fit,
    pas_mean_pointestimate,
    pooled_variance_moments,
    power_tuning_lambdas,
    prediction_mean_pointestimate,
    problem_moments,
    pt_ppi_mean_pointestimate,
    pt_variance,
    shrink_to_grand_mean_pointestimate,
    shrinkage_only_pointestimate,
    vanilla_ppi_mean_pointestimate,
)

__all__ = [
    "VARIANCES", "CompoundMeanData", "PASConfig", "PASEstimator", "PASFit", "PredictionProblems", "ProblemMoments",
    "classical_mean_pointestimate", "cure", "digits_problems", "gaussian_synthetic", "gaussian_true_moments",
    "grand_mean_sure", "load_amazon_reviews", "load_galaxy_zoo", "minimise_cure", "pas_fit",
    "pas_mean_pointestimate", "pooled_variance_moments", "power_tuning_lambdas", "prediction_mean_pointestimate",
    "problem_moments", "pt_ppi_mean_pointestimate", "pt_variance", "shrink_to_grand_mean_pointestimate",
    "shrinkage_only_pointestimate", "split_labelled_fraction", "vanilla_ppi_mean_pointestimate",
]
