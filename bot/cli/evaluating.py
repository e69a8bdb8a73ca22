"""`kb eval`: retrieval, the not-found gate and the lead scored on labelled questions, as tables."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from bot.cli import common
from bot.cli.common import fail
from bot.cli.syncing import not_synced, run_sync


def evaluate(
    questions: Annotated[Path, typer.Argument(help="JSONL: id, question, expected_sources, answer_keywords, kind")],
    corpus: Annotated[Path | None, typer.Option(help="Sync this folder first (skips SOURCE.md, LICENSE*, *.jsonl)")] = None,
    source: Annotated[str, typer.Option(help="Source name for --corpus")] = "eval",
    scope: Annotated[list[str], typer.Option(help="Only search these access scopes (repeatable; default all)")] = [],
    compare: Annotated[bool, typer.Option("--compare", help="Also score RRF fusion, each leg alone and (with --corpus) LlamaIndex defaults, same run")] = False,
    calibrate: Annotated[bool, typer.Option("--calibrate", help="Fit the gate's two thresholds on these questions (in-corpus; the leave-one-corpus-out table is benchmarks/gate_calibration.py), and sweep the first gate's single cosine threshold")] = False,
    write_env: Annotated[Path | None, typer.Option(help="With --calibrate: write the fitted KB_GATE_REFUSE_BELOW / KB_GATE_ANSWER_FROM (and _CJK; with a reranker configured, KB_RERANK_REFUSE_BELOW / KB_RERANK_ANSWER_FROM) into this .env file")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print metrics and per-question rows as JSON")] = False,
    use_llm: Annotated[bool, typer.Option("--llm", help="Answer with the configured LLM (KB_LLM_BASE_URL): its 'not found' counts as a refusal; --compare's other modes and --calibrate stay retrieval-only")] = False,
) -> None:
    """Score retrieval and the not-found gate on labelled questions (hit@k, MRR@10, P/R, latency)."""
    from bot.quality import load_questions, run_eval

    settings = common.settings()
    if use_llm and not settings.kb_llm_base_url:
        fail("--llm needs an LLM endpoint: set KB_LLM_BASE_URL (and KB_LLM_MODEL)")
    try:
        items = load_questions(questions)
    except (OSError, ValueError) as exc:
        fail(str(exc))
    root = common.root(settings)
    if corpus is not None:
        from sources import SourceConfig

        synced = run_sync(root, [SourceConfig(name=source, location=corpus.resolve(),
                                              exclude=["SOURCE.md", "LICENSE*", "*.jsonl"], adhoc=True)])
        if any(not_synced(report) for report in synced):  # its error: line is printed; no score of a stale corpus
            raise typer.Exit(1)
    kb = root.knowledge_base(sources=[], llm=use_llm)  # scoring needs no list of sources
    index = kb.index
    if not kb.chunk_count():
        fail("the index is empty: run `kb sync` first or pass --corpus")
    modes = ["hybrid", "hybrid-rrf", "vector", "bm25"] if compare else ["hybrid"]
    results = {mode: run_eval(kb, items, scopes=list(scope) or None, mode=mode, extractive=mode != "hybrid")
               for mode in modes}
    result = results["hybrid"]
    if compare:
        result["compare"] = {mode: r["metrics"]["overall"] for mode, r in results.items()}
        if corpus is not None:
            from bot.quality import naive_baseline

            for k in (2, 5):  # LlamaIndex's default top-2, and top-5 (the depth Docent cites, so hit@5 compares)
                naive = naive_baseline(index.embedder, corpus, items, settings.kb_home / "naive-baseline", top_k=k)
                result["compare"][f"naive-llamaindex-top{k}"] = naive["metrics"]["overall"]
    if calibrate:
        from bot.quality import calibrate as sweep

        from bot.quality import fit, fit_floor, fit_rerank

        result["calibration"] = sweep(result["questions"])
        rows = [{"corpus": "this set", "set": "public", "kind": r["kind"], "signals": r["signals"]} for r in result["questions"]]
        fitted = fit(rows)
        result["calibration"]["gate"] = {lang: {"refuse_below": t[0], "answer_from": t[1]} for lang, t in fitted.items()}
        rerank = fit_rerank(rows, index.rerank.gate.weight) if index.rerank is not None else None  # for this reranker's scores
        if rerank is not None:
            assert index.rerank is not None  # the stage whose scores it was fitted on
            result["calibration"]["rerank"] = {"backend": index.rerank.name, "refuse_below": rerank[0],
                                               "answer_from": rerank[1]}
            if index.rerank.gate.weight is not None:  # the built-in reader: its veto floor too
                read = {id(r): float(r["signals"]["rerank_best"]) for r in rows if r["signals"].get("rerank_best") is not None}
                result["calibration"]["rerank"]["floor"] = fit_floor(rows, read, fitted["en"][1])
        if write_env is not None:
            for suffix, lang in (("", "en"), ("_CJK", "cjk")):
                _write_env(write_env, f"KB_GATE_REFUSE_BELOW{suffix}", str(fitted[lang][0]))
                _write_env(write_env, f"KB_GATE_ANSWER_FROM{suffix}", str(fitted[lang][1]))
            if rerank is not None:
                _write_env(write_env, "KB_RERANK_REFUSE_BELOW", f"{rerank[0]:.6g}")
                _write_env(write_env, "KB_RERANK_ANSWER_FROM", f"{rerank[1]:.6g}")
                if "floor" in result["calibration"]["rerank"]:
                    _write_env(write_env, "KB_RERANK_FLOOR", str(result["calibration"]["rerank"]["floor"]))
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, allow_nan=False))
        return
    print_metrics(result["metrics"])
    if compare:
        print_metrics({f"mode:{mode}": row for mode, row in result["compare"].items()})
    if calibrate:
        print_calibration(result["calibration"], write_env)


def print_calibration(calibration: dict[str, Any], written: Path | None) -> None:
    from rich.console import Console
    from rich.markup import escape  # set names and paths are text, never markup
    from rich.table import Table

    from bot.cli.plain_output import clean, raw

    gate = calibration["gate"]
    console = Console(file=raw(sys.stdout), width=140)  # Rich's own colours pass; the texts it is given are cleaned
    for lang, t in gate.items():
        console.print(f"gate fitted on these questions ({lang}): not found below {t['refuse_below']}, "
                      f"answered from {t['answer_from']}, uncertain between")
    if "rerank" in calibration:
        t = calibration["rerank"]
        console.print(f"rerank gate fitted for {t['backend']}: not found below {t['refuse_below']:.6g}, "
                      f"answered from {t['answer_from']:.6g} (KB_RERANK_REFUSE_BELOW / KB_RERANK_ANSWER_FROM)"
                      + (f"; the reader's veto floor {t['floor']} (KB_RERANK_FLOOR)" if "floor" in t else ""))
    table = Table(title="the first gate, for comparison: best cosine threshold (found also when both legs agree)")
    for name in ("threshold", "fit P / R / F1", "held-out P / R / F1", "all P / R / F1", "answerable refused"):
        table.add_column(name, justify="right")
    best = calibration["best"]["threshold"]
    shown = calibration["curve"][::2]
    for row in shown + ([calibration["best"]] if calibration["best"] not in shown else []):
        cells = [f"{row[h]['precision']:.2f} / {row[h]['recall']:.2f} / {row[h]['f1']:.2f}" for h in ("fit", "held_out", "all")]
        mark = " ◀ best" if row["threshold"] == best else ""
        table.add_row(f"{row['threshold']:.2f}{mark}", *cells, str(row["all"]["wrongly_refused"]))
    console.print(table)
    console.print(f"first gate, best on the fit half: cosine {best}; "
                  + (f"the fitted thresholds were written to {escape(clean(str(written)))}" if written else "nothing written"))


def _write_env(path: Path, key: str, value: str) -> None:
    lines = path.read_text().splitlines() if path.exists() else []
    lines = [line for line in lines if not line.startswith(f"{key}=")] + [f"{key}={value}"]
    path.write_text("\n".join(lines) + "\n")


def print_metrics(metrics: dict[str, dict[str, Any]]) -> None:
    """Two tables: ranking and key-fact coverage, then the gate's outcome shares, one row per set."""
    from rich.console import Console
    from rich.markup import escape  # set names and paths are text, never markup
    from rich.table import Table

    from bot.cli.plain_output import clean, raw

    console = Console(file=raw(sys.stdout), width=max(160, Console().width))  # as print_calibration's
    ranking = {"questions": "questions", "hit@1": "hit@1", "hit@3": "hit@3", "hit@5": "hit@5", "mrr@10": "mrr@10",
               "keyword_coverage": "keywords reply", "lead_keyword_coverage": "keywords lead",
               "lead_shows_fact@3": "lead fact@3", "reply_shows_fact@3": "reply fact@3",
               "latency_p50_ms": "p50 ms", "latency_p95_ms": "p95 ms"}
    outcomes = {"answerable": "answerable", "answerable_answered": "answered", "answerable_uncertain": "uncertain",
                "answerable_not_found": "not found", "unanswerable_answered": "nf: answered",
                "unanswerable_uncertain": "nf: uncertain", "unanswerable_not_found": "nf: not found",
                "not_found_precision": "nf P", "not_found_recall": "nf R"}
    for title, columns in (("kb eval: ranking and key facts", ranking),
                           ("kb eval: outcomes (answerable questions, then unanswerable: nf)", outcomes)):
        table = Table(title=title)
        table.add_column("set")
        for label in columns.values():
            table.add_column(label, justify="right")
        for name, row in metrics.items():
            table.add_row(escape(clean(name)), *("" if row.get(c) is None else f"{row[c]:g}" for c in columns))
        console.print(table)
