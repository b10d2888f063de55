"""Reading the files of a zip archive defensively, for a batch (extraction/intake/batches.py).

An archive is a request to decompress, so it is bounded before anything is decompressed:

* the archive as a whole, from what its directory declares (:class:`ArchiveRefused`, the
  whole batch refused): its directory's entries and bytes, read from the end record before
  ``zipfile`` parses the directory into memory; its files (``BATCH_MAX_FILES``); their total
  uncompressed size (``BATCH_ARCHIVE_MAX_UNCOMPRESSED_BYTES``); at least one file;
* each file, from its directory entry (a :class:`Refusal` for that file only, the others go
  on): encrypted, not a regular file (a symlink), named as an archive, larger than a document
  may be (``DOCUMENT_MAX_BYTES``), compressed beyond ``BATCH_ARCHIVE_MAX_RATIO``;
* each file as it is read: at most its declared size is decompressed (``zipfile`` stops there
  and checks the CRC), into memory, one file at a time; an archive inside (by its magic
  bytes) is refused, never opened.

Entry names are labels shown back to the client, never paths: nothing is written under them.
Directory entries and macOS resource forks (``__MACOSX/``) are skipped, not files.
"""

from __future__ import annotations

import io
import lzma
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from django.conf import settings

from extraction.intake.batches import FileRefused, IncomingFile, Refusal, document_too_large

# The directory may list directories besides files: at most this many entries per file allowed.
ENTRIES_PER_FILE = 2
# A directory entry is 46 bytes, its name, extra fields and comment; past this much directory
# per entry allowed, the archive is refused before zipfile reads its directory into memory.
DIRECTORY_BYTES_PER_ENTRY = 1024

_END = b"PK\x05\x06"
_END_SIZE = 22
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_LOCATOR_SIZE = 20
_ZIP64_END = b"PK\x06\x06"
_MAX_COMMENT = 0xFFFF

# Archive formats by their first bytes (tar by "ustar" at offset 257). Bytes of one of these
# inside the archive are not opened: the bounds above hold for one level only.
_ARCHIVE_MAGIC = (
    b"PK\x03\x04",
    b"PK\x05\x06",
    b"PK\x07\x08",
    b"Rar!\x1a\x07",
    b"7z\xbc\xaf\x27\x1c",
    b"\x1f\x8b",
    b"\xfd7zXZ\x00",
    b"\x28\xb5\x2f\xfd",
    b"MSCF",
)
_ARCHIVE_SUFFIXES = (
    ".zip",
    ".jar",
    ".rar",
    ".7z",
    ".gz",
    ".tgz",
    ".tar",
    ".bz2",
    ".tbz2",
    ".xz",
    ".txz",
    ".zst",
    ".cab",
    ".lz",
    ".lzma",
)


class ArchiveRefused(Exception):
    """The archive as a whole is refused; nothing of it is accepted."""

    def __init__(self, slug: str, title: str, status: int, detail: str) -> None:
        super().__init__(detail)
        self.slug, self.title, self.status, self.detail = slug, title, status, detail


def _unreadable(detail: str) -> ArchiveRefused:
    return ArchiveRefused("archive-unreadable", "Archive unreadable", 422, detail)


def _too_many_files(count: int, limit: int, what: str) -> ArchiveRefused:
    return ArchiveRefused(
        "batch-too-many-files", "Too many files", 413, f"The archive {what} {count}; a batch may have at most {limit}."
    )


def _too_large(detail: str) -> ArchiveRefused:
    return ArchiveRefused("archive-too-large", "Archive too large", 413, detail)


def _entry_refusal(slug: str, title: str, detail: str) -> Refusal:
    return Refusal(slug, title, 422, detail)


@contextmanager
def archive_files(archive: IO[bytes]) -> Iterator[list[IncomingFile]]:
    """The archive's files in directory order, each with its refusal or a reader of its bytes,
    valid inside the ``with`` block. Raises :class:`ArchiveRefused`.

    1. Read the directory's entry count and size from the end record (zip64 too); refuse a
       directory past its bounds before zipfile parses it.
    2. Open it with zipfile; keep the files (not directories, not ``__MACOSX/``); refuse an
       archive with none, with too many, or whose declared sizes add up past the bound.
    3. Judge each file by its directory entry; read the others lazily (:func:`_read_entry`).
    """
    max_files = settings.BATCH_MAX_FILES
    entries, directory_bytes = _directory_extent(archive)
    if entries > max_files * ENTRIES_PER_FILE:
        raise _too_many_files(entries, max_files, "lists entries:")
    if directory_bytes > max_files * ENTRIES_PER_FILE * DIRECTORY_BYTES_PER_ENTRY:
        raise _too_large(f"The archive's directory is {directory_bytes} bytes, more than its files can need.")
    archive.seek(0)
    try:
        opened = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, struct.error) as exc:
        raise _unreadable(f"Not a readable zip archive: {exc}") from exc
    with opened:
        infos = [info for info in opened.infolist() if not info.is_dir() and not info.filename.startswith("__MACOSX/")]
        if not infos:
            raise ArchiveRefused("archive-empty", "Archive empty", 422, "The archive holds no files.")
        if len(infos) > max_files:
            raise _too_many_files(len(infos), max_files, "holds files:")
        declared = sum(info.file_size for info in infos)
        limit = settings.BATCH_ARCHIVE_MAX_UNCOMPRESSED_BYTES
        if declared > limit:
            raise _too_large(f"The archive's files add up to {declared} bytes uncompressed; at most {limit}.")
        yield [_incoming(opened, info) for info in infos]


