#!/usr/bin/env bash
# Makes the small samples committed in Samples/ (run again only to change them).
# Synthetic test patterns from ffmpeg's lavfi sources: no third-party content.
set -euo pipefail
cd "$(dirname "$0")"
common=(-hide_banner -loglevel error -y)
src=(-f lavfi -i "testsrc2=size=320x180:rate=25" -f lavfi -i "sine=frequency=440:sample_rate=44100")
enc=(-t 4 -c:v libx264 -preset veryfast -profile:v high -pix_fmt yuv420p -g 25 -b:v 250k -c:a aac -b:a 64k -ac 2)
ffmpeg "${common[@]}" "${src[@]}" "${enc[@]}" -metadata:s:a:0 language=eng -movflags +faststart faststart.mp4
ffmpeg "${common[@]}" "${src[@]}" "${enc[@]}" -metadata:s:a:0 language=eng moov-at-end.mp4
ffmpeg "${common[@]}" "${src[@]}" "${enc[@]}" -movflags +frag_keyframe+empty_moov+default_base_moof fragmented.mp4
ffmpeg "${common[@]}" -f lavfi -i "testsrc2=size=320x180:rate=25" -f lavfi -i "sine=frequency=330" \
    -t 3 -c:v libvpx-vp9 -b:v 200k -deadline realtime -c:a libopus -b:a 48k sample.webm
ffmpeg "${common[@]}" -f lavfi -i "sine=frequency=440:sample_rate=44100" -t 3 -c:a libmp3lame -b:a 96k sample.mp3
# Audio only, and a video with two audio tracks (English default, French).
ffmpeg "${common[@]}" -f lavfi -i "sine=frequency=440:sample_rate=44100" -t 4 -c:a aac -b:a 64k -movflags +faststart audio-only.m4a
ffmpeg "${common[@]}" "${src[@]}" -f lavfi -i "sine=frequency=660:sample_rate=48000" -map 0:v -map 1:a -map 2:a \
    -t 4 -c:v libx264 -preset veryfast -pix_fmt yuv420p -g 25 -b:v 150k -c:a aac -b:a 48k \
    -metadata:s:a:0 language=eng -metadata:s:a:1 language=fra -disposition:a:0 default -disposition:a:1 0 two-audio.mp4
ls -l faststart.mp4 moov-at-end.mp4 fragmented.mp4 sample.webm sample.mp3 audio-only.m4a two-audio.mp4
