"""`SourcesError`: what every check of the sources file raises, its message saying where (the file,
the table, the key) and what was expected, so Docent stops at start with one line; and
`checked_table`, the first check of every table: that it is one, and of the shape its pydantic
model describes (no unknown key, no value of the wrong type)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

TableT = TypeVar("TableT", bound=BaseModel)


class SourcesError(ValueError):
    """The sources file is missing, unreadable or wrong; the message says where."""


def checked_table(model: type[TableT], table: object, where: str, expected: str,
                  must_be: Callable[[str, Any], str]) -> TableT:
    """`table` read as `model` (strict, unknown keys forbidden). Not a table: an error saying it is
    `expected`. Otherwise the first thing pydantic finds wrong, in one line: the keys the model does
    not take (and those it does), else the first key of the wrong type and what it `must_be(key, value)`."""
    if not isinstance(table, dict):
        raise SourcesError(f"{where}: expected {expected}")
    try:
        return model.model_validate(table)
    except ValidationError as exc:
        errors = exc.errors()
    extra = sorted(str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden")
    if extra:
        raise SourcesError(f"{where}: unknown setting(s) {', '.join(extra)} (expected {', '.join(model.model_fields)})")
    key = str(errors[0]["loc"][0])
    raise SourcesError(f"{where}: {key} must be {must_be(key, errors[0]['input'])}")
