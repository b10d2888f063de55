"""A batch's zip archive is read defensively (extraction/intake/archives.py): the archive as a
whole is bounded from its directory before anything is decompressed, each file is judged from
its directory entry and refused alone, an archive inside is never opened, and entry names are
labels, never paths."""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import zipfile

import pytest

from extraction.intake.archives import ArchiveRefused, archive_files
from extraction.intake.batches import FileRefused

PDF = b"%PDF-1.4\n% a small document\n" + bytes(range(32, 127)) * 20


def zip_of(entries: dict[str, bytes], *, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def refused_archive(raw: bytes) -> ArchiveRefused:
    with pytest.raises(ArchiveRefused) as refused, archive_files(io.BytesIO(raw)):
        pass
    return refused.value


def judged(raw: bytes) -> dict[str, str | None]:
    """Each file's name and the slug of its refusal, whether from its entry or when read."""
    outcome: dict[str, str | None] = {}
    with archive_files(io.BytesIO(raw)) as files:
        for incoming in files:
            if incoming.refusal is not None:
                outcome[incoming.filename] = incoming.refusal.slug
                continue
            try:
                incoming.read()
            except FileRefused as exc:
                outcome[incoming.filename] = exc.refusal.slug
            else:
                outcome[incoming.filename] = None
    return outcome


def patched(raw: bytes, *, central: tuple[int, bytes], local: tuple[int, bytes]) -> bytes:
    """The archive with bytes replaced at an offset of its first central and local headers."""
    data = bytearray(raw)
    for signature, (offset, value) in ((b"PK\x01\x02", central), (b"PK\x03\x04", local)):
        at = data.index(signature) + offset
        data[at : at + len(value)] = value
    return bytes(data)


def as_zip64(raw: bytes) -> bytes:
    """The archive with a zip64 end record: the plain end record's counts set to 0xFFFF, as a
    writer does past 65,535 entries."""
    end_at = raw.rindex(b"PK\x05\x06")
    _, _, _, entries, directory_bytes, directory_at, _ = struct.unpack("<4H2LH", raw[end_at + 4 : end_at + 22])
    zip64_at = directory_at + directory_bytes
    end64 = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, directory_bytes, directory_at)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, zip64_at, 1)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, directory_bytes, directory_at, 0)
    return raw[:zip64_at] + end64 + locator + end


# --- the archive as a whole -------------------------------------------------------------------------


def test_files_come_in_directory_order_named_as_sent_without_directories_or_resource_forks():
    raw = zip_of({"b.pdf": PDF, "scans/": b"", "scans/a.pdf": PDF + b"a", "__MACOSX/scans/._a.pdf": b"\x00\x05"})
    with archive_files(io.BytesIO(raw)) as files:
        assert [incoming.filename for incoming in files] == ["b.pdf", "scans/a.pdf"]
        assert [incoming.read().read() for incoming in files] == [PDF, PDF + b"a"]


def test_an_archive_of_directories_only_is_empty():
    refused = refused_archive(zip_of({"a/": b"", "a/b/": b""}))
    assert (refused.slug, refused.status) == ("archive-empty", 422)


def test_an_archive_with_no_entries_is_empty():
    assert refused_archive(zip_of({})).slug == "archive-empty"


def test_bytes_that_are_not_a_zip_archive_are_unreadable():
    refused = refused_archive(PDF)
    assert (refused.slug, refused.status) == ("archive-unreadable", 422)


def test_an_archive_cut_short_is_unreadable():
    raw = zip_of({"a.pdf": PDF})
    assert refused_archive(raw[: len(raw) - 30]).slug == "archive-unreadable"


def test_more_files_than_a_batch_may_have_refuse_the_archive(settings):
    settings.BATCH_MAX_FILES = 2
    refused = refused_archive(zip_of({"a.pdf": PDF, "b.pdf": PDF, "c.pdf": PDF}))
    assert (refused.slug, refused.status) == ("batch-too-many-files", 413)
    assert refused.detail == "The archive holds files: 3; a batch may have at most 2."


def test_a_directory_listing_too_many_entries_is_refused_from_its_end_record(settings):
    settings.BATCH_MAX_FILES = 1
    refused = refused_archive(zip_of({"a/": b"", "b/": b"", "a/x.pdf": PDF}))
    assert refused.detail == "The archive lists entries: 3; a batch may have at most 1."


def test_a_zip64_end_record_is_read_for_the_entry_count(settings):
    raw = as_zip64(zip_of({"a.pdf": PDF, "b.pdf": PDF + b"b", "c.pdf": PDF + b"c"}))
    with archive_files(io.BytesIO(raw)) as files:
        assert [incoming.filename for incoming in files] == ["a.pdf", "b.pdf", "c.pdf"]
    settings.BATCH_MAX_FILES = 1
    assert refused_archive(raw).detail == "The archive lists entries: 3; a batch may have at most 1."


