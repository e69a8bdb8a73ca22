"""Training Docent's built-in models (dev-time only: the product never imports this package).

The span reader (issue 34) is built in three steps, each a script that can be stopped and run again:
`training.span_data` writes the examples, `training.span_train` fine-tunes MiniLM-L6 on them with
checkpoints, `training.span_export` writes the int8 ONNX file the product ships.
"""
