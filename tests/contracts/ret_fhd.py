"""Contract cases of ret_fhd: the multi-exit model, temperatures, the Z-score guard and the federated loop."""

import numpy as np
import torch

from icml25.papers.ret_fhd import (
    Client,
    FDFixedT,
    FedAvg,
    MultiExitMLP,
    ReTFHD,
    category_temperature,
    class_mean_logits,
    dirichlet_split,
    distillation_loss,
    elastic_temperature,
    load_dataset,
    make_clients,
    n_parameters,
    zscore_guard,
)

MODULES = {"MultiExitMLP": lambda: (MultiExitMLP(6, [8, 5], 3), (torch.randn(4, 6),))}

C = 3
X = torch.randn(30, 4)
Y = torch.arange(30) % C
PARTS = [np.arange(0, 10), np.arange(10, 20), np.arange(20, 30)]
Z_G = torch.randn(C, C)
Z_K = torch.randn(2, C, C)
T = torch.ones(2, C)


def _model():
    return MultiExitMLP(4, [5, 5], C)


def _clients(**kwargs):
    return make_clients(X, Y, PARTS, C, archs=((5,),), **kwargs)


def _nan(t):
    t = t.clone()
    t.view(-1)[0] = float("nan")
    return t


BAD_INPUTS = [
    # model
    ("model.zero_in_dim", lambda: MultiExitMLP(0, [8], C), ValueError),
    ("model.no_hidden", lambda: MultiExitMLP(4, [], C), ValueError),
    ("model.one_class", lambda: MultiExitMLP(4, [8], 1), ValueError),
    ("model.negative_width", lambda: MultiExitMLP(4, [8, -2], C), ValueError),
    ("model.forward_wrong_features", lambda: _model()(torch.randn(2, 7)), ValueError),
    ("n_parameters.not_a_module", lambda: n_parameters(np.zeros(3)), TypeError),
    # knowledge and temperatures
    ("class_means.label_out_of_range", lambda: class_mean_logits(_model(), (X[:3], torch.tensor([0, 1, 3])), C),
     ValueError),
    ("class_means.float_labels", lambda: class_mean_logits(_model(), (X[:3], torch.tensor([0.0, 1.0, 2.0])), C),
     TypeError),
    ("class_means.length_mismatch", lambda: class_mean_logits(_model(), (X[:3], Y[:2]), C), ValueError),
    ("class_means.empty_loader", lambda: class_mean_logits(_model(), [], C), ValueError),
    ("category_T.not_square", lambda: category_temperature(torch.zeros(3, 4)), ValueError),
    ("category_T.zero_T0", lambda: category_temperature(Z_G, T0=0.0), ValueError),
    ("category_T.reversed_bounds", lambda: category_temperature(Z_G, bounds=(5.0, 1.0)), ValueError),
    ("category_T.nan_logits", lambda: category_temperature(_nan(Z_G)), ValueError),
    ("elastic_T.Z_k_shape", lambda: elastic_temperature(Z_G, torch.zeros(C, C), torch.ones(C)), ValueError),
    ("elastic_T.negative_eta", lambda: elastic_temperature(Z_G, Z_K, torch.ones(C), eta=-1.0), ValueError),
    ("elastic_T.T_c_length", lambda: elastic_temperature(Z_G, Z_K, torch.ones(C + 1)), ValueError),
    ("elastic_T.present_length",
     lambda: elastic_temperature(Z_G, Z_K, torch.ones(C), present=torch.ones(2, dtype=bool)),
     ValueError),
    ("distill.too_many_levels", lambda: distillation_loss([torch.randn(2, C)], Y[:2], Z_G, T), ValueError),
    ("distill.weights_length", lambda: distillation_loss([torch.randn(2, C)] * 2, Y[:2], Z_G, T, [1.0]),
     ValueError),
    ("distill.label_out_of_range", lambda: distillation_loss([torch.randn(2, C)], torch.tensor([0, C]), Z_G, T[:1]),
     ValueError),
    ("distill.zero_temperature", lambda: distillation_loss([torch.randn(2, C)], Y[:2], Z_G, torch.zeros(1, C)),
     ValueError),
    ("distill.batch_mismatch", lambda: distillation_loss([torch.randn(3, C)], Y[:2], Z_G, T[:1]), ValueError),
    # guard
    ("guard.two_uploads", lambda: zscore_guard([np.eye(3), np.eye(3)]), ValueError),
    ("guard.zero_threshold", lambda: zscore_guard([np.eye(3)] * 3, thresh=0.0), ValueError),
    ("guard.nan_upload", lambda: zscore_guard([np.eye(3), np.eye(3), np.full((3, 3), np.nan)]), ValueError),
    ("guard.negative_counts", lambda: zscore_guard([np.eye(3)] * 3, counts=[-np.ones(3)] * 3), ValueError),
    ("guard.shape_mismatch", lambda: zscore_guard([np.eye(3), np.eye(3), np.eye(4)]), ValueError),
    # data
    ("load_dataset.unknown", lambda: load_dataset("cifar10"), ValueError),
    ("load_dataset.test_fraction_one", lambda: load_dataset("digits", test_fraction=1.0), ValueError),
    ("dirichlet.zero_alpha", lambda: dirichlet_split(Y, 3, 0.0), ValueError),
    ("dirichlet.zero_clients", lambda: dirichlet_split(Y, 0, 1.0), ValueError),
    ("make_clients.index_out_of_range", lambda: make_clients(X, Y, [np.array([0, 99])], C), ValueError),
    ("make_clients.float_indices", lambda: make_clients(X, Y, [np.array([0.0, 1.0])], C), TypeError),
    # federated loop
    ("client.unknown_attack", lambda: Client(_model(), X[:5], Y[:5], attack="backdoor"), ValueError),
    ("client.length_mismatch", lambda: Client(_model(), X[:5], Y[:4]), ValueError),
    ("retfhd.two_clients", lambda: ReTFHD(_clients()[:2], rounds=2), ValueError),
    ("retfhd.zero_rounds", lambda: ReTFHD(_clients(), rounds=0), ValueError),
    ("retfhd.positional_rounds", lambda: ReTFHD(_clients(), 2), TypeError),
    ("retfhd.unknown_setting", lambda: ReTFHD(_clients(), round=2), TypeError),
    ("retfhd.bad_role_probs", lambda: ReTFHD(_clients(), rounds=2, role_probs=(0.5, 0.2, 0.2)), ValueError),
    ("retfhd.zero_lr", lambda: ReTFHD(_clients(), rounds=2, lr=0.0), ValueError),
    ("retfhd.negative_eta", lambda: ReTFHD(_clients(), rounds=2, eta=-1.0), ValueError),
    ("retfhd.reversed_bounds", lambda: ReTFHD(_clients(), rounds=2, bounds=(5.0, 2.0)), ValueError),
    ("fd_fixed_t.zero_temperature", lambda: FDFixedT(_clients(), rounds=2, T=0.0), ValueError),
    ("fedavg.mixed_architectures",
     lambda: FedAvg(make_clients(X, Y, PARTS, C, archs=((5,), (6,))), rounds=2), ValueError),
]
