"""SHARP-Distill on the paper's review files from a user path (data.load_review_dataset).

Tiny files written into tmp_path in each real format (McAuley's Amazon JSON lines, strict and the 2014 "loose"
Python-dict lines, gzipped; Yelp's review.json; the official code's CSV): exact users, items, ratings, texts and the
official 70/20/10 split; text features; filters; errors naming the file and the line; the config's validation; the
smoke preset run end to end on such a file.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from icml25.papers.sharp_distill import load_review_dataset, read_reviews
from paper_files.sharp_distill import (
    amazon_objects,
    write_amazon,
    write_amazon_gz,
    write_amazon_loose,
    write_csv,
    write_review_file,
    write_yelp,
)

# (user, item, rating, text), in file order. The official split of 10 rows (train_test_split, test_size 0.3 then
# 0.333, random_state 42) is train [0 7 2 9 4 3 6], validation [1 5], test [8]. The last row repeats (A1, B1).
ROWS = [
    ("A1", "B1", 5.0, "great sound loved it"),
    ("A2", "B1", 4.0, "good album"),
    ("A1", "B2", 3.0, "fine record"),
    ("A2", "B2", 2.0, "too noisy"),
    ("A3", "B1", 5.0, "great great"),
    ("A3", "B3", 1.0, "bad bad"),          # validation; B3 never in training -> dropped
    ("A3", "B2", 4.0, "nice"),
    ("A2", "B4", 3.0, "okay"),
    ("A1", "B4", 5.0, "superb"),           # test
    ("A4", "B1", 2.0, "meh"),
    ("A1", "B1", 1.0, "a second review of the same pair"),  # a repeated pair: dropped before the split
]
TRAIN_ROWS, VAL_ROWS, TEST_ROWS = [0, 7, 2, 9, 4, 3, 6], [1], [8]


FORMATS = {"amazon": ("reviews_CDs_and_Vinyl_5.json", write_amazon),
           "amazon_loose": ("reviews_Beauty_5.json", write_amazon_loose),
           "amazon_gz": ("reviews_Sports_and_Outdoors_5.json.gz", write_amazon_gz),
           "yelp": ("review.json", write_yelp), "csv": ("interactions.csv", write_csv)}
"""Each format's writer (``tests/paper_files/sharp_distill.py``) and a real file name of it."""


class CountEncoder:
    """A deterministic encoder: (number of words, length of the first word)."""

    dim = 2

    def fit_transform(self, texts):
        return self.transform(texts)

    def transform(self, texts):
        return np.array([[len(t.split()), len(t.split()[0]) if t else 0] for t in texts], dtype=np.float32)


def _pairs(data, key):
    ei = data[key]
    return [(data.user_ids[u], data.item_ids[i]) for u, i in ei.t().tolist()]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_gives_the_official_split_exactly(tmp_path, fmt):
    name, write = FORMATS[fmt]
    data = load_review_dataset(write(tmp_path / name, ROWS), encoder=CountEncoder())
    # ids indexed in order of first appearance in the (shuffled) training rows
    assert data.user_ids == ["A1", "A2", "A4", "A3"]
    assert data.item_ids == ["B1", "B4", "B2"]
    assert (data.num_users, data.num_items) == (4, 3)
    assert _pairs(data, "train_edge_index") == [ROWS[k][:2] for k in TRAIN_ROWS]
    assert data.train_edge_index.tolist() == [[0, 1, 0, 2, 3, 1, 3], [0, 1, 2, 0, 0, 2, 2]]
    assert _pairs(data, "val_edge_index") == [ROWS[k][:2] for k in VAL_ROWS]
    assert _pairs(data, "test_edge_index") == [ROWS[k][:2] for k in TEST_ROWS]
    assert (data.n_dropped_val, data.n_dropped_test) == (1, 0)
    assert data.train_rating.tolist() == [ROWS[k][2] for k in TRAIN_ROWS]
    assert data.val_rating.tolist() == [4.0] and data.test_rating.tolist() == [5.0]
    assert data.reviews == [ROWS[k][3] for k in TRAIN_ROWS]
    assert data.review_user.tolist() == data.train_edge_index[0].tolist()
    assert data.review_item.tolist() == data.train_edge_index[1].tolist()
    # the symmetric bipartite graph of the training pairs, items offset by num_users
    assert data.edge_index.shape == (2, 14) and int(data.edge_index.max()) == 6
    # text features: the mean encoder output over each user's / item's training reviews
    a1 = [ROWS[0][3], ROWS[2][3]]
    assert data.user_text[0].tolist() == pytest.approx(CountEncoder().transform(a1).mean(0).tolist())
    b2 = [ROWS[2][3], ROWS[3][3], ROWS[6][3]]
    assert data.item_text[2].tolist() == pytest.approx(CountEncoder().transform(b2).mean(0).tolist())


