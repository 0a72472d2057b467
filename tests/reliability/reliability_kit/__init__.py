"""Helpers of the reliability suite (tests/reliability): sizes and seed, figures, the `vm` home, the audit."""
