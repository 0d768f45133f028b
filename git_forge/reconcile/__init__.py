"""Reconciliation above ``tree/`` and ``loop/``: the launch blocker's explanation,
attribution of stranded work to a run's items, and what to do about it."""
