"""How far the ONNX export cache (`KB_MODEL_CACHE`) is trusted: what is loaded from it must be the
file this user's Docent exported, whole.

Two ways it could be otherwise, both seen: a truncated `model.onnx` (a disk that filled up, a
copy cut short) loaded as if whole — every page of a sync failed with `INVALID_PROTOBUF` — and a
`model.onnx` another user planted in a cache folder anyone could write, loaded as is (a model is
code-like: it decides every vector). So:

- each export has its SHA-256 recorded beside it when it is made (`model.onnx.sha256`); a file
  whose hash differs, or that has none recorded (an older Docent's export, a copy), is not used;
- as ssh does for its keys, a cache folder or export that another user owns, or that group or
  others may write, is not used either; folders Docent creates are private (0700) and its
  exports 0644. Root's files pass (an image's read-only cache is root's), as they do for ssh.

Functions here say *why* a file or folder cannot be trusted (None: it can); `onnx_embedding`
decides whether to export again or to stop with one line.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from pathlib import Path

PRIVATE = 0o700  # the mode of every folder Docent creates in the cache
EXPORT_MODE = 0o644  # an export: read by anyone (an image's runtime user), written by its owner only
SHARED_FOLDER = 0o755  # folders `python -m indexing.vectors.onnx_embedding` makes for an image's other users

_verified: dict[Path, tuple[int, int, int]] = {}  # export → (inode, size, mtime) when its hash last matched


def digest_path(export: Path) -> Path:
    return export.with_name(export.name + ".sha256")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def make_private(folder: Path) -> None:
    """Create `folder` (and missing parents) as a private folder; an existing one is left as it is
    (`untrusted` judges it)."""
    folder.mkdir(mode=PRIVATE, parents=True, exist_ok=True)


def untrusted(path: Path) -> str | None:
    """Why `path` (a cache folder or file) could hold what another user wrote, or None: it is
    owned by someone other than this user or root, or group or others may write it. A symbolic
    link is judged by what it points to (`stat`), as the file loaded is that one."""
    info = path.stat()
    if info.st_uid not in (os.getuid(), 0):
        return f"it belongs to another user (uid {info.st_uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"other users may write it (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def record(written: Path, export: Path) -> None:
    """Make `written` (an export written aside, not yet renamed to `export`) 0644 and record its
    hash beside `export`. Called before the rename: a process that finds the export in place finds
    its hash too (one that finds a new hash beside an old file takes it for damaged, and waits on
    the export lock to look again)."""
    os.chmod(written, EXPORT_MODE)
    recorded = digest_path(export)
    aside = recorded.with_name(f".{recorded.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    aside.write_text(sha256(written) + "\n")
    os.chmod(aside, EXPORT_MODE)
    os.replace(aside, recorded)


def damaged(export: Path) -> str | None:
    """Why the export at `export` (which exists) must not be loaded, or None: it is not private
    (`untrusted`), no hash was recorded beside it, or its hash is not the recorded one. The hash
    (~0.1 s for the 90 MB float export) is computed once per process while the file is unchanged."""
    for path in (export, digest_path(export)):
        try:
            problem = untrusted(path)
        except FileNotFoundError:
            return "no checksum was recorded beside it (an export by an older Docent, or a copy)"
        if problem:
            return f"{path.name}: {problem}"
    info = export.stat()
    seen = (info.st_ino, info.st_size, info.st_mtime_ns)
    if _verified.get(export) == seen:
        return None
    recorded = digest_path(export).read_text().strip()
    if sha256(export) != recorded:
        return f"its SHA-256 is not the one recorded when it was exported ({info.st_size:,} bytes): the file is damaged"
    _verified[export] = seen
    return None
