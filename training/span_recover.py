"""Recover a span reader's float weights from its int8 ONNX export, so training can go on from what
is committed rather than from a checkpoint on one machine.

    python -m training.span_recover indexing/models/span-reader-int8.onnx --out /work/kb/span/runs/r3-recovered
    python -m training.span_train … --init /work/kb/span/runs/r3-recovered   # or --init the .onnx itself

Why: a run's float checkpoints live outside the repo (90 MB each) and went with the machine once
(session 20 found r3's and r5's gone). The shipped export holds every weight, int8:
- each linear layer's matrix per output channel (`MatMulInteger`, `onnx::MatMul_N_quantized`, its
  `_scale` and `_zero_point`), named by the module whose `MatMul` reads it;
- the three embedding tables per tensor (`Gather` of `inner.….weight_quantized`);
- biases and layer norms in float, under their own names.

Dequantised, a weight is within half a step of the trained one. Where the bundled bi-encoder's own
weight lies within that half step everywhere (the embeddings and the lowest layers, frozen in
training), the bi-encoder's exact float is kept instead: those were never trained.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MODULE = re.compile(r"^/inner/(.+)/MatMul(?:_\d+)?_output_0")
_PREFIX = "inner."
_QUANTIZED = "_quantized"


@dataclass(frozen=True)
class Recovered:
    """What a recovery did: the weights read from the export, and those the bi-encoder's exact float
    replaced because the export's int8 could not tell them apart from it."""

    model: Any  # a transformers BertForQuestionAnswering, float, in eval mode
    from_export: list[str]
    kept_exact: list[str]


def _dequantized(inits: dict, base: str):
    """`(q − zero point) · scale` of one quantised initializer (per tensor, or per output channel: the
    last axis of a `MatMul`'s [in, out] matrix), and half a step beside each weight: how far the
    trained float may have been from it."""
    import numpy as np
    from onnx import numpy_helper

    quantized = numpy_helper.to_array(inits[base + _QUANTIZED]).astype(np.float32)
    scale = numpy_helper.to_array(inits[base + "_scale"]).astype(np.float32)
    zero = numpy_helper.to_array(inits[base + "_zero_point"]).astype(np.float32)
    return (quantized - zero) * scale, np.broadcast_to(scale / 2, quantized.shape)


def _parameter_names(graph, inits: dict) -> dict[str, tuple[str, bool]]:
    """Each quantised initializer's base name → the torch parameter it holds, and whether it is a
    `MatMul`'s [in, out] matrix (torch's Linear keeps [out, in])."""
    names: dict[str, tuple[str, bool]] = {}
    for node in graph.node:
        for name in node.input:
            if not name.endswith(_QUANTIZED) or name not in inits:
                continue  # an activation quantised at run time, not a weight
            base = name[: -len(_QUANTIZED)]
            if base.startswith(_PREFIX):
                names[base] = (base[len(_PREFIX):], False)
            elif node.op_type == "MatMulInteger":
                found = _MODULE.match(node.output[0])
                if found is None:
                    raise ValueError(f"{node.output[0]}: no module name to put weight {base} in")
                names[base] = (found.group(1).replace("/", ".") + ".weight", True)
    return names


def recover(export: Path) -> Recovered:
    """A float torch span reader from an int8 export made by `training.span_export`."""
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper
    from transformers import AutoModelForQuestionAnswering

    from indexing.vectors.onnx_embedding import bundled_model_path

    graph = onnx.load(str(export)).graph
    inits = {init.name: init for init in graph.initializer}
    model = AutoModelForQuestionAnswering.from_pretrained(bundled_model_path())
    state = model.state_dict()
    weights: dict[str, np.ndarray] = {}
    kept: list[str] = []
    for base, (parameter, transposed) in _parameter_names(graph, inits).items():
        value, half_step = _dequantized(inits, base)
        if transposed:
            value, half_step = value.T, half_step.T
        bundled = state[parameter].numpy()
        if parameter.startswith("bert.") and bool(np.all(np.abs(bundled - value) <= half_step + 1e-6)):
            kept.append(parameter)  # the bi-encoder's own weight: the int8 cannot tell them apart
            continue
        weights[parameter] = value
    for name, init in inits.items():
        if name.startswith(_PREFIX) and not name.endswith((_QUANTIZED, "_scale", "_zero_point")):
            weights[name[len(_PREFIX):]] = numpy_helper.to_array(init)
    unknown = sorted(set(weights) - set(state))
    if unknown:
        raise ValueError(f"{export}: weights the span reader has no place for: {unknown[:5]}")
    missing = sorted(set(state) - set(weights) - set(kept) - {n for n, _ in model.named_buffers()})
    if missing:
        raise ValueError(f"{export}: weights the export does not hold: {missing[:5]}")
    model.load_state_dict({name: torch.tensor(np.asarray(v)) for name, v in weights.items()}, strict=False)
    return Recovered(model.eval(), sorted(weights), sorted(kept))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("export", type=Path, help="an int8 span reader export (training.span_export)")
    parser.add_argument("--out", type=Path, required=True, help="a Hugging Face folder for span_train --init")
    args = parser.parse_args(argv)

    from transformers import AutoTokenizer

    from indexing.vectors.onnx_embedding import bundled_model_path

    recovered = recover(args.export)
    recovered.model.save_pretrained(args.out)
    AutoTokenizer.from_pretrained(bundled_model_path()).save_pretrained(args.out)
    print(f"{args.out}: {len(recovered.from_export)} weights from the export, "
          f"{len(recovered.kept_exact)} kept as the bi-encoder's exact float")


if __name__ == "__main__":
    main()
