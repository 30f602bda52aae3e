"""Known deviations of a backend: failures its author knows of, each with a reason.

Entries come from arraygrad's own ``deviations/<backend>.txt``, from the backend's plugin
(``BackendSpec.deviations``) and from ``--deviations FILE``. A line is a case id pattern (``*``
matches anything; everything else, brackets included, is literal; ``case-id@masked`` for a
plugin's semantic inputs), optionally followed by a dtype and a check, under a ``# reason``
comment (a reason may span consecutive comment lines, which are joined; a blank line or an entry
ends it)::

    # ndonnx has no complex dtypes
    *[complex*
    # its own hypot raises NotImplementedError for float32
    hypot[*] float32 forward
"""

from __future__ import annotations

import dataclasses
import re
from importlib import resources

from arraygrad.hookspecs import DTYPES

from .cases import CASES, CHECKS


@dataclasses.dataclass(frozen=True)
class Deviation:
    """One entry: which failures it covers, why, and where it was written."""

    pattern: str
    dtype: str | None
    check: str | None
    reason: str
    source: str

    def matches(self, case_id, dtype=None, check=None) -> bool:
        return (re.fullmatch(".*".join(map(re.escape, self.pattern.split("*"))), case_id)
                is not None and self.dtype in (None, dtype) and self.check in (None, check))

    def __str__(self):
        return " ".join(filter(None, (self.pattern, self.dtype, self.check)))


def parse(text: str, source: str) -> list[Deviation]:
    """The entries of a deviations text; a token that is neither a dtype nor a check, or an
    entry without a reason, is a ValueError naming the line."""
    entries, reason, comment = [], "", False  # comment: the line before was a comment
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line.startswith("#"):  # consecutive comment lines are one reason, joined
            words = line.lstrip("# ")
            reason = " ".join(filter(None, (reason if comment else "", words)))
            comment = True
            continue
        comment = False
        if not line:
            continue
        pattern, *options = line.split()
        dtype = next((o for o in options if o in DTYPES), None)
        check = next((o for o in options if o in CHECKS or o == "run"), None)
        unknown = [o for o in options if o not in (dtype, check)]
        if unknown or not reason:
            raise ValueError(
                f"{source}, line {number}: {line!r}: " + (
                    f"{unknown[0]!r} is neither a dtype nor a check (checks: "
                    f"{', '.join(CHECKS)})" if unknown else "no '# reason' comment above it"))
        entries.append(Deviation(pattern, dtype, check, reason, source))
    return entries


def for_backend(backend, files=()) -> list[Deviation]:
    """Every entry for ``backend``: arraygrad's file, its plugin's, then ``files``. An entry
    matching no case at all (a typo, a renamed case) is a ValueError."""
    entries = []
    try:
        own = resources.files(__package__).joinpath("deviations", f"{backend.name}.txt")
        entries += parse(own.read_text(), f"arraygrad's deviations/{backend.name}.txt")
    except (FileNotFoundError, OSError):
        pass
    shipped = getattr(backend.spec, "deviations", None)
    if shipped is not None:
        entries += parse(_text(shipped, backend.name), f"the {backend.name} plugin's deviations")
    for path in files:
        with open(path) as stream:
            entries += parse(stream.read(), path)
    ids = [case.id for case in CASES]
    ids += [f"{i}@{kind}" for kind in backend.spec.semantic_inputs for i in ids]
    unknown = [e for e in entries if not any(e.matches(i, e.dtype, e.check) for i in ids)]
    if unknown:
        raise ValueError("deviations matching no case (a typo? case ids are listed by "
                         "`arraygrad conformance --list`): " + "; ".join(
                             f"{e} (in {e.source})" for e in unknown))
    return entries


def _text(shipped, backend="") -> str:
    """A plugin's deviations: ``"package:file.txt"`` (a file inside its package), or a
    function returning the text. One that cannot be read is a ValueError naming the plugin and
    the file."""
    where = f"the {backend} plugin's deviations ({shipped!r})"
    if callable(shipped):
        try:
            return shipped()
        except Exception as exc:
            raise ValueError(f"{where}: the function raised {type(exc).__name__}: {exc}") from exc
    package, _, name = shipped.partition(":")
    try:
        return resources.files(package).joinpath(name).read_text()
    except (ImportError, OSError, TypeError) as exc:
        missing = isinstance(exc, (FileNotFoundError, IsADirectoryError))
        raise ValueError(
            f"{where}: " + (f"package {package!r} has no file {name!r} (is it shipped as "
                            "package data? setuptools: [tool.setuptools.package-data])"
                            if missing else f"cannot be read: {type(exc).__name__}: {exc}")
        ) from exc


def apply(checks: dict, case_id: str, dtype: str, entries) -> dict:
    """``checks`` with each failure an entry covers turned into a ``deviation``."""
    marked = {}
    for check, (status, detail, *errors) in checks.items():
        entry = next((e for e in entries if e.matches(case_id, dtype, check)), None)
        if status == "fail" and entry is not None:
            status, detail = "deviation", f"known deviation: {entry.reason}; {detail}"
        marked[check] = (status, detail, *errors)
    return marked


def stale(results, entries_by_backend) -> list[tuple[str, Deviation]]:
    """Entries that matched case runs of this run, none of which deviated: the failure they
    describe is gone, and the line can go."""
    found = []
    for backend, entries in entries_by_backend.items():
        runs = [r for r in results if r.backend == backend]
        for entry in entries:
            matched = [r for r in runs if entry.matches(r.id, r.dtype, entry.check)]
            if matched and not any(
                    entry.matches(r.id, r.dtype, check) and status == "deviation"
                    for r in matched for check, (status, *_) in r.checks.items()):
                found.append((backend, entry))
    return found
