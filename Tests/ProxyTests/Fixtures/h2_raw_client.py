"""A hand-rolled HTTP/2 client (no library) for what real clients do not do on purpose.

    h2_raw_client.py PORT AUTHORITY reset BIG_PATH SMALL_PATH
        Opens a stream for BIG_PATH, reads until some of its DATA arrived, resets it (CANCEL),
        then opens a second stream for SMALL_PATH on the same connection and reads it to its end.
        Prints "big-data <bytes>", "small-status <status>" and "small-body <body>".
    h2_raw_client.py PORT AUTHORITY smuggle PATH
        Sends one malformed request per connection (RFC 9113 §8.2-8.3) and prints, for each,
        "<case> <RST_STREAM error code or GOAWAY or HEADERS>".
    h2_raw_client.py PORT AUTHORITY limits PATH
        Sends, each on its own stream: a request with 150 fields; one whose few bytes of HPACK
        name a 4 KiB table entry 300 times (1.2 MB decoded); a CONNECT; then, on the same
        connection, eight 200 KB uploads to an unrouted host (answered early) and a GET for PATH.
        Prints each stream's outcome ("<case> <status or RST code> <body>").
    h2_raw_client.py PORT AUTHORITY stall PATH
        POSTs 5 of 10 announced bytes to PATH and waits; prints the stream's outcome and how
        many seconds it took ("stall <status or RST code> <seconds> <body>").
    h2_raw_client.py PORT AUTHORITY headonly PATH
        A POST to PATH without a length whose HEADERS are all it sends; prints the stream's
        outcome and how many seconds it took ("headonly <status or RST code> <seconds> <body>").
    h2_raw_client.py PORT AUTHORITY flood PATH
        Sends 150 malformed requests (an uppercase field name) on one connection in three bursts,
        the last written together with one valid request; prints how many resets came, the GOAWAY's code if one came, and the valid one's fate.
    h2_raw_client.py PORT AUTHORITY noread PATH
        Announces a stream window of 0, GETs PATH and never opens the window; prints how the
        stream ended and after how many seconds ("noread <outcome> <seconds>").
    h2_raw_client.py PORT AUTHORITY stopread PATH
        Opens windows of 16 MiB (stream and connection) with a 4 KiB receive buffer, GETs PATH,
        then reads nothing for 8 s, as an app that hung would; then reads until the connection
        ends or 10 s pass: prints "stopread closed <bytes>" or "stopread open <bytes>".
    h2_raw_client.py PORT AUTHORITY idle PATH
        GETs PATH, reads its response to the end, then waits without a stream open (answering
        nothing but what the server sends); prints "idle <status> closed <seconds after the
        response>" when the server ends the connection, or "idle <status> open" after 10 s.
    h2_raw_client.py PORT AUTHORITY slowread PATH
        GETs PATH with the default windows and reads its response one DATA frame every 10 ms,
        giving each back to the windows as it is read; prints "slowread <status> <body bytes>"
        (or how the stream ended early).
    h2_raw_client.py PORT AUTHORITY rapidreset PATH
        Rapid Reset: 1,000 streams for PATH/<n>, each HEADERS followed at once by RST_STREAM
        (CANCEL), written in batches of 50; prints the GOAWAY's code and last stream if one came
        ("rapidreset goaway <code> last <stream>" or "rapidreset goaway none").
    h2_raw_client.py PORT AUTHORITY provoke PATH
        MadeYouReset: 150 valid GETs for PATH, each followed by a WINDOW_UPDATE that overflows
        the stream's window (the server must reset it); prints how many resets came and the
        GOAWAY's code and last stream ("provoke resets <n> goaway <code> last <stream>").
    h2_raw_client.py PORT AUTHORITY zeroupdate PATH
        MadeYouReset as nghttp2 1.52 takes it: two valid GETs for PATH (streams 1 and 3) and, in
        the same write, a zero WINDOW_UPDATE on stream 1 (a connection error there); prints
        "zeroupdate goaway <code> last <stream>".
    h2_raw_client.py PORT AUTHORITY emptyframes PATH
        A POST to PATH followed by 300 empty DATA frames; prints "emptyframes goaway <code>".
    h2_raw_client.py PORT AUTHORITY pingstream
        Writes PINGs without pause for up to 6 s, reading nothing; prints "pingstream ended
        <seconds>" when a write fails (the server closed or reset the connection), else
        "pingstream open".
    h2_raw_client.py PORT AUTHORITY pingflood
        Sends 20,000 PINGs with a 4 KiB receive buffer, reading nothing; then reads what came and
        prints "pingflood goaway <code> closed" when the connection ended with a GOAWAY.
    h2_raw_client.py PORT AUTHORITY pingpong PATH
        A conversation on one stream: a POST to PATH without a length, then 100 times one DATA
        frame "ping <i>\\n" and a wait for the response's "echo ping <i>\\n" before the next;
        prints "pingpong <rounds answered> <status>" (or how the stream ended early).
    h2_raw_client.py PORT AUTHORITY pingpongsplit PATH
        The same, every frame the client sends written a byte at a time.
    h2_raw_client.py PORT AUTHORITY pingpongdrop PATH N
        The same, the client closing its connection once N answers came (0: right after its
        HEADERS); prints "pingpong N dropped".
    h2_raw_client.py PORT AUTHORITY uploads PATH
        Three POSTs to PATH without a length, one after the other on one connection, each its
        HEADERS and one DATA frame with END_STREAM in one write (a unary gRPC call's shape);
        prints each stream's outcome and body ("upload <n> <status> <body>").
    h2_raw_client.py PORT AUTHORITY pings PATH
        A PING on the connection while no stream is open, then a GET for PATH written together
        with a second PING; prints "pings idle <ok or missing> <ms> call <ok or missing> <status>":
        each PING's ACK carried its payload (the idle one's came after <ms> milliseconds).
    h2_raw_client.py PORT AUTHORITY pingdrop
        Ten connections that each send a PING and close at once, before its answer can come
        (one of them a byte at a time, closing mid-frame); prints "pingdrop 10".
Header blocks are HPACK literals without indexing or Huffman (but for the table entry); response heads are read only for
":status" (indexed in the static table, or a literal).
"""
import socket, struct, sys, time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(name, value):
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def block(fields):
    return b"".join(literal(n.encode(), v.encode()) for n, v in fields)


