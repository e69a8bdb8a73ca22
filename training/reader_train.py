"""Fine-tune the bundled MiniLM-L6 as a cross-encoder reader on `training.reader_data` pairs.

The bundled sentence-transformers weights load as `AutoModelForSequenceClassification` with one
logit (a new, seeded head); the loss is binary cross-entropy on (question, passage) → answers or
not. CPU only, resumable: every `--save-every` steps the model, the optimiser, the scheduler and
the step are written to `OUT/checkpoint/`; a second run with the same `--out` goes on from there
(the pairs are read in the same seeded order, so the step says where). `OUT/final/` is the model
after the last step, in Hugging Face format, for `training.reader_eval` and the ONNX export.

    python -m training.reader_train --pairs /work/kb/reader/data/pairs.jsonl \
        --out /work/kb/reader/runs/v1 --steps 320 --batch 16

`--init runs/v2/final` fine-tunes a trained reader further (a second stage on new pairs).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

MAX_LENGTH = 128  # question (~20 word-pieces) + a ~75-word window


def load_pairs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=320)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=4e-5)
    parser.add_argument("--warmup", type=float, default=0.06)
    parser.add_argument("--save-every", type=int, default=25)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=MAX_LENGTH)
    parser.add_argument("--init", type=Path,
                        help="start from this trained reader (a `final/` folder) instead of the bundled bi-encoder")
    parser.add_argument("--frozen-layers", type=int, default=2, help="lowest transformer layers kept as they are")
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    from indexing.vectors.onnx_embedding import bundled_model_path

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    base = args.init or bundled_model_path()
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    # The word-piece embeddings (half of the 22M weights) stay as the bi-encoder learnt them: on
    # ~10k pairs they would mostly drift, and their optimiser step is a third of a step's cost.
    # So do the lowest `--frozen-layers` layers: no backward pass through them (the CPU budget).
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
    pairs = load_pairs(args.pairs)
    order = list(range(len(pairs)))
    random.Random(args.seed).shuffle(order)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "args.json").write_text(json.dumps({k: str(v) for k, v in vars(args).items()}, indent=1))
    log = (args.out / "train.log").open("a")
    model.train()
    started, running = time.perf_counter(), []
    while step < args.steps:
        lo = (step * args.batch) % len(order)
        batch = [pairs[order[(lo + k) % len(order)]] for k in range(args.batch)]
        enc = tokenizer([p["question"] for p in batch], [p["passage"] for p in batch], truncation="only_second",
                        max_length=args.max_length, padding=True, return_tensors="pt")
        labels = torch.tensor([float(p["label"]) for p in batch])
        logits = model(**enc).logits.squeeze(-1)
        loss = loss_fn(logits, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        step += 1
        running.append(loss.item())
        if step % 10 == 0:
            rate = (time.perf_counter() - started) / max(1, len(running))
            line = f"step {step} loss {sum(running[-10:]) / 10:.4f} {rate:.2f}s/step epoch {step * args.batch / len(pairs):.2f}"
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
