"""The pytester sessions here load their plugins as a user's do (from the entry points). The modules those
plugins come from are imported already, unrewritten (this suite names its plugins with -p:
pyproject.toml), so pytest's warning that it cannot rewrite them would count among a session's warnings."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_rewrite_warning(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")  # it clears PYTEST_ADDOPTS as it starts
        monkeypatch.setenv("PYTEST_ADDOPTS", "-W ignore::pytest.PytestAssertRewriteWarning")