def test_read_reviews_in_file_order_and_kinds(tmp_path):
    users, items, ratings, texts = read_reviews(write_amazon(tmp_path / "a.json", ROWS), "amazon")
    assert users == [r[0] for r in ROWS] and items == [r[1] for r in ROWS]
    assert ratings.tolist() == [r[2] for r in ROWS] and texts == [r[3] for r in ROWS]
    assert read_reviews(write_yelp(tmp_path / "y.json", ROWS), "yelp")[0] == users
    # a CSV without a rating column: NaN ratings; an Amazon line without reviewText: ""
    (tmp_path / "n.csv").write_text("user_id,item_id,review\nu,i,hello\n")
    _, _, r, t = read_reviews(tmp_path / "n.csv")
    assert math.isnan(r[0]) and t == ["hello"]
    (tmp_path / "t.json").write_text(json.dumps({"reviewerID": "u", "asin": "i", "overall": 4}) + "\n\n")
    assert read_reviews(tmp_path / "t.json")[3] == [""]


def test_default_encoder_and_filters(tmp_path):
    path = write_amazon(tmp_path / "a.json", ROWS)
    data = load_review_dataset(path, "amazon", seed=0)  # TF-IDF + SVD, 64-d (zero-padded)
    assert data.user_text.shape == (4, 64) and torch.isfinite(data.user_text).all()
    assert data.text_encoder.transform(["great"]).shape == (1, 64)
    # min_rating: ratings >= 3 kept before the split (7 distinct rows left)
    hi = load_review_dataset(path, min_rating=3.0, encoder=CountEncoder())
    kept = hi.train_rating.tolist() + hi.val_rating.tolist() + hi.test_rating.tolist()
    assert min(kept) >= 3.0 and len(kept) + hi.n_dropped_val + hi.n_dropped_test == 7
    # 2-core: B3 (one review) and A4 (one review) go, and then nothing else
    core = load_review_dataset(path, k_core=2, encoder=CountEncoder())
    assert "A4" not in core.user_ids and "B3" not in core.item_ids
    n = core.train_edge_index.size(1) + core.val_edge_index.size(1) + core.test_edge_index.size(1)
    assert n + core.n_dropped_val + core.n_dropped_test == 8


