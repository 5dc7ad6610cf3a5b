"""Cost of masking secrets on a stream (StreamRedactor) against masking the same chunks whole.

A stream (streamed text deltas, a command's output) is masked piece by piece with a held-back
tail, so a secret split across two pieces is masked whole. The baseline, measured in the same
run, is ``redact_secrets`` on each piece alone (which would leak split secrets). Streams of
64 KiB pieces, N MB in total (default 50):

* text: ordinary words and spaces (the usual case);
* no separators: one endless run of key characters, the worst case (the redactor holds up to
  ``MAX_TOKEN_RUN`` of it and scans it again on every piece);
* deltas: 20-character pieces, as streamed model tokens arrive.

Targets: text under 1.5x the baseline, no separators under 5x; deltas under 10 µs added per
delta (a model streams about a hundred a second, so this is what a delta may cost).

    python bench/redact_stream.py [--mb 50]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from jupyter_codelia._redact import StreamRedactor, redact_secrets


def _timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _stream(pieces: list[str]) -> None:
    redactor = StreamRedactor()
    for piece in pieces:
        redactor.feed(piece)
    redactor.flush()


def _whole(pieces: list[str]) -> None:
    for piece in pieces:
        redact_secrets(piece)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=50)
    args = parser.parse_args()
    os.environ["BENCH_SERVICE_TOKEN"] = "tok-bench-0123456789abcdef"  # one env secret to mask
    total = args.mb * 1024 * 1024
    cases = {
        "text": ("lorem ipsum dolor sit amet " * 3000)[:65536],
        "no separators": "A" * 65536,
        "deltas": ("The model writes a sentence. " * 2)[:20],
    }
    for name, piece in cases.items():
        pieces = [piece] * (total // len(piece) if name != "deltas" else 200_000)
        stream = min(_timed(lambda p=pieces: _stream(p)) for _ in range(2))
        whole = min(_timed(lambda p=pieces: _whole(p)) for _ in range(2))
        size = sum(len(p) for p in pieces) / 1e6
        added_us = (stream - whole) / len(pieces) * 1e6
        print(
            f"{name:14s} {size:6.1f} MB  stream {stream:6.3f} s  whole pieces {whole:6.3f} s  "
            f"ratio {stream / whole:5.2f}x  added {added_us:7.2f} us/piece"
        )
    print("target: text <= 1.5x, no separators <= 5x, deltas: added <= 10 us per delta")


if __name__ == "__main__":
    main()
