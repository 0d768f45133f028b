"""The only place that talks to git: pygit2 adapter, reconciliation, the pre-launch check."""
