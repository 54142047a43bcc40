"""sharp_distill: review files in the formats the paper's data come in (McAuley's Amazon review JSON lines, strict and
the 2014 "loose" Python-dict lines, gzipped; Yelp's ``review.json``; the official code's CSV)."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np

Row = tuple[str, str, float, str]
"""(user, item, rating, text) of one review."""


def amazon_objects(rows: list[Row]) -> list[dict]:
    """One McAuley Amazon review object per row, with the real files' other keys."""
    return [{"reviewerID": u, "asin": i, "reviewerName": "x", "helpful": [0, 0], "reviewText": t, "overall": r,
             "summary": "s", "unixReviewTime": 1400000000 + k, "reviewTime": "05 13, 2014"}
            for k, (u, i, r, t) in enumerate(rows)]


def write_amazon(path: Path, rows: list[Row]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in amazon_objects(rows)))
    return path


def write_amazon_loose(path: Path, rows: list[Row]) -> Path:
    """The 2014 files' Python dict literals (single quotes)."""
    path.write_text("".join(repr(o) + "\n" for o in amazon_objects(rows)))
    return path


def write_amazon_gz(path: Path, rows: list[Row]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(o) + "\n" for o in amazon_objects(rows))
    return path


def write_yelp(path: Path, rows: list[Row]) -> Path:
    path.write_text("".join(json.dumps({"review_id": f"r{k}", "user_id": u, "business_id": i, "stars": r,
                                        "useful": 0, "funny": 0, "cool": 0, "text": t,
                                        "date": "2018-07-07 22:09:11"}) + "\n"
                            for k, (u, i, r, t) in enumerate(rows)))
    return path


def write_csv(path: Path, rows: list[Row]) -> Path:
    """The official code's CSV: ``user_id,item_id,review,rating,timestamp``."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["user_id", "item_id", "review", "rating", "timestamp"])
        w.writerows([u, i, t, int(r), f"2023-01-{k + 1:02d}"] for k, (u, i, r, t) in enumerate(rows))
    return path


def write_review_file(path: Path, n_users: int = 30, n_items: int = 20, per_user: int = 8, seed: int = 0) -> Path:
    """A small Amazon 5-core-like file: every user reviews ``per_user`` items with words tied to the item."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_users):
        for i in rng.choice(n_items, per_user, replace=False):
            words = [f"w{(i * 3 + k) % 25}" for k in range(3)] + [f"w{x}" for x in rng.integers(25, size=2)]
            rows.append((f"U{u:03d}", f"I{i:03d}", float(rng.integers(1, 6)), " ".join(words)))
    return write_amazon(path, rows)


def _paper_data(folder: Path) -> dict[str, str]:
    return {"data_path": str(write_review_file(folder / "reviews_CDs_and_Vinyl_5.json"))}


FILES = {"paper_data": _paper_data}
