"""`training.span_recover`: the shipped span reader's float weights come back out of its int8 export,
so a run can go on from what is committed (a run's own checkpoints live on one machine and were
once lost with it). Checked by the strictest test there is: exported again the way
`training.span_export` exports, the recovered weights give the shipped file's int8 weights exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from indexing.search.span_reader import MODEL

pytestmark = pytest.mark.slow  # a torch model, and one ONNX export


@pytest.fixture(scope="module")
def recovered():
    from training.span_recover import recover

    return recover(MODEL)


def _initializers(path):
    import onnx
    from onnx import numpy_helper

    return {init.name: numpy_helper.to_array(init) for init in onnx.load(str(path)).graph.initializer}


def test_exported_again_the_recovered_reader_is_the_shipped_file_weight_for_weight(recovered, tmp_path):
    from training.span_export import export

    recovered.model.save_pretrained(tmp_path / "model")
    export(tmp_path / "model", tmp_path / "again.onnx")
    shipped, again = _initializers(MODEL), _initializers(tmp_path / "again.onnx")
    assert shipped.keys() == again.keys()
    different = [name for name in shipped if not np.array_equal(shipped[name], again[name])]
    assert different == []


def test_weights_training_never_moved_are_the_bi_encoders_exact_floats(recovered):
    import torch
    from transformers import AutoModelForQuestionAnswering

    from indexing.vectors.onnx_embedding import bundled_model_path

    bundled = AutoModelForQuestionAnswering.from_pretrained(bundled_model_path()).state_dict()
    state = recovered.model.state_dict()
    assert "bert.embeddings.word_embeddings.weight" in recovered.kept_exact
    assert torch.equal(state["bert.embeddings.word_embeddings.weight"], bundled["bert.embeddings.word_embeddings.weight"])
    # a trained layer comes from the export: it is not the bi-encoder's
    trained = "bert.encoder.layer.5.attention.self.query.weight"
    assert trained in recovered.from_export
    assert not torch.allclose(state[trained], bundled[trained], atol=1e-3)


def test_training_starts_from_the_export_itself(recovered, tmp_path):
    """`span_train --init FILE.onnx` with no step to take writes the recovered reader as its final model."""
    import torch
    from transformers import AutoModelForQuestionAnswering

    from training.span_train import main

    data = tmp_path / "data"
    data.mkdir()
    example = {"question": "how many days of annual leave do I get?",
               "context": "Full-time employees get 25 days of paid annual leave per calendar year.",
               "answer_text": "25 days", "answer_start": 24, "id": "leave", "kind": "squad1", "article": "Leave"}
    (data / "train.jsonl").write_text(json.dumps(example) + "\n")
    main(["--data", str(data), "--out", str(tmp_path / "run"), "--steps", "0", "--init", str(MODEL), "--threads", "1"])
    final = AutoModelForQuestionAnswering.from_pretrained(tmp_path / "run" / "final").state_dict()
    expected = recovered.model.state_dict()
    assert all(torch.equal(final[name], expected[name]) for name in expected)
