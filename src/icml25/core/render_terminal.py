"""The claims table that ``icml25 reproduce`` prints in the terminal (rich)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from icml25.core.results import PaperResult, group_rank, seeds_text, verdict_text

VERDICT_STYLE = {"PASS": "bold green", "FAIL": "bold red", "TIE": "cyan", "INCONCLUSIVE": "yellow",
                 "NOT_TESTED": "dim"}

COLUMNS = ("paper", "claim", "kind @ fidelity", "paper's number", "ours: mean [interval]", "seeds", "check", "verdict")


def claims_table(results: Sequence[PaperResult]) -> Table:
    """The terminal table: per paper, paper claims by fidelity first, then ours, then checks.

    A claim's cells are plain text: rich markup in them (``icml25[tables]``) is shown as written.
    """
    table = Table(title="Claims", show_lines=False)
    for col in COLUMNS:
        table.add_column(col, overflow="fold")
    for res in results:
        for cr in sorted(res.claims, key=lambda c: group_rank(c.group)):
            d = cr.decision
            group = f"paper @ {cr.fidelity}" if cr.claim.kind == "paper" else cr.claim.kind
            cells = (res.paper.slug, cr.claim.id, group, cr.claim.paper_value, d.interval, seeds_text(d),
                     cr.claim.check_text)
            verdict = Text(verdict_text(d), style=VERDICT_STYLE[d.verdict])
            if d.verdict == "NOT_TESTED":
                verdict.append(f": {d.reason}", style="dim")
            table.add_row(*(Text(str(c)) for c in cells), verdict)
        if res.n_failed_jobs:
            table.add_row(res.paper.slug, "(jobs)", "", "", f"{res.n_failed_jobs} failed", "", "",
                          "[bold red]ERROR[/]")
    return table
