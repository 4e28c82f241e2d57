"""Small media files made for tests: PDFs (a page tree of `pages` pages, padded to a size, or kept in a
compressed object stream, as PDF 1.5 writers keep it) and PNGs."""

from __future__ import annotations

import struct
import zlib


def png(width: int = 1, height: int = 1) -> bytes:
    """A real PNG of grey pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def pdf(pages: int, pad: int = 0) -> bytes:
    """A PDF of `pages` blank pages, its objects uncompressed, with `pad` bytes of a comment after them."""
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        *[b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages,
    ]
    body = b"".join(f"{i + 1} 0 obj\n".encode() + o + b"\nendobj\n" for i, o in enumerate(objects))
    return b"%PDF-1.7\n" + body + b"%" + b"x" * pad + b"\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"


def pdf_with_object_stream(pages: int) -> bytes:
    """A PDF whose catalog and page tree are in a compressed object stream (its page objects too)."""
    tree = f"<< /Type /Pages /Kids [3 0 R] /Count {pages} >> << /Type /Page /Parent 2 0 R >>".encode()
    packed = zlib.compress(b"2 0 3 50 " + tree)
    head = f"1 0 obj\n<< /Type /ObjStm /N 2 /First 9 /Filter /FlateDecode /Length {len(packed)} >>\n"
    return b"%PDF-1.7\n" + head.encode() + b"stream\n" + packed + b"\nendstream\nendobj\n%%EOF\n"
