"""Which analyser a saved keyword base was tokenised with.

A saved base (`indexing.keyword.keyword_versions`) holds term frequencies, not text. If what a text
tokenises to changes (analyzer, stop words, stemmer, token pattern, what `bm25.chunk_search_text`
puts in) or how a base is laid out (`KeywordIndex.to_bytes`), bump `TERMS_VERSION`: bases of
another version are then ignored, the next process to search builds its index from the chunks'
text, and the next sync saves a base of the new version.
"""

from __future__ import annotations

TERMS_VERSION = "4"  # 4: rows saved as columns; 3: CJK characters as well as bigrams; 2: term frequencies in saved bases
