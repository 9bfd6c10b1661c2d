"""results.json's bytes parsed and its cases validated in one pass (pydantic-core, strict), for
``store.load_run``.

The document's top level comes back as a dict whose ``cases`` are ``CaseResult`` models and whose other
keys hold the JSON values as they are; the store checks it exactly as it checks a document that
``json.loads`` read (``store.record_from_data``: the header, the metadata's types, the record's model, the
checks across fields), so a run reads into the same record either way. What this pass does not read (bytes
that are not UTF-8 JSON, a top level that is not an object, cases that do not validate, a schema version
before 2, whose cases are migrated as JSON) is ``None``: the store reads it the general way, which says
what is wrong in its own words.

The cyclic garbage collector is paused while a run is read (``paused_collector``): a record of a million
samples is millions of objects, all alive to the end, and every collection the reading set off would walk
them. A command that keeps its runs to its end moves them out of the collector's view once they are read
(``kept_to_the_end``).
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Iterator
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from launchbench.results.schema import SCHEMA_VERSION, CaseResult

FIRST_DIRECT_VERSION = 2  # version 1 files hold pooled samples: their cases are migrated as JSON first


class _Document(TypedDict, total=False):
    """The top level of results.json: its cases as models, every other key as the JSON gives it."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]
    cases: list[CaseResult]


@functools.cache
def _adapter() -> TypeAdapter[_Document]:
    return TypeAdapter(_Document)


def parsed_document(raw: bytes) -> dict[str, Any] | None:
    """The document in ``raw`` with its cases validated, or None where the store reads it the general way."""
    try:
        document = dict(_adapter().validate_json(raw, strict=True))
    except (ValidationError, ValueError):
        return None
    version = document.get("schema_version")
    if type(version) is not int or not FIRST_DIRECT_VERSION <= version <= SCHEMA_VERSION:
        return None
    return document


@contextlib.contextmanager
def paused_collector() -> Iterator[None]:
    """The cyclic garbage collector off inside the block (and back as it was after it): reading builds
    millions of objects and no reference cycle."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def kept_to_the_end() -> Iterator[None]:
    """``paused_collector``, and every object alive at the block's end moved to the collector's
    permanent generation (``gc.freeze``) before it is back, where no later collection walks it: for a
    command that reads its runs in the block and holds them to its end. Reference counting still frees
    what is dropped."""
    with paused_collector():
        yield
        gc.freeze()
