"""Reading a file that may be gzip-compressed, with a cap on the decompressed size.

A few hundred kilobytes of gzip can expand to gigabytes (a 600 KB ``.json.gz`` of repeated
events is 1.35 GB once parsed), so a compressed input whose gzip trailer states more than
:data:`MAX_DECOMPRESSED_BYTES` is refused at once, and any other is decompressed in pieces and
refused as soon as it passes the cap, before it is parsed. An uncompressed file is
held to the same cap, so the bound does not depend on how the file was stored.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

from trainscale.errors import InputFileError

__all__ = ["MAX_DECOMPRESSED_BYTES", "read_maybe_gzip"]

#: Most bytes a trace may hold once decompressed: 256 MiB (the shipped and HTA sample traces
#: are under 10 MB; a profiler run of a few steps stays far below it).
MAX_DECOMPRESSED_BYTES = 256 * 2**20
_PIECE = 2**20


def read_maybe_gzip(
    path: Path, *, limit: int = MAX_DECOMPRESSED_BYTES, what: str = "file"
) -> bytes:
    """The bytes of ``path``, gunzipped when they start with the gzip magic number.

    Raises
    ------
    InputFileError
        The file cannot be read, is truncated or corrupt gzip, or holds more than ``limit``
        bytes (decompressed), naming the file and the limit.
    """
    try:
        size = os.stat(path).st_size
        with open(path, "rb") as handle:
            magic = handle.read(2)
            if magic != b"\x1f\x8b":
                if size > limit:
                    raise _too_large(path, limit, what)
                return magic + handle.read(limit)
            # gzip's trailer states the (last member's) size mod 2**32 (RFC 1952, ISIZE): a
            # file that says it is too large is refused before anything is decompressed; one
            # that lies is still stopped by the cap while decompressing
            if size >= 18:
                handle.seek(size - 4)
                if int.from_bytes(handle.read(4), "little") > limit:
                    raise _too_large(path, limit, what)
            handle.seek(0)
            return _gunzip(path, handle, limit, what)
    except OSError as error:
        raise InputFileError(path, f"cannot read the {what}: {error.strerror or error}") from None


def _too_large(path: Path, limit: int, what: str) -> InputFileError:
    return InputFileError(
        path,
        f"the {what} holds more than {limit / 2**20:.0f} MiB once decompressed; "
        "record fewer steps (docs/bad-input.md lists the limits)",
    )


def _gunzip(path: Path, handle: object, limit: int, what: str) -> bytearray:
    """Decompress every gzip member of ``handle`` in pieces, stopping past ``limit``."""
    out = bytearray()
    decompressor = zlib.decompressobj(wbits=31)
    pending = b""
    while True:
        if decompressor.eof:  # one gzip member done: another may follow
            pending = decompressor.unused_data or handle.read(_PIECE)  # type: ignore[attr-defined]
            if not pending:
                return out  # not copied: the cap bounds the memory once
            decompressor = zlib.decompressobj(wbits=31)
        elif not pending:
            pending = handle.read(_PIECE)  # type: ignore[attr-defined]
            if not pending:
                raise InputFileError(path, "truncated or corrupt gzip data (the stream ends early)")
        try:
            out += decompressor.decompress(pending, limit + 1 - len(out))
        except zlib.error as error:
            raise InputFileError(path, f"truncated or corrupt gzip data ({error})") from None
        if len(out) > limit:
            raise _too_large(path, limit, what)
        pending = decompressor.unconsumed_tail
