"""Export a trained reader checkpoint to one int8 ONNX file (23 MB; what would ship, were it better).

    python -m training.reader_export /work/kb/reader/runs/v1/final --out /work/kb/reader/reader-int8.onnx

The float graph is traced with eager attention and a padded pair (so the attention mask and the
segment ids stay real inputs), then quantised the way the embedder's int8 variant is
(`indexing.vectors.onnx_embedding._quantize`: int8 weights per output channel, activations per batch).
The float and int8 logits are compared with torch's on a few pairs and printed: a broken export
shows there, not in the evaluation.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import warnings
from pathlib import Path

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
CHECK_PAIRS = [
    ("how many days of annual leave do I get?",
     "Leave policy › Annual leave: Full-time employees get 25 days of paid annual leave per calendar year."),
    ("how many days of annual leave do I get?", "Expenses › Hotels: Hotel stays are reimbursed up to $200 per night."),
    ("does the dental plan cover braces?",
     "Benefits › Dental: Dental insurance is provided through our insurer for you and your dependants."),
]


def export(checkpoint: Path, target: Path) -> None:
    import torch
    from transformers import AutoTokenizer

    from training.reader_eval import load_checkpoint
    from indexing.vectors.onnx_embedding import _quantize, bundled_model_path

    model = load_checkpoint(checkpoint)
    model.set_attn_implementation("eager")  # the mask must stay an input of the traced graph
    tokenizer = AutoTokenizer.from_pretrained(bundled_model_path())
    example = tokenizer(["a question", "another longer question here"], ["a passage", "x"], padding=True, return_tensors="pt")

    class Logits(torch.nn.Module):
        def __init__(self, inner) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).logits

    with torch.inference_mode():  # before the export, which leaves the modules in training mode (dropout on)
        enc = tokenizer([q for q, _ in CHECK_PAIRS], [t for _, t in CHECK_PAIRS], truncation="only_second",
                        max_length=128, padding=True, return_tensors="pt")
        reference = model(**enc).logits[:, 0].tolist()
    with tempfile.TemporaryDirectory() as tmp:
        full = Path(tmp) / "reader.onnx"
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(Logits(model).eval(), tuple(example[n] for n in _INPUTS), str(full), input_names=list(_INPUTS),
                              output_names=["logits"], opset_version=17, dynamo=False,
                              dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in _INPUTS}, "logits": {0: "batch"}})
        target.parent.mkdir(parents=True, exist_ok=True)
        _quantize(full, target)
        from indexing.search.reader import OnnxReader as Reader

        for name, path in (("float", full), ("int8", target)):
            got = [Reader(path, threads=1).logits(q, [t])[0] for q, t in CHECK_PAIRS]
            print(f"{name}: " + ", ".join(f"{a:+.3f} (torch {b:+.3f})" for a, b in zip(got, reference, strict=True)))
    print(f"{target}: {os.path.getsize(target) / 1e6:.1f} MB")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    export(args.checkpoint, args.out)


if __name__ == "__main__":
    main()