class Connection:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""
        self.sock.sendall(PREFACE + frame(4, 0, 0))

    def read_frame(self):
        while True:
            if len(self.buffer) >= 9:
                length = struct.unpack(">I", b"\0" + self.buffer[:3])[0]
                if len(self.buffer) >= 9 + length:
                    kind, flags = self.buffer[3], self.buffer[4]
                    stream = struct.unpack(">I", self.buffer[5:9])[0] & 0x7FFFFFFF
                    payload = self.buffer[9:9 + length]
                    self.buffer = self.buffer[9 + length:]
                    if kind == 4 and not flags & 1:
                        self.sock.sendall(frame(4, 1, 0))  # ACK the server's SETTINGS
                    if kind == 0 and payload:
                        # As a real client does: what was read is given back to the connection's
                        # window (the stream's too), or a reset stream's DATA would use it up.
                        increment = struct.pack(">I", len(payload))
                        self.sock.sendall(frame(8, 0, 0, increment) + frame(8, 0, stream, increment))
                    return kind, flags, stream, payload
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk

    def request(self, stream, fields, end=True):
        self.sock.sendall(frame(1, 0x4 | (1 if end else 0), stream, block(fields)))


def status_of(payload):
    # :status 200 is static index 8 (0x88); others: indexed 9-14, or a literal with name index 8.
    table = {0x88: "200", 0x89: "204", 0x8a: "206", 0x8b: "304", 0x8c: "400", 0x8d: "404", 0x8e: "500"}
    if payload and payload[0] in table:
        return table[payload[0]]
    if len(payload) >= 5 and payload[0] & 0x0F == 8:
        return payload[2:2 + payload[1]].decode()
    return "?"


