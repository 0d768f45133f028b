"""Agent profiles: how git-forge runs Claude Code, Codex, or any command, and what
it reads back — the final text its signal is in, a receipt (session, turns,
tokens, cost), and what a failure was (a usage limit to wait out, a broken agent
to stop for, or an ordinary failed attempt). Pure parsing: no processes here."""
