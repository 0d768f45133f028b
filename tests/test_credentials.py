"""Which answers look like credentials — and which ordinary answers do not."""

from __future__ import annotations

import pytest

from git_forge.credentials import credential_problem


@pytest.mark.parametrize("text", [
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----",
    "ghp_0123456789abcdefghijABCDEFGHIJ",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "use sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-123456789012-abcdefghij",
    "glpat-abcdefghij0123456789",
    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "https://bob:hunter2@example.com/repo.git",
    "the key is Zq8Xw3Lr9Tb2Yk7Vm4Pn6Hs1Jd5Gc0Fa",
])
def test_credentials_are_recognised(text: str) -> None:
    assert credential_problem(text)


@pytest.mark.parametrize("text", [
    "use the key in $OPENAI_API_KEY",
    "Postgres, with the schema from docs/architecture/database-schema-v2.md",
    "revert to 3f2a9c0d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49",
    "internationalization-and-localization-framework",
    "https://github.com/example/some-repository-name/pull/1234",
    "skip it: sk-learn is fine",
    "Use PascalCaseIdentifiersEverywhereInTheAPI",
    "",
])
def test_ordinary_answers_pass(text: str) -> None:
    assert credential_problem(text) is None
