"""`[channels.C…]` in the sources file (`sources.channels`): parsed and checked at start with
the rest of the file, and `sources` only ever narrows a channel's scopes."""

from __future__ import annotations

from pathlib import Path

import pytest

from sources import CHANNEL, Audience, SourcesError, read_sources_file

HEAD = """
[[source]]
name = "handbook"
location = "{wiki}"
access = "hb"

[[source]]
name = "eng"
location = "{other}"

[scopes.hb]
channels = ["C0HELP1"]
"""


def write(tmp_path: Path, channels: str) -> Path:
    (tmp_path / "wiki").mkdir(exist_ok=True)
    (tmp_path / "other").mkdir(exist_ok=True)
    path = tmp_path / "sources.toml"
    path.write_text(HEAD.format(wiki=tmp_path / "wiki", other=tmp_path / "other") + channels)
    return path


def test_a_channel_table_is_read_with_its_settings(tmp_path):
    path = write(tmp_path, '[channels.C0HELP1]\nrespond = "questions"\nescalate = ["S0PEOPLE1", "U0BOB"]\n'
                           'sources = ["handbook"]\n')
    settings = read_sources_file(path).channels.get("C0HELP1")
    assert (settings.respond, settings.escalate, settings.sources) == ("questions", ("S0PEOPLE1", "U0BOB"), ("handbook",))
    assert settings.escalation_mentions() == "<!subteam^S0PEOPLE1> <@U0BOB>"


def test_a_channel_without_a_table_answers_mentions_only(tmp_path):
    settings = read_sources_file(write(tmp_path, "")).channels.get("C0OTHER")
    assert (settings.respond, settings.escalate, settings.source_scopes) == ("mention", (), None)


@pytest.mark.parametrize("table, message", [
    ('[channels.help-desk]\nrespond = "questions"\n', "[channels.help-desk]: 'help-desk' is not a Slack channel id"),
    ('[channels.D0DIRECT]\nrespond = "questions"\n', "[channels.D0DIRECT]: 'D0DIRECT' is not a Slack channel id"),
    ('[channels.C0HELP1]\nrespond = "always"\n', "[channels.C0HELP1]: respond must be \"mention\""),
    ('[channels.C0HELP1]\nrespnd = "questions"\n', "[channels.C0HELP1]: unknown setting(s) respnd"),
    ('[channels.C0HELP1]\nescalate = "S0PEOPLE1"\n', "[channels.C0HELP1]: escalate must be a list"),
    ('[channels.C0HELP1]\nescalate = ["@people"]\n', "[channels.C0HELP1]: escalate: '@people' is not"),
    ('[channels.C0HELP1]\nsources = ["handbok"]\n', "[channels.C0HELP1]: sources: no source is named 'handbok'"),
    ('[channels.C0HELP1]\nsources = []\n', "[channels.C0HELP1]: sources = [] would answer from nothing"),
])
def test_a_bad_channel_table_stops_docent_with_the_file_table_and_key(tmp_path, table, message):
    path = write(tmp_path, table)
    with pytest.raises(SourcesError) as caught:
        read_sources_file(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_sources_naming_a_scope_shared_with_another_source_is_refused_not_widened(tmp_path):
    path = write(tmp_path, '[channels.C0HELP1]\nsources = ["eng"]\n')  # eng is public, like nothing else here...
    assert read_sources_file(path).channels.get("C0HELP1").source_scopes == {"public"}
    (tmp_path / "third").mkdir()
    path.write_text(path.read_text().replace("[scopes.hb]", f'[[source]]\nname = "blog"\nlocation = "{tmp_path / "third"}"'
                                                            f'\n\n[scopes.hb]'))
    with pytest.raises(SourcesError, match="source 'blog' carries the access scope 'public' too"):
        read_sources_file(path)


def test_sources_whose_scope_the_channel_cannot_see_is_refused(tmp_path):
    path = write(tmp_path, '[channels.C0ELSE1]\nsources = ["handbook"]\n')
    with pytest.raises(SourcesError, match=r"\[channels.C0ELSE1\]: sources: the access scope 'hb' is not visible in C0ELSE1"):
        read_sources_file(path)


def test_sources_narrow_the_channels_audience_and_never_widen_it(tmp_path):
    channels = read_sources_file(write(tmp_path, '[channels.C0HELP1]\nsources = ["handbook"]\n')).channels
    seen_here = Audience(kind=CHANNEL, scopes=("hb", "public"), channel="C0HELP1")
    assert channels.narrow(seen_here).scopes == ("hb",)
    public_only = Audience(kind=CHANNEL, scopes=("public",), channel="C0HELP1")  # e.g. it became Slack Connect
    assert channels.narrow(public_only).scopes == ()
    elsewhere = Audience(kind=CHANNEL, scopes=("hb", "public"), channel="C0OTHER")
    assert channels.narrow(elsewhere).scopes == ("hb", "public")
