"""ReT-FHD: reductions to FD, guard behaviour, KD gradient convention, ledger integrity, bad input, smoke run.

The method's defining elements (docs/papers/ret_fhd.md, "The method"; Eqs. 3, 4 and 6 are reconstructions, the
paper's forms were not retrievable) and the tests that fail when one is removed or altered:

1. The knowledge carrier and its aggregation (Algorithm 1): each client uploads the class-mean logits of its last
   exit, and ``Z_g[c]`` is the count-weighted mean of the accepted uploads: ``test_class_mean_logits_matches_loop``,
   ``test_a_round_trains_on_eq6_with_eq3_eq4_temperatures_and_count_weighted_global_logits`` (an unweighted mean,
   the first exit uploaded).
2. The category-aware temperature (Eq. 4), ``T_c = clip(T0 (kappa_c / mean kappa)^a)``, confident classes softer:
   ``test_temperature_special_cases`` (the ratio inverted),
   ``test_a_round_trains_on_eq6_with_eq3_eq4_temperatures_and_count_weighted_global_logits``.
3. The multi-level elastic temperature (Eq. 3), ``T[l, c] = clip(T_c (1 + eta KL(softmax Z_g[c] || softmax
   Z_k^l[c])))`` for every exit and the classes the client holds: ``test_temperature_special_cases`` (the KL
   reversed), ``test_a_round_trains_on_eq6_with_eq3_eq4_temperatures_and_count_weighted_global_logits`` (T_c used
   for every exit, absent classes not reset, only the last exit distilled).
4. The local objective (Eq. 6): CE on the last exit + ``sum_l (1/L) T^2 KL(softmax(Z_g[y]/T) || softmax(z^l/T))``:
   ``test_distillation_loss_is_the_kd_term_of_eq6_rederived_by_hand`` (the KL reversed, a sum over levels),
   ``test_distillation_zero_at_teacher_and_t_squared_gradient`` (T^2 dropped),
   ``test_a_round_trains_on_eq6_with_eq3_eq4_temperatures_and_count_weighted_global_logits`` (CE on the first
   exit), ``test_one_exit_no_elastic_no_category_is_fd_with_constant_T``.
5. The Z-Score Guard: rows z-normalised, a robust (median / MAD) score, rejection above 2, blacklisting after 3
   rejections: ``test_guard_accepts_near_identical_and_flags_shifted`` (mean/std score),
   ``test_guard_standardises_rows_so_logit_scale_is_not_flagged`` (no standardisation),
   ``test_blacklisted_clients_stay_out_of_the_aggregate`` (the blacklist ignored), ``test_ledger_detects_tampering``.
"""

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


def test_distillation_loss_is_the_kd_term_of_eq6_rederived_by_hand():
    """sum_l (1/L') mean_i keep_i T[l,y_i]^2 KL(softmax(Z_g[y_i]/T[l,y_i]) || softmax(z^l_i/T[l,y_i])), the teacher
    first (forward KL), per-class temperatures, the mean over levels; re-derived in NumPy, float64 (rel 1e-12)."""
    g = torch.Generator().manual_seed(3)
    C, B = 4, 7
    Z_g = 3 * torch.randn(C, C, generator=g, dtype=torch.float64)
    exits = [2 * torch.randn(B, C, generator=g, dtype=torch.float64) for _ in range(3)]
    y = torch.tensor([0, 1, 2, 3, 1, 2, 0])
    T = 1 + 4 * torch.rand(2, C, generator=g, dtype=torch.float64)  # the last two exits are distilled
    mask = torch.tensor([True, True, False, True])

    def softmax(v):
        e = np.exp(v - v.max())
        return e / e.sum()

    total = 0.0
    for lvl, z in zip(range(2), exits[1:]):
        per = []
        for i in range(B):
            c, t = int(y[i]), float(T[lvl, y[i]])
            p, q = softmax(Z_g[c].numpy() / t), softmax(z[i].numpy() / t)
            per.append(float(mask[c]) * t**2 * np.sum(p * np.log(p / q)))
        total += np.mean(per) / 2
    assert distillation_loss(exits, y, Z_g, T, mask=mask).item() == pytest.approx(total, rel=1e-12)


