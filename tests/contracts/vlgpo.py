"""Contract cases of vlgpo: FitnessCNN (a scikit-learn regressor and an nn.Module), SeqVAE, LatentFlowPrior."""

from __future__ import annotations

import numpy as np
import torch

from icml25.papers.vlgpo import (
    ConvSeqVAE,
    FitnessCNN,
    LatentFlowPrior,
    PottsOracle,
    SeqVAE,
    adalead_sample,
    diversity,
    encode_sequences,
    latent_ascent_sample,
    levenshtein_matrix,
    load_ggs_cnn,
    load_ggs_split,
    load_official_vae,
    make_landscape_task,
    official_step_settings,
    select_top_k,
    vlgpo_sample,
)

ESTIMATORS = [FitnessCNN(kernel_size=1, width=4, n_steps=30, batch_size=16, lr=1e-2)]
EXPECTED_FAILED = {"FitnessCNN": {
    "check_do_not_raise_errors_in_init_or_set_params":
        "an nn.Module: its layers, sized by n_tokens, width and kernel_size, are built in __init__ (so a state_dict "
        "loads into a fresh instance), and invalid sizes raise there",
}}

MODULES = {
    "FitnessCNN": lambda: (FitnessCNN(8, width=4, kernel_size=3), (torch.randint(0, 20, (3, 8)),)),
    "SeqVAE": lambda: (SeqVAE(6, latent_dim=3, hidden=8), (torch.randint(0, 20, (4, 6)),)),
    "LatentFlowPrior": lambda: (LatentFlowPrior(3, hidden=8, n_freq=2), (torch.randn(4, 3), torch.rand(4))),
    "ConvSeqVAE": lambda: (ConvSeqVAE(8, latent_dim=3, n_pad=1), (torch.randint(0, 20, (4, 8)),)),
}

_TOK = np.random.default_rng(0).integers(0, 20, (6, 8))
_CNN = FitnessCNN(8, width=4, kernel_size=3)
_VAE = SeqVAE(8, latent_dim=3, hidden=8)
_FLOW = LatentFlowPrior(3, hidden=8, n_freq=2)

BAD_INPUTS = [
    ("encode_unknown_letter", lambda: encode_sequences(["ACDB"]), ValueError),
    ("encode_token_out_of_range", lambda: encode_sequences(np.array([[0, 20]])), ValueError),
    ("encode_negative_token", lambda: encode_sequences(np.array([[0, -1]])), ValueError),
    ("encode_fractional_token", lambda: encode_sequences(np.array([[0.0, 1.5]])), ValueError),
    ("encode_unequal_lengths", lambda: encode_sequences(["AC", "ACD"]), ValueError),
    ("encode_empty", lambda: encode_sequences([]), ValueError),
    ("encode_1d_tokens", lambda: encode_sequences(np.array([0, 1, 2])), ValueError),
    ("vae_zero_length", lambda: SeqVAE(0), ValueError),
    ("vae_wrong_length", lambda: _VAE.encode(_TOK[:, :5]), ValueError),
    ("vae_decode_wrong_latent", lambda: _VAE.decode(torch.zeros(2, 4)), ValueError),
    ("vae_fit_negative_steps", lambda: _VAE.fit(_TOK, n_steps=-1), ValueError),
    ("flow_zero_latent", lambda: LatentFlowPrior(0), ValueError),
    ("flow_fit_wrong_shape", lambda: _FLOW.fit(np.zeros((4, 2)), n_steps=1), ValueError),
    ("flow_fit_nan", lambda: _FLOW.fit(np.full((4, 3), np.nan), n_steps=1), ValueError),
    ("flow_sample_zero", lambda: _FLOW.sample(0), ValueError),
    ("flow_forward_t_wrong_length", lambda: _FLOW(torch.zeros(4, 3), torch.zeros(3)), ValueError),
    ("cnn_kernel_longer_than_sequence", lambda: FitnessCNN(4, kernel_size=5), ValueError),
    ("cnn_soft_wrong_shape", lambda: _CNN.forward_soft(torch.zeros(2, 8, 3)), ValueError),
    ("cnn_fit_y_wrong_length", lambda: _CNN.fit(_TOK, np.zeros(5), n_steps=1), ValueError),
    ("cnn_fit_y_nan", lambda: _CNN.fit(_TOK, np.full(6, np.nan), n_steps=1), ValueError),
    ("cnn_fit_zero_batch", lambda: _CNN.fit(_TOK, np.zeros(6), batch_size=0), ValueError),
    ("cnn_predict_wrong_length", lambda: _CNN.predict(_TOK[:, :6]), ValueError),
    ("vlgpo_negative_J", lambda: vlgpo_sample(_FLOW, _VAE, _CNN, 4, 2, J=-1), ValueError),
    ("vlgpo_bad_normalisation", lambda: vlgpo_sample(_FLOW, _VAE, _CNN, 4, 2, f_min=1.0, f_max=1.0), ValueError),
    ("vlgpo_zero_ode_steps", lambda: vlgpo_sample(_FLOW, _VAE, _CNN, 4, 0), ValueError),
    ("latent_ascent_negative_step", lambda: latent_ascent_sample(_VAE, _CNN, _TOK, 4, 2, step_size=-1.0),
     ValueError),
    ("adalead_kappa_above_one", lambda: adalead_sample(_CNN, _TOK, 4, kappa=2.0), ValueError),
    ("select_top_k_zero", lambda: select_top_k(["ACDEFGHI"], _CNN, k=0), ValueError),
    ("select_top_k_empty", lambda: select_top_k([], _CNN, k=2), ValueError),
    ("task_unknown_difficulty", lambda: make_landscape_task(difficulty="easy"), ValueError),
    ("oracle_wrong_length",
     lambda: PottsOracle(np.zeros((8, 20)), np.zeros((0, 2), int), np.zeros((0, 20, 20)))(_TOK[:, :5]), ValueError),
    ("levenshtein_unequal_lengths", lambda: levenshtein_matrix(["AC"], ["ACD", "ACDE"]), ValueError),
    ("diversity_unknown_statistic", lambda: diversity(_TOK, "max"), ValueError),
    ("official_settings_unknown_protein", lambda: official_step_settings("gb1", "hard"), ValueError),
    ("load_split_missing_file", lambda: load_ggs_split("/nonexistent/aav_medium.csv"), ValueError),
    ("load_cnn_missing_file", lambda: load_ggs_cnn("/nonexistent/predictor.ckpt"), ValueError),
    ("load_vae_missing_file", lambda: load_official_vae("/nonexistent/vae.pt"), ValueError),
    ("conv_vae_length_not_multiple_of_4", lambda: ConvSeqVAE(30), ValueError),
    ("conv_vae_pad_too_long", lambda: ConvSeqVAE(8, n_pad=8), ValueError),
]
