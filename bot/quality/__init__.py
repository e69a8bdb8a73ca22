"""Measuring answers on labelled questions (`kb eval`) and fitting the gate's thresholds to them
(`kb eval --calibrate`)."""
