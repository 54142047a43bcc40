"""Building blocks shared by two or more papers."""
