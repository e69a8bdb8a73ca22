"""Settings from environment variables (or a `.env` file), read once at the edge and passed down.

Every variable has a row in bot/settings_reference.py, which renders docs/configuration.md (a test checks both).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from sources import AccessConfig, ChannelsConfig, SourceConfig, load_access, load_sources, load_synonyms, read_sources_file
from indexing.config import IndexConfig, RerankConfig

if TYPE_CHECKING:
    from bot.answering import LLMClient
    from indexing.search import Synonyms

REPO_ROOT = Path(__file__).resolve().parents[1]


def _sample_wiki() -> Path:
    """The sample wiki: `sample-wiki/` of a checkout (or an editable install); in an installed wheel,
    the package data `docent_sample_wiki` (pyproject.toml maps the folder to that name)."""
    checkout = REPO_ROOT / "sample-wiki"
    if checkout.is_dir():
        return checkout
    import importlib.util

    spec = importlib.util.find_spec("docent_sample_wiki")
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return checkout  # not installed either: `kb sync` says this folder does not exist


SAMPLE_WIKI = _sample_wiki()
SAMPLE_SOURCES = SAMPLE_WIKI / "docent.toml"  # the sample's own sources file: its source and [synonyms]


def default(config: type, name: str) -> Any:
    """The default of the configuration dataclass `config`'s field `name`: every default is written
    once, on the dataclass the code reads (`indexing.config`), and a setting only maps its
    environment variable onto it — two copies drifted (`KB_RERANK` "builtin", `RerankConfig` "off")."""
    found = {f.name: f for f in dataclasses.fields(config)}[name]
    if found.default is not dataclasses.MISSING:
        return found.default
    return found.default_factory()  # type: ignore[operator]


def secret(value: SecretStr | None) -> str | None:
    """A SecretStr setting as a plain string, for the one call that sends it (None when unset or empty)."""
    if value is None:
        return None
    return value.get_secret_value() or None


def _default_home() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("docent", appauthor=False))


class Settings(BaseSettings):
    # An empty variable (`KB_SOURCES=`) is unset, not "" — which a path would read as the working directory.
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True)

    kb_home: Path = Field(default_factory=_default_home, description="Docent's data directory")
    database_url: SecretStr | None = None  # may carry a password: shown only as ***
    database_read_url: SecretStr | None = None  # a hot standby of DATABASE_URL's server that questions read from
    kb_sources: Path | None = None  # a sources file (kb.toml / YAML); overrides KB_WIKI
    kb_wiki: Path | None = None  # a Markdown folder to index; the sample wiki when unset
    kb_source_name: str = "wiki"
    kb_url_template: str | None = None  # e.g. https://github.com/acme/handbook/blob/main/{path}
    kb_access: str = "public"
    kb_exclude: str = ""  # comma-separated globs
    kb_embed_model: str | None = None  # a local model folder; with KB_EMBED_URL, the service's model name
    # how the local model runs (indexing.vectors.onnx_embedding)
    kb_embed_backend: Literal["onnx", "onnx-int8", "torch"] = default(IndexConfig, "embed_backend")
    kb_model_cache: Path | None = None  # where the ONNX export is kept; unset: ~/.cache/docent
    kb_embed_url: str | None = None  # OpenAI-compatible embeddings, e.g. http://tei:8080/v1 or https://api.openai.com/v1
    kb_embed_api_key: SecretStr | None = None
    kb_embed_in_flight: int = default(IndexConfig, "embed_in_flight")
    kb_sync_batch: int = default(IndexConfig, "sync_batch_children")
    kb_top_k: int = default(IndexConfig, "top_k")
    kb_typo_repair: bool = default(IndexConfig, "typo_repair")  # indexing.search.spelling: off for a non-English wiki
    # the first gate's threshold; only `kb eval --calibrate`'s sweep reads it
    kb_gate_min_cosine: float = default(IndexConfig, "min_cosine")
    # the gate's outcomes (indexing.search.gate.gate_outcome): not found below, answered from, uncertain between
    kb_gate_refuse_below: float = default(IndexConfig, "gate_refuse_below")
    kb_gate_answer_from: float = default(IndexConfig, "gate_answer_from")
    kb_gate_refuse_below_cjk: float = default(IndexConfig, "gate_refuse_below_cjk")
    kb_gate_answer_from_cjk: float = default(IndexConfig, "gate_answer_from_cjk")
    # the rerank stage (indexing.search.rerank): builtin (the shipped reader: a veto on confident answers,
    # indexing.search.reader) | off | a CrossEncoder folder; KB_RERANK_URL: a TEI/Cohere-style service
    kb_rerank: str = default(RerankConfig, "backend")
    kb_rerank_url: str | None = None  # the full URL, e.g. http://tei:8080/rerank or https://api.cohere.com/v2/rerank
    kb_rerank_model: str | None = None
    kb_rerank_api_key: SecretStr | None = None
    kb_rerank_format: Literal["auto", "tei", "cohere"] = default(RerankConfig, "wire_format")
    kb_rerank_top_n: int = Field(default=default(RerankConfig, "top_n"), ge=1)
    kb_rerank_timeout_ms: float = Field(default=default(RerankConfig, "timeout_ms"), gt=0)
    # of each section per pair: the stage's cost is its length
    kb_rerank_max_chars: int = Field(default=default(RerankConfig, "max_chars"), ge=100)
    kb_rerank_refuse_below: float | None = None  # fitted for the backend by `kb eval --calibrate`; unset: order only
    kb_rerank_answer_from: float | None = None
    kb_rerank_floor: float | None = Field(default=None, ge=0, le=1)  # the built-in reader's veto floor; unset: shipped
    kb_llm_base_url: str | None = None  # OpenAI-compatible, e.g. http://localhost:11434/v1 for Ollama
    kb_llm_model: str = "gpt-4o-mini"
    kb_llm_api_key: SecretStr = SecretStr("not-needed")  # never printed: `secret()` reads it where it is sent
    kb_llm_timeout: float = 30.0
    kb_log_level: str = "WARNING"
    kb_log_format: str = "text"  # or "json": one JSON object per line (bot.logs)
    kb_query_log_days: int = Field(default=90, ge=0)  # questions are personal data; 0 keeps them forever
    # Slack (`kb serve`): Socket Mode when the app-level token is set, else HTTP with the signing secret
    slack_bot_token: SecretStr | None = None  # xoxb-…
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = None  # xapp-…, Socket Mode only
    slack_api_url: str | None = None  # Web API base; None: Slack's own (https://slack.com/api/)
    kb_admin_users: str = ""  # comma-separated Slack user ids allowed to run /kb resync
    kb_digest_channel: str | None = None  # a channel id: the weekly gaps digest is posted there (bot.slack.digest)
    kb_digest_schedule: str = "0 9 * * 1"  # when: a 5-field cron in UTC (Mondays 09:00) or "every 7d"
    # Prometheus (`kb serve`): its own port, bound to --host; on the events port only with the token
    kb_metrics_port: int = Field(default=9464, ge=0, le=65535)  # 0: any free port (logged at start)
    kb_metrics_token: SecretStr | None = None  # `Authorization: Bearer …` for /metrics on the events port
    kb_handovers_per_hour: int = Field(default=10, ge=0)  # per help channel (bot.slack.handover); 0: none
    # What people said in private channels (answered gaps, questions) in the digest and App Home (bot.records.gap_listing)
    kb_gaps_include_private_channels: bool = False
    kb_verified_review_days: int = Field(default=180, ge=1)  # a verified answer's review-by date, from the day it is verified

    def index_config(self) -> IndexConfig:
        return IndexConfig(
            home=self.kb_home,
            database_url=secret(self.database_url),
            database_read_url=secret(self.database_read_url),
            embed_model=self.kb_embed_model,
            embed_backend=self.kb_embed_backend,
            model_cache=self.kb_model_cache,
            embed_url=self.kb_embed_url,
            embed_api_key=self.kb_embed_api_key.get_secret_value() if self.kb_embed_api_key else None,
            embed_in_flight=self.kb_embed_in_flight,
            sync_batch_children=self.kb_sync_batch,
            top_k=self.kb_top_k,
            typo_repair=self.kb_typo_repair,
            synonyms=self.synonyms(),
            min_cosine=self.kb_gate_min_cosine,
            gate_refuse_below=self.kb_gate_refuse_below,
            gate_answer_from=self.kb_gate_answer_from,
            gate_refuse_below_cjk=self.kb_gate_refuse_below_cjk,
            gate_answer_from_cjk=self.kb_gate_answer_from_cjk,
            rerank=RerankConfig(
                backend=self.kb_rerank, url=self.kb_rerank_url, model=self.kb_rerank_model,
                api_key=secret(self.kb_rerank_api_key), wire_format=self.kb_rerank_format, top_n=self.kb_rerank_top_n,
                timeout_ms=self.kb_rerank_timeout_ms, max_chars=self.kb_rerank_max_chars,
                refuse_below=self.kb_rerank_refuse_below, answer_from=self.kb_rerank_answer_from,
                floor=self.kb_rerank_floor),
        )

    def llm_client(self) -> LLMClient | None:
        """The LLM client for `KB_LLM_BASE_URL` (`bot.answering.llm.LLMClient`), or None: extractive answers."""
        if not self.kb_llm_base_url:
            return None
        from bot.answering import LLMClient

        return LLMClient(self.kb_llm_base_url, self.kb_llm_model, secret(self.kb_llm_api_key) or "not-needed",
                         self.kb_llm_timeout)

    @property
    def admin_users(self) -> set[str]:
        return {u.strip() for u in self.kb_admin_users.split(",") if u.strip()}

    def sources(self) -> list[SourceConfig]:
        """The configured sources: the sources file, else KB_WIKI, else the sample wiki."""
        if self.kb_sources is not None:
            return load_sources(self.kb_sources)
        if self.kb_wiki is not None:
            return [SourceConfig(name=self.kb_source_name, location=Path(self.kb_wiki).resolve(), kind="markdown",
                                 exclude=self.excludes, url_template=self.kb_url_template, access=self.kb_access)]
        return load_sources(SAMPLE_SOURCES)

    def synonyms(self) -> Synonyms:
        """The `[synonyms]` of the sources file (else the sample's, when nothing is configured),
        analysed for the keyword leg (`indexing.keyword.synonyms.Synonyms`); none for `KB_WIKI`.
        A bad entry raises `SourcesError` naming the file, the table and the key."""
        from indexing.search import Synonyms

        if self.kb_sources is None and self.kb_wiki is not None:
            return Synonyms()
        path = self.kb_sources if self.kb_sources is not None else SAMPLE_SOURCES
        return Synonyms.from_table(load_synonyms(path), f"{path}: [synonyms]")

    def access_config(self) -> AccessConfig:
        """Where each access scope is visible: the sources file's `[scopes.*]` and `shared_channels`.
        Without a sources file there is no such configuration, so Slack sees `public` only."""
        if self.kb_sources is not None:
            return load_access(self.kb_sources)
        return AccessConfig()

    def channel_settings(self) -> ChannelsConfig:
        """Per-channel settings: the sources file's `[channels.*]` (none without a sources file)."""
        if self.kb_sources is not None:
            return read_sources_file(self.kb_sources).channels
        return ChannelsConfig()

    @property
    def excludes(self) -> list[str]:
        return [g.strip() for g in self.kb_exclude.split(",") if g.strip()]
