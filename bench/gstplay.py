"""GStreamer's playbin plays URL from START for SECONDS into fakesinks that keep time, and says
what it did on stderr: `FRAMES n ERROR e` — the video frames of the SECONDS after the seek and
GStreamer's error (None). Prerolled, sought to START (a key unit), played, as an application seeks.

    /usr/bin/python3 bench/gstplay.py URL START SECONDS [--first]

Debian's python3 has the bindings (python3-gi). With --first it stops at the first frame. Used
by the player matrix test and bench/players.py.
"""

import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

Gst.init(None)
url, start, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
first_only = "--first" in sys.argv[4:]
playbin = Gst.ElementFactory.make("playbin")
playbin.set_property("uri", url)
video = Gst.ElementFactory.make("fakesink")
video.set_property("sync", not first_only)  # the first frame as soon as it is decoded
video.set_property("signal-handoffs", True)
audio = Gst.ElementFactory.make("fakesink")
audio.set_property("sync", True)
playbin.set_property("video-sink", video)
playbin.set_property("audio-sink", audio)
loop = GLib.MainLoop()
state = {"frames": 0, "first": None, "sought": start == 0, "error": None}


# Counted from the first frame after the seek (a key frame up to 2 s before START: the prerolled
# ones at 0 are not), for SECONDS of its timestamps.
def frame(sink, buffer, pad):
    t = buffer.pts / Gst.SECOND
    if not state["sought"] or t < start - 2:
        return
    if state["first"] is None:
        state["first"] = t
    if t < state["first"] + seconds and not (first_only and state["frames"]):
        state["frames"] += 1
    else:
        GLib.idle_add(loop.quit)


video.connect("handoff", frame)


def message(bus, m):
    if m.type == Gst.MessageType.ERROR:
        state["error"] = m.parse_error()[0].message
        loop.quit()
    elif m.type == Gst.MessageType.EOS:
        loop.quit()
    elif m.type == Gst.MessageType.ASYNC_DONE and not state["sought"]:
        state["sought"] = True
        playbin.seek_simple(Gst.Format.TIME, Gst.SeekFlags.FLUSH | Gst.SeekFlags.KEY_UNIT, int(start * Gst.SECOND))
        playbin.set_state(Gst.State.PLAYING)


bus = playbin.get_bus()
bus.add_signal_watch()
bus.connect("message", message)
playbin.set_state(Gst.State.PAUSED if start > 0 else Gst.State.PLAYING)
GLib.timeout_add_seconds(40, lambda: (state.update(error="no end after 40 s"), loop.quit()))
loop.run()
playbin.set_state(Gst.State.NULL)
print("FRAMES %d ERROR %s" % (state["frames"], state["error"]), file=sys.stderr)
