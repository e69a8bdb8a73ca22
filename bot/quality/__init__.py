"""Measuring answers on labelled questions (`kb eval`) and fitting the gate's thresholds to them
(`kb eval --calibrate`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexing.faces import load

if TYPE_CHECKING:  # the face: where each public name lives, loaded on first use (indexing.faces)
    from bot.quality.evaluation import calibrate, load_questions, naive_baseline, run_eval
    from bot.quality.gate_fit import fit, fit_floor, fit_rerank

__all__ = ["calibrate", "fit", "fit_floor", "fit_rerank", "load_questions", "naive_baseline", "run_eval"]


def __getattr__(name: str) -> object:
    return load(__name__, name)
