"""The embedded process supervisor: lifecycle, manifests, spool, rendering, restore.

It knows nothing of backlogs or items: its callers give it an owner and an origin."""
