"""The runner contract (list, answer, unblock, version) and its embedded and external runners."""
