"""An HTTP/2 upstream (h2c, prior knowledge) that misbehaves on purpose, made of raw frames.

    h2_raw_server.py MODE
        Listens on 127.0.0.1 (an ephemeral port), prints "PORT <n>", serves connections one
        thread each until killed. Every request (HEADERS, with or without a body) is answered as
        MODE says; requests and frames are not validated beyond what the modes need.

    MODE
        graceful   answers 200 "ok <n>" (n counts requests over all connections); after each
                   connection's first answer sends GOAWAY(last = 2^31-1, NO_ERROR), the
                   graceful-shutdown notice, then keeps serving.
        reset      resets every stream with INTERNAL_ERROR (processed, then failed).
        refuse     resets every stream with REFUSED_STREAM (not processed).
        truncate   answers 200 with content-length 100, sends 10 bytes, then ends the connection
                   (FIN, then reads until the sidecar closes).
        noack      answers 200 "ok <n> conn <c>" (c counts connections) but never acknowledges
                   the sidecar's SETTINGS.
        zerowindow advertises SETTINGS_INITIAL_WINDOW_SIZE 0 and never opens a window (no request
                   body can come); answers each request that ends 200 "ok <n> conn <c>".
        bigheaders answers with 150 header fields (over the sidecar's 100).
        goawaymid  answers 200 with content-length 100, sends 10 bytes, then GOAWAY (last = the
                   stream, NO_ERROR: "it will complete") and ends the connection.
        early      answers each request as soon as its HEADERS arrive, before any of its body
                   (which it never opens a window for beyond the first 64 KiB): 200
                   "ok <n> conn <c> rst <codes>", the codes of the RST_STREAM frames the
                   connection received so far, comma-separated.
        slow       answers like early, but half a second after each request ended, and only
                   if the stream was not reset meanwhile.
        unsized    answers each request that ended 200 "ok <n> conn <c>" without a content-length:
                   its HEADERS, then its body and END_STREAM on one DATA frame, in one write.
        lateend    answers each request that ended like early, its whole body by its
                   content-length at once but its END_STREAM (an empty DATA frame) only half a
                   second later, if the stream was not reset meanwhile.
        pinger     before answering each request that ended, sends a PING and waits for its
                   ACK: answers 200 "ok <n> ack <ok or the payload that came> <ms>", how long
                   the ACK took in milliseconds.
        slowreader opens every window as wide as HTTP/2 allows, but reads slowly (a 16 KiB
                   receive buffer, 4 ms after each DATA frame): a large upload fills the sender's
                   socket; answers each request that ended 200 "ok <n> len <body bytes>".
        uppercase  answers with a field whose name has uppercase letters (`X-Up`): malformed in
                   HTTP/2 (RFC 9113 §8.2.1).
        connfield  answers with a `connection: close` field: malformed in HTTP/2 (§8.2.2).
        overlong   answers 200 with content-length 5 and 10 bytes of DATA, then END_STREAM.
        rstmid     the first request of each connection: 200 with content-length 100, 10 bytes,
                   then RST_STREAM (INTERNAL_ERROR); later ones 200 "ok <n> conn <c>".
        silent     never answers the first request of each connection; answers later ones as
                   soon as they end, 200 "ok <n> conn <c> rst <codes>" (as early does).
        goawaylow  on its first connection, once two requests have ended (the first waits 2 s
                   for a second): GOAWAY with the first one's id as the last (NO_ERROR), the
                   first answered, the connection ended; a first request alone is answered
                   after the 2 s. Later connections answer at once, 200 "ok <n> conn <c> rst <codes>".
        trickle    answers each request that ended 200 "ok <n> conn <c>", but writes everything
                   (its SETTINGS too) a byte at a time, a millisecond apart: each frame comes
                   in pieces, split at every byte.
        maxone     allows one stream at a time (SETTINGS_MAX_CONCURRENT_STREAMS 1) and answers
                   each request 50 ms after it ended, 200 "ok <n> conn <c> over <v>"; a stream
                   opened while another is open is refused (RST_STREAM REFUSED_STREAM) and
                   counted in v (over all connections).
        blackhole  answers the first request of each connection 200 "ok <n> conn <c>", then goes
                   silent on that connection: reads and drops everything, answers nothing (no
                   PING either), never closes it, as a peer that vanished would.

Every mode but blackhole's silence answers PINGs (PING with ACK, the same payload).
Header blocks are HPACK literals without indexing or Huffman; request heads are not decoded.
"""
import socket, struct, sys, threading, time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
counter = [0]
connections = [0]
over = [0]
lock = threading.Lock()


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(name, value):
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def read_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def finish(conn):
    # A clean end (FIN after the bytes): closing with the sidecar's frames unread would reset
    # the connection, and a reset may discard what was sent before it.
    conn.shutdown(socket.SHUT_WR)
    conn.settimeout(2)
    while conn.recv(65536):
        pass
    conn.close()


