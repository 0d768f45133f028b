"""The backlog: item model and transitions, the backlog.json store, topology and clustering."""
