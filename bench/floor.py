#!/usr/bin/env python3
"""The byte floor of a job: what any tool must read to do it.

Usage: floor.py thumbs FILE MANIFEST.json     (the pictures of a thumbnail job's manifest)
       floor.py prefetch FILE START SECONDS   (a window a player starts at START and plays)
       floor.py probe FILE                    (the header and index alone)
Prints "FLOOR_BYTES WHAT". All count the bytes that say where the key frames are and how long
the file is —
  MP4: ftyp + moov, and every sidx, or else the mfra and the last moof (the duration is its tfdt
  plus its run); a fragmented MP4's index places fragments, so the moof of each fragment a job
  reads from too (its trun says where the samples are); Matroska: everything before the first
  Cluster and the Cues; MP3: its ID3v2 tag and Xing/Info frame (its table of contents); MPEG-TS: its tables
  before the first PES (a probe's bound, issue 14's, is this and 256 KiB) —
plus, for thumbnails, the video packets of the key frames the pictures were decoded from (their
pts in the manifest, looked up in ffprobe's packet list), and for a prefetch, every packet of
every track from the video key frame at or before START (an MP3's table-of-contents point) to
START + SECONDS (a player decodes from there, and the tracks are interleaved).
A layout without an index (no sidx or mfra in a fragmented MP4, no Cues, MPEG-TS) prints "- no
index": a reader has to search for its key frames, so it has no floor of this kind.
"""
import json
import subprocess
import sys


def mp4_boxes(data_path):
    """The top-level boxes of an MP4: (type, offset, size)."""
    boxes = []
    with open(data_path, "rb") as f:
        offset = 0
        while True:
            f.seek(offset)
            head = f.read(16)
            if len(head) < 8:
                break
            size = int.from_bytes(head[0:4], "big")
            kind = head[4:8].decode("latin-1")
            if size == 1:
                size = int.from_bytes(head[8:16], "big")
            elif size == 0:
                f.seek(0, 2)
                size = f.tell() - offset
            if size < 8:
                break
            boxes.append((kind, offset, size))
            offset += size
    return boxes


def mp4_index(boxes):
    """(bytes of the index, True if the file has one) for an MP4, from its top-level boxes."""
    kinds = [b[0] for b in boxes]
    header = sum(size for kind, _, size in boxes if kind in ("ftyp", "moov"))
    if "moof" not in kinds:
        return header, True
    if "sidx" in kinds:
        return header + sum(size for kind, _, size in boxes if kind == "sidx"), True
    if "mfra" in kinds:
        last_moof = [size for kind, _, size in boxes if kind == "moof"][-1]
        return header + sum(size for kind, _, size in boxes if kind == "mfra") + last_moof, True
    return header, False


def vint(data, at, keep_marker):
    first = data[at]
    length = 1
    while length <= 8 and not first & (0x80 >> (length - 1)):
        length += 1
    value = first if keep_marker else first & (0xFF >> length)
    for byte in data[at + 1:at + length]:
        value = value << 8 | byte
    return value, at + length


def matroska_index(data_path):
    """(bytes before the first Cluster + the Cues, True if it has Cues) for a Matroska file."""
    with open(data_path, "rb") as f:
        data = f.read()
    at = 0
    _, at = vint(data, at, True)            # EBML header
    size, at = vint(data, at, False)
    at += size
    _, at = vint(data, at, True)            # Segment
    _, at = vint(data, at, False)
    first_cluster, cues = None, None
    while at < len(data):
        start = at
        ident, at = vint(data, at, True)
        size_at = at
        size, at = vint(data, at, False)
        if ident == 0x1F43B675 and first_cluster is None:
            first_cluster = start
        if ident == 0x1C53BB6B:
            cues = at + size - start
        if size == (1 << (7 * (at - size_at))) - 1:  # an unknown size (written to a pipe): stop
            break
        at += size
    return (first_cluster or 0) + (cues or 0), cues is not None


def packets(data_path):
    """Every packet: (stream index, pts seconds, position, size, key frame)."""
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "packet=stream_index,pts_time,size,pos,flags",
                          "-of", "json", data_path], check=True, capture_output=True, text=True).stdout
    video = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=index",
                            "-of", "csv=p=0", data_path], check=True, capture_output=True, text=True).stdout.strip()
    listed = [(int(p["stream_index"]), float(p["pts_time"]), int(p.get("pos", -1)), int(p["size"]), "K" in p["flags"])
              for p in json.loads(out)["packets"] if "pts_time" in p]
    return listed, int(video) if video else None


