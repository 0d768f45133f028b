"""The embedded loop runner: selection, iterations, signals, state.json, events.ndjson."""