def outcome_of(c, stream, headers=True, ended="nothing"):
    """Reads until `stream` is reset, the connection goes away or (with `headers`) the stream's
    HEADERS arrive: "RST_STREAM <code>", "GOAWAY <code>", "HEADERS <status>", or `ended` when
    the connection closes first."""
    while True:
        f = c.read_frame()
        if f is None:
            return ended
        kind, flags, sid, payload = f
        if kind == 3 and sid == stream:
            return "RST_STREAM %d" % struct.unpack(">I", payload)[0]
        if kind == 7:
            return "GOAWAY %d" % struct.unpack(">I", payload[4:8])[0]
        if headers and kind == 1 and sid == stream:
            return "HEADERS " + status_of(payload)


def get(authority, path):
    return [(":method", "GET"), (":scheme", "http"), (":authority", authority), (":path", path)]


def reset(port, authority, big, small):
    c = Connection(port)
    c.request(1, get(authority, big))
    got = 0
    while got < 16384:
        f = c.read_frame()
        if f is None:
            print("closed-early")
            return
        if f[0] == 0 and f[2] == 1:
            got += len(f[3])
    c.sock.sendall(frame(3, 0, 1, struct.pack(">I", 8)))  # RST_STREAM CANCEL
    print("big-data", got)
    c.request(3, get(authority, small))
    body, status = b"", "?"
    while True:
        f = c.read_frame()
        if f is None:
            print("closed-early")
            return
        kind, flags, stream, payload = f
        if stream != 3:
            continue
        if kind == 1:
            status = status_of(payload)
        elif kind == 0:
            body += payload
        elif kind == 3:
            print("small-reset", struct.unpack(">I", payload)[0])
            return
        if kind in (0, 1) and flags & 1:
            break
    print("small-status", status)
    print("small-body", body.decode(errors="replace").strip())


def smuggle(port, authority, path):
    base = get(authority, path)
    cases = {
        "uppercase-name": base + [("X-Token", "a")],
        "transfer-encoding": base + [("transfer-encoding", "chunked")],
        "connection": base + [("connection", "keep-alive")],
        "te-gzip": base + [("te", "gzip")],
        "crlf-in-value": base + [("x-a", "b\r\nx-injected: 1")],
        "nul-in-value": base + [("x-a", "b\x00c")],
        "duplicate-path": base + [(":path", "/other")],
        "pseudo-after-regular": base[:3] + [("x-a", "b"), (":path", path)],
        "missing-method": base[1:],
    }
    for name, fields in cases.items():
        c = Connection(port)
        c.request(1, fields)
        print(name, outcome_of(c, 1))
        c.sock.close()
    # A content-length that the DATA contradicts.
    c = Connection(port)
    c.request(1, [(":method", "POST")] + base[1:] + [("content-length", "10")], end=False)
    c.sock.sendall(frame(0, 1, 1, b"x" * 11))
    print("content-length-vs-data", outcome_of(c, 1))
    c.sock.close()
    # And one that the stream's end contradicts: fewer bytes, then END_STREAM.
    c = Connection(port)
    c.request(1, [(":method", "POST")] + base[1:] + [("content-length", "10")], end=False)
    c.sock.sendall(frame(0, 0, 1, b"x" * 5) + frame(0, 1, 1, b"x" * 4))
    print("content-length-over-data", outcome_of(c, 1))


def read_until_end(c, stream, status_code=False):
    """Reads `stream` to its end: (outcome, body). The outcome is "headers" once a HEADERS
    frame came (with `status_code`, its ":status"), "closed", "GOAWAY <code>", or "... RST <code>"."""
    status, body = "?", b""
    while True:
        f = c.read_frame()
        if f is None:
            return "closed", body
        kind, flags, sid, payload = f
        if kind == 7:
            return "GOAWAY %d" % struct.unpack(">I", payload[4:8])[0], body
        if sid != stream:
            continue
        if kind == 1:
            status = status_of(payload) if status_code else "headers"
        elif kind == 0:
            body += payload
        elif kind == 3:
            return status + " RST %d" % struct.unpack(">I", payload)[0], body
        if kind in (0, 1) and flags & 1:
            return status, body


def uploads(port, authority, path):
    c = Connection(port)
    for n in range(3):
        stream = 1 + 2 * n
        fields = [(":method", "POST"), (":scheme", "http"), (":authority", authority), (":path", path)]
        c.sock.sendall(frame(1, 0x4, stream, block(fields)) + frame(0, 1, stream, b"upload %d" % n))
        status, body = read_until_end(c, stream, status_code=True)
        print("upload %d %s %s" % (n, status, body.decode(errors="replace").strip()))