def test_files_declaring_more_bytes_together_than_allowed_refuse_the_archive(settings):
    settings.BATCH_ARCHIVE_MAX_UNCOMPRESSED_BYTES = 2 * len(PDF) - 1
    refused = refused_archive(zip_of({"a.pdf": PDF, "b.pdf": PDF}))
    assert (refused.slug, refused.status) == ("archive-too-large", 413)


# --- each file alone -----------------------------------------------------------------------------


def test_a_bomb_is_refused_alone_by_its_compression_ratio():
    bomb = b"\x00" * (5 * 1024 * 1024)  # deflates about a thousand times
    assert judged(zip_of({"bomb.pdf": bomb, "a.pdf": PDF})) == {
        "bomb.pdf": "archive-entry-compression-ratio",
        "a.pdf": None,
    }


def test_the_ratio_bound_is_a_setting(settings):
    settings.BATCH_ARCHIVE_MAX_RATIO = 1
    assert judged(zip_of({"a.txt": b"invoice " * 100})) == {"a.txt": "archive-entry-compression-ratio"}


def test_a_stored_file_is_not_a_bomb():
    assert judged(zip_of({"a.pdf": PDF}, compression=zipfile.ZIP_STORED)) == {"a.pdf": None}


def test_a_file_larger_than_a_document_may_be_is_refused_alone(settings):
    settings.DOCUMENT_MAX_BYTES = len(PDF)
    with archive_files(io.BytesIO(zip_of({"big.pdf": PDF + b"x", "a.pdf": PDF}))) as files:
        big, fits = files
        assert big.refusal is not None and fits.refusal is None
        assert big.refusal.problem() == {
            "type": "/problems/document-too-large",
            "title": "Document too large",
            "status": 413,
            "detail": f"The file is {len(PDF) + 1} bytes; a document may have at most {len(PDF)}.",
            "limit_bytes": len(PDF),
        }


def test_archives_inside_are_refused_by_name_and_by_their_bytes():
    inner_zip = zip_of({"a.pdf": PDF})
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as archive:
        member = tarfile.TarInfo("a.pdf")
        member.size = len(PDF)
        archive.addfile(member, io.BytesIO(PDF))
    outcome = judged(
        zip_of(
            {
                "inner.zip": inner_zip,
                "invoices.tar.gz": PDF,
                "inner.pdf": inner_zip,
                "packed.pdf": gzip.compress(PDF),
                "bundle.pdf": tar.getvalue(),
                "a.pdf": PDF,
            }
        )
    )
    assert outcome == {
        "inner.zip": "archive-entry-nested-archive",
        "invoices.tar.gz": "archive-entry-nested-archive",
        "inner.pdf": "archive-entry-nested-archive",
        "packed.pdf": "archive-entry-nested-archive",
        "bundle.pdf": "archive-entry-nested-archive",
        "a.pdf": None,
    }


def test_an_encrypted_file_is_refused_without_reading_it():
    # zipfile writes no encryption: the entry is flagged encrypted (bit 0) in both headers.
    raw = patched(zip_of({"secret.pdf": PDF}), central=(8, b"\x01\x00"), local=(6, b"\x01\x00"))
    with archive_files(io.BytesIO(raw)) as [secret]:
        assert secret.refusal is not None
        assert (secret.refusal.slug, secret.refusal.status) == ("archive-entry-encrypted", 422)


def test_a_symbolic_link_is_not_a_file():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        link = zipfile.ZipInfo("invoice.pdf")
        link.create_system = 3
        link.external_attr = 0o120777 << 16
        archive.writestr(link, "/etc/passwd")
        regular = zipfile.ZipInfo("a.pdf")
        regular.create_system = 3
        regular.external_attr = 0o100644 << 16
        archive.writestr(regular, PDF)
    assert judged(buffer.getvalue()) == {"invoice.pdf": "archive-entry-not-a-file", "a.pdf": None}


def test_a_corrupt_file_is_refused_when_read_and_the_others_are_read():
    raw = bytearray(zip_of({"broken.pdf": PDF, "a.pdf": PDF + b"a"}))
    first_data = raw.index(b"broken.pdf") + len("broken.pdf") + 10
    raw[first_data] ^= 0xFF
    assert judged(bytes(raw)) == {"broken.pdf": "archive-entry-unreadable", "a.pdf": None}


def test_a_file_that_lies_about_its_size_is_read_no_further_than_it_declares():
    # Declared 10 bytes in both headers: zipfile stops there and the CRC tells the lie.
    raw = patched(zip_of({"liar.pdf": PDF}), central=(24, struct.pack("<L", 10)), local=(22, struct.pack("<L", 10)))
    assert judged(raw) == {"liar.pdf": "archive-entry-unreadable"}


def test_entry_names_are_labels_and_never_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    names = ["../../etc/cron.d/invoice.pdf", "/etc/passwd.pdf", "..\\..\\windows\\invoice.pdf", "a/../../b.pdf"]
    raw = zip_of({name: PDF + name.encode() for name in names})
    with archive_files(io.BytesIO(raw)) as files:
        assert [incoming.filename for incoming in files] == names
        assert [incoming.read().read() for incoming in files] == [PDF + name.encode() for name in names]
    assert list(tmp_path.iterdir()) == []
