"""Training Docent's built-in models and fitting its rules (dev-time only: the product never imports
this package).

- The span reader (issue 34), in three steps, each a script that can be stopped and run again:
  `training.span_data` writes the examples, `training.span_train` fine-tunes MiniLM-L6 on them with
  checkpoints, `training.span_export` writes the int8 ONNX file; `training.span_eval` scores it.
- The shipped reader (`indexing/models/reader-int8.onnx`): `training.reader_data` (and
  `reader_data_squad2`) write its pairs, `training.reader_train` fine-tunes, `training.reader_export`
  exports; `training.reader_eval` collects and scores, `training.reader_candidates` reports every
  candidate beside today's gate, leave-one-corpus-out.
- What they are scored on: `training.question_sets` (the labelled sets, casual rewrites, foreign
  questions), `training.corpora` (where the corpora are); candidate gate signals
  (`training.gate_features`, `training.gate_focus`) and the help-channel question rules scored on
  labelled messages (`training.question_detection`).
"""

import os

# Scripts here load models from local folders only, quietly (as the benchmarks do).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