def limits(port, authority, path):
    c = Connection(port)
    c.request(1, get(authority, path) + [("x-f-%d" % i, "v") for i in range(150)])
    print("many-fields", *read_until_end(c, 1))
    # One 4,000-byte value added to the dynamic table, then named 300 times by one byte each.
    big = b"\x40" + bytes([5]) + b"x-big" + bytes([0x7F, 0xA1, 0x1E]) + b"b" * 4000  # length 4000: 127 + 3873 (RFC 7541 5.1)
    block_ = b"".join(literal(n.encode(), v.encode()) for n, v in get(authority, path)) + big + b"\xbe" * 300
    c.sock.sendall(frame(1, 5, 3, block_))
    print("table-bomb", *read_until_end(c, 3))
    c.request(5, [(":method", "CONNECT"), (":authority", "elsewhere.test:443")])
    print("connect", *read_until_end(c, 5))
    stream = 7
    for i in range(8):
        c.request(stream, [(":method", "POST"), (":scheme", "http"), (":authority", "unrouted.test"), (":path", "/up"),
                           ("content-length", "200000")], end=False)
        data = b"u" * 200000
        for offset in range(0, len(data), 16384):
            chunk = data[offset:offset + 16384]
            c.sock.sendall(frame(0, 1 if offset + 16384 >= len(data) else 0, stream, chunk))
        stream += 2
    c.request(stream, get(authority, path))
    outcome, body = read_until_end(c, stream)
    print("after-uploads", outcome, body.decode(errors="replace").strip())


def refusedhead(port, authority, path):
    # A head nghttp2 takes but the HTTP/1.1 rules refuse (a fragment in the path), its
    # body the HTTP/2 preface and a request, sent at once: a 400 for the stream, never a
    # connection inside it.
    body = PREFACE + frame(4, 0, 0) + frame(1, 5, 1, block(get(authority, path)))
    c = Connection(port)
    fields = [(":method", "POST"), (":scheme", "http"), (":authority", authority), (":path", path + "#frag"),
              ("content-length", str(len(body)))]
    c.sock.sendall(frame(1, 4, 1, block(fields)) + frame(0, 1, 1, body))
    outcome, answer = read_until_end(c, 1)
    print("fragment-in-path", outcome, answer.decode(errors="replace").strip())
    c.request(3, get(authority, path))
    outcome, answer = read_until_end(c, 3)
    print("next-stream", outcome, answer.decode(errors="replace").strip())


def stall(port, authority, path):
    import time
    c = Connection(port)
    c.request(1, [(":method", "POST")] + get(authority, path)[1:] + [("content-length", "10")], end=False)
    c.sock.sendall(frame(0, 0, 1, b"12345"))
    start = time.monotonic()
    outcome, body = read_until_end(c, 1)
    print("stall", outcome, "%.1f" % (time.monotonic() - start), body.decode(errors="replace").strip())


def headonly(port, authority, path):
    import time
    c = Connection(port)
    c.request(1, [(":method", "POST")] + get(authority, path)[1:], end=False)
    start = time.monotonic()
    outcome, body = read_until_end(c, 1, status_code=True)
    print("headonly", outcome, "%.1f" % (time.monotonic() - start), body.decode(errors="replace").strip())


def noread(port, authority, path):
    import time
    c = Connection(port)
    c.sock.sendall(frame(4, 0, 0, struct.pack(">HI", 4, 0)))  # SETTINGS_INITIAL_WINDOW_SIZE = 0
    c.request(1, get(authority, path))
    start = time.monotonic()
    outcome = outcome_of(c, 1, headers=False, ended="closed").replace("RST_STREAM", "RST")
    print("noread", outcome, "%.1f" % (time.monotonic() - start))


