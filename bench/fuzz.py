#!/usr/bin/env python3
"""The mutator and the bookkeeping behind bench/fuzz.sh (standard library only).

    fuzz.py mutate   --seed S --cases A-B --out DIR     mutants case-NNNNNN.EXT + one TSV line each
    fuzz.py mutate   --seed S --case I --out FILE       one mutant (to replay a failure by its seed)
    fuzz.py classify --work DIR --results DIR ...       classify a batch of finished runs
    fuzz.py summary  --results DIR                      summary.md + failures.md; exit 1 on crash/hang/huge

A case is a pure function of (seed, case number, source list): `random.Random(f"{seed}/{case}")`
picks the source file and one to three mutations, so any case can be made again on its own.
ISO-BMFF sources are walked box by box (headers, nested containers, sample entries) and mutated
structurally: box sizes (32-bit 0/1/tiny/huge, 64-bit largesize), entry counts and entries of the
sample tables, 64-bit times and offsets near the limits (tfdt, durations, edit lists, sidx,
co64), duplicated, removed, swapped and retyped boxes (stco read as co64, a video track's
handler made "soun"...); every file also gets byte-level mutations
(bit flips, interesting values, truncation, duplicated or removed chunks).
"""
import argparse
import json
import os
import random
import re
import shutil
import struct
import sys

# ---------------------------------------------------------------------------------------------
# ISO-BMFF structure

# Boxes that hold only boxes.
CONTAINERS = {b"moov", b"trak", b"mdia", b"minf", b"stbl", b"edts", b"dinf", b"mvex", b"moof", b"traf",
              b"udta", b"mfra", b"sinf", b"schi", b"tref", b"ipro", b"gmhd", b"iprp", b"ipco", b"meco",
              b"strk", b"strd", b"wave", b"ilst"}
# Full boxes (version + flags) whose payload then holds boxes, after this many bytes.
FULL_CONTAINERS = {b"stsd": 8, b"dref": 8}
VISUAL_ENTRIES = {b"avc1", b"avc3", b"hvc1", b"hev1", b"mp4v", b"av01", b"vp08", b"vp09", b"encv", b"dvh1",
                  b"dvhe", b"dva1", b"dvav", b"vvc1", b"vvi1", b"s263", b"h263", b"jpeg", b"mjpa", b"mjpb",
                  b"apcn", b"apch", b"apcs", b"apco", b"ap4h", b"raw ", b"png ", b"avc2", b"hvt1"}
AUDIO_ENTRIES = {b"mp4a", b"Opus", b"ac-3", b"ec-3", b"ac-4", b"alac", b"fLaC", b"enca", b"samr", b"sawb",
                 b".mp3", b"ipcm", b"fpcm", b"lpcm", b"sowt", b"twos", b"iamf", b"mha1", b"mhm1", b"ulaw",
                 b"alaw", b"dtsc", b"dtsh", b"dtse"}
# Tables with an entry count: box type -> offset of the 32-bit count in the payload.
COUNTED_TABLES = {b"stsz": 8, b"stz2": 8, b"stco": 4, b"co64": 4, b"stss": 4, b"ctts": 4, b"stts": 4,
                  b"stsc": 4, b"elst": 4, b"stsd": 4, b"dref": 4, b"sbgp": 8, b"stps": 4, b"sdtp": None,
                  b"trun": 4, b"tfra": 12}
# Bytes per entry after the count (version 0; version 1 widens some).
ENTRY_SIZE = {b"stco": 4, b"co64": 8, b"stss": 4, b"ctts": 8, b"stts": 8, b"stsc": 12, b"elst": 12, b"stsz": 4,
              b"stps": 4}

HUGE32 = [0xFFFFFFFF, 0xFFFFFFFE, 0x7FFFFFFF, 0x80000000, 0x80000001, 0x40000000, 0x20000000, 0x10000000,
          0x0FFFFFFF, 0x01000000, 0x00100000]
# Counts whose tables come close to FFmpeg's 2 GiB allocation limit (max_alloc_size) for entries of
# 4, 8, 12 and 24 bytes: accepted, then filled -- memory amplification rather than a refusal.
NEAR_ALLOC_LIMIT = [0x1FFFFFF0, 0x0FFFFFF0, 0x0AAAAAA0, 0x05555550, 0x04000000, 0x03000000]
HUGE64 = [0xFFFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0x100000000, 0x1FFFFFFFF,
          0x0000FFFFFFFFFFFF]


class Box:
    __slots__ = ("offset", "size", "header", "type", "depth", "parent", "size0")

    def __init__(self, offset, size, header, type_, depth, parent, size0):
        self.offset, self.size, self.header, self.type = offset, size, header, type_
        self.depth, self.parent, self.size0 = depth, parent, size0

    @property
    def payload(self):
        return self.offset + self.header

    @property
    def end(self):
        return self.offset + self.size

    def name(self):
        path, b = [], self
        while b is not None:
            path.append(b.type.decode("latin-1"))
            b = b.parent
        return "/".join(reversed(path)) + f"@{self.offset}"


def plausible_type(t):
    return all(32 <= c < 127 or c == 0xA9 for c in t)


