"""Settings from environment variables (or a `.env` file), read once at the edge and passed down.

Every variable is listed in the README's configuration table; keep the two in step.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from indexing.config import IndexConfig

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_WIKI = REPO_ROOT / "sample-wiki"


def _default_home() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("docent", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    kb_home: Path = Field(default_factory=_default_home, description="Docent's data directory")
    database_url: str | None = None
    kb_wiki: Path | None = None  # a Markdown folder to index; the sample wiki when unset
    kb_source_name: str = "wiki"
    kb_url_template: str | None = None  # e.g. https://github.com/acme/handbook/blob/main/{path}
    kb_access: str = "public"
    kb_exclude: str = ""  # comma-separated globs
    kb_embed_model: str | None = None
    kb_top_k: int = 5
    kb_gate_threshold: float = 0.61
    kb_llm_base_url: str | None = None  # OpenAI-compatible, e.g. http://localhost:11434/v1 for Ollama
    kb_llm_model: str = "gpt-4o-mini"
    kb_llm_api_key: str = "not-needed"
    kb_llm_timeout: float = 30.0
    kb_log_level: str = "WARNING"

    def index_config(self) -> IndexConfig:
        return IndexConfig(
            home=self.kb_home,
            database_url=self.database_url,
            embed_model=self.kb_embed_model,
            top_k=self.kb_top_k,
            gate_threshold=self.kb_gate_threshold,
        )

    @property
    def excludes(self) -> list[str]:
        return [g.strip() for g in self.kb_exclude.split(",") if g.strip()]