def stopread(port, authority, path):
    """An app that hangs with its windows wide open: see the module's help."""
    import time
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    # SETTINGS_INITIAL_WINDOW_SIZE 16 MiB, and the connection's window opened as wide.
    sock.sendall(PREFACE + frame(4, 0, 0, struct.pack(">HI", 4, 1 << 24)) + frame(8, 0, 0, struct.pack(">I", (1 << 24) - 65535)))
    sock.sendall(frame(1, 0x5, 1, block(get(authority, path))))
    time.sleep(8)
    received, state, deadline = 0, "open", time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            state = "closed"
            break
        except socket.timeout:
            break
        if not chunk:
            state = "closed"
            break
        received += len(chunk)
    print("stopread", state, received)


def ended(port, authority, path, split=False):
    """A GET ended with its head (with `split`, its HEADERS frame sent a byte at a time, so the
    server reads it in pieces): reads its response to its end, then a PING's ACK; prints the
    outcome, how many RST_STREAM frames came, and the body. (A PING's ACK may overtake frames
    queued before it, but a reset this proxy sends after a response is queued with the
    response's last DATA, before the PING arrives: one would be counted.)"""
    import time
    c = Connection(port)
    if split:
        for byte in frame(1, 0x5, 1, block(get(authority, path))):
            c.sock.sendall(bytes([byte]))
            time.sleep(0.002)
    else:
        c.request(1, get(authority, path))
    outcome, body = read_until_end(c, 1)
    c.sock.sendall(frame(6, 0, 0, b"12345678"))
    resets = 0
    while True:
        f = c.read_frame()
        if f is None:
            break
        kind, flags, _, _ = f
        if kind == 3:
            resets += 1
        if kind == 6 and flags & 1:
            break
    print("ended", outcome, "resets", resets, body.decode(errors="replace").strip())


def idle(port, authority, path):
    import time
    c = Connection(port)
    c.request(1, get(authority, path))
    outcome, _ = read_until_end(c, 1)
    ended = time.monotonic()
    c.sock.settimeout(10)
    try:
        while c.read_frame() is not None:
            pass
    except socket.timeout:
        print("idle", outcome, "open")
        return
    except ConnectionResetError:
        pass
    print("idle", outcome, "closed", "%.1f" % (time.monotonic() - ended))


def slowread(port, authority, path):
    import time
    c = Connection(port)
    c.request(1, get(authority, path))
    status, got = "?", 0
    while True:
        f = c.read_frame()
        if f is None:
            print("slowread closed", status, got)
            return
        kind, flags, sid, payload = f
        if sid != 1:
            continue
        if kind == 3:
            print("slowread RST", struct.unpack(">I", payload)[0], got)
            return
        if kind == 1 and status == "?":
            status = status_of(payload)
        if kind == 0:
            got += len(payload)
            time.sleep(0.01)
        if kind in (0, 1) and flags & 1:
            break
    print("slowread", status, got)


def flood(port, authority, path):
    c = Connection(port)
    # Three bursts of 50 (each within the advertised 100 streams, so that nghttp2 refuses none
    # for concurrency), each burst's resets awaited; the valid stream goes in the last burst's
    # write, so the sidecar reads it in the same bytes as the refusal that spends the budget.
    resets, goaway, valid = 0, "none", "none"
    last = 1 + 2 * 150
    for burst in range(3):
        ids = [1 + 2 * (50 * burst + i) for i in range(50)]
        data = b"".join(frame(1, 0x5, i, block(get(authority, path) + [("X-Bad", "1")])) for i in ids)
        if burst == 2:
            data += frame(1, 0x5, last, block(get(authority, path)))
        c.sock.sendall(data)
        awaited = resets + 50
        while burst == 2 or resets < awaited:
            f = c.read_frame()
            if f is None:
                break
            kind, flags, stream, payload = f
            if kind == 3:
                resets += 1
            elif kind == 7:
                goaway = "%d last %d" % (struct.unpack(">I", payload[4:8])[0], struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF)
            elif kind == 1 and stream == last:
                valid = "answered"
        if burst == 2 or f is None:
            break
    print("resets", resets, "goaway", goaway, "valid", valid)


def goaway_of(payload):
    return "%d last %d" % (struct.unpack(">I", payload[4:8])[0], struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF)


def read_goaway(c, count_resets=False):
    """Reads to the connection's end; returns (resets seen, the first GOAWAY or "none")."""
    resets, goaway = 0, "none"
    while True:
        try:
            f = c.read_frame()
        except (ConnectionResetError, socket.timeout):
            break
        if f is None:
            break
        kind, flags, stream, payload = f
        if kind == 3:
            resets += 1
        elif kind == 7 and goaway == "none":
            goaway = goaway_of(payload)
    return resets, goaway


