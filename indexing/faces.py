"""A package's public face: the names it offers other packages, each loaded on first use.

A room's `__init__` lists its face in `__all__` and says where each name lives in an
`if TYPE_CHECKING:` block of ordinary imports — read by type checkers and readers, and here, the
first time a name is asked for (a module-level `__getattr__`, PEP 562). So importing a package,
or any module in it, loads none of its other modules: `kb --help` stays instant, and no package
`__init__` pulls in sqlalchemy, numpy or a model.

    if TYPE_CHECKING:
        from indexing.values.hits import Hit
        from indexing.keyword import bm25      # a module offered as a namespace

    __all__ = ["Hit", "bm25"]


    def __getattr__(name: str) -> object:
        return load(__name__, name)
"""

from __future__ import annotations

import ast
import importlib
import sys
from functools import cache
from pathlib import Path


@cache
def homes(package: str) -> dict[str, tuple[str, str | None]]:
    """Each name of `package`'s face → (the module it comes from, its name there; None: the module
    itself), read from the `if TYPE_CHECKING:` imports of the package's `__init__`."""
    source = Path(sys.modules[package].__file__ or "").read_text(encoding="utf-8")
    found: dict[str, tuple[str, str | None]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.module and statement.level == 0:
                for alias in statement.names:
                    if statement.module == package:  # `from package import module`
                        found[alias.asname or alias.name] = (f"{package}.{alias.name}", None)
                    else:
                        found[alias.asname or alias.name] = (statement.module, alias.name)
    return found


def load(package: str, name: str) -> object:
    """`package`'s public `name`, imported from its module now and kept on the package (the next
    use does not come here). An AttributeError for any name not in the face's `__all__`."""
    face = sys.modules[package]
    if name not in getattr(face, "__all__", ()) or name not in homes(package):
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    module_name, attribute = homes(package)[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    setattr(face, name, value)
    return value