def walk(data, start=0, end=None, depth=0, parent=None, out=None, limit=4000):
    """Every box that parses, depth first. Stops at the first header that does not fit its parent."""
    end = len(data) if end is None else end
    out = [] if out is None else out
    pos = start
    while pos + 8 <= end and len(out) < limit:
        size, typ = struct.unpack_from(">I4s", data, pos)
        header, size0 = 8, False
        if size == 1:
            if pos + 16 > end:
                break
            size = struct.unpack_from(">Q", data, pos + 8)[0]
            header = 16
        elif size == 0:
            size, size0 = end - pos, True
        if size < header or pos + size > end or not plausible_type(typ):
            break
        box = Box(pos, size, header, typ, depth, parent, size0)
        out.append(box)
        child = None
        if typ in CONTAINERS:
            child = box.payload
        elif typ == b"meta":  # ISO: a full box; QuickTime: a plain container
            child = box.payload + (4 if box.payload + 4 <= box.end and data[box.payload:box.payload + 4] == b"\0\0\0\0" else 0)
        elif typ in FULL_CONTAINERS:
            child = box.payload + FULL_CONTAINERS[typ]
        elif parent is not None and parent.type == b"stsd":
            if typ in VISUAL_ENTRIES:
                child = box.payload + 78
            elif typ in AUDIO_ENTRIES and box.payload + 10 <= box.end:
                version = struct.unpack_from(">H", data, box.payload + 8)[0]
                child = box.payload + 28 + {1: 16, 2: 36}.get(version, 0)
        if child is not None and child < box.end:
            walk(data, child, box.end, depth + 1, box, out, limit)
        pos += size
    return out


def is_isobmff(boxes):
    return bool(boxes) and boxes[0].depth == 0 and boxes[0].type in (
        b"ftyp", b"moov", b"free", b"mdat", b"wide", b"skip", b"styp", b"sidx", b"moof", b"pnot", b"uuid", b"jP  ")


def ancestors(box):
    b = box.parent
    while b is not None:
        yield b
        b = b.parent


def resize_ancestors(data, box, delta):
    """After inserting or removing `delta` bytes inside `box`'s parent, keep every ancestor's size right."""
    for a in ancestors(box):
        if a.size0:
            continue
        if a.header == 16:
            struct.pack_into(">Q", data, a.offset + 8, max(0, a.size + delta))
        elif 0 <= a.size + delta <= 0xFFFFFFFF:
            struct.pack_into(">I", data, a.offset, a.size + delta)


# ---------------------------------------------------------------------------------------------
# Mutations: each takes (data: bytearray, rng) and returns (data, description) or None if it cannot apply.

def pick_box(rng, boxes, top=None, types=None):
    pool = [b for b in boxes if (top is None or (b.depth == 0) == top) and (types is None or b.type in types)]
    return rng.choice(pool) if pool else None


def region(rng, data, boxes):
    """A byte range to aim at: usually one box's payload other than mdat (headers matter most)."""
    candidates = [b for b in boxes if b.type not in (b"mdat", b"free", b"skip") and b.size > b.header]
    if candidates and rng.random() < 0.7:
        b = rng.choice(candidates)
        return b.offset, b.end, b.name()
    return 0, len(data), "file"


def m_bitflip(data, rng, boxes):
    lo, hi, where = region(rng, data, boxes)
    if hi <= lo:
        return None
    n = rng.choice([1, 1, 2, 3, 4, 8, 16, 32])
    spots = sorted(rng.randrange(lo, hi) for _ in range(n))
    for p in spots:
        data[p] ^= 1 << rng.randrange(8)
    return data, f"bitflip {n} in {where} at {spots[:6]}{'...' if n > 6 else ''}"


def m_bytes(data, rng, boxes):
    lo, hi, where = region(rng, data, boxes)
    if hi - lo < 4:
        return None
    n = rng.choice([1, 2, 4])
    done = []
    for _ in range(n):
        p = rng.randrange(lo, hi - 3)
        if rng.random() < 0.5:
            v = rng.choice(HUGE32 + [0, 1, 2, 0xFFFF, 0x8000, 0x7FFF])
            struct.pack_into(">I", data, p, v)
            done.append(f"{p}={v:#x}")
        else:
            v = rng.choice([0x00, 0xFF, 0x7F, 0x80, 0x01])
            data[p] = v
            done.append(f"{p}={v:#04x}")
    return data, f"set bytes in {where}: {' '.join(done)}"


