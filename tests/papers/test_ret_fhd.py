"""ReT-FHD: reductions to FD, guard behaviour, KD gradient convention, ledger integrity, bad input, smoke run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml25.papers.ret_fhd import (
    Client,
    FDFixedT,
    FedAvg,
    HashChainLedger,
    MultiExitMLP,
    ReTFHD,
    ReTFHDConfig,
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

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits", seed=0)


def _small_fed(digits, archs, n_clients=4, seed=0):
    Xtr, ytr, Xte, yte, C = digits
    parts = dirichlet_split(ytr[:400], n_clients, 0.5, seed=seed)
    return make_clients(Xtr[:400], ytr[:400], parts, C, archs=archs, seed=seed), (Xte[:200], yte[:200])


def test_one_exit_no_elastic_no_category_is_fd_with_constant_T(digits):
    """eta = 0, a = 0, one exit: ReT-FHD (guard off) is exactly FD with T = T0."""
    runs = []
    for method in ("ret", "fd"):
        clients, test = _small_fed(digits, archs=((32,), (48,)))
        if method == "ret":
            cfg = ReTFHDConfig(rounds=3, local_epochs=1, guard=False, T0=3.0, a=0.0, eta=0.0)
            algo = ReTFHD(clients, cfg, seed=1, eval_data=test)
        else:
            algo = FDFixedT(clients, ReTFHDConfig(rounds=3, local_epochs=1), T=3.0, seed=1, eval_data=test)
        runs.append((algo.run(), clients, algo.global_logits_))
    (h1, c1, g1), (h2, c2, g2) = runs
    assert h1.accuracy == h2.accuracy
    torch.testing.assert_close(g1, g2, rtol=0, atol=0)
    for a, b in zip(c1, c2):
        for p, q in zip(a.model.parameters(), b.model.parameters()):
            torch.testing.assert_close(p, q, rtol=0, atol=0)
    # and distillation did change something relative to local training
    clients, test = _small_fed(digits, archs=((32,), (48,)))
    h3 = ReTFHD(clients, rounds=3, local_epochs=1, guard=False, seed=1, distill=False, eval_data=test).run()  # keywords
    assert any(p.ne(q).any() for p, q in zip(clients[0].model.parameters(), c1[0].model.parameters()))
    assert h3.bytes_per_round == [0, 0, 0] and h1.bytes_per_round[0] == 4 * 4 * (10 * 10 + 10)


def test_temperature_special_cases():
    torch.manual_seed(0)
    Z_g = torch.randn(6, 6) * 3
    assert torch.allclose(category_temperature(Z_g, T0=4.0, a=0.0), torch.full((6,), 4.0))
    T = category_temperature(Z_g, T0=4.0, a=1.0, bounds=(0.01, 100))
    kappa = Z_g.softmax(-1).max(-1).values
    assert torch.equal(T.argsort(), kappa.argsort())  # more confident class -> softer
    torch.testing.assert_close(T, 4.0 * kappa / kappa.mean())
    assert category_temperature(Z_g, 4.0, 5.0, bounds=(2, 6)).clamp(2, 6).equal(category_temperature(Z_g, 4.0, 5.0,
                                                                                                      (2, 6)))
    Z_k = torch.stack([Z_g, Z_g + torch.randn(6, 6)])
    torch.testing.assert_close(elastic_temperature(Z_g, Z_k, T, eta=0.0, bounds=(0.01, 100)), T.expand(2, 6))
    Te = elastic_temperature(Z_g, Z_k, T, eta=0.5, bounds=(0.01, 100))
    torch.testing.assert_close(Te[0], T)  # no discrepancy at level 0
    kl = torch.nn.functional.kl_div(Z_k[1].log_softmax(-1), Z_g.log_softmax(-1), log_target=True,
                                    reduction="none").sum(-1)
    torch.testing.assert_close(Te[1], T * (1 + 0.5 * kl))


def test_distillation_zero_at_teacher_and_t_squared_gradient():
    torch.manual_seed(1)
    C = 5
    Z_g = torch.randn(C, C)
    y = torch.tensor([0, 1, 2, 3, 4, 2])
    T = torch.full((1, C), 4.0)
    assert distillation_loss([Z_g[y].clone()], y, Z_g, T).item() == pytest.approx(0.0, abs=1e-7)
    # T^2 convention: for large T the gradient tends to (z_s - z_t - mean) / (C * B), independent of T
    zt = (Z_g - Z_g.mean(-1, keepdim=True)).double()
    zs = torch.randn(len(y), C, dtype=torch.double)
    zs = zs - zs.mean(-1, keepdim=True)
    grads = []
    for t in (200.0, 400.0):
        z = zs.clone().requires_grad_(True)
        distillation_loss([z], y, zt, torch.full((1, C), t, dtype=torch.double)).backward()
        grads.append(z.grad)
    expected = (zs - zt[y]) / (C * len(y))
    torch.testing.assert_close(grads[0], expected, rtol=0.02, atol=1e-4)
    torch.testing.assert_close(grads[0], grads[1], rtol=0.02, atol=1e-5)
    # exact gradient of the multi-level loss with per-class temperatures
    zs2 = [torch.randn(len(y), C, dtype=torch.double, requires_grad=True) for _ in range(2)]
    Tl = torch.rand(2, C, dtype=torch.double) * 3 + 1
    assert torch.autograd.gradcheck(lambda a, b: distillation_loss([a, b], y, Z_g.double(), Tl), tuple(zs2))


def test_distillation_masks_classes_without_global_knowledge():
    Z_g = torch.randn(3, 3)
    y = torch.tensor([0, 1, 2])
    z = torch.randn(3, 3)
    mask = torch.tensor([True, False, False])
    full = distillation_loss([z[:1]], y[:1], Z_g, torch.ones(1, 3))
    assert distillation_loss([z], y, Z_g, torch.ones(1, 3), mask=mask).item() == pytest.approx(full.item() / 3)


def test_class_mean_logits_matches_loop():
    torch.manual_seed(2)
    model = MultiExitMLP(7, [9, 5], 4)
    X, y = torch.randn(30, 7), torch.tensor([0, 1, 3] * 10)
    Z, counts = class_mean_logits(model, (X, y), 4)
    batches = [(X[:13], y[:13]), (X[13:], y[13:])]
    Z2, counts2 = class_mean_logits(model, batches, 4)
    torch.testing.assert_close(Z, Z2)
    outs = model(X)
    for layer in range(2):
        for c in range(4):
            ref = outs[layer][y == c].mean(0) if (y == c).any() else torch.zeros(4)
            torch.testing.assert_close(Z[layer, c], ref.detach())
    assert counts.tolist() == [10, 10, 0, 10]


def test_guard_accepts_near_identical_and_flags_shifted():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(10, 10)) * 3
    ups = [base + 1e-6 * rng.normal(size=base.shape) for _ in range(10)]
    acc, _ = zscore_guard(ups)
    assert acc.all()
    noisy = [base + rng.normal(size=base.shape) for _ in range(10)]
    noisy[4] = noisy[4] + 10 * base.std()  # one upload shifted by 10 std (raw logits)
    acc, scores = zscore_guard(noisy, standardize=False)
    assert acc.tolist() == [k != 4 for k in range(10)] and scores.argmax() == 4
    flipped = [base + rng.normal(size=base.shape) for _ in range(10)]
    for k in (1, 6, 8):
        flipped[k] = flipped[k][::-1]  # label flip: Z[c] <- Z[C-1-c]
    acc, _ = zscore_guard(flipped)
    assert np.flatnonzero(~acc).tolist() == [1, 6, 8]
    # the classical z-score is bounded by (K-1)/sqrt(K) and misses 3 of 10 attackers at thresh 2
    _, z = zscore_guard(flipped, robust=False)
    assert z.max() < 2.0 <= (10 - 1) / np.sqrt(10)


def test_ledger_detects_tampering():
    led = HashChainLedger()
    for t in range(3):
        led.append({"round": t, "accepted": [0, 1]}, {"Z_0": np.full((2, 2), t), "Z_g": np.eye(2)})
    assert led.verify()
    led.blocks[1]["payload"]["Z_0"][0, 0] += 1e-9
    assert not led.verify()
    led.blocks[1]["payload"]["Z_0"][0, 0] -= 1e-9
    assert led.verify()
    led.blocks[0]["meta"]["accepted"] = [0]
    assert not led.verify()


def test_fedavg_averages_parameters(digits):
    clients, test = _small_fed(digits, archs=((16,),), n_clients=3)
    algo = FedAvg(clients, ReTFHDConfig(rounds=1, local_epochs=1), eval_data=test)
    states = [{k: v.clone() for k, v in c.model.state_dict().items()} for c in clients]
    w = np.array([len(c.y) for c in clients], float)
    w /= w.sum()
    algo.aggregate()
    for k in states[0]:
        ref = sum(float(wi) * s[k] for wi, s in zip(w, states))
        for c in clients:
            torch.testing.assert_close(c.model.state_dict()[k], ref)
    hist = algo.run()
    assert hist.bytes_per_round == [4 * 3 * n_parameters(clients[0].model)]


def test_dirichlet_split_is_a_partition(digits):
    y = digits[1]
    parts = dirichlet_split(y, 7, 0.3, seed=3, min_size=5)
    allidx = np.concatenate(parts)
    assert sorted(allidx.tolist()) == list(range(len(y))) and min(map(len, parts)) >= 5


def test_bad_input_raises(digits):
    Xtr, ytr, *_ = digits
    with pytest.raises(ValueError, match="hidden"):
        MultiExitMLP(4, [], 3)
    with pytest.raises(ValueError, match="attack"):
        Client(MultiExitMLP(64, [8], 10), Xtr[:5], ytr[:5], attack="backdoor")
    with pytest.raises(ValueError, match="at least 3"):
        zscore_guard([np.eye(3), np.eye(3)])
    with pytest.raises(ValueError, match="finite"):
        zscore_guard([np.eye(3), np.eye(3), np.full((3, 3), np.nan)])
    with pytest.raises(ValueError, match="Z_k"):
        elastic_temperature(torch.zeros(3, 3), torch.zeros(3, 3), torch.ones(3))
    with pytest.raises(ValueError, match="T0"):
        category_temperature(torch.zeros(3, 3), T0=-1.0)
    with pytest.raises(ValueError, match="labels"):
        class_mean_logits(MultiExitMLP(64, [8], 10), (Xtr[:5], torch.tensor([0, 1, 2, 3, 11])), 10)
    clients = make_clients(Xtr[:60], ytr[:60], [np.arange(20), np.arange(20, 40), np.arange(40, 60)], 10)
    with pytest.raises(ValueError, match=r"ReTFHDConfig.role_probs must be 3 non-negative numbers summing to 1"):
        ReTFHD(clients, rounds=2, role_probs=(0.5, 0.2, 0.2))
    with pytest.raises(ValueError, match=r"ReTFHDConfig.rounds must be > 0, got 0"):
        ReTFHDConfig(rounds=0)
    with pytest.raises(ValueError, match=r"ReTFHDConfig.bounds must be \(T_min, T_max\) with T_min <= T_max"):
        ReTFHDConfig(bounds=(5.0, 2.0))
    with pytest.raises(TypeError, match="cfg must be a ReTFHDConfig"):
        ReTFHD(clients, 2)  # the old positional round count
    with pytest.raises(TypeError, match="unexpected keyword argument 'rouds'"):
        ReTFHD(clients, rouds=2)
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("cifar10")


def test_smoke_experiment_values():
    from icml25.papers.ret_fhd.repro import EXPERIMENTS

    exp = next(e for e in EXPERIMENTS if e.name == "digits")
    m = exp.run(exp.make_config("smoke"), seed=0)
    assert m["upload_bytes_per_client"] == 4 * (10 * 10 + 10)
    smallest = 4 * n_parameters(MultiExitMLP(64, [32], 10))
    assert m["upload_over_smallest_model"] == pytest.approx(440 / smallest)
    for k in ("acc_retfhd", "acc_fd_t1", "acc_local", "acc_attack_guard"):
        assert 0.1 < m[k] < 1.0
    assert m["retfhd_minus_fd_t1"] == pytest.approx(m["acc_retfhd"] - m["acc_fd_t1"])
    assert 0 <= m["guard_recall"] <= 1 and 0 <= m["guard_fpr"] <= 1
    assert len(m["curve_retfhd"]) == 3


def test_experiment_config_nests_the_training_config():
    """The experiment holds the method's ReTFHDConfig whole (``fhd``); its own fields are the experiment's."""
    import dataclasses

    from icml25.core.experiment import config_from_dict, config_to_dict
    from icml25.papers.ret_fhd.repro import EXPERIMENTS, FHDConfig

    own = {f.name for f in dataclasses.fields(FHDConfig)}
    assert own == {"device", "dataset", "n_clients", "alpha", "n_attackers", "attack_scale", "last_rounds", "fhd"}
    assert not own & {f.name for f in dataclasses.fields(ReTFHDConfig)}  # nothing re-declared
    exp = EXPERIMENTS[0]
    assert exp.make_config("quick").fhd == ReTFHDConfig(rounds=20, local_epochs=2, batch_size=64, lr=3e-3)
    smoke = exp.make_config("smoke", {"fhd.kd_weight": 0.5})
    assert smoke.fhd.rounds == 3 and smoke.fhd.kd_weight == 0.5 and exp.make_config("full").fhd.rounds == 100
    assert config_from_dict(FHDConfig, config_to_dict(smoke)).fhd == smoke.fhd  # a job's stored config rebuilds
    with pytest.raises(ValueError, match=r"FHDConfig.last_rounds must be <= fhd.rounds = 3"):
        exp.make_config("smoke", {"last_rounds": 4})
