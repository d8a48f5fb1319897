#!/usr/bin/env python3
"""The differential reference: how h11 (an independent, strict HTTP/1.1 parser) frames each
request of the request-head corpus.

Reads JSON from stdin: {"name": "<hex of the message bytes>", ...}; writes JSON to stdout:
{"name": {"accepted", "method", "target", "body", "end", "reason"}, ...} with the same fields
RequestDecision (Tests/HTTP1Fuzzing) gives for HTTP1, so the two can be compared key by key.
Run with the test-only virtual environment that `make h11-venv` creates.
"""
import json
import sys

import h11


def decide(message: bytes) -> dict:
    conn = h11.Connection(our_role=h11.SERVER, max_incomplete_event_size=65536)
    conn.receive_data(message)
    out = {"accepted": False, "method": None, "target": None, "body": None, "end": None, "reason": None}
    try:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            out["reason"] = "incomplete head"
            return out
        if not isinstance(event, h11.Request):
            out["reason"] = f"unexpected event {type(event).__name__}"
            return out
        out["method"] = event.method.decode("latin-1")
        out["target"] = event.target.decode("latin-1")
        reader = conn._reader  # h11 exposes framing only through its reader's type
        kind = type(reader).__name__
        if kind == "ContentLengthReader":
            length = reader._length
            out["body"] = "none" if length == 0 else f"length {length}"
        elif kind == "ChunkedReader":
            out["body"] = "chunked"
        else:
            out["body"] = kind
        out["accepted"] = True
        # Read the body to find where the message ends (or that it is cut short).
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                return out
            if isinstance(event, h11.EndOfMessage):
                trailing, _closed = conn.trailing_data
                out["end"] = len(message) - len(trailing)
                return out
    except h11.RemoteProtocolError as error:
        if out["accepted"]:
            out["reason"] = "body rejected: " + str(error)
            out["accepted"] = False
            out["end"] = None
        else:
            out["reason"] = str(error)
        return out


def main() -> None:
    messages = json.load(sys.stdin)
    json.dump({name: decide(bytes.fromhex(hexed)) for name, hexed in messages.items()}, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
