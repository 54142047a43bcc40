"""cdvi: the official repository's CSV files (ChuanhuiLiu/CDVI at dab3bf9, ``datasets/``)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from icml25.papers.cdvi.data import PAPER_FEATURES

SUPPORT_HEADER = (
    "sno,age,death,sex,hospdead,slos,d.time,dzgroup,dzclass,num.co,edu,income,scoma,charges,totcst,totmcst,avtisst,"
    "race,sps,aps,surv2m,surv6m,hday,diabetes,dementia,ca,prg2m,prg6m,dnr,dnrday,meanbp,wblc,hrt,resp,temp,pafi,alb,"
    "bili,crea,sod,ph,glucose,bun,urine,adlp,adls,sfdm2,adlsc").split(",")
METABRIC_HEADER = [name for name, k in (
    ("age_at_diagnosis", 1), ("size", 1), ("lymph_nodes_positive", 1), ("stage", 1), ("lymph_nodes_removed", 1),
    ("NPI", 1), ("grade", 3), ("histological", 12), ("ER_IHC_status", 2), ("ER_Expr", 2), ("PR_Expz", 2),
    ("HER2_IHC_status", 4), ("HER2_SNP6_state", 3), ("Her2_Expr", 2), ("Treatment", 8), ("inf_men_status", 2),
    ("group", 5), ("cellularity", 3), ("Pam50_Subtype", 6), ("int_clust_memb", 10), ("site", 5), ("Genefu", 4))
    for _ in range(k)]
PBC_HEADER = ["sno.", "id", "years", "status", "drug", "age", "sex", "year", "ascites", "hepatomegaly", "spiders",
              "edema", "serBilir", "serChol", "albumin", "alkaline", "SGOT", "platelets", "prothrombin", "histologic",
              "status2"]
WHAS_HEADER = ["age", "sex", "bmi", "chf", "miord", "time", "event"]
SUPPORT_NUMERIC = list(PAPER_FEATURES["support"]["numeric"])


def write_csv(path: Path, header: list[str], rows: list[list], quote_strings: bool = False) -> None:
    """A CSV as the official files are written: ``None`` is an empty field (``NA`` for PBC, whose strings and
    header are quoted)."""
    with path.open("w", newline="") as fh:
        if quote_strings:
            w = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC)
            w.writerow(header)
            for row in rows:  # numbers bare, strings quoted, NA bare (as R's write.csv)
                fh.write(",".join("NA" if v is None else (f'"{v}"' if isinstance(v, str) else repr(v))
                                  for v in row) + "\n")
        else:
            w = csv.writer(fh)
            w.writerow(header)
            w.writerows([["" if v is None else v for v in row] for row in rows])


def write_cdvi_files(folder: Path, n: int = 90, seed: int = 0) -> None:
    """Random rows in every official layout, big enough for a 70/15/15 split with events in each part."""
    rng = np.random.default_rng(seed)
    event = (rng.random(n) < 0.6).astype(int)
    days = rng.integers(1, 2000, n)
    pick = lambda levels: [levels[k] for k in rng.integers(0, len(levels), n)]  # noqa: E731
    cats = {"sex": pick(["male", "female"]), "dzgroup": pick(["CHF", "COPD", "Coma"]),
            "dzclass": pick(["Cancer", "Coma"]), "income": pick(["under $11k", "$11-$25k", None]),
            "race": pick(["white", "black"]), "ca": pick(["no", "yes", "metastatic"])}
    rows = []
    for i in range(n):
        row = {c: "junk" for c in SUPPORT_HEADER}
        row.update({c: round(float(rng.normal(50, 10)), 3) for c in SUPPORT_NUMERIC})
        row.update({c: v[i] for c, v in cats.items()})
        row["death"], row["d.time"] = event[i], days[i]
        rows.append([row[c] for c in SUPPORT_HEADER])
    write_csv(folder / "support2.csv", SUPPORT_HEADER, rows)
    write_csv(folder / "metabric_feat.csv", METABRIC_HEADER, rng.integers(0, 30, (n, 79)).tolist())
    write_csv(folder / "metabric_label.csv", ["event_time", "label"], np.column_stack([days, event]).tolist())
    years = np.round(rng.uniform(1, 12, n), 3)
    year = np.round(years * rng.uniform(0, 0.8, n), 3)  # the visit, before the end of follow-up
    drug, sex = pick(["placebo", "D-penicil"]), pick(["female", "male"])
    edema = pick(["No edema", "edema no diuretics"])
    yes_no = [pick(["Yes", "No", None]) for _ in range(3)]  # ascites, hepatomegaly, spiders
    labs = np.round(rng.uniform(1, 100, (n, 7)), 2).tolist()
    histologic = rng.integers(1, 5, n)
    pbc = [[str(i + 1), str(i // 3 + 1), float(years[i]), "dead" if event[i] else "alive", drug[i],
            round(float(rng.uniform(30, 70)), 3), sex[i], float(year[i]), *(v[i] for v in yes_no), edema[i], *labs[i],
            int(histologic[i]), int(event[i])] for i in range(n)]
    write_csv(folder / "pbc2.csv", PBC_HEADER, pbc, quote_strings=True)
    whas = np.column_stack([rng.integers(40, 90, n), rng.integers(0, 2, n), np.round(rng.uniform(18, 35, n), 2),
                            rng.integers(0, 2, n), rng.integers(0, 2, n), days, event])
    write_csv(folder / "whas.csv", WHAS_HEADER, whas.tolist())



def _paper_data(folder: Path) -> dict[str, str]:
    write_cdvi_files(folder)
    return {"data_dir": str(folder)}


FILES = {"paper_data": _paper_data}
