"""Turning text into vectors: the bundled model under torch or ONNX Runtime, an OpenAI-compatible
embedding service, and the sentence vectors the answer's lead is chosen with."""
