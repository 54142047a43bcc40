"""mf_lal: planned (metadata only, in ``paper.toml``; no implementation yet)."""
