"""What a bench measured, in a form ``scripts/perf_table.py`` reads.

A bench records its headline figures with :func:`record` while it prints its usual report;
given ``--json`` it also prints them as one JSON object on its last line of output, which the
table script parses (so the README's performance table shows what the benches measured).
"""

from __future__ import annotations

import argparse
import json

_RESULTS: dict[str, float] = {}


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="also print the headline figures as one JSON object on the last line",
    )


def record(key: str, value: float) -> None:
    """Keep ``value`` under ``key`` (a later value for the same key replaces it)."""
    _RESULTS[key] = value


def emit(options: argparse.Namespace) -> None:
    """Print the recorded figures as JSON when the bench was given ``--json``."""
    if options.json:
        print(json.dumps(_RESULTS, sort_keys=True), flush=True)
