"""Export a trained span reader to one int8 ONNX file (what `indexing.search.span_reader` runs).

    python -m training.span_export /work/kb/span/runs/r1/final --out indexing/models/span-reader-int8.onnx

The float graph is traced with eager attention and a padded pair (so the attention mask and the
segment ids stay real inputs), then quantised the way the embedder's int8 variant is
(`indexing.vectors.onnx_embedding._quantize`: int8 weights per output channel, activations per batch).
Each check pair is then read by torch, the float graph and the int8 file, and their spans and
scores printed side by side: a broken export shows there, not in the evaluation.
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
     "Leave policy › Annual leave\nFull-time employees get 25 days of paid annual leave per calendar year. "
     "Part-time employees get a pro-rated share."),
    ("how many paid federal holidays do we get a year?",
     "Holidays › Holiday pay\nYou are given 8 hours for the paid holiday if you are a full-time employee."),
    ("does the dental plan cover braces?",
     "Benefits › Dental\nDental insurance is provided through our insurer for you and your dependants."),
]


def load(checkpoint: Path):
    """A trained span reader in torch: a Hugging Face folder, or the trainer's resumable `state.pt`
    (so a run still going can be exported at its last checkpoint)."""
    import torch
    from transformers import AutoModelForQuestionAnswering

    from indexing.vectors.onnx_embedding import bundled_model_path

    if checkpoint.suffix == ".pt":
        net = AutoModelForQuestionAnswering.from_pretrained(bundled_model_path())
        net.load_state_dict(torch.load(checkpoint, weights_only=False)["model"])
        return net.eval()
    return AutoModelForQuestionAnswering.from_pretrained(checkpoint).eval()


def export(checkpoint: Path, target: Path) -> None:
    import torch
    from transformers import AutoTokenizer

    from indexing.vectors.onnx_embedding import _quantize, bundled_model_path
    from indexing.search.span_reader import SpanReader

    model = load(checkpoint)
    model.set_attn_implementation("eager")  # the mask must stay an input of the traced graph
    tokenizer = AutoTokenizer.from_pretrained(bundled_model_path())
    example = tokenizer(["a question", "another longer question here"], ["a passage", "x"], padding=True, return_tensors="pt")

    class Logits(torch.nn.Module):
        def __init__(self, inner) -> None:
            super().__init__()
            self.inner = inner  # every weight is exported as `inner.…`: training.span_recover reads them back by it

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.start_logits, out.end_logits

    with tempfile.TemporaryDirectory() as tmp:
        full = Path(tmp) / "span.onnx"
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(Logits(model).eval(), tuple(example[n] for n in _INPUTS), str(full),
                              input_names=list(_INPUTS), output_names=["start_logits", "end_logits"], opset_version=17,
                              dynamo=False, dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in _INPUTS},
                                                          "start_logits": {0: "batch", 1: "tokens"},
                                                          "end_logits": {0: "batch", 1: "tokens"}})
        target.parent.mkdir(parents=True, exist_ok=True)
        _quantize(full, target)
        for name, path in (("float", full), ("int8", target)):
            reader = SpanReader(path, threads=1)
            for question, passage in CHECK_PAIRS:
                span = reader.read(question, [passage])[0]
                print(f"{name}: {span.score:+.2f} {span.text!r}  ← {question}")
    print(f"{target}: {os.path.getsize(target) / 1e6:.1f} MB")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    export(args.checkpoint, args.out)


if __name__ == "__main__":
    main()
