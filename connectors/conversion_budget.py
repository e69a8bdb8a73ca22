"""Run one file conversion in a child process that cannot take more than its time and memory.

A converter (pypdf, lxml) is a parser fed by whoever can attach a file to a wiki page, and a small
file can ask it for minutes and gigabytes (docs/benchmarks.md, *Hostile attachments*). Limits
checked in Python catch what was foreseen; the kernel's catch the rest. So each conversion runs
in a process of its own, forked from a small server process that has the converters imported
(multiprocessing's "forkserver": a fork of a single-threaded process, never of the bot or of a
sync with its threads and database connections), under

- `RLIMIT_AS`: its address space may grow by `memory_mb` at most; past it allocations fail and
  the child reports a `MemoryError` (or dies: that reads the same);
- a wall-clock deadline of `seconds`, after which the parent kills it, and `RLIMIT_CPU` a little
  above it, so that a child whose parent died still stops.

A fork costs milliseconds (the benchmark measures it per file), against ~0.4 s for a fresh
interpreter importing the converters; a process per file also means nothing one file did
(memory fragmentation, a wedged parser) is left for the next. The fork server starts with the
first conversion of a process and holds the program's main script too (`kb`), which
multiprocessing would otherwise import in each child — so a program calling `convert` keeps its
work under `if __name__ == "__main__":`, as multiprocessing asks. What the function raises in the
child (its own refusals) is raised again here; a budget exceeded is `OverBudget` with the reason.
"""

from __future__ import annotations

import multiprocessing
import resource
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from connectors.sizes import MiB, size_text

T = TypeVar("T")

# Imported once by the fork server, so that each fork starts with them loaded.
CONVERTERS = ["connectors.attachments", "connectors.docx_text", "pypdf", "pptx", "lxml.etree"]
_context_lock = threading.Lock()
_context: Any = None


@dataclass(frozen=True)
class Budget:
    seconds: float = 60.0  # wall clock, per file
    memory_mb: int = 1024  # MiB of address space the conversion may add to the fork server's


class OverBudget(Exception):
    """The conversion took more than its time or memory and was stopped."""


def run_within(budget: Budget, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a child process under `budget`: its result, or what it raised, or `OverBudget`.

    `fn` and its arguments must be picklable (a module-level function; bytes)."""
    receive, send = multiprocessing.Pipe(duplex=False)
    child = _forkserver().Process(target=_child, args=(send, budget, fn, args), daemon=True)
    child.start()
    send.close()  # the child holds its own end: EOF here means the child is gone
    try:
        if not receive.poll(budget.seconds):
            raise OverBudget(f"took more than {budget.seconds:g} s")
        try:
            kind, value = receive.recv()
        except EOFError:  # died without a word: killed by a limit or crashed in C code
            child.join(5)
            raise OverBudget(_death(child.exitcode, budget)) from None
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    if kind == "ok":
        return value  # type: ignore[no-any-return]
    if kind == "memory":
        raise OverBudget(f"needed more than {size_text(budget.memory_mb * MiB)} of memory")
    raise value


def _forkserver() -> Any:
    """multiprocessing's forkserver context, its server preloaded with the converters (started on first use)."""
    global _context
    with _context_lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            # "__main__": the program's script (`kb`), which each child would import again otherwise
            # (a `python -m` module is imported again by each child: `-m bot.cli` ~0.12 s).
            context.set_forkserver_preload(["__main__", *CONVERTERS])
            _context = context
        return _context


def _child(send: Connection, budget: Budget, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """In the child: limits first, then the work; one message back, always picklable."""
    _limit_memory(budget.memory_mb)
    cpu = int(budget.seconds) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 3))  # SIGXCPU, then SIGKILL: for an orphan
    try:
        message: tuple[str, Any] = ("ok", fn(*args))
    except MemoryError:
        message = ("memory", None)
    except Exception as exc:
        if "Memory allocation failed" in str(exc):  # libxml2 (lxml) says it this way
            message = ("memory", None)
        else:
            message = ("raised", exc if _picklable(exc) else RuntimeError(f"{type(exc).__name__}: {exc}"))
    try:
        send.send(message)
    except MemoryError:
        send.send(("memory", None))
    send.close()


def _limit_memory(extra_mb: int) -> None:
    """Address space: what the process has now (the interpreter and the converters) plus `extra_mb`."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[0])
    limit = pages * resource.getpagesize() + extra_mb * MiB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _death(exitcode: int | None, budget: Budget) -> str:
    if exitcode == -signal.SIGXCPU:
        return f"took more than {budget.seconds:g} s of CPU"
    how = f"signal {signal.Signals(-exitcode).name}" if exitcode and exitcode < 0 else f"exit code {exitcode}"
    return f"the converter died ({how}), over the {size_text(budget.memory_mb * MiB)} memory budget or broken by the file"


def _picklable(exc: Exception) -> bool:
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return True
    except Exception:
        return False