def rapidreset(port, authority, path):
    c = Connection(port)
    cancel = struct.pack(">I", 8)
    try:
        for batch in range(20):
            ids = [1 + 2 * (50 * batch + i) for i in range(50)]
            c.sock.sendall(b"".join(frame(1, 0x5, i, block(get(authority, "%s/%d" % (path, i)))) + frame(3, 0, i, cancel)
                                    for i in ids))
    except (BrokenPipeError, ConnectionResetError):
        pass
    print("rapidreset goaway", read_goaway(c)[1])


def provoke(port, authority, path):
    c = Connection(port)
    overflow = struct.pack(">I", 0x7FFFFFFF)
    resets, goaway = 0, "none"
    try:
        # Three bursts of 50, each burst's resets awaited (so that no stream is refused for
        # concurrency: each burst's streams are closed before the next opens).
        for batch in range(3):
            ids = [1 + 2 * (50 * batch + i) for i in range(50)]
            c.sock.sendall(b"".join(frame(1, 0x5, i, block(get(authority, path))) + frame(8, 0, i, overflow) for i in ids))
            if batch == 2:
                break
            awaited = resets + 50
            while resets < awaited:
                f = c.read_frame()
                if f is None:
                    break
                if f[0] == 3:
                    resets += 1
                elif f[0] == 7 and goaway == "none":
                    goaway = goaway_of(f[3])
    except (BrokenPipeError, ConnectionResetError):
        pass
    more, last_goaway = read_goaway(c)
    print("provoke resets", resets + more, "goaway", goaway if goaway != "none" else last_goaway)


def zeroupdate(port, authority, path):
    c = Connection(port)
    c.sock.sendall(frame(1, 0x5, 1, block(get(authority, path))) + frame(1, 0x5, 3, block(get(authority, path)))
                   + frame(8, 0, 1, struct.pack(">I", 0)))
    print("zeroupdate goaway", read_goaway(c)[1])


def emptyframes(port, authority, path):
    c = Connection(port)
    post = [(":method", "POST"), (":scheme", "http"), (":authority", authority), (":path", path)]
    c.sock.sendall(frame(1, 0x4, 1, block(post)) + frame(0, 0, 1) * 300)
    print("emptyframes goaway", read_goaway(c)[1].split(" ")[0])


def pingstream(port):
    import time
    s = socket.socket()
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall(PREFACE + frame(4, 0, 0))
    batch = frame(6, 0, 0, b"12345678") * 500
    start = time.monotonic()
    try:
        while time.monotonic() - start < 6:
            s.sendall(batch)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        print("pingstream ended", "%.1f" % (time.monotonic() - start))
        return
    print("pingstream open")