def _directory_extent(archive: IO[bytes]) -> tuple[int, int]:
    """(entries, bytes) of the central directory, as the end record (or its zip64 form) says."""
    archive.seek(0, io.SEEK_END)
    size = archive.tell()
    tail_start = max(0, size - _END_SIZE - _MAX_COMMENT)
    archive.seek(tail_start)
    tail = archive.read()
    at = tail.rfind(_END)
    if at < 0 or len(tail) - at < _END_SIZE:
        raise _unreadable("Not a zip archive: it has no end of central directory record.")
    entries, directory_bytes, offset = struct.unpack("<HLL", tail[at + 10 : at + 20])
    if entries != 0xFFFF and directory_bytes != 0xFFFFFFFF and offset != 0xFFFFFFFF:
        return entries, directory_bytes
    locator_at = tail_start + at - _ZIP64_LOCATOR_SIZE
    if locator_at < 0:
        raise _unreadable("The zip64 end record is missing.")
    archive.seek(locator_at)
    locator = archive.read(_ZIP64_LOCATOR_SIZE)
    if not locator.startswith(_ZIP64_LOCATOR):
        raise _unreadable("The zip64 end record is missing.")
    (end64_at,) = struct.unpack("<Q", locator[8:16])
    archive.seek(end64_at)
    end64 = archive.read(56)
    if len(end64) < 56 or not end64.startswith(_ZIP64_END):
        raise _unreadable("The zip64 end record is unreadable.")
    entries64, directory_bytes64 = struct.unpack("<QQ", end64[32:48])
    return entries64, directory_bytes64


def _incoming(opened: zipfile.ZipFile, info: zipfile.ZipInfo) -> IncomingFile:
    name = info.filename
    return IncomingFile(filename=name, read=lambda: _read_entry(opened, info), refusal=_judge(info))


def _judge(info: zipfile.ZipInfo) -> Refusal | None:
    """A refusal from the directory entry alone, or None."""
    if info.flag_bits & 0x1:
        return _entry_refusal("archive-entry-encrypted", "Encrypted file", "The file is encrypted in the archive.")
    # A Unix entry's file type; zero where the archiver wrote permissions alone (Python's own).
    file_type = stat.S_IFMT(info.external_attr >> 16) if info.create_system == 3 else 0
    if file_type and file_type != stat.S_IFREG:
        return _entry_refusal(
            "archive-entry-not-a-file", "Not a file", "The entry is not a regular file (a symbolic link, say)."
        )
    if info.filename.lower().endswith(_ARCHIVE_SUFFIXES):
        return _nested_archive()
    if info.file_size > settings.DOCUMENT_MAX_BYTES:
        return document_too_large(info.file_size, settings.DOCUMENT_MAX_BYTES)
    ratio = info.file_size / max(info.compress_size, 1)
    if ratio > settings.BATCH_ARCHIVE_MAX_RATIO:
        return _entry_refusal(
            "archive-entry-compression-ratio",
            "Compressed too far",
            f"The file expands {ratio:.0f} times ({info.compress_size} to {info.file_size} bytes); "
            f"at most {settings.BATCH_ARCHIVE_MAX_RATIO} times is read.",
        )
    return None


def _nested_archive() -> Refusal:
    return _entry_refusal(
        "archive-entry-nested-archive", "Archive in an archive", "An archive inside the archive is not opened."
    )


def _read_entry(opened: zipfile.ZipFile, info: zipfile.ZipInfo) -> IO[bytes]:
    """The file's bytes, in memory. zipfile decompresses at most the declared size and checks
    the CRC at its end; the declared size was bounded by :func:`_judge`."""
    try:
        with opened.open(info) as handle:
            data = handle.read(settings.DOCUMENT_MAX_BYTES + 1)
    except (
        zipfile.BadZipFile,
        zlib.error,
        lzma.LZMAError,
        NotImplementedError,
        RuntimeError,
        ValueError,
        EOFError,
        OSError,
    ) as exc:
        # A bad CRC, a broken stream, a compression method zipfile does not have.
        raise FileRefused(
            _entry_refusal(
                "archive-entry-unreadable", "File unreadable", f"The file cannot be read from the archive: {exc}"
            )
        ) from exc
    if data.startswith(_ARCHIVE_MAGIC) or data[257:262] == b"ustar" or _is_bzip2(data):
        raise FileRefused(_nested_archive())
    return io.BytesIO(data)


def _is_bzip2(data: bytes) -> bool:
    return data[:3] == b"BZh" and data[3:4] in b"123456789" and data[4:10] == b"1AY&SY"