class Trickle:
    """A connection whose sendall writes one byte at a time, a millisecond apart."""

    def __init__(self, conn):
        self.conn = conn
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def sendall(self, data):
        for i in range(len(data)):
            self.conn.sendall(data[i:i + 1])
            time.sleep(0.001)

    def __getattr__(self, name):
        return getattr(self.conn, name)


def serve(conn, mode):
    if mode == "trickle":
        conn = Trickle(conn)
    with lock:
        connections[0] += 1
        number = connections[0]
    try:
        read_exact(conn, len(PREFACE))
        if mode == "zerowindow":
            conn.sendall(frame(4, 0, 0, struct.pack(">HI", 4, 0)))  # SETTINGS_INITIAL_WINDOW_SIZE 0
        elif mode == "maxone":
            conn.sendall(frame(4, 0, 0, struct.pack(">HI", 3, 1)))  # SETTINGS_MAX_CONCURRENT_STREAMS 1
        elif mode == "slowreader":
            # SETTINGS_INITIAL_WINDOW_SIZE and the connection's window at 2^31-1.
            conn.sendall(frame(4, 0, 0, struct.pack(">HI", 4, 0x7FFFFFFF))
                         + frame(8, 0, 0, struct.pack(">I", 0x7FFFFFFF - 65535)))
        else:
            conn.sendall(frame(4, 0, 0))  # our SETTINGS (defaults)
        answered = 0
        received = {}
        resets = []
        reset_streams = set()
        send_lock = threading.Lock()
        open_streams = set()
        first_stream = [None]
        pending_first = []

        def answer_alone(stream):
            # goawaylow: the first request, when no second came to be refused.
            with send_lock:
                if pending_first == [stream]:
                    pending_first.clear()
                    try:
                        answer(stream)
                    except OSError:
                        pass

        def answer_maxone(stream):
            # maxone: the answer, 50 ms after the request ended, unless it was reset.
            with send_lock:
                open_streams.discard(stream)
                if stream in reset_streams:
                    return
                with lock:
                    counter[0] += 1
                    n = counter[0]
                    v = over[0]
                body = b"ok %d conn %d over %d\n" % (n, number, v)
                block = literal(b":status", b"200") + literal(b"content-length", str(len(body)).encode())
                try:
                    conn.sendall(frame(1, 4, stream, block) + frame(0, 1, stream, body))
                except OSError:
                    pass

        def answer(stream, end=True):
            # 200 "ok <n> conn <c> rst <codes>", its END_STREAM on the DATA frame unless `end` is false.
            with lock:
                counter[0] += 1
                n = counter[0]
            body = b"ok %d conn %d rst %s\n" % (n, number, ",".join(map(str, resets)).encode())
            block = literal(b":status", b"200") + literal(b"content-length", str(len(body)).encode())
            conn.sendall(frame(1, 4, stream, block) + frame(0, 1 if end else 0, stream, body))

        def end_late(stream):
            with send_lock:
                if stream in reset_streams:
                    return
                try:
                    conn.sendall(frame(0, 1, stream))
                except OSError:
                    pass

        def answer_late(stream):
            with send_lock:
                if stream in reset_streams:
                    return
                try:
                    answer(stream)
                except OSError:
                    pass

        while True:
            head = read_exact(conn, 9)
            length = struct.unpack(">I", b"\0" + head[:3])[0]
            kind, flags = head[3], head[4]
            stream = struct.unpack(">I", head[5:9])[0] & 0x7FFFFFFF
            payload = read_exact(conn, length)
            if kind == 3:
                with send_lock:
                    resets.append(struct.unpack(">I", payload[:4])[0])
                    reset_streams.add(stream)
                    open_streams.discard(stream)
                continue
            if kind == 4 and not flags & 1:
                if mode != "noack":
                    conn.sendall(frame(4, 1, 0))  # ACK their SETTINGS
                continue
            if mode == "blackhole" and answered > 0:
                continue
            if kind == 6 and not flags & 1:
                with send_lock:
                    conn.sendall(frame(6, 1, 0, payload))
                continue
            if mode == "early" and kind == 1:
                with send_lock:
                    answer(stream)
                continue
            if mode == "maxone" and kind == 1:
                with send_lock:
                    if open_streams:
                        with lock:
                            over[0] += 1
                        conn.sendall(frame(3, 0, stream, struct.pack(">I", 7)))
                        reset_streams.add(stream)
                        continue
                    open_streams.add(stream)
            if mode == "maxone" and stream in reset_streams:
                continue
            if mode in ("rstmid", "silent") and kind == 1 and first_stream[0] is None:
                first_stream[0] = stream
            if mode == "silent" and kind in (0, 1) and flags & 1:
                if stream != first_stream[0]:
                    with send_lock:
                        answer(stream)
                continue
            if mode == "goawaylow" and kind in (0, 1) and flags & 1:
                with send_lock:
                    if number > 1:
                        answer(stream)
                    elif not pending_first:
                        pending_first.append(stream)
                        threading.Timer(2, answer_alone, args=(stream,)).start()
                    else:
                        first = pending_first.pop()
                        conn.sendall(frame(7, 0, 0, struct.pack(">II", first, 0)))
                        answer(first)
                        finish(conn)
                        return
                continue
            if mode == "maxone" and kind in (0, 1) and flags & 1:
                threading.Timer(0.05, answer_maxone, args=(stream,)).start()
                continue
            if mode == "slow" and kind in (0, 1) and flags & 1:
                threading.Timer(0.5, answer_late, args=(stream,)).start()
                continue
            if mode == "lateend" and kind in (0, 1) and flags & 1:
                with send_lock:
                    answer(stream, end=False)
                threading.Timer(0.5, end_late, args=(stream,)).start()
                continue
            if mode in ("early", "slow", "lateend"):
                continue
            if mode == "slowreader" and kind == 0:
                received[stream] = received.get(stream, 0) + length
                time.sleep(0.004)
            # A request ends with END_STREAM, on its HEADERS or on its last DATA.
            if kind not in (0, 1) or not flags & 1:
                continue
            if mode == "reset":
                conn.sendall(frame(3, 0, stream, struct.pack(">I", 2)))
            elif mode == "refuse":
                conn.sendall(frame(3, 0, stream, struct.pack(">I", 7)))
            elif mode == "truncate":
                block = literal(b":status", b"200") + literal(b"content-length", b"100")
                conn.sendall(frame(1, 4, stream, block) + frame(0, 0, stream, b"x" * 10))
                finish(conn)
                return
            elif mode == "rstmid" and stream == first_stream[0]:
                block = literal(b":status", b"200") + literal(b"content-length", b"100")
                conn.sendall(frame(1, 4, stream, block) + frame(0, 0, stream, b"x" * 10)
                             + frame(3, 0, stream, struct.pack(">I", 2)))
            elif mode in ("uppercase", "connfield"):
                extra = literal(b"X-Up", b"1") if mode == "uppercase" else literal(b"connection", b"close")
                block = literal(b":status", b"200") + extra + literal(b"content-length", b"3")
                conn.sendall(frame(1, 4, stream, block) + frame(0, 1, stream, b"ok\n"))
            elif mode == "overlong":
                block = literal(b":status", b"200") + literal(b"content-length", b"5")
                conn.sendall(frame(1, 4, stream, block) + frame(0, 1, stream, b"0123456789"))
            elif mode == "goawaymid":
                block = literal(b":status", b"200") + literal(b"content-length", b"100")
                conn.sendall(frame(1, 4, stream, block) + frame(0, 0, stream, b"x" * 10)
                             + frame(7, 0, 0, struct.pack(">II", stream, 0)))
                finish(conn)
                return
            elif mode == "unsized":
                with lock:
                    counter[0] += 1
                    n = counter[0]
                body = b"ok %d conn %d\n" % (n, number)
                conn.sendall(frame(1, 4, stream, literal(b":status", b"200")) + frame(0, 1, stream, body))
            elif mode == "slowreader":
                with lock:
                    counter[0] += 1
                    n = counter[0]
                body = b"ok %d len %d\n" % (n, received.pop(stream, 0))
                block = literal(b":status", b"200") + literal(b"content-length", str(len(body)).encode())
                conn.sendall(frame(1, 4, stream, block) + frame(0, 1, stream, body))
            elif mode == "pinger":
                payload = b"pinger%02d" % (answered % 100)
                started = time.monotonic()
                conn.sendall(frame(6, 0, 0, payload))
                ack = b"none"
                while True:
                    h = read_exact(conn, 9)
                    n_bytes = struct.unpack(">I", b"\0" + h[:3])[0]
                    body_bytes = read_exact(conn, n_bytes)
                    if h[3] == 6 and h[4] & 1:
                        ack = b"ok" if body_bytes == payload else body_bytes
                        break
                with lock:
                    counter[0] += 1
                    n = counter[0]
                body = b"ok %d ack %s %d\n" % (n, ack, (time.monotonic() - started) * 1000)
                block = literal(b":status", b"200") + literal(b"content-length", str(len(body)).encode())
                conn.sendall(frame(1, 4, stream, block) + frame(0, 1, stream, body))
                answered += 1
            elif mode == "bigheaders":
                block = literal(b":status", b"200") + b"".join(literal(b"x-f%d" % i, b"v") for i in range(150))
                conn.sendall(frame(1, 5, stream, block))
            else:
                with lock:
                    counter[0] += 1
                    n = counter[0]
                body = b"ok %d\n" % n if mode == "graceful" else b"ok %d conn %d\n" % (n, number)
                block = literal(b":status", b"200") + literal(b"content-length", str(len(body)).encode())
                conn.sendall(frame(1, 4, stream, block) + frame(0, 1, stream, body))
                answered += 1
                if answered == 1 and mode == "graceful":
                    conn.sendall(frame(7, 0, 0, struct.pack(">II", 0x7FFFFFFF, 0)))
    except (EOFError, OSError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    mode = sys.argv[1]
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if mode == "slowreader":
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)  # inherited by connections
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print("PORT %d" % listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, mode), daemon=True).start()


if __name__ == "__main__":
    main()
