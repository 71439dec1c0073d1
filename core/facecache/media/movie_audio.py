"""The source's audio in a finished movie (`movie_out`): its default audio stream over the frames' span,
stream-copied where the movie's container can hold the codec (FFmpeg's own list for that muxer), else
decoded, trimmed to the sample and encoded to AAC. Copied packets are kept whole, so a copied track may
begin up to one packet (21 ms of 48 kHz AAC) before the first frame: that packet primes the decoder."""

from __future__ import annotations

import os
from fractions import Fraction
from typing import Iterator

import numpy as np

from facecache.media.movie_source import MovieSource

REENCODED = "aac"  # what audio the container cannot hold becomes: every movie container here takes it


class AudioCarry:
    """The source's audio over `span` (seconds of the source), into the movie: copied packets where the
    container takes the codec, else decoded, trimmed to the sample and encoded to AAC. Read lazily, in
    step with the pictures, so a long clip's audio is never held in memory."""

    def __init__(self, out, source: MovieSource, span: tuple[Fraction, Fraction]):
        import av

        self.out, self.span = out, span
        self.said = "none"
        self._pending: Iterator | None = None
        self._held = None
        self._input = None
        if source.audio_stream is None:
            return
        self._input = av.open(os.fspath(source.path))
        template = self._input.streams[source.audio_stream]
        supported = getattr(out, "supported_codecs", None)  # FFmpeg's list for this muxer, where PyAV offers it
        if supported is not None and source.audio_codec in supported:
            self.stream = out.add_stream_from_template(template)
            self._pending = self._copied(template)
            self.said = f"copied {source.audio_codec}"
        else:
            context = template.codec_context
            self.stream = out.add_stream(REENCODED, rate=context.sample_rate)
            self.stream.layout = _named_layout(context.layout)
            self._pending = self._encoded(template)
            self.said = f"{source.audio_codec} re-encoded to {REENCODED}"

    def _copied(self, template) -> Iterator:
        start, end = self.span
        shift = round(start / template.time_base)
        for packet in self._input.demux(template):
            if packet.pts is None or not packet.size:
                continue
            begins = packet.pts * template.time_base
            if begins >= end:
                break
            # A packet ending at the start is kept: an AAC stream's first one primes its decoder.
            if begins + (packet.duration or 0) * template.time_base < start:
                continue
            packet.pts -= shift
            if packet.dts is not None:
                packet.dts -= shift
            packet.stream = self.stream
            yield packet

    def _encoded(self, template) -> Iterator:
        import av

        start, end = self.span
        rate = template.codec_context.sample_rate
        for frame in self._input.decode(template):
            if frame.pts is None:
                continue
            begins = frame.pts * frame.time_base
            first = max(0, round((start - begins) * rate))
            last = min(frame.samples, round((end - begins) * rate))
            if begins >= end:
                break
            if last <= first:
                continue
            samples = frame.to_ndarray()
            channels = 1 if frame.format.is_planar else len(frame.layout.channels)
            kept = samples[:, first * channels:last * channels] if channels > 1 else samples[:, first:last]
            part = av.AudioFrame.from_ndarray(np.ascontiguousarray(kept), format=frame.format.name,
                                              layout=frame.layout.name)
            part.sample_rate = rate
            part.time_base = Fraction(1, rate)
            part.pts = round((begins - start) * rate) + first  # the movie's time, in samples
            yield from self.stream.encode(part)
        yield from self.stream.encode(None)

    def close(self) -> None:
        if self._input is not None:
            self._input.close()
            self._input = None

    def mux_until(self, seconds: Fraction | None) -> None:
        """Mux the audio packets that begin before `seconds` of the movie (None: all that are left)."""
        while self._pending is not None:
            if self._held is None:
                self._held = next(self._pending, None)
                if self._held is None:
                    self._pending = None
                    self.close()
                    return
            packet = self._held
            if seconds is not None and packet.pts is not None and packet.pts * packet.time_base > seconds:
                return
            self._held = None
            self.out.mux(packet)


# Layouts by channel count, for a source whose layout names no speakers ("1 channels"): the encoder
# needs to know which channel is which.
_DEFAULT_LAYOUTS = {1: "mono", 2: "stereo", 3: "2.1", 4: "quad", 5: "5.0", 6: "5.1", 7: "6.1", 8: "7.1"}


def _named_layout(layout) -> str:
    name = layout.name
    return _DEFAULT_LAYOUTS.get(len(layout.channels), name) if name.endswith("channels") else name
