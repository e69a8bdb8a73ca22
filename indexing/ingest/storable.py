"""Storable text: a document without the characters Postgres refuses (NUL, lone surrogates).

A file name or an XML page can carry them; the text column cannot. NUL is dropped, a lone
surrogate becomes U+FFFD, and a document that needs none of this is returned as it is.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from connectors.document import SURROGATE, SourceDocument

_NUL_OR_SURROGATE = re.compile(f"\x00|{SURROGATE.pattern}")


def storable(doc: SourceDocument) -> SourceDocument:
    """The document as it can be stored: no NUL characters or lone surrogates in any text (Postgres
    refuses them; a file name or an XML page can carry them). A document that needs none of this is
    returned as it is."""
    changed: dict[str, Any] = {}
    for name in ("source", "path", "title", "url", "access", "error"):
        value = getattr(doc, name)
        if value and _NUL_OR_SURROGATE.search(value):
            changed[name] = _clean_text(value)
    if doc.text and _NUL_OR_SURROGATE.search(doc.text):
        changed["text"] = _clean_text(doc.text)
    metadata = _clean_value(doc.metadata)
    if metadata != doc.metadata:
        changed["metadata"] = metadata
    return dataclasses.replace(doc, **changed) if changed else doc


def _clean_text(text: str) -> str:
    return _NUL_OR_SURROGATE.sub(lambda m: "" if m.group(0) == "\x00" else "\ufffd", text)


def _clean_value(value: object) -> object:
    if isinstance(value, str):
        return _clean_text(value) if _NUL_OR_SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {_clean_value(k): _clean_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean_value(v) for v in value]
    return value
