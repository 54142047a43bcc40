"""AlphaQCM: Alpha Discovery in Finance with Distributional Reinforcement Learning (Zhu & Zhu, ICML 2025).

Formulaic-alpha search as an MDP (AlphaGen's): an agent writes reverse-Polish token
sequences, each finished alpha joins a linear alpha pool, and the reward is the pool's IC.
The agent is QR-DQN plus a separate mean network, acting by ``Q + lambda * std`` where the
std is the quantiled-conditional-moment (QCM) estimate from the quantile network.
"""

from icml25.papers.alphaqcm.agent import (
    AlphaQCMAgent,
    AlphaQCMConfig,
    TokenLSTMNet,
    qcm_design,
    qcm_moments,
    quantile_huber_loss,
    quantile_midpoints,
    random_search,
)
from icml25.papers.alphaqcm.data import (
    PAPER_SPLITS,
    QLIB_POOLS,
    QlibMarket,
    SyntheticMarket,
    forward_return,
    load_paper_market,
    load_qlib_market,
    synthetic_market,
)
from icml25.papers.alphaqcm.env import AlphaEnv, make_synthetic_env
from icml25.papers.alphaqcm.expressions import (
    RPNBuilder,
    Token,
    TokenSet,
    evaluate_rpn,
    parse_rpn,
    reduced_token_set,
    rolling_pair,
    rolling_stat,
)
from icml25.papers.alphaqcm.pool import AlphaPool, daily_ic, daily_rank_ic, lasso_weights, mean_ic, normalize_by_day

__all__ = [
    "PAPER_SPLITS", "QLIB_POOLS", "AlphaEnv", "AlphaPool", "AlphaQCMAgent", "AlphaQCMConfig", "QlibMarket",
    "RPNBuilder", "SyntheticMarket", "Token", "TokenLSTMNet", "TokenSet", "daily_ic", "daily_rank_ic", "evaluate_rpn",
    "forward_return", "lasso_weights", "load_paper_market", "load_qlib_market", "make_synthetic_env", "mean_ic",
    "normalize_by_day", "parse_rpn", "qcm_design", "qcm_moments", "quantile_huber_loss", "quantile_midpoints",
    "random_search", "reduced_token_set", "rolling_pair", "rolling_stat", "synthetic_market",
]
