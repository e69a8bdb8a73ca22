"""`[synonyms]`: the words people ask with → the words the wiki uses, checked for shape when the
sources file is read.

    [synonyms]
    vacation = ["annual leave", "paid time off", "PTO"]
    "年假" = ["annual leave"]          # keys with spaces or CJK characters in quotes
"""

from __future__ import annotations

from pydantic import ConfigDict, TypeAdapter, ValidationError

from sources.errors import SourcesError

MAX_SYNONYMS = 20  # phrases per word: a longer list is a thesaurus pasted in, and drowns the question
MAX_PHRASE_CHARS = 100
_SYNONYM_LIST = TypeAdapter(list[str], config=ConfigDict(strict=True))  # a [synonyms] value: text in a list


def parse_synonyms(table: object, where: str) -> dict[str, list[str]]:
    """The `[synonyms]` table: each word or phrase people ask with → the words the wiki uses
    (`vacation = ["annual leave", "paid time off", "PTO"]`), checked for shape here; what the
    keyword leg makes of them (stems, CJK, entries that are one word twice) is checked by
    `indexing.keyword.synonyms.Synonyms.from_table`, at start too."""
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise SourcesError(f"{where}: expected a table of word = [\"synonym\", …], e.g. vacation = [\"annual leave\"]")
    entries: dict[str, list[str]] = {}
    for key, phrases in table.items():
        here = f"{where} {key!r}"
        if not isinstance(key, str) or not key.strip():
            raise SourcesError(f"{where}: a word must be non-empty text")
        if isinstance(phrases, str):
            raise SourcesError(f"{here}: must be a list, e.g. {key} = [\"{phrases}\"] (a single synonym too goes in [ ])")
        try:
            phrases = _SYNONYM_LIST.validate_python(phrases)
        except ValidationError as exc:
            loc = exc.errors()[0]["loc"]
            if not loc:
                raise SourcesError(f"{here}: must be a non-empty list of words or phrases in quotes") from None
            raise SourcesError(f"{here}: {phrases[loc[0]]!r} is not a word or phrase in quotes") from None
        if not phrases:
            raise SourcesError(f"{here}: must be a non-empty list of words or phrases in quotes")
        if len(phrases) > MAX_SYNONYMS:
            raise SourcesError(f"{here}: {len(phrases)} synonyms; at most {MAX_SYNONYMS} (each one dilutes the question)")
        for phrase in phrases:
            if not phrase.strip():
                raise SourcesError(f"{here}: {phrase!r} is not a word or phrase in quotes")
            if len(phrase) > MAX_PHRASE_CHARS:
                raise SourcesError(f"{here}: a synonym longer than {MAX_PHRASE_CHARS} characters ({phrase[:40]!r}…)")
        entries[" ".join(key.split())] = [" ".join(p.split()) for p in phrases]
    return entries
