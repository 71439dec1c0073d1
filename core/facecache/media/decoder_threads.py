"""How FFmpeg's decoder shares a stream out over the cores: by frames or by slices.

Blender and OpenCV ask for both (FF_THREAD_FRAME | FF_THREAD_SLICE), and FFmpeg then threads by frames. On 2
cores that gains little for H.264: measured on a 1080p clip, 8.6 ms a frame with frame threads against 9.9
with none, while a stream whose frames are cut into slices (x264's sliced threads, many cameras' encoders)
decodes in 4.9 ms with slice threads. A stream of one slice a frame gains nothing from slice threads. So a
stream is threaded by slices when its first frame holds more than one, else as Blender does. The pixels are
the same either way: decoding is exact whatever the threads.

The slices are counted in the first packet's NAL units (H.264 and HEVC; length-prefixed as MP4, MOV and MKV
store them, or with Annex B start codes as MPEG-TS and raw streams do). Other codecs keep FFmpeg's choice.

Frame threads decode the next frames while the caller converts the last one (`decodes_ahead`), and on a
1080p H.264 stream of one slice a frame nearly all of that work falls on one of them (6-7 of its 8.6 ms a
frame): the conversion then takes one core and leaves the other to them (movie.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # PyAV is imported where a movie is opened (media.movie.import_av)
    import av

BLENDERS_CHOICE = "AUTO"  # frames and slices; FFmpeg picks frames where the codec has both
BY_SLICES = "SLICE"


def thread_type(container: av.container.InputContainer, stream: av.video.stream.VideoStream) -> str:
    """The thread type to decode `stream` with: BY_SLICES when its first frame holds several slices. Reads the
    container's first packet of the stream: the caller seeks before decoding."""
    codec = stream.codec_context.name
    if codec not in _SLICE_NAL_TYPES:
        return BLENDERS_CHOICE
    packet = next((packet for packet in container.demux(stream) if packet.size), None)
    if packet is None:
        return BLENDERS_CHOICE
    length_size = _nal_length_size(codec, stream.codec_context.extradata)
    units = _nal_headers(bytes(packet), length_size)
    slices = sum(1 for header in units if _nal_type(codec, header) in _SLICE_NAL_TYPES[codec])
    return BY_SLICES if slices > 1 else BLENDERS_CHOICE


def decodes_ahead(stream: av.video.stream.VideoStream, chosen: str) -> bool:
    """Whether FFmpeg decodes `stream`, threaded as `chosen`, by frames: on threads of its own that work on
    the next frames while the caller holds one. By slices, or on one thread, a frame is decoded while the
    caller waits for it."""
    from av.codec.codec import Capabilities

    by_frames = bool(stream.codec_context.codec.capabilities & Capabilities.frame_threads)
    return by_frames and chosen in (BLENDERS_CHOICE, "FRAME")


# The NAL unit types that hold a slice of a picture (ITU-T H.264 table 7-1, H.265 table 7-1: VCL units).
_SLICE_NAL_TYPES = {"h264": frozenset({1, 2, 5}), "hevc": frozenset(range(32))}


def _nal_type(codec: str, header: int) -> int:
    return header & 0x1F if codec == "h264" else (header >> 1) & 0x3F


def _nal_length_size(codec: str, extradata: bytes | None) -> int | None:
    """The size of each NAL unit's length prefix, from the avcC or hvcC record; None for Annex B streams
    (start codes), whose extradata, if any, does not begin with configuration version 1."""
    if not extradata or extradata[0] != 1:
        return None
    field = 4 if codec == "h264" else 21  # lengthSizeMinusOne, in the two low bits
    return (extradata[field] & 0x03) + 1 if len(extradata) > field else None


def _nal_headers(data: bytes, length_size: int | None) -> list[int]:
    """The first byte of each NAL unit in a packet."""
    if length_size is None:
        return [data[start] for start in _after_start_codes(data) if start < len(data)]
    headers, position = [], 0
    while position + length_size < len(data):
        length = int.from_bytes(data[position:position + length_size], "big")
        headers.append(data[position + length_size])
        position += length_size + length
    return headers


def _after_start_codes(data: bytes) -> list[int]:
    starts, position = [], data.find(b"\x00\x00\x01")
    while position >= 0:
        starts.append(position + 3)
        position = data.find(b"\x00\x00\x01", position + 3)
    return starts