def test_a_round_trains_on_eq6_with_eq3_eq4_temperatures_and_count_weighted_global_logits(
        digits, monkeypatch, adam_spy):
    """One distillation step of client 0 in round 2 (Algorithm 1), guard off, with optimisers replaced by a spy that
    records gradients and leaves the weights (so every model stays at its initial weights):
    Z_g[c] = sum_k n_kc Z_k[c] / sum_k n_kc over the clients' *last-exit* class means; T_c = clip(4 kappa_c / mean
    kappa) (Eq. 4), T[l, c] = clip(T_c (1 + 0.5 KL(softmax Z_g[c] || softmax Z_k^l[c]))) for the classes client 0
    holds (Eq. 3, every exit); loss = CE on the last exit + sum_l (1/L) T^2 KL (Eq. 6) on classes with global
    knowledge. Re-derived here from the data and compared with the temperatures passed to the KD term (a spy) and
    with the gradient the client steps on (float32; 100 ulps of the gradient's scale)."""
    import icml25.papers.ret_fhd.federated as fed

    Xtr, ytr, _, _, C = digits
    parts = dirichlet_split(ytr[:300], 3, 0.3, seed=4)
    clients = make_clients(Xtr[:300], ytr[:300], parts, C, archs=((24, 16),), seed=2)
    with torch.no_grad():  # logits of order 10: temperatures and KL terms well away from their flat regime
        for c in clients:
            for head in c.model.exits:
                head.weight.mul_(8)
    made, seen_T = adam_spy, []  # the suite's Adam spy (tests/conftest.py): gradients recorded, weights kept
    real_kd = fed._distillation_loss
    monkeypatch.setattr(fed, "_distillation_loss", lambda *a, **k: seen_T.append(a[3].clone()) or real_kd(*a, **k))
    ReTFHD(clients, ReTFHDConfig(rounds=2, local_epochs=1, batch_size=10**4, guard=False), seed=0).run()
    assert len(seen_T) == 3 and len(made[0].steps) == 2  # no KD in round 1; one full batch per client per round
    with torch.no_grad():
        outs = [c.model(c.X) for c in clients]
    n = torch.stack([torch.bincount(c.y, minlength=C).float() for c in clients])  # (K, C)
    means = [torch.stack([torch.stack([o[lvl][c.y == k].mean(0) if n[j, k] else torch.zeros(C) for k in range(C)])
                          for lvl in range(2)]) for j, (c, o) in enumerate(zip(clients, outs))]  # (L, C, C) each
    Z_g = sum(n[j][:, None] * means[j][-1] for j in range(3)) / n.sum(0).clamp_min(1)[:, None]
    kappa = Z_g.softmax(-1).max(-1).values
    T_c = (4 * kappa / kappa.mean()).clamp(1, 10)
    p_g = Z_g.softmax(-1)
    kl = (p_g[None] * (p_g[None].log() - means[0].log_softmax(-1))).sum(-1) * (n[0] > 0)
    T = (T_c[None] * (1 + 0.5 * kl)).clamp(1, 10)
    torch.testing.assert_close(seen_T[0], T, rtol=1e-5, atol=1e-5)
    assert T.std() > 0.1  # the temperatures differ across classes and exits
    model, x, y = clients[0].model, clients[0].X, clients[0].y
    z = model(x)
    keep = (n.sum(0) > 0)[y].float()
    loss = torch.nn.functional.cross_entropy(z[-1], y)
    for lvl in range(2):
        t = T[lvl, y][:, None]
        log_pt = (Z_g[y] / t).log_softmax(-1)
        kl_i = (log_pt.exp() * (log_pt - (z[lvl] / t).log_softmax(-1))).sum(-1)
        loss = loss + 0.5 * (keep * t[:, 0] ** 2 * kl_i).mean()
    expected = torch.autograd.grad(loss, list(model.parameters()))
    for got, want in zip(made[0].steps[1], expected, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=100 * np.finfo(np.float32).eps * float(want.abs().max()))


def test_guard_standardises_rows_so_logit_scale_is_not_flagged():
    """Honest clients whose models have different logit scales (x0.5 .. x8) are all accepted and a label flipper is
    rejected, because every row is z-normalised first; on raw logits the scale alone would flag honest clients."""
    rng = np.random.default_rng(5)
    base = rng.normal(size=(10, 10)) * 3
    scales = [0.5, 1, 1, 2, 2, 3, 4, 6, 8, 8]
    ups = [s * (base + 0.3 * rng.normal(size=base.shape)) for s in scales]
    ups[2] = ups[2][::-1]
    acc, _ = zscore_guard(ups)
    assert np.flatnonzero(~acc).tolist() == [2]
    raw, _ = zscore_guard(ups, standardize=False)
    assert (~raw[[k for k in range(10) if k != 2]]).any()


def test_blacklisted_clients_stay_out_of_the_aggregate(digits, monkeypatch):
    """A client rejected in blacklist_after = 3 rounds is ignored from then on, even when the guard accepts it
    (here a stub guard rejects client 1 in rounds 1-3 only); the ledger's accepted lists say so."""
    import icml25.papers.ret_fhd.federated as fed

    calls = []

    def stub(uploads, thresh, counts):
        calls.append(1)
        accepted = np.ones(len(uploads), bool)
        accepted[1] = len(calls) > 3
        return accepted, np.zeros(len(uploads))

    monkeypatch.setattr(fed, "zscore_guard", stub)
    clients, _ = _small_fed(digits, archs=((16,),), n_clients=4)
    algo = ReTFHD(clients, ReTFHDConfig(rounds=5, local_epochs=1), seed=0)
    hist = algo.run()
    assert hist.blacklist == [1] and all(f == [1] for f in hist.flagged)
    assert [b["meta"]["accepted"] for b in algo.ledger.blocks] == [[0, 2, 3]] * 5
