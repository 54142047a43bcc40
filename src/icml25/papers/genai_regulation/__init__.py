"""genai_regulation: not-a-system (metadata only, in ``paper.toml``; no implementation yet)."""