def pingflood(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall(PREFACE + frame(4, 0, 0))
    ping = frame(6, 0, 0, b"12345678")
    try:
        for _ in range(40):
            s.sendall(ping * 500)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    c = Connection.__new__(Connection)
    c.sock, c.buffer = s, b""
    goaway = "none"
    try:
        while True:
            f = c.read_frame()
            if f is None:
                break
            if f[0] == 7 and goaway == "none":
                goaway = str(struct.unpack(">I", f[3][4:8])[0])
    except (ConnectionResetError, socket.timeout, BrokenPipeError):
        pass
    print("pingflood goaway", goaway, "closed")


def pings(port, authority, path):
    c = Connection(port)
    c.sock.settimeout(5)
    answers = {}

    def note(f):
        # Each PING answer by its payload; True once `f` ends stream 1 (or there is no more).
        if f is None:
            return True
        kind, flags, sid, payload = f
        if kind == 6 and flags & 1:
            answers[payload] = True
        return sid == 1 and (kind in (0, 1) and flags & 1 or kind == 3)

    start = time.monotonic()
    c.sock.sendall(frame(6, 0, 0, b"idle0001"))
    while b"idle0001" not in answers and not note(c.read_frame()):
        pass
    idle_ms = (time.monotonic() - start) * 1000
    c.sock.sendall(frame(1, 0x5, 1, block([(":method", "GET"), (":scheme", "http"), (":authority", authority), (":path", path)]))
                   + frame(6, 0, 0, b"call0001"))
    status = "?"
    while True:
        f = c.read_frame()
        if f is not None and f[2] == 1 and f[0] == 1:
            status = status_of(f[3])
        if note(f):
            break
    # Its answer may come after the response (it waits a millisecond for frames to ride with).
    c.sock.settimeout(2)
    try:
        while b"call0001" not in answers and not note(c.read_frame()):
            pass
    except socket.timeout:
        pass
    said = lambda payload: "ok" if payload in answers else "missing"
    print("pings idle %s %d call %s %s" % (said(b"idle0001"), idle_ms, said(b"call0001"), status))


def pingdrop(port):
    for index in range(10):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        data = PREFACE + frame(4, 0, 0) + frame(6, 0, 0, b"drop%04d" % index)
        if index == 0:
            for byte in range(len(data) - 4):
                s.sendall(data[byte:byte + 1])
        else:
            s.sendall(data)
        s.close()
    print("pingdrop 10")


def pingpong(port, authority, path, split=False, drop_after=None):
    """The conversation; with `split`, every frame the client sends goes a byte at a time (each
    byte its own segment); with `drop_after` N, the client closes its connection (no END_STREAM,
    no RST_STREAM) once N answers came and prints "pingpong N dropped"."""
    c = Connection(port)
    c.sock.settimeout(5)
    # As interactive clients do: its small writes (a window update, then the next message)
    # are not held back by Nagle's algorithm until the previous one is acknowledged.
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(data):
        if not split:
            c.sock.sendall(data)
            return
        for index in range(len(data)):
            c.sock.sendall(data[index:index + 1])

    send(frame(1, 0x4, 1, block([(":method", "POST"), (":scheme", "http"), (":authority", authority), (":path", path)])))
    status, answered, pending = "?", 0, b""
    for i in range(100):
        if answered == drop_after:
            c.sock.close()
            print("pingpong %d dropped" % answered)
            return
        expected = b"echo ping %d\n" % i
        send(frame(0, 0, 1, b"ping %d\n" % i))
        while len(pending) < len(expected):
            try:
                f = c.read_frame()
            except socket.timeout:
                f = None
            if f is None:
                print("pingpong %d %s waited" % (answered, status))
                return
            kind, flags, sid, payload = f
            if sid != 1:
                continue
            if kind == 1:
                status = status_of(payload)
            elif kind == 0:
                pending += payload
            elif kind == 3:
                print("pingpong %d RST_STREAM %d" % (answered, struct.unpack(">I", payload)[0]))
                return
        if pending[:len(expected)] != expected:
            print("pingpong %d %s got %r" % (answered, status, pending[:40]))
            return
        pending = pending[len(expected):]
        answered += 1
    send(frame(0, 1, 1))
    print("pingpong %d %s" % (answered, status))


if __name__ == "__main__":
    port, authority, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    if mode == "reset":
        reset(port, authority, sys.argv[4], sys.argv[5])
    elif mode == "pingpong":
        pingpong(port, authority, sys.argv[4])
    elif mode == "pingpongsplit":
        pingpong(port, authority, sys.argv[4], split=True)
    elif mode == "pingpongdrop":
        pingpong(port, authority, sys.argv[4], drop_after=int(sys.argv[5]))
    elif mode == "pingflood":
        pingflood(port)
    elif mode == "pingstream":
        pingstream(port)
    elif mode == "pingdrop":
        pingdrop(port)
    else:
        # Every other mode: one PATH (an unknown mode is "smuggle").
        modes = {"limits": limits, "refusedhead": refusedhead, "stall": stall, "headonly": headonly, "flood": flood, "rapidreset": rapidreset, "provoke": provoke,
                 "zeroupdate": zeroupdate, "emptyframes": emptyframes, "noread": noread, "slowread": slowread, "stopread": stopread,
                 "idle": idle, "ended": ended, "pings": pings, "uploads": uploads, "endedsplit": lambda p, a, path: ended(p, a, path, split=True)}
        modes.get(mode, smuggle)(port, authority, sys.argv[4])
