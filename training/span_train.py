"""Fine-tune the bundled MiniLM-L6 as an extractive reader the SQuAD 2.0 way.

The model reads (question, passage) and gives every word-piece a start and an end score; the
[CLS] position stands for "no answer". Training targets the answer's first and last word-piece, or
[CLS] twice when the passage does not answer (`training.span_data`: SQuAD 2.0's own unanswerable
questions with their paragraph, near-topic paragraphs of SQuAD 1.1 articles). At run time the
reader compares the best span's score with the no-answer score — a real "not here", which a
pair classifier trained on topic never learnt (issue 34).

CPU only, resumable: every `--save-every` steps the model, optimiser, scheduler and step go to
`OUT/checkpoint/`; running the same command again goes on from there (the batches are made in the
same seeded order). Snapshots `OUT/step-N/` every four saves, `OUT/final/` at the end, in Hugging
Face format for `training.span_eval` and `training.span_export`. `--init` takes such a folder, or the
shipped int8 export itself (`training.span_recover`): a run can go on from what is committed.

    nice -n 10 python -m training.span_train --data /work/kb/span/data --out /work/kb/span/runs/r1 --steps 2000
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

MAX_LENGTH = 256  # question + passage word-pieces; a SQuAD paragraph with its question is ~190
MAX_QUESTION = 48  # word-pieces of the question kept (a pasted wall of text must not crowd out the passage)
STRIDE = 96


def features(tokenizer, examples, max_length: int = MAX_LENGTH):
    """One tokenised window per example: the window holding the answer, or the first window when
    the passage does not answer. Returns (encodings, start targets, end targets); examples whose
    answer falls outside every window are dropped."""
    from training.span_data import SpanExample  # noqa: F401  (the examples' type)

    questions = [_clip_question(tokenizer, e.question) for e in examples]
    enc = tokenizer(questions, [e.context for e in examples], truncation="only_second", max_length=max_length,
                    stride=STRIDE, return_overflowing_tokens=True, return_offsets_mapping=True)
    chosen: dict[int, tuple[int, int, int]] = {}
    for row, source in enumerate(enc["overflow_to_sample_mapping"]):
        if source in chosen:
            continue
        example = examples[source]
        if example.answer_start is None:
            chosen[source] = (row, 0, 0)
            continue
        start_char = example.answer_start
        end_char = start_char + len(example.answer_text)
        sequence = enc.sequence_ids(row)
        offsets = enc["offset_mapping"][row]
        start = end = None
        for i, (seq, (a, b)) in enumerate(zip(sequence, offsets)):
            if seq != 1:
                continue
            if start is None and a <= start_char < b:
                start = i
            if a < end_char <= b:
                end = i
        if start is not None and end is not None and end >= start:
            chosen[source] = (row, start, end)
    rows = sorted(chosen.values())
    keep = ("input_ids", "attention_mask", "token_type_ids")
    return [{k: enc[k][row] for k in keep} for row, _, _ in rows], [s for _, s, _ in rows], [e for _, _, e in rows]


def _clip_question(tokenizer, question: str) -> str:
    ids = tokenizer(question, add_special_tokens=False)["input_ids"]
    return question if len(ids) <= MAX_QUESTION else tokenizer.decode(ids[:MAX_QUESTION])


def batches(lengths: list[int], batch: int, seed: int) -> list[list[int]]:
    """Seeded batches of similar length (less padding, so less CPU), in a shuffled order."""
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    out = []
    pool = batch * 50
    for lo in range(0, len(order), pool):
        chunk = sorted(order[lo:lo + pool], key=lengths.__getitem__)
        out += [chunk[k:k + batch] for k in range(0, len(chunk), batch)]
    rng.shuffle(out)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="folder written by training.span_data")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=6e-5)
    parser.add_argument("--warmup", type=float, default=0.05)
    parser.add_argument("--save-every", type=int, default=50)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--frozen-layers", type=int, default=1, help="lowest transformer layers kept as they are")
    parser.add_argument("--init", type=Path, help="start from a trained reader: a `final/` or `step-N/` folder, "
                        "or an int8 export (its float weights recovered by training.span_recover)")
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer, get_linear_schedule_with_warmup

    from indexing.vectors.onnx_embedding import bundled_model_path
    from training.span_data import read

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(bundled_model_path())
    if args.init is not None and args.init.suffix == ".onnx":
        from training.span_recover import recover

        model = recover(args.init).model
    else:
        model = AutoModelForQuestionAnswering.from_pretrained(args.init or bundled_model_path())
    # The word-piece embeddings (half of the 22M weights) stay as the bi-encoder learnt them, and so
    # does the lowest layer: no backward pass or optimiser step through them (the CPU budget).
    frozen = [model.base_model.embeddings, *model.base_model.encoder.layer[: args.frozen_layers]]
    for weight in (w for module in frozen for w in module.parameters()):
        weight.requires_grad = False
    trainable = [w for w in model.parameters() if w.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=0.01)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(args.warmup * args.steps), args.steps)
    checkpoint = args.out / "checkpoint"
    step = 0
    if (checkpoint / "state.pt").exists():
        state = torch.load(checkpoint / "state.pt", weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = state["step"]
        print(f"resumed at step {step}", flush=True)

    started = time.perf_counter()
    encoded, starts, ends = features(tokenizer, read(args.data / "train.jsonl"))
    print(f"{len(encoded)} windows in {time.perf_counter() - started:.0f}s", flush=True)
    plan = batches([len(e["input_ids"]) for e in encoded], args.batch, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "args.json").write_text(json.dumps({k: str(v) for k, v in vars(args).items()}, indent=1))
    log = (args.out / "train.log").open("a")
    model.train()
    started, running = time.perf_counter(), []
    while step < args.steps:
        rows = plan[step % len(plan)]
        batch = tokenizer.pad([encoded[r] for r in rows], return_tensors="pt")
        out = model(**batch, start_positions=torch.tensor([starts[r] for r in rows]),
                    end_positions=torch.tensor([ends[r] for r in rows]))
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        step += 1
        running.append(out.loss.item())
        if step % 10 == 0:
            rate = (time.perf_counter() - started) / len(running)
            line = f"step {step} loss {sum(running[-10:]) / 10:.4f} {rate:.2f}s/step epoch {step / len(plan):.2f}"
            print(line, flush=True)
            log.write(line + "\n")
            log.flush()
        if step % args.save_every == 0 or step == args.steps:
            checkpoint.mkdir(parents=True, exist_ok=True)
            tmp = checkpoint / "state.pt.tmp"
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "step": step}, tmp)
            tmp.replace(checkpoint / "state.pt")
            if step % (args.save_every * 4) == 0:
                snap = args.out / f"step-{step}"
                model.save_pretrained(snap)
                tokenizer.save_pretrained(snap)
    final = args.out / "final"
    model.save_pretrained(final)
    tokenizer.save_pretrained(final)
    print(f"done: {step} steps → {final}", flush=True)


if __name__ == "__main__":
    main()
