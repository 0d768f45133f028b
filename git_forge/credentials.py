"""Refuse answers that look like credentials before they are ever recorded.

The recovery procedure asks for *decisions* (which path, which policy), never
for secrets; the decision record is treated as repository-visible content. An
answer carrying a private key, a well-known token or a long high-entropy string
is refused so the operator rephrases ("use the key in $VAR").

The high-entropy rule deliberately skips lowercase hex (commit ids are ordinary
answers) and words made only of letters, or of letters and punctuation (paths,
URLs, identifiers).
"""

from __future__ import annotations

import math
import re
from collections import Counter

# The patterns are compiled where they are first searched with (``re``'s own cache): only
# a text about to be recorded is, and every command that reads a record imports this module.
_PRIVATE_KEY = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"


def _token(pattern: str) -> str:
    """A token that starts a word (not the tail of a longer one)."""
    return r"(?<![A-Za-z0-9])" + pattern


#: (description, pattern) of well-known token shapes.
_TOKEN_PATTERNS: tuple[tuple[str, str], ...] = (
    ("a GitHub token", _token(r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("an API secret key (sk-…)", _token(r"sk-[A-Za-z0-9_-]{20,}")),
    ("an AWS access key id", _token(r"(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}(?![A-Z0-9])")),
    ("a Slack token", _token(r"xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a GitLab token", _token(r"glpat-[A-Za-z0-9_-]{20,}")),
    ("a Google API key", _token(r"AIza[0-9A-Za-z_-]{35}")),
    ("an npm token", _token(r"npm_[A-Za-z0-9]{36}")),
    ("a Stripe key", _token(r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("a JSON Web Token", _token(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+")),
    ("a password in a URL", r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@"),
)

_CANDIDATE_WORD = r"[A-Za-z0-9+/=_\-]{24,}"
_MIN_SECRET_LENGTH = 24
_MIN_ENTROPY_BITS = 4.0


def _shannon_entropy(text: str) -> float:
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _looks_random(word: str) -> bool:
    """A long word mixing upper case, lower case and digits with high entropy."""
    if len(word) < _MIN_SECRET_LENGTH:
        return False
    has_upper = any(c.isupper() for c in word)
    has_lower = any(c.islower() for c in word)
    has_digit = any(c.isdigit() for c in word)
    if not (has_digit and (has_upper + has_lower + has_digit) >= 3):
        return False
    return _shannon_entropy(word) >= _MIN_ENTROPY_BITS


def credential_problem(text: str) -> str | None:
    """Why ``text`` looks like it carries a credential, or ``None`` if it does not."""
    if re.search(_PRIVATE_KEY, text):
        return "a private key block"
    for description, pattern in _TOKEN_PATTERNS:
        if re.search(pattern, text):
            return description
    for word in re.findall(_CANDIDATE_WORD, text):
        if _looks_random(word):
            return "a long high-entropy string"
    return None


def credential_refusal(text: str | None, what: str = "an answer") -> str | None:
    """The one message every refusal of a credential-looking text gives (``what``
    names the text: ``the answer for 004``), or ``None`` when ``text`` is fine."""
    problem = credential_problem(text) if text else None
    if problem is None:
        return None
    return (f"refusing {what}: it looks like a credential ({problem}); give the decision "
            "instead, e.g. \"use the key in $VAR\"")