def key_frames(listed, video, manifest):
    """(position, size) of the video key frame each picture of the manifest was decoded from."""
    keys = {round(t, 3): (pos, size) for stream, t, pos, size, key in listed if stream == video and key}
    pictures = {round(t["pts"], 3) for t in manifest["thumbnails"]}
    return {keys[min(keys, key=lambda k: abs(k - p))] for p in pictures}


def window(listed, video, start, seconds):
    """(position, size) of every packet from where a player seeking to `start` reads — the video
    key frame at or before it — to its end."""
    keys = [t for stream, t, _, _, key in listed if stream == video and key and t <= start + 1e-6]
    first = max(keys) if keys else start
    return {(pos, size) for _, t, pos, size, _ in listed if first - 1e-6 <= t < start + seconds}


def toc_window(data_path, start, seconds):
    """(position, size) of the packets an MP3 player reads from `start` to its end: ffprobe seeking
    as a player does, to the table-of-contents point at or before the time (the start time
    counted, as the times of the points are), and reading on from there. The times it gives the
    packets are the point's and the frames' after it: no packet list read from the start says
    which bytes those are, since the points' positions are hundredths of the size, not frames."""
    offset = float(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=start_time", "-of", "csv=p=0", data_path],
                                  check=True, capture_output=True, text=True).stdout or 0)
    interval = f"{start + offset}%{start + offset + seconds}"
    out = subprocess.run(["ffprobe", "-v", "error", "-usetoc", "1", "-read_intervals", interval, "-show_entries",
                          "packet=pts_time,size,pos", "-of", "json", data_path], check=True, capture_output=True, text=True).stdout
    return {(int(p["pos"]), int(p["size"])) for p in json.loads(out)["packets"]
            if float(p["pts_time"]) < start + offset + seconds}


def duration(data_path):
    return float(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", data_path],
                                check=True, capture_output=True, text=True).stdout)


def mp3_index(data_path):
    """An ID3v2 tag (a player reads it as it opens the file) and the first frame: the Xing/Info
    frame of a VBR file."""
    with open(data_path, "rb") as f:
        head = f.read(1 << 20)
    at = 0
    if head[:3] == b"ID3":
        at = 10 + (head[6] << 21 | head[7] << 14 | head[8] << 7 | head[9])
    bitrates = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0]
    rates = [44100, 48000, 32000, 0]
    header = head[at:at + 4]
    bitrate, rate, padding = bitrates[header[2] >> 4] * 1000, rates[(header[2] >> 2) & 3], (header[2] >> 1) & 1
    return at + (144 * bitrate // rate + padding if rate and bitrate else 0)


def ts_tables(data_path):
    """The bytes of an MPEG-TS before its first PES: the tables (PAT, PMT, SDT) that name its streams."""
    with open(data_path, "rb") as f:
        head = f.read(1 << 20)
    for at in range(0, len(head) - 188, 188):
        payload = at + 4 + (1 + head[at + 4] if head[at + 3] & 0x20 else 0)
        if head[at + 1] & 0x40 and head[payload:payload + 3] == b"\0\0\x01":
            return at
    return 0


def main():
    job, data_path = sys.argv[1], sys.argv[2]
    boxes = []
    if data_path.endswith((".mp4", ".mov", ".m4v")):
        boxes = mp4_boxes(data_path)
        index, indexed = mp4_index(boxes)
    elif data_path.endswith((".mkv", ".webm")):
        index, indexed = matroska_index(data_path)
    elif data_path.endswith(".mp3"):
        index, indexed = mp3_index(data_path), True
    else:
        index, indexed = ts_tables(data_path), False
    if job == "probe":
        print(index, "header + index")
        return
    if not indexed:
        print("- no index")
        return
    listed, video = packets(data_path)
    if job == "thumbs":
        with open(sys.argv[3]) as f:
            read = key_frames(listed, video, json.load(f))
    else:
        # An MP3's Xing table of contents has a point every hundredth of the duration: a player
        # (libavformat's usetoc) seeks to the one at or before the time and reads on from it.
        if data_path.endswith(".mp3"):
            read = toc_window(data_path, float(sys.argv[3]), float(sys.argv[4]))
        else:
            read = window(listed, video, float(sys.argv[3]), float(sys.argv[4]))
    moofs = {max((b for b in boxes if b[0] == "moof" and b[1] < pos), key=lambda b: b[1], default=("", 0, 0))
             for pos, _ in read}
    print(index + sum(size for _, _, size in moofs) + sum(size for _, size in read), "index + packets")


if __name__ == "__main__":
    main()
