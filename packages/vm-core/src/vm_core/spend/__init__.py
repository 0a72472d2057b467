"""Money: the spend ledger (ledger.py), each cloud's billing rule (rules.py) and what VMs cost (cost.py)."""