def test_errors_name_the_file_and_the_line(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.json"):
        load_review_dataset(tmp_path / "nowhere.json")
    bad = tmp_path / "bad.json"
    lines = [json.dumps(o) for o in amazon_objects(ROWS[:3])]
    bad.write_text("\n".join([lines[0], lines[1], "{not json", lines[2]]) + "\n")
    with pytest.raises(ValueError, match=r"bad\.json'?, line 3: not a JSON object"):
        load_review_dataset(bad, "amazon")
    bad.write_text(lines[0] + "\n" + json.dumps({"reviewerID": "u", "asin": "i", "reviewText": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"line 2: a amazon review lacks \['overall'\]"):
        read_reviews(bad)
    bad.write_text(json.dumps({"reviewerID": "u", "asin": "i", "overall": "five"}) + "\n")
    with pytest.raises(ValueError, match="line 1: overall must be a number"):
        read_reviews(bad)
    bad.write_text(json.dumps({"user": "u", "item": "i"}) + "\n")
    with pytest.raises(ValueError, match="line 1: neither an Amazon review"):
        read_reviews(bad)
    bad.write_text("[1, 2]\n")
    with pytest.raises(ValueError, match="line 1: expected a JSON object"):
        read_reviews(bad, "yelp")
    bad.write_text("\n")
    with pytest.raises(ValueError, match="holds no review"):
        read_reviews(bad, "amazon")
    (tmp_path / "c.csv").write_text("user,item_id,review\nu,i,x\n")
    with pytest.raises(ValueError, match=r"c\.csv'?, line 1: the CSV header lacks \['user_id'\]"):
        read_reviews(tmp_path / "c.csv")
    (tmp_path / "d.csv").write_text("user_id,item_id,review,rating\nu,i,x,5\nu,j,y,abc\n")
    with pytest.raises(ValueError, match="line 3: rating must be a number"):
        read_reviews(tmp_path / "d.csv")
    with pytest.raises(ValueError, match="kind must be one of"):
        read_reviews(tmp_path / "d.csv", "movielens")
    with pytest.raises(ValueError, match="at least 4"):
        load_review_dataset(write_amazon(tmp_path / "few.json", ROWS[:3]))


def _paper_data():
    from icml25.papers.sharp_distill.repro import EXPERIMENTS

    return next(e for e in EXPERIMENTS if e.name == "paper_data")


def test_max_users_keeps_every_review_of_the_drawn_users(tmp_path):
    path = write_review_file(tmp_path / "reviews_CDs_and_Vinyl_5.json")  # 30 users x 8 reviews
    full = load_review_dataset(path, encoder=CountEncoder())
    sub = load_review_dataset(path, encoder=CountEncoder(), max_users=10)
    assert len(set(full.user_ids)) == 30 and len(set(sub.user_ids)) <= 10
    # the users drawn by numpy's default_rng(42) from the sorted ids, every review of theirs kept before the split
    users = np.array(sorted(f"U{u:03d}" for u in range(30)), dtype=object)
    chosen = set(users[np.random.default_rng(42).choice(30, 10, replace=False)])
    assert set(sub.user_ids) <= chosen
    n = sub.train_edge_index.size(1) + sub.val_edge_index.size(1) + sub.test_edge_index.size(1)
    assert n + sub.n_dropped_val + sub.n_dropped_test == 10 * 8
    assert load_review_dataset(path, encoder=CountEncoder(), max_users=30).user_ids == full.user_ids
    with pytest.raises(ValueError, match="max_users must be an integer >= 0"):
        load_review_dataset(path, max_users=-1)


def test_smoke_preset_runs_on_a_review_file(tmp_path):
    from icml25.papers.sharp_distill.repro import EXPERIMENTS, load_data

    torch.set_num_threads(1)
    path = write_review_file(tmp_path / "reviews_CDs_and_Vinyl_5.json")
    exp = _paper_data()
    cfg = exp.make_config("smoke", {"data_path": str(path)})
    data = load_data(cfg, 0)
    assert data.user_ids[0].startswith("U") and data.num_items <= 20
    out = exp.run(cfg, seed=0)
    assert all(math.isfinite(v) for v in out.values())
    assert 0 <= out["ndcg_sharp"] <= 1 and out["params_sharp"] < out["params_teacher"]
    # paper_data's smoke preset is the stand-in's smoke settings on the file
    standin = next(e for e in EXPERIMENTS if e.name == "synthetic_reviews").make_config("smoke")
    skip = {"n_users", "n_items", "per_user"}
    assert {k: v for k, v in vars(cfg).items() if k in vars(standin) and k not in skip} == \
        {k: v for k, v in vars(standin).items() if k not in skip}
    # the stand-in experiment reads only the generated data
    gen = load_data(standin, 0)
    assert (gen.num_users, gen.num_items) == (150, 120)


def test_paper_data_presets_use_the_papers_optimiser():
    exp = _paper_data()
    quick, full = exp.make_config("quick"), exp.make_config("full")
    for cfg in (quick, full):
        m = cfg.model
        assert (m.teacher_epochs, m.student_epochs, m.batch_size, m.lr, cfg.baseline_epochs) == (200, 200, 256, 1e-3,
                                                                                                   200)
    assert (quick.max_users, full.max_users) == (1000, 0)
    assert {p: exp.fidelity_of(p).level for p in ("smoke", "quick", "full")} == {
        "smoke": "mechanism", "quick": "reduced", "full": "reduced"}


def test_config_validation(tmp_path):
    from icml25.core.experiment import ConfigError
    from icml25.papers.sharp_distill.repro import EXPERIMENTS, PaperDataConfig, SharpConfig

    exp = _paper_data()
    assert exp.data_setting == "data_path" and exp.missing_data(exp.make_config("smoke"))
    with pytest.raises(ConfigError, match="data_path must be an existing review file"):
        exp.make_config("smoke", {"data_path": str(tmp_path / "missing.json")})
    with pytest.raises(ConfigError, match="data_path must be an existing review file"):
        exp.make_config("smoke", {"data_path": str(tmp_path)})  # a folder, not a file
    with pytest.raises(ConfigError, match="data_kind"):
        exp.make_config("smoke", {"data_kind": "movielens"})
    with pytest.raises(ConfigError, match="text_model must be empty"):
        exp.make_config("smoke", {"text_model": str(tmp_path / "no-deberta")})
    with pytest.raises(ConfigError, match="max_users"):
        exp.make_config("smoke", {"max_users": -1})
    path = write_csv(tmp_path / "x.csv", ROWS)
    cfg = exp.make_config("full", {"data_path": str(path), "data_kind": "csv", "text_model": str(tmp_path)})
    assert isinstance(cfg, PaperDataConfig)
    assert (cfg.data_path, cfg.data_kind, cfg.text_model) == (str(path), "csv", str(tmp_path))
    # the stand-in experiment has none of the paper-data settings
    standin = next(e for e in EXPERIMENTS if e.name == "synthetic_reviews")
    for key in ("data_path", "data_kind", "text_model", "max_users"):
        assert not hasattr(SharpConfig(), key)
        with pytest.raises(ConfigError, match=f"has no setting '{key}'"):
            standin.make_config("smoke", {key: ""})
    assert not standin.data_setting


def test_figures_get_one_file_per_experiment(tmp_path):
    pytest.importorskip("matplotlib")
    from icml25.papers.sharp_distill.repro import EXPERIMENTS, MODELS, TIMED

    per_seed = [{**{f"ndcg_{m}": 0.1 + 0.01 * s for m in MODELS}, **{f"latency_ms_{m}": 1.0 + s for m in TIMED}}
                for s in range(2)]
    path = write_review_file(tmp_path / "review.json")
    cfg = _paper_data().make_config("smoke", {"data_path": str(path)})
    assert [p.name for p in _paper_data().figures(per_seed, cfg, tmp_path)] == ["sharp_distill_paper_data.png"]
    standin = next(e for e in EXPERIMENTS if e.name == "synthetic_reviews")
    assert [p.name for p in standin.figures(per_seed, standin.make_config("smoke"), tmp_path)] == ["sharp_distill.png"]
