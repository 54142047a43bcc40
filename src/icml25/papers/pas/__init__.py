"""PAS: Prediction-Powered Adaptive Shrinkage (Li & Ignatiadis, ICML 2025, arXiv 2502.14166).

Compound estimation of many means from a few labels per problem plus ML predictions:
power-tuned PPI inside each problem, then shrinkage towards the predictions with a
single global strength chosen by an unbiased risk estimate (CURE).
"""

from icml25.papers.pas.data import CompoundMeanData, digits_problems, gaussian_synthetic, gaussian_true_moments
from icml25.papers.pas.estimators import (
    PASEstimator,
    PASFit,
    ProblemMoments,
    classical_mean_pointestimate,
    cure,
    minimise_cure,
    pas_fit,
    pas_mean_pointestimate,
    power_tuning_lambdas,
    prediction_mean_pointestimate,
    problem_moments,
    pt_ppi_mean_pointestimate,
    pt_variance,
    shrinkage_only_pointestimate,
    vanilla_ppi_mean_pointestimate,
)

__all__ = [
    "CompoundMeanData", "PASEstimator", "PASFit", "ProblemMoments", "classical_mean_pointestimate", "cure",
    "digits_problems", "gaussian_synthetic", "gaussian_true_moments", "minimise_cure", "pas_fit",
    "pas_mean_pointestimate", "power_tuning_lambdas", "prediction_mean_pointestimate", "problem_moments",
    "pt_ppi_mean_pointestimate", "pt_variance", "shrinkage_only_pointestimate", "vanilla_ppi_mean_pointestimate",
]
