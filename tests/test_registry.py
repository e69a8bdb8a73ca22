"""The connector registry (`connectors.registry`): one entry per kind of source, the only place a
kind's name is written. Every kind has a connector, a config type whose settings a source has, and
a detection that recognises its own kind of path (and no other); the sources file's model takes
the names from it (`sources.KINDS` is the registry's) and spells none of them itself."""

from __future__ import annotations

import ast
from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest

import sources
from connectors import registry
from connectors.confluence.html_export import ConfluenceHtmlExport
from connectors.confluence.xml_export import ConfluenceXmlExport
from connectors.detect import shallow
from connectors.markdown import MarkdownFolder
from connectors.space_access import SpaceScoped
from sources import SourceConfig, SourcesError, open_connector
from tests.support.corpora import REPO, SAMPLE_WIKI

FIXTURES = Path(__file__).parent / "fixtures" / "confluence"
SAMPLES = {"markdown": SAMPLE_WIKI, "confluence-html": FIXTURES / "html-export",
           "confluence-xml": FIXTURES / "xml-export"}  # a path of each kind read from one


def test_the_kinds_are_the_registrys_and_listed_once():
    assert sources.KINDS is registry.KINDS
    assert registry.KINDS == ("markdown", "confluence-html", "confluence-xml", "confluence")
    assert sorted(kind.name for kind in registry.DETECTION) == sorted(registry.KINDS)


@pytest.mark.parametrize("name", registry.KINDS)
def test_every_kind_has_a_connector_a_config_type_and_a_detection(name):
    kind = registry.REGISTRY[name]
    assert kind.name == name
    assert callable(kind.open) and callable(kind.detect)
    assert is_dataclass(kind.config)
    source_settings = {each.name for each in fields(SourceConfig)}
    assert {each.name for each in fields(kind.config)} - source_settings == set()  # a source can tell it each


@pytest.mark.parametrize("name", registry.KINDS)
def test_each_detection_claims_its_own_samples_and_no_other(name):
    kind = registry.REGISTRY[name]
    for sample_kind, path in SAMPLES.items():
        with shallow(path) as held:
            claimed = kind.detect(held)
        assert claimed == (sample_kind == name) or kind is registry.MARKDOWN, (name, sample_kind)
        assert registry.detect_kind(path) == sample_kind


def test_opening_hands_each_kind_its_own_settings(tmp_path):
    folder = open_connector(SourceConfig(name="hb", location=SAMPLE_WIKI, kind="markdown", include=["**/*.md"],
                                         exclude=["zh/**"], url_template="https://x.example/{path}", access="staff",
                                         index_drafts=True))
    assert isinstance(folder, MarkdownFolder)
    assert (folder.source, folder.include, folder.exclude, folder.url_template, folder.access, folder.index_drafts) == (
        "hb", ["**/*.md"], ["zh/**"], "https://x.example/{path}", "staff", True)
    html = open_connector(SourceConfig(name="c", location=SAMPLES["confluence-html"], base_url="https://w.example",
                                       access="staff", attachments=True))  # kind detected
    assert isinstance(html, ConfluenceHtmlExport)
    assert (html.source, html.base_url, html.access, html.attachments) == ("c", "https://w.example", "staff", True)
    xml = open_connector(SourceConfig(name="x", location=SAMPLES["confluence-xml"],
                                      access={"HR": "hr-private", "*": "staff"}))
    assert isinstance(xml, SpaceScoped) and isinstance(xml.connector, ConfluenceXmlExport)
    assert (xml.connector.access, xml.scope_of("hr"), xml.scope_of("ENG")) == ("staff", "hr-private", "staff")
    with pytest.raises(SourcesError, match="not synced from a path"):
        open_connector(SourceConfig(name="r", location=tmp_path, kind="confluence"))
    with pytest.raises(SourcesError, match="access per space is only for Confluence exports"):
        open_connector(SourceConfig(name="m", location=SAMPLE_WIKI, kind="markdown", access={"*": "public"}))


def spelled_kinds(text: str) -> list[str]:
    """The kinds' names written as strings in the code of a module (docstrings aside)."""
    tree = ast.parse(text)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and id(node) not in docstrings
            and node.value in registry.KINDS]


def test_the_sources_files_model_spells_no_kind():
    spelled = {path.name: spelled_kinds(path.read_text(encoding="utf-8"))
               for path in sorted((REPO / "sources").glob("*.py"))}
    assert {name: found for name, found in spelled.items() if found} == {}
    assert spelled_kinds('"""A markdown doc."""\nKINDS = ("markdown", "confluence")\n') == ["markdown", "confluence"]