def m_truncate(data, rng, boxes):
    n = len(data)
    if n < 2:
        return None
    how = rng.random()
    if how < 0.3 and boxes:
        b = rng.choice(boxes)
        cut = min(n - 1, max(0, b.offset + rng.choice([0, 1, 4, 7, 8, 9, 15, 16, b.size // 2, b.size - 1])))
        what = f"inside {b.name()}"
    elif how < 0.4:
        cut = rng.randrange(0, min(n, 64))
        what = "to a few bytes"
    else:
        cut = rng.randrange(1, n)
        what = "at random"
    return data[:cut], f"truncate {what} to {cut} of {n} bytes"


def m_box_size(data, rng, boxes):
    b = pick_box(rng, boxes, top=rng.random() < 0.35) or pick_box(rng, boxes)
    if b is None:
        return None
    parent_room = (b.parent.end if b.parent else len(data)) - b.offset
    if b.header == 16:
        v = rng.choice(HUGE64 + [0, 1, 7, 8, 15, 16, b.size - 1, b.size + 1, b.size + 2**32, parent_room + 1,
                                 rng.getrandbits(64)])
        v &= 0xFFFFFFFFFFFFFFFF
        struct.pack_into(">Q", data, b.offset + 8, v)
        return data, f"box size64 {b.name()} {b.size} -> {v:#x}"
    v = rng.choice(HUGE32 + [0, 0, 1, 1, 2, 4, 7, 8, 9, b.size - 1, b.size + 1, b.size * 2, parent_room,
                             parent_room + 1, rng.getrandbits(32)])
    v &= 0xFFFFFFFF
    struct.pack_into(">I", data, b.offset, v)
    return data, f"box size32 {b.name()} {b.size} -> {v:#x}"


def m_largesize(data, rng, boxes):
    """Turns a 32-bit header into a 64-bit one (size 1 + largesize), true or hostile."""
    b = pick_box(rng, [x for x in boxes if x.header == 8 and not x.size0], top=rng.random() < 0.5) \
        or pick_box(rng, [x for x in boxes if x.header == 8 and not x.size0])
    if b is None:
        return None
    true = b.size + 8
    v = true if rng.random() < 0.4 else rng.choice(HUGE64 + [0, 1, 8, 15, 16, true - 1, true + 1, true + 2**32])
    insert = struct.pack(">I4sQ", 1, b.type, v)
    out = data[:b.offset] + insert + data[b.offset + 8:]
    resize_ancestors(out, b, 8)
    return out, f"box largesize {b.name()} {b.size} -> 64-bit {v:#x}{' (true)' if v == true else ''}"


def table_boxes(boxes):
    return [b for b in boxes if b.type in COUNTED_TABLES and COUNTED_TABLES[b.type] is not None
            and b.payload + COUNTED_TABLES[b.type] + 4 <= b.end]


def m_count(data, rng, boxes):
    tables = table_boxes(boxes)
    if not tables:
        return None
    b = rng.choice(tables)
    at = b.payload + COUNTED_TABLES[b.type]
    old = struct.unpack_from(">I", data, at)[0]
    v = rng.choice(HUGE32 + HUGE32 + NEAR_ALLOC_LIMIT + [0, old + 1, old * 2 + 1, old * 16 + 7,
                                                         rng.randrange(1 << 20, 1 << 32)]) & 0xFFFFFFFF
    struct.pack_into(">I", data, at, v)
    return data, f"entry count {b.name()} {old} -> {v:#x}"


def m_entry(data, rng, boxes):
    """Hostile values inside a sample table, edit list or fragment run: sizes, offsets, deltas, versions."""
    tables = [b for b in table_boxes(boxes) if b.type in ENTRY_SIZE or b.type in (b"stz2", b"trun", b"sidx")] + \
        [b for b in boxes if b.type in (b"sidx", b"mdhd", b"mvhd", b"tkhd", b"tfhd", b"tfdt", b"hdlr") and b.size > b.header + 8]
    if not tables:
        return None
    b = rng.choice(tables)
    p = b.payload
    if b.type == b"stz2" and rng.random() < 0.6:
        v = rng.choice([0, 1, 2, 3, 5, 7, 12, 24, 32, 64, 255])
        data[p + 7] = v
        return data, f"stz2 field_size {b.name()} -> {v}"
    if b.type == b"stsz" and rng.random() < 0.4:
        v = rng.choice(HUGE32 + [1])
        struct.pack_into(">I", data, p + 4, v)
        return data, f"stsz sample_size {b.name()} -> {v:#x}"
    if b.type in (b"elst", b"ctts", b"mdhd", b"mvhd", b"tkhd", b"tfdt", b"sidx", b"trun", b"tfhd") and rng.random() < 0.3:
        v = rng.choice([0, 1, 2, 255])
        data[p] = v
        return data, f"version {b.name()} -> {v}"
    if b.type in (b"mdhd", b"mvhd"):
        # Timescale and duration: version 0 at +12/+16, version 1 at +20/+24.
        v1 = data[p] == 1
        field = rng.choice(["timescale", "duration"])
        at = p + (20 if v1 else 12) + (4 if field == "duration" else 0)
        if field == "duration" and v1:
            v = rng.choice(HUGE64 + [0])
            if at + 8 <= b.end:
                struct.pack_into(">Q", data, at, v)
        else:
            v = rng.choice(HUGE32 + [0, 1])
            if at + 4 <= b.end:
                struct.pack_into(">I", data, at, v)
        return data, f"{b.type.decode()} {field} {b.name()} -> {v:#x}"
    # Some entry of the table.
    count_at = p + COUNTED_TABLES.get(b.type, 4)
    size = ENTRY_SIZE.get(b.type, 4)
    if b.type in (b"elst", b"ctts") and data[p] == 1:
        size = {b"elst": 20, b"ctts": 8}[b.type]
    first = count_at + 4
    n = (b.end - first) // size if size else 0
    if n <= 0:
        lo, hi = b.payload, b.end
        if hi - lo < 4:
            return None
        at = rng.randrange(lo, hi - 3)
    else:
        at = first + rng.randrange(n) * size + rng.randrange(max(1, size // 4)) * 4
        at = min(at, b.end - 4)
    if b.type == b"co64" and at + 8 <= b.end and rng.random() < 0.5:
        v = rng.choice(HUGE64 + [0, len(data), len(data) - 1])
        struct.pack_into(">Q", data, at - (at - first) % 8 if n > 0 else at, v)
    else:
        v = rng.choice(HUGE32 + [0, 0, 1, len(data), len(data) + 1]) & 0xFFFFFFFF
        struct.pack_into(">I", data, at, v)
    return data, f"table entry {b.name()} at {at} -> {v:#x}"


def m_duplicate(data, rng, boxes):
    b = pick_box(rng, [x for x in boxes if x.size <= 4 << 20], top=rng.random() < 0.4) \
        or pick_box(rng, [x for x in boxes if x.size <= 4 << 20])
    if b is None:
        return None
    copy = bytes(data[b.offset:b.end])
    if b.size0:  # a size-0 box only extends to its parent's end: give the copy its real size
        copy = struct.pack(">I", len(copy)) + copy[4:]
    out = data[:b.end] + copy + data[b.end:]
    resize_ancestors(out, b, len(copy))
    return out, f"duplicate {b.name()} ({b.size} bytes)"


def m_remove(data, rng, boxes):
    b = pick_box(rng, boxes, top=rng.random() < 0.3) or pick_box(rng, boxes)
    if b is None:
        return None
    out = data[:b.offset] + data[b.end:]
    resize_ancestors(out, b, -b.size)
    return out, f"remove {b.name()} ({b.size} bytes)"


def m_swap(data, rng, boxes):
    pairs = [(a, c) for a in boxes for c in boxes
             if a.parent is c.parent and a.end <= c.offset and not a.size0 and not c.size0]
    if not pairs:
        return None
    a, c = rng.choice(pairs[:2000])
    out = data[:a.offset] + data[c.offset:c.end] + data[a.end:c.offset] + data[a.offset:a.end] + data[c.end:]
    return bytearray(out), f"swap {a.name()} with {c.name()}"


WIDE64 = [0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFF00, 0x4000000000000000,
          0xC000000000000000, 0xFFFFFFFF00000000, 0x0000000100000000, 0x00007FFFFFFFFFFF, 0x8000000000000001]


def time_fields(data, boxes):
    """(box, offset, width, name) of the times, durations and offsets that 64-bit arithmetic meets:
    tfdt decode times, mvhd/mdhd/tkhd/mehd durations, edit list entries, sidx times and offsets,
    tfhd base offsets, trun data offsets, co64 chunk offsets (version 1 fields are 64-bit)."""
    fields = []
    for b in boxes:
        p, v1 = b.payload, b.payload < b.end and data[b.payload] == 1
        t = b.type
        if t == b"tfdt":
            fields.append((b, p + 4, 8 if v1 else 4, "baseMediaDecodeTime"))
        elif t in (b"mvhd", b"mdhd"):
            fields.append((b, p + (24 if v1 else 16), 8 if v1 else 4, "duration"))
        elif t == b"tkhd":
            fields.append((b, p + (28 if v1 else 20), 8 if v1 else 4, "duration"))
        elif t == b"mehd":
            fields.append((b, p + 4, 8 if v1 else 4, "fragment_duration"))
        elif t == b"elst":
            size, w = (20, 8) if v1 else (12, 4)
            for i in range(min(4, max(0, (b.end - p - 8) // size))):
                fields.append((b, p + 8 + i * size, w, f"entry {i} segment_duration"))
                fields.append((b, p + 8 + i * size + w, w, f"entry {i} media_time"))
        elif t == b"sidx":
            fields.append((b, p + 12, 8 if v1 else 4, "earliest_presentation_time"))
            fields.append((b, p + (20 if v1 else 16), 8 if v1 else 4, "first_offset"))
        elif t == b"tfhd" and p + 16 <= b.end and data[p + 3] & 1:
            fields.append((b, p + 8, 8, "base_data_offset"))
        elif t == b"trun" and p + 12 <= b.end and data[p + 3] & 1:
            fields.append((b, p + 8, 4, "data_offset"))
        elif t == b"co64":
            for i in range(min(4, max(0, (b.end - p - 8) // 8))):
                fields.append((b, p + 8 + i * 8, 8, f"chunk_offset {i}"))
    return [f for f in fields if f[1] + f[2] <= f[0].end]


def m_wide(data, rng, boxes):
    fields = time_fields(data, boxes)
    if not fields:
        return None
    b, at, width, name = rng.choice(fields)
    if width == 8:
        v = rng.choice(WIDE64)
        struct.pack_into(">Q", data, at, v)
    else:
        v = rng.choice(HUGE32)
        struct.pack_into(">I", data, at, v)
    return data, f"{b.type.decode('latin-1')} {name} {b.name()} -> {v:#x}"


RETYPE_GROUPS = [
    [b"stco", b"co64"], [b"stsz", b"stz2"], [b"stts", b"ctts", b"stss", b"stsc", b"stps", b"sdtp"],
    [b"moov", b"trak", b"mdia", b"minf", b"stbl", b"edts", b"moof", b"traf", b"mvex", b"udta", b"free"],
    [b"mvhd", b"tkhd", b"mdhd", b"mehd", b"tfhd", b"tfdt"], [b"mdat", b"free", b"skip", b"wide"],
    [b"avc1", b"avc3", b"hvc1", b"hev1", b"av01", b"vp09", b"mp4v", b"mp4a", b"Opus", b"ac-3", b"fLaC", b"tx3g", b"wvtt"],
    [b"avcC", b"hvcC", b"av1C", b"vpcC", b"esds", b"dOps", b"dac3", b"dfLa"],
    [b"sidx", b"moof", b"mfra", b"styp", b"emsg"], [b"trun", b"tfhd", b"tfdt", b"saiz", b"saio", b"senc"],
]
HANDLERS = [b"vide", b"soun", b"text", b"sbtl", b"subt", b"meta", b"hint", b"tmcd", b"clcp", b"\0\0\0\0"]


def m_retype(data, rng, boxes):
    """Type confusion: a box read as a related one (stco as co64, stsz as stz2, a video entry as
    audio, one container as another), or a track's handler changed (video read as sound...)."""
    hdlrs = [b for b in boxes if b.type == b"hdlr" and b.payload + 12 <= b.end]
    if hdlrs and rng.random() < 0.2:
        b = rng.choice(hdlrs)
        new = rng.choice(HANDLERS)
        old = bytes(data[b.payload + 8:b.payload + 12])
        data[b.payload + 8:b.payload + 12] = new
        return data, f"handler {b.name()} {old!r} -> {new!r}"
    candidates = [(b, g) for b in boxes for g in RETYPE_GROUPS if b.type in g]
    if not candidates:
        return None
    b, group = rng.choice(candidates)
    new = rng.choice([t for t in group if t != b.type])
    at = b.offset + 4
    data[at:at + 4] = new
    return data, f"retype {b.name()} -> {new.decode('latin-1')}"


def m_chunk(data, rng, boxes):
    n = len(data)
    if n < 16:
        return None
    a = rng.randrange(n)
    length = min(n - a, rng.choice([1, 4, 16, 256, 4096, 65536]))
    how = rng.choice(["duplicate", "remove", "random"])
    if how == "duplicate":
        out = data[:a + length] + data[a:a + length] + data[a + length:]
    elif how == "remove":
        out = data[:a] + data[a + length:]
    else:
        out = data[:a] + bytearray(rng.getrandbits(8) for _ in range(length)) + data[a:]
    return out, f"chunk {how} {length} bytes at {a}"


ISO_MUTATIONS = [(m_bitflip, 14), (m_bytes, 8), (m_truncate, 8), (m_box_size, 18), (m_largesize, 5),
                 (m_count, 22), (m_entry, 12), (m_wide, 12), (m_duplicate, 8), (m_remove, 8), (m_swap, 4),
                 (m_retype, 6), (m_chunk, 4)]
BYTE_MUTATIONS = [(m_bitflip, 35), (m_bytes, 25), (m_truncate, 20), (m_chunk, 20)]


def sources(root):
    """The seed files, in a fixed order: the corpus, then the committed samples."""
    found = []
    corpus = os.path.join(root, "Tests/Corpus/files")
    if os.path.isdir(corpus):
        found += [os.path.join("Tests/Corpus/files", f) for f in sorted(os.listdir(corpus))]
    samples = os.path.join(root, "Samples")
    if os.path.isdir(samples):
        found += [os.path.join("Samples", f) for f in sorted(os.listdir(samples))
                  if os.path.splitext(f)[1] in (".mp4", ".m4a", ".mp3", ".webm", ".mov", ".mkv")]
    return found


def make_case(seed, case, root, source_list):
    rng = random.Random(f"{seed}/{case}")
    source = rng.choice(source_list)
    with open(os.path.join(root, source), "rb") as f:
        data = bytearray(f.read())
    steps = []
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        boxes = walk(data)
        table = ISO_MUTATIONS if is_isobmff(boxes) else BYTE_MUTATIONS
        for _attempt in range(8):
            fn = rng.choices([m for m, _ in table], weights=[w for _, w in table])[0]
            result = fn(data, rng, boxes)
            if result is not None:
                data, what = result
                data = bytearray(data)
                steps.append(what)
                break
    ext = os.path.splitext(source)[1]
    return source, bytes(data), "; ".join(steps) or "none", ext


def cmd_mutate(args):
    root = args.root
    source_list = sources(root)
    if args.sources:
        # A focused campaign: only the seed files whose path matches (the order stays fixed).
        source_list = [f for f in source_list if re.search(args.sources, f)]
    if not source_list:
        sys.exit(f"fuzz.py: no seed files under {root}/Tests/Corpus/files or {root}/Samples"
                 + (f" match {args.sources!r}" if args.sources else ""))
    if args.case is not None:
        source, data, what, _ext = make_case(args.seed, args.case, root, source_list)
        with open(args.out, "wb") as f:
            f.write(data)
        print(f"{args.case}\t{args.out}\t{source}\t{what}")
        return
    first, _, last = args.cases.partition("-")
    os.makedirs(args.out, exist_ok=True)
    lines = []
    for case in range(int(first), int(last or first) + 1):
        source, data, what, ext = make_case(args.seed, case, root, source_list)
        path = os.path.join(args.out, f"case-{case:06d}{ext}")
        with open(path, "wb") as f:
            f.write(data)
        lines.append(f"{case}\t{path}\t{source}\t{what}")
    print("\n".join(lines))


# ---------------------------------------------------------------------------------------------
# Classification

CLASSES = ["ok", "error", "unclear", "CRASH", "HANG", "HUGE"]
BAD = {"CRASH", "HANG", "HUGE"}

NSERROR = re.compile(r"Error Domain=|NSCocoaErrorDomain|NSPOSIXErrorDomain|UserInfo=|NSUnderlyingError|"
                     r"The operation could not be completed|The operation couldn’t be completed|"
                     r"\bFoundation\.\w+Error\b|Swift\.\w*Error\b|DecodingError")
RAW_SWIFT = re.compile(r"^mprobe: (\w+\.)?[A-Za-z]\w*\((\w+: |\"|\d)|^mprobe: \w+Error\b")
# "mprobe: [INPUT: ][stream #N: ]av_seek_frame: Operation not permitted": FFmpeg's function and
# AVERROR text are the whole message, with no word on what is wrong with the media.
RAW_FFMPEG = re.compile(r"^mprobe: (\S+: )?(stream #\d+: )?(av|avformat|avcodec|avio|avutil|sws|swr)_\w+: ")
FFMPEG_TEXT = re.compile(r"^mprobe: (Invalid data found when processing input|Error number -?\d+ occurred|"
                         r"End of file|Operation not permitted|Invalid argument|Input/output error|"
                         r"Resource temporarily unavailable|Cannot allocate memory|Immediate exit requested|"
                         r"Bug detected, please report the issue|Internal bug, should not have happened)\s*$")
FFMPEG_LOG = re.compile(r"^\[[^\]]+ @ 0x[0-9a-f]+\]")
ALLOCATION = re.compile(r"Could not allocate memory|Cannot allocate memory|out of memory|bad_alloc|"
                        r"failed to allocate|allocation failed|mmap\(\) failed", re.I)


def classify(rc, rss_kb, ms, timeout_s, rss_limit_kb, stderr, stdout, cmd):
    """(class, reason) of one run."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    if rc == 124 or (ms >= timeout_s * 1000 and rc in (137, 143, 130)):
        return "HANG", f"still running after {timeout_s} s"
    if rss_kb > rss_limit_kb:
        return "HUGE", f"peak RSS {rss_kb // 1024} MiB"
    if rc >= 128 and rc != 130:
        if ALLOCATION.search(stderr):
            return "HUGE", f"allocation refused (exit {rc}) under the address-space cap"
        sig = rc - 128
        names = {4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV"}
        return "CRASH", f"signal {sig} ({names.get(sig, '?')})"
    if rc == 0:
        if cmd == "probe" and stdout.strip():
            try:
                json.loads(stdout.splitlines()[0])
            except (ValueError, IndexError):
                return "unclear", "exit 0 but stdout is not JSON"
        return "ok", ""
    if rc == 130:
        return "unclear", "exit 130 (interrupted) without an interrupt"
    if rc == 1:
        return "unclear", "exit 1 (batch failure) for one input"
    if not 2 <= rc <= 6:
        return "unclear", f"exit {rc} is no documented status"
    if not lines:
        # check answers "will it play?" on stdout: a FAILS verdict with exit 5 is its clear answer.
        if cmd == "check" and rc == 5 and re.search(r": FAILS\b", stdout):
            return "error", "check verdict FAILS on stdout"
        return "unclear", "error exit without a message"
    if any(NSERROR.search(l) for l in lines):
        return "unclear", "raw Foundation/NSError text"
    if any(FFMPEG_LOG.match(l) for l in lines):
        return "unclear", "FFmpeg log lines on stderr"
    errors = [l for l in lines if not l.startswith("mprobe: warning:")]
    for l in errors:
        if RAW_FFMPEG.match(l):
            return "unclear", "FFmpeg error without explanation (function: AVERROR text)"
        if FFMPEG_TEXT.match(l):
            return "unclear", "bare FFmpeg error text"
        if RAW_SWIFT.match(l):
            return "unclear", "raw Swift error value"
        if not l.startswith("mprobe: "):
            return "unclear", "stderr line not from mprobe"
    if len(lines) != 1:
        return "unclear", f"{len(lines)} stderr lines"
    return "error", ""


def signature(klass, reason, stderr, cmd):
    """Groups runs into failure classes: the crash site or message shape, with paths and numbers blanked."""
    if klass == "CRASH":
        return crash_site(stderr, reason)
    elif klass == "HUGE":
        text = "allocation refused under the address-space cap" if reason.startswith("allocation") \
            else "peak RSS above the bound"
    elif klass == "HANG":
        text = f"{cmd}: still running at the timeout"
    else:
        first = next((l for l in stderr.splitlines() if l.strip() and not l.startswith("mprobe: warning:")), "")
        text = reason + " | " + first
    text = re.sub(r"https?://[^\s'\"]+?(?=: |\s|\)|$)", "<input>", text)
    text = re.sub(r"/[^\s:'\"]+", "<input>", text)
    text = re.sub(r"0x[0-9a-fA-F]+", "0x…", text)
    text = re.sub(r"\d+", "N", text)
    return text[:300]


def crash_site(stderr, reason):
    """'<runtime message> @ <first frame of our code> (<file>:<line>)' from the Swift backtracer's
    report of the crashed thread; the signal when there is no report."""
    fatal = re.search(r"\*\*\* (Swift runtime failure: [^*\n]+?) \*\*\*|(Fatal error: [^\n]*)|(Program crashed: [^\n]*)", stderr)
    message = next((g for g in fatal.groups() if g), reason).strip() if fatal else reason
    crashed = stderr.split(" crashed:", 1)[1] if " crashed:" in stderr else stderr
    site = ""
    for line in crashed.splitlines():
        m = re.match(r"\s*\d+ (?:\[[^\]]+\] )*\s*0x[0-9a-f]+ (.+?) in \S+ at (\S+?)(?::\d+)?$", line)
        if not m or "[system]" in line or m.group(1).startswith("Swift runtime failure"):
            continue
        function = re.sub(r" \+ \d+$", "", m.group(1)).replace("specialized ", "")
        site = f"{function} ({m.group(2).rsplit('/', 1)[-1]})"
        break
    return (message + (f" @ {site}" if site else ""))[:300]


RUN_COLUMNS = ["case", "command", "mode", "class", "reason", "exit", "rss_kb", "ms", "source", "mutation",
               "signature", "stderr_first_line"]


def cmd_classify(args):
    work, results = args.work, args.results
    cases = {}
    with open(os.path.join(work, "cases.tsv")) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 4:
                cases[parts[0]] = parts
    rec_dir = os.path.join(work, "rec")
    os.makedirs(os.path.join(results, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(results, "stderr"), exist_ok=True)
    runs_path = os.path.join(results, "runs.tsv")
    new_file = not os.path.exists(runs_path)
    kept = set(os.listdir(os.path.join(results, "inputs")))
    per_sig_unclear = {}
    if os.path.exists(runs_path):
        with open(runs_path) as f:
            for row in f:
                p = row.rstrip("\n").split("\t")
                if len(p) >= 11 and p[3] == "unclear":
                    per_sig_unclear[p[10]] = per_sig_unclear.get(p[10], 0) + 1
    with open(runs_path, "a") as out:
        if new_file:
            out.write("\t".join(RUN_COLUMNS) + "\n")
        for name in sorted(os.listdir(rec_dir)):
            if not name.endswith(".tsv"):
                continue
            base = os.path.join(rec_dir, name[:-4])
            with open(base + ".tsv") as f:
                case, cmd, mode, rc, rss, ms = f.read().split()
            stderr = open(base + ".err", errors="replace").read() if os.path.exists(base + ".err") else ""
            stdout = open(base + ".out", errors="replace").read() if os.path.exists(base + ".out") else ""
            klass, reason = classify(int(rc), int(rss or 0), int(ms), args.timeout, args.rss_limit_mb * 1024,
                                     stderr, stdout, cmd)
            _, path, source, what = cases.get(case, [case, "", "?", "?"])
            sig = signature(klass, reason, stderr, cmd)
            first = next((l for l in stderr.splitlines() if l.strip()), "")
            out.write("\t".join([case, cmd, mode, klass, reason, rc, rss or "0", ms, source, what.replace("\t", " "),
                                 sig, first.replace("\t", " ")[:300]]) + "\n")
            keep = klass in BAD
            if klass == "unclear":
                per_sig_unclear[sig] = per_sig_unclear.get(sig, 0) + 1
                keep = per_sig_unclear[sig] <= 5  # a few examples of each unclear message are enough
            if keep:
                shutil.copyfile(base + ".err", os.path.join(results, "stderr", f"{case}.{cmd}.{mode}.txt")) \
                    if os.path.exists(base + ".err") else None
                if path and os.path.exists(path) and os.path.basename(path) not in kept:
                    shutil.copyfile(path, os.path.join(results, "inputs", os.path.basename(path)))
                    kept.add(os.path.basename(path))
            for ext in (".tsv", ".err", ".out"):
                if os.path.exists(base + ext):
                    os.remove(base + ext)


def read_runs(results):
    with open(os.path.join(results, "runs.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        return [dict(zip(header, line.rstrip("\n").split("\t"))) for line in f if line.strip()]


def replay_lines(meta, r):
    seed, case, cmd, mode = meta.get("seed", "?"), r["case"], r["command"], r["mode"]
    args = {"probe": "probe --json", "thumbs": "thumbs --count 3 --out /tmp/fuzz-thumbs --quiet",
            "prefetch": "prefetch --seconds 2 --quiet", "check": "check --seconds 1"}[cmd]
    if not case.isdigit():  # a --replay run: the file itself
        return [f"bench/fuzz.sh --replay {r['source']} --commands {cmd} --modes {mode}"]
    name = f"case-{int(case):06d}{os.path.splitext(r['source'])[1]}"
    focus = f" --sources '{meta['sources']}'" if meta.get("sources") else ""
    lines = [f"bench/fuzz.sh --seed {seed}{focus} --case {case} --commands {cmd} --modes {mode}"]
    lines.append(f"python3 bench/fuzz.py mutate --seed {seed}{focus} --case {case} --out /tmp/{name} && "
                 f".build/release/mprobe {args} --cache-dir /tmp/fuzz-cache /tmp/{name}"
                 + ("   # over HTTP: serve /tmp with nginx, or use the first line" if mode == "http" else ""))
    return lines


def cmd_summary(args):
    results = args.results
    meta = {}
    meta_path = os.path.join(results, "meta.tsv")
    if os.path.exists(meta_path):
        for line in open(meta_path):
            k, _, v = line.rstrip("\n").partition("\t")
            meta[k] = v
    runs = read_runs(results) if os.path.exists(os.path.join(results, "runs.tsv")) else []
    for r in runs:  # these signatures need no stderr: recomputed, so older runs.tsv group the same way
        if r["class"] in ("HUGE", "HANG"):
            r["signature"] = signature(r["class"], r["reason"], "", r["command"])
    commands = [c for c in ["probe", "thumbs", "prefetch", "check"] if any(r["command"] == c for r in runs)]
    modes = [m for m in ["local", "http"] if any(r["mode"] == m for r in runs)]
    count = {}
    for r in runs:
        for key in [(r["command"], r["mode"]), (r["command"], "*"), ("*", r["mode"]), ("*", "*")]:
            count.setdefault(key, {}).setdefault(r["class"], 0)
            count[key][r["class"]] += 1
    cases = sorted({r["case"] for r in runs}, key=lambda c: int(c) if c.isdigit() else -1)
    lines = ["# Fuzz run", ""]
    for k in ["seed", "sources", "cases", "binary", "commands", "modes", "timeout", "rss_limit_mb", "vm_limit_mb", "jobs",
              "started", "finished"]:
        if k in meta:
            lines.append(f"- {k}: {meta[k]}")
    lines.append(f"- mutated inputs: {len(cases)}; runs: {len(runs)}")
    lines += ["", "| command | where | runs | " + " | ".join(CLASSES) + " |",
              "|---|---|---:|" + "---:|" * len(CLASSES)]
    for c in commands + ["*"]:
        for m in modes + ["*"]:
            row = count.get((c, m))
            if not row:
                continue
            lines.append(f"| {'all' if c == '*' else c} | {'all' if m == '*' else m} | {sum(row.values())} | "
                         + " | ".join(str(row.get(k, 0)) for k in CLASSES) + " |")
    lines += ["", "| command | where | peak RSS, max (MiB) | median run (s) | slowest run (s) |", "|---|---|---:|---:|---:|"]
    for c in commands:
        for m in modes:
            rs = [r for r in runs if r["command"] == c and r["mode"] == m]
            if rs:
                ms = sorted(int(r["ms"]) for r in rs)
                lines.append(f"| {c} | {m} | {max(int(r['rss_kb']) for r in rs) // 1024} | {ms[len(ms) // 2] / 1000:.2f} | "
                             f"{ms[-1] / 1000:.2f} |")
    # Failure classes: one entry per signature, with every run that showed it.
    groups = {}
    for r in runs:
        if r["class"] in BAD or r["class"] == "unclear":
            groups.setdefault((r["class"], r["signature"]), []).append(r)
    order = {"CRASH": 0, "HANG": 1, "HUGE": 2, "unclear": 3}
    fail = ["# Failures", "", f"seed {meta.get('seed', '?')}; replay one run with the first command line of its entry.", ""]
    for (klass, sig), rs in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], -len(kv[1]))):
        fail.append(f"## {klass}: {sig}")
        fail.append("")
        by_cmd = {}
        for r in rs:
            by_cmd[f"{r['command']}/{r['mode']}"] = by_cmd.get(f"{r['command']}/{r['mode']}", 0) + 1
        fail.append(f"{len(rs)} runs, {len({r['case'] for r in rs})} inputs; " +
                    ", ".join(f"{k} {v}" for k, v in sorted(by_cmd.items())))
        fail.append("")
        shown = rs if klass in BAD else rs[:3]
        for r in shown[:20]:
            fail.append(f"- case {r['case']} `{r['command']}` {r['mode']}: exit {r['exit']}, {int(r['rss_kb']) // 1024} MiB, "
                        f"{int(r['ms']) / 1000:.1f} s — {r['reason']}")
            fail.append(f"  - source `{r['source']}`; mutation: {r['mutation']}")
            fail.append(f"  - stderr: `{r['stderr_first_line'][:200]}`")
            for l in replay_lines(meta, r):
                fail.append(f"  - `{l}`")
        if len(shown) > 20 or len(rs) > len(shown):
            fail.append(f"- … {len(rs) - min(len(shown), 20)} more in runs.tsv")
        fail.append("")
    bad = sum(len(rs) for (k, _), rs in groups.items() if k in BAD)
    lines += ["", f"Failure classes (details, stderr and replay commands in failures.md):", ""]
    if not groups:
        lines.append("none")
    for (klass, sig), rs in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], -len(kv[1]))):
        lines.append(f"- {klass} ×{len(rs)}: {sig}")
    # The same bytes should give the same answer from a file and from a server: runs whose exit
    # status differs between local and HTTP, grouped by the two statuses and the HTTP message.
    pairs = {}
    for r in runs:
        pairs.setdefault((r["case"], r["command"]), {})[r["mode"]] = r
    differ = {}
    for (case, cmd), both in pairs.items():
        if "local" in both and "http" in both and both["local"]["exit"] != both["http"]["exit"]:
            loc, rem = both["local"], both["http"]
            first = rem["stderr_first_line"] or loc["stderr_first_line"]
            message = signature("error", "", first, cmd).lstrip(" |") if first else "(no stderr: the verdict on stdout)"
            differ.setdefault((cmd, loc["exit"], rem["exit"], message), []).append((loc, rem))
    if differ:
        lines += ["", "Local and HTTP disagree (same mutant, same command, another exit status; see failures.md):", ""]
        fail += ["# Local and HTTP disagree", ""]
        for (cmd, le, he, message), rs in sorted(differ.items(), key=lambda kv: -len(kv[1])):
            seeds = sorted({loc["source"].rsplit("/", 1)[-1] for loc, _ in rs})
            origin = f" (seed files: {', '.join(seeds)})" if len(seeds) <= 3 else f" ({len(seeds)} seed files)"
            lines.append(f"- {cmd}: local exit {le}, HTTP exit {he} ×{len(rs)}: {message}{origin}")
            fail += [f"## {cmd}: local exit {le}, HTTP exit {he}: {message}", ""]
            for loc, rem in rs[:5]:
                fail.append(f"- case {loc['case']}: source `{loc['source']}`; mutation: {loc['mutation']}")
                fail.append(f"  - local: `{loc['stderr_first_line'][:200]}`")
                fail.append(f"  - HTTP: `{rem['stderr_first_line'][:200]}`")
                for mode_run in (loc, rem):
                    fail.append(f"  - `{replay_lines(meta, mode_run)[0]}`")
            if len(rs) > 5:
                fail.append(f"- … {len(rs) - 5} more in runs.tsv")
            fail.append("")
    with open(os.path.join(results, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(results, "failures.md"), "w") as f:
        f.write("\n".join(fail) + "\n")
    print("\n".join(lines))
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("mutate", help="make mutants")
    m.add_argument("--seed", required=True)
    m.add_argument("--cases", help="A-B: make cases A..B into the folder --out")
    m.add_argument("--case", type=int, help="make just this case into the file --out")
    m.add_argument("--out", required=True)
    m.add_argument("--sources", help="regular expression: only seed files whose path matches")
    m.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   help="repository root holding Tests/Corpus/files and Samples")
    c = sub.add_parser("classify", help="classify finished runs of a batch")
    c.add_argument("--work", required=True)
    c.add_argument("--results", required=True)
    c.add_argument("--timeout", type=int, required=True)
    c.add_argument("--rss-limit-mb", type=int, required=True)
    s = sub.add_parser("summary", help="write summary.md and failures.md")
    s.add_argument("--results", required=True)
    args = p.parse_args()
    if args.what == "mutate":
        if (args.case is None) == (args.cases is None):
            p.error("mutate takes --case or --cases")
        cmd_mutate(args)
    elif args.what == "classify":
        cmd_classify(args)
    else:
        sys.exit(cmd_summary(args))


if __name__ == "__main__":
    main()
