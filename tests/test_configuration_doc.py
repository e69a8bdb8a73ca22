"""docs/configuration.md is generated from the Settings fields (bot/settings_reference.py): it must
be what the code renders now, and every environment variable Settings reads must have a row."""

from __future__ import annotations

from bot.settings import Settings
from bot.settings_reference import NOT_SETTINGS, ROWS, render
from tests.support.corpora import REPO


def test_the_configuration_page_is_what_the_settings_render():
    page = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page == render(), "docs/configuration.md is stale: python -m bot.settings_reference > docs/configuration.md"


def test_every_setting_has_one_row_and_every_row_names_settings():
    named = [variable for row in ROWS for variable in row.variables]
    assert len(named) == len(set(named)), "a variable has two rows"
    fields = {name.upper() for name in Settings.model_fields}
    assert fields - set(named) == set(), "a setting without a row in bot/settings_reference.py"
    assert set(named) - fields == NOT_SETTINGS


def test_the_readme_links_the_configuration_page():
    assert "docs/configuration.md" in (REPO / "README.md").read_text(encoding="utf-8")
