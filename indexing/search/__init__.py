"""From a question to ranked, gated sections: typo repair and synonyms, the two legs fused,
the gate's three outcomes, and the rerank stage with its backends (the built-in reader, the span
reader, a CrossEncoder folder, a rerank service)."""
