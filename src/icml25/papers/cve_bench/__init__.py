"""cve_bench: planned (metadata only, in ``paper.toml``; no implementation yet)."""
