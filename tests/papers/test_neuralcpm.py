"""NeuralCPM: exact local dH, brute-force stationary law of the sampler, invariances, CD sign, smoke runs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy.stats import chi2

from icml25.papers.neuralcpm import (
    CellsortHamiltonian,
    ClosureHamiltonian,
    NeuralHamiltonian,
    SymbolicHamiltonian,
    cell_shape_stats,
    checkerboard_cpm,
    contact_matrix,
    metropolis_cpm,
    parallel_cpm,
    random_init,
    sorting_index,
    train_ebm,
    volumes,
)
from icml25.papers.neuralcpm.cpm import MOORE
from icml25.papers.neuralcpm.repro import EXPERIMENTS, SCENARIO_B_J

J = SCENARIO_B_J


def _brute_contacts(sigma, ct):
    h, w = sigma.shape
    m = np.zeros((3, 3), dtype=int)
    for i, j in itertools.product(range(h), range(w)):
        for di, dj in MOORE:
            q = sigma[(i + di) % h, (j + dj) % w]
            if q != sigma[i, j]:
                m[ct[sigma[i, j]], ct[q]] += 1
    m = m // 2  # every unordered pair seen twice
    return m + m.T - np.diag(np.diag(m))


def test_contact_matrix_matches_brute_force():
    sigma, ct = random_init(9, 12, 5, [1, 2, 1, 2, 2], 2.0, seed=4)
    np.testing.assert_array_equal(contact_matrix(sigma, ct), _brute_contacts(sigma, ct))


def test_local_delta_equals_full_recomputation():
    rng = np.random.default_rng(0)
    H = CellsortHamiltonian(J, lam=[0, 0.5, 0.25], v_star=[0, 12, 20])
    sigma, ct = random_init(12, 12, 6, [1, 1, 1, 2, 2, 2], 2.5, seed=1)
    sigma = checkerboard_cpm(H, sigma, ct, 3, rng=rng)
    vol = volumes(sigma, 6)
    n = 1000
    i, j, new = rng.integers(12, size=n), rng.integers(12, size=n), rng.integers(7, size=n)
    deltas = np.array([H.delta(sigma, ct, a, b, c, vol) for a, b, c in zip(i, j, new)])
    props = np.repeat(sigma[None], n, 0)
    props[np.arange(n), i, j] = new
    full = H.energy(props, ct) - H.energy(sigma, ct)
    ok = np.isfinite(deltas)
    assert ok.sum() > 900
    np.testing.assert_allclose(deltas[ok], full[ok], atol=1e-9)
    assert np.all(volumes(props[~ok], 6).min(-1) == 0)  # only vanishing moves got inf


def test_torch_symbolic_energy_matches_numpy():
    sym = SymbolicHamiltonian(2, v_star=14.0)
    with torch.no_grad():
        sym.J_pairs.copy_(torch.tensor([2.5, 1.0, 1.0, 4.5, 1.0], dtype=torch.float64))
        sym.lam_raw.fill_(float(np.log(np.expm1(0.5))))
    H = CellsortHamiltonian(J, 0.5, 14.0)
    sigma = np.stack([random_init(12, 12, 5, [1, 2, 1, 2, 1], 2.2, seed=s)[0] for s in range(4)])
    ct = np.array([0, 1, 2, 1, 2, 1])
    np.testing.assert_allclose(sym(torch.from_numpy(sigma), torch.from_numpy(ct)).detach().numpy(), H.energy(sigma, ct),
                               rtol=1e-6)
    np.testing.assert_allclose(sym.to_cellsort().J, J)


def _kernel_stationary(H, ct):
    """Exact stationary law of the sequential kernel on a 3x3 lattice filled by cells 1 and 2 (no medium)."""
    states = np.array(list(itertools.product((1, 2), repeat=9)))
    states = states[(states == 1).any(1) & (states == 2).any(1)]
    energy = H.energy(states.reshape(-1, 3, 3), ct)
    pow2 = 2 ** np.arange(8, -1, -1)
    lookup = -np.ones(2 ** 9, dtype=int)
    lookup[(states - 1) @ pow2] = np.arange(len(states))
    P = np.zeros((len(states),) * 2)
    for site in range(9):
        i, j = divmod(site, 3)
        for di, dj in MOORE:
            prop = states.copy()
            prop[:, site] = states[:, ((i + di) % 3) * 3 + (j + dj) % 3]
            target = lookup[(prop - 1) @ pow2]
            ok = target >= 0  # moves that empty a cell are rejected
            np.add.at(P, (np.nonzero(ok)[0], target[ok]), np.minimum(1.0, np.exp(energy[ok] - energy[target[ok]])) / 72)
    P += np.diag(1.0 - P.sum(1))
    w, v = np.linalg.eig(P.T)
    pi = np.real(v[:, np.argmin(np.abs(w - 1))])
    return states, pi / pi.sum(), energy


def test_sequential_sampler_matches_exact_kernel_law():
    H = CellsortHamiltonian(J, lam=0.5, v_star=4.0)
    ct = np.array([0, 1, 2])
    states, pi, energy = _kernel_stationary(H, ct)
    v1 = (states == 1).sum(1)
    rng = np.random.default_rng(0)
    sigma = np.array([[1, 1, 1], [1, 2, 2], [2, 2, 2]])
    n = 3000
    obs_v1 = np.empty(n, dtype=int)
    for k in range(n):
        sigma = metropolis_cpm(H, sigma, ct, 20, rng=rng)
        obs_v1[k] = (sigma == 1).sum()
    expected = np.array([pi[v1 == v].sum() for v in range(1, 9)]) * n
    observed = np.bincount(obs_v1, minlength=9)[1:]
    big = expected >= 5
    obs, exp = observed[big], expected[big]
    if (~big).any():
        obs, exp = np.append(obs, observed[~big].sum()), np.append(exp, expected[~big].sum())
    stat = ((obs - exp) ** 2 / exp).sum()
    assert chi2.sf(stat, len(obs) - 1) > 0.01
    # the neighbour-copy proposal is not symmetric (q ~ #neighbours with the new id), so on this tiny lattice
    # the kernel's law is far from exp(-H)/Z: a chi-square test against exp(-H)/Z as such would be wrong
    boltz = np.exp(-(energy - energy.min()))
    assert 0.5 * np.abs(boltz / boltz.sum() - pi).sum() > 0.1


def test_no_cell_vanishes_under_shrinking_pressure():
    H = CellsortHamiltonian(J, lam=5.0, v_star=0.0)
    sigma, ct = random_init(12, 12, 6, [1, 2] * 3, 2.0, seed=2)
    rng = np.random.default_rng(1)
    out = checkerboard_cpm(H, np.stack([sigma] * 4), ct, 10, rng=rng)
    assert np.all(volumes(out, 6)[:, 1:] >= 1)
    assert volumes(out, 6)[:, 1:].mean() < volumes(sigma, 6)[1:].mean()  # the pressure did shrink cells
    out = metropolis_cpm(H, sigma, ct, 3000, rng=rng)
    assert np.all(volumes(out, 6)[1:] >= 1)
    sym = SymbolicHamiltonian(2, lam_init=5.0, v_star=0.0)
    out = parallel_cpm(sym, torch.from_numpy(np.stack([sigma] * 2)), torch.from_numpy(ct), 60, 8,
                       generator=torch.Generator().manual_seed(0)).numpy()
    assert np.all(volumes(out, 6)[:, 1:] >= 1)


def test_nh_cell_permutation_and_stride_translation_invariance():
    torch.manual_seed(0)
    nh = NeuralHamiltonian(2, node_dims=(4, 8), edge_dims=(4, 8), pools=(2, 1), mlp_dims=(8, 8))
    sigma, ct = random_init(12, 12, 5, [1, 2, 1, 2, 2], 2.2, seed=3)
    s, c = torch.from_numpy(sigma)[None], torch.from_numpy(ct)
    e = nh(s, c)
    perm = torch.tensor([0, 3, 5, 1, 4, 2])  # new id of old id
    inv = torch.argsort(perm)
    e_perm = nh(perm[s], c[inv])
    torch.testing.assert_close(e_perm, e, rtol=1e-5, atol=1e-5)
    assert nh.stride == 6
    torch.testing.assert_close(nh(torch.roll(s, (6, -6), (1, 2)), c), e, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(nh(torch.roll(s, 1, 2), c), e, atol=1e-6)  # only stride multiples are exact


def test_cd_step_lowers_data_energy():
    torch.manual_seed(1)
    nh = NeuralHamiltonian(2, node_dims=(4,), edge_dims=(4,), pools=(1,), mlp_dims=(8,))
    ct = torch.tensor([0, 1, 1, 2, 2])
    data = torch.stack([torch.from_numpy(random_init(9, 9, 4, [1, 1, 2, 2], 1.6, seed=s)[0]) for s in range(4)])
    fake = torch.stack([torch.from_numpy(random_init(9, 9, 4, [1, 1, 2, 2], 0.5, seed=s)[0]) for s in range(4)])
    with torch.no_grad():
        gap = nh(data, ct).mean() - nh(fake, ct).mean()
    if gap < 0:  # make data energies exceed sample energies
        data, fake = fake, data
    with torch.no_grad():
        before = nh(data, ct).mean() - nh(fake, ct).mean()
    assert before > 0
    hist = train_ebm(nh, data, ct, steps=1, lr=1e-3, reg=0.0, n_chains=4, batch_size=4, p_reset=0.0,
                     sampler=lambda H, ch, sweeps, g: fake.clone())
    assert hist["gap"][0] > 0
    with torch.no_grad():
        assert nh(data, ct).mean() - nh(fake, ct).mean() < before  # the step pushes data energy below samples'


def test_closure_combines_terms():
    sym, nh = SymbolicHamiltonian(2, v_star=10.0), NeuralHamiltonian(2, (4,), (4,), (1,), (8,))
    H = ClosureHamiltonian(sym, nh, w_b=0.25, w_n=1.0)
    sigma, ct = random_init(9, 9, 4, [1, 1, 2, 2], 1.6, seed=0)
    s, c = torch.from_numpy(sigma)[None], torch.from_numpy(ct)
    torch.testing.assert_close(H(s, c), 0.25 * sym(s, c).float() + nh(s, c))  # in the weights' float32
    assert sym(s, c).dtype == torch.float64  # the symbolic energy keeps its float64 parameters' precision
    H64 = ClosureHamiltonian(sym, nh).double()
    assert H64(s, c).dtype == torch.float64
    torch.testing.assert_close(H64(s, c), 0.25 * sym(s, c) + nh.double()(s, c))


def test_shape_stats_and_sorting_index():
    sigma = np.zeros((8, 8), dtype=int)
    sigma[0:2, 0:2], sigma[0:2, 2:4], sigma[5:7, 5:7] = 1, 2, 3
    sigma[3, 0] = 3  # second component of cell 3
    st = cell_shape_stats(sigma, 3)
    np.testing.assert_array_equal(st["volume"], [4, 4, 5])
    np.testing.assert_array_equal(st["components"], [1, 1, 2])
    np.testing.assert_allclose(st["compactness"][0], 8 / 2)
    ct = np.array([0, 1, 1, 2])
    assert sorting_index(sigma, ct) == pytest.approx(1.0)  # only the 1-2 cell pair (same type) touches
    assert sorting_index(sigma, np.array([0, 1, 2, 2])) == pytest.approx(0.0)


def test_bad_input_raises():
    with pytest.raises(ValueError, match="symmetric"):
        CellsortHamiltonian(np.array([[0, 1], [2, 1]]), 1.0, 5.0)
    with pytest.raises(ValueError, match="J\\[0, 0\\]"):
        CellsortHamiltonian(np.array([[1, 1], [1, 1]]), 1.0, 5.0)
    with pytest.raises(ValueError, match="n_cells"):
        random_init(5, 5, 0, [], 1.0)
    with pytest.raises(ValueError, match="divisible by 3"):
        checkerboard_cpm(CellsortHamiltonian(J, 1, 5), np.zeros((4, 4), dtype=int), np.array([0]), 1)
    with pytest.raises(ValueError, match="cell_types"):
        contact_matrix(np.zeros((3, 3)), np.array([1, 1]))
    with pytest.raises(ValueError, match="multiple of the total stride"):
        NeuralHamiltonian(2)(torch.zeros(1, 10, 10, dtype=torch.long), torch.tensor([0]))
    with pytest.raises(ValueError, match="equal"):
        NeuralHamiltonian(2, node_dims=(4, 8), edge_dims=(4,), pools=(1, 1))


def test_smoke_runs():
    rec, clo = EXPERIMENTS
    m = rec.run(rec.make_config("smoke"), seed=0)
    assert 0 <= m["sorting_index_data"] <= 1 and m["lam"] > 0
    assert m["sorting_strength"] == pytest.approx(m["J12"] - (m["J11"] + m["J22"]) / 2)
    m = clo.run(clo.make_config("smoke"), seed=0)
    assert min(m["w1_symbolic"], m["w1_nh"], m["w1_closure"]) >= 0
    assert m["w1_ratio_closure"] == pytest.approx(m["w1_closure"] / m["w1_symbolic"])
    assert 20 < m["mean_volume_type1_data"] < m["mean_volume_type2_data"]


def _all_moves_uphill():
    """A Hamiltonian whose every flip costs energy: no contact term, and each cell at its target volume."""
    sigma, _ = random_init(12, 12, 3, [1, 1, 1], 2.0, seed=3)
    ct = np.array([0, 1, 2, 3])  # one type per cell, so that each cell has its own target volume
    v = np.bincount(sigma.ravel(), minlength=4)[1:].astype(float)
    H = CellsortHamiltonian(np.zeros((4, 4)), lam=[0.0, 1.0, 1.0, 1.0], v_star=np.concatenate([[0.0], v]))
    return H, sigma, ct  # at the targets, growing or shrinking a cell by one site costs lam * 1 = 1


@pytest.mark.parametrize("sampler", ["metropolis", "checkerboard"])
def test_metropolis_acceptance_follows_the_temperature(sampler):
    """At T -> 0 no uphill move is accepted; at a high T most are (a sampler that ignored T would fail one)."""
    H, sigma, ct = _all_moves_uphill()

    def run(T):  # noqa: ANN001
        rng = np.random.default_rng(0)
        if sampler == "metropolis":
            return metropolis_cpm(H, sigma, ct, 2000, T=T, rng=rng)
        return checkerboard_cpm(H, sigma[None], ct, 5, T=T, rng=rng)[0]

    cold, hot = run(1e-3), run(1e3)
    np.testing.assert_array_equal(cold, sigma)  # every move costs >= 1, and exp(-1000) underflows to 0
    assert (hot != sigma).mean() > 0.05


def test_bad_input_nan_temperature_and_step_counts():
    H = CellsortHamiltonian(J, 0.5, 5.0)
    sigma, ct = random_init(6, 6, 3, [1, 2, 1], 1.5, seed=0)
    nan = float("nan")
    with pytest.raises(ValueError, match="T must be > 0"):
        metropolis_cpm(H, sigma, ct, 10, T=nan)
    with pytest.raises(ValueError, match="n_flips must be an integer >= 0"):
        metropolis_cpm(H, sigma, ct, nan)
    with pytest.raises(TypeError, match="n_flips must be an integer"):
        metropolis_cpm(H, sigma, ct, 10.0)
    with pytest.raises(ValueError, match="T must be > 0"):
        checkerboard_cpm(H, sigma, ct, 1, T=nan)
    for bad in (nan, float("inf"), -1.0):
        with pytest.raises(ValueError, match="n_sweeps must be finite and >= 0"):
            checkerboard_cpm(H, sigma, ct, bad)
    sym, s, c = SymbolicHamiltonian(2, v_star=5.0), torch.from_numpy(sigma)[None], torch.from_numpy(ct)
    with pytest.raises(ValueError, match="T must be > 0"):
        parallel_cpm(sym, s, c, 2, 2, T=nan)
    with pytest.raises(ValueError, match="n_steps >= 0"):
        parallel_cpm(sym, s, c, nan, 2)
    with pytest.raises(ValueError, match="n_parallel >= 1"):
        parallel_cpm(sym, s, c, 2, nan)
    # valid calls still run (an infinite temperature is a valid limit)
    assert metropolis_cpm(H, sigma, ct, np.int64(10), T=float("inf"), rng=np.random.default_rng(0)).shape == (6, 6)
    assert checkerboard_cpm(H, sigma, ct, 0.5, rng=np.random.default_rng(0)).shape == (6, 6)


def test_bad_input_non_finite_hamiltonian_parameters():
    for kw in ({"v_star": float("nan")}, {"v_star": [0.0, 5.0, float("inf")]}):
        with pytest.raises(ValueError, match="v_star must be finite"):
            CellsortHamiltonian(J, **{"lam": 0.5, **kw})
    for lam in (float("nan"), float("inf"), [0.0, 0.5, float("nan")], -1.0):
        with pytest.raises(ValueError, match="lam must be finite and >= 0"):
            CellsortHamiltonian(J, lam, 5.0)
    for bad in (np.nan, np.inf):
        Jb = J.copy()
        Jb[1, 2] = Jb[2, 1] = bad
        with pytest.raises(ValueError, match="J must be finite"):
            CellsortHamiltonian(Jb, 0.5, 5.0)
    H = CellsortHamiltonian(J, lam=[np.nan, 0.5, 0.25], v_star=[np.nan, 12, 20])  # index 0 is ignored
    sigma, ct = random_init(9, 9, 4, [1, 2, 1, 2], 1.6, seed=0)
    assert np.isfinite(H.energy(sigma, ct))


def test_bad_input_float_lattice_raises_type_error():
    H = CellsortHamiltonian(J, 0.5, 5.0)
    sigma, ct = random_init(6, 6, 3, [1, 2, 1], 1.5, seed=0)
    fl = sigma + 0.7  # would be truncated back to sigma by an int cast
    for f in (lambda: H.energy(fl, ct), lambda: contact_matrix(fl, ct), lambda: sorting_index(fl, ct),
              lambda: metropolis_cpm(H, fl, ct, 5), lambda: checkerboard_cpm(H, fl, ct, 1),
              lambda: volumes(fl, 3), lambda: cell_shape_stats(fl, 3)):
        with pytest.raises(TypeError, match="sigma must hold integer cell ids"):
            f()
    with pytest.raises(TypeError, match="sigma must hold integer cell ids"):
        H.delta(fl, ct, 0, 0, 1)
    # integer dtypes of any width still work and agree
    np.testing.assert_array_equal(contact_matrix(sigma.astype(np.int32), ct), contact_matrix(sigma, ct))
    np.testing.assert_array_equal(volumes(sigma.astype(np.uint8), 3), volumes(sigma, 3))


def test_bad_input_volumes_ids_out_of_range_do_not_leak_across_frames():
    sigma, _ = random_init(6, 6, 3, [1, 2, 1], 1.5, seed=0)
    batch = np.stack([sigma, sigma])
    per_frame = volumes(batch, 3)
    assert per_frame.shape == (2, 4)
    np.testing.assert_array_equal(per_frame, np.stack([volumes(sigma, 3)] * 2))
    np.testing.assert_array_equal(per_frame.sum(-1), [36, 36])
    bad = batch.copy()
    bad[0, 0, 0] = 4  # id 4 > n_cells used to be counted as id 0 of frame 1
    with pytest.raises(ValueError, match=r"sigma ids must lie in \[0, n_cells=3\]"):
        volumes(bad, 3)
    with pytest.raises(ValueError, match=r"sigma ids must lie in \[0, n_cells=3\]"):
        volumes(batch - 1, 3)
    with pytest.raises(ValueError, match="sigma must have shape"):
        volumes(np.arange(3), 3)
    with pytest.raises(TypeError, match="n_cells must be an integer"):
        volumes(sigma, 3.0)
    with pytest.raises(ValueError, match="n_cells must be >= 0"):
        volumes(sigma, -1)
    with pytest.raises(ValueError, match="sigma ids must lie"):
        cell_shape_stats(sigma, 2)
    np.testing.assert_array_equal(volumes(sigma, 5)[4:], [0, 0])  # a larger n_cells pads with zeros


def test_bad_input_unknown_cell_type():
    H = CellsortHamiltonian(J, 0.5, 5.0)  # J holds types 0..2
    sigma, ct = random_init(6, 6, 3, [1, 2, 1], 1.5, seed=0)
    for t in (3, -1):
        bad = ct.copy()
        bad[2] = t
        msg = f"cell_types holds type {t} outside J of size 3"
        for f in (lambda: H.energy(sigma, bad), lambda: metropolis_cpm(H, sigma, bad, 200),
                  lambda: checkerboard_cpm(H, sigma, bad, 1), lambda: H.delta(sigma, bad, 0, 0, 2)):
            with pytest.raises(ValueError, match=msg):
                f()
    i, j = np.argwhere(sigma != 2)[0]  # a valid call still gives the exact energy change
    prop = sigma.copy()
    prop[i, j] = 2
    assert H.delta(sigma, ct, i, j, 2) == pytest.approx(H.energy(prop, ct) - H.energy(sigma, ct))
