"""gRPC peers for the tests, on grpcio (gRPC's C-core), with raw-bytes messages (no protobuf).

    grpc_peer.py server [--gate ACCEPT_PREFIX REVOKED_FILE] [--tls CERT KEY] [--dir DIR]
        A gRPC server on 127.0.0.1, plaintext (h2c) or with --tls; prints "PORT <n>". With --gate,
        an interceptor fails every call UNAUTHENTICATED (trailers-only) unless it has exactly one
        authorization, "Bearer <ACCEPT_PREFIX>…", not a token listed in REVOKED_FILE (re-read
        per call).
        With --dir, calls the client abandoned leave a file there (slow-cancelled, watch-cancelled).
        Methods of test.Orders:
        Get (unary): answers "auth=<authorization metadata> peer=<connection's peer> via=<via
            metadata, - for none>", and
            trailing metadata "x-order: 42".
        Watch (server streaming): as many messages "update <i>" as the request says (3 if empty).
        Missing (unary): fails NOT_FOUND with the message "no such order".
        Upload (client streaming): answers "messages=<n> bytes=<n>".
        Chat (bidirectional): answers each message with "echo <message>".
        Big (unary): answers the SHA-256 of the request, "|", and as many bytes again.
        Custom (unary): fails FAILED_PRECONDITION "order 42 is closed: früh" with trailing
            metadata x-reason: closed and x-data-bin: 00 01 02.
        Slow (unary): sleeps 5 s, then answers (for deadlines).
        Expiring (server streaming): one message "first", then UNAUTHENTICATED in the trailers.

    grpc_peer.py client PROXY_PORT TARGET MODE [COUNT]
        Calls the server through the sidecar, with "authorization: Bearer app-own" (or the value of
        GRPC_PEER_AUTHORIZATION) as the app's own metadata. TARGET "direct:<authority>": the channel goes to the
        sidecar's listener with prior knowledge and the authority set; "proxy:<host:port>": the
        channel targets host:port with grpc_proxy set to the sidecar (CONNECT, then h2c).
        "tls:<host:port>": TLS to host:port through https_proxy (the environment's), trusting
        GRPC_DEFAULT_SSL_ROOTS_FILE_PATH.
        MODE unary | stream | missing | upload | deadline | expiring | many (COUNT unary calls on one
        channel, printing how many distinct peers the server saw) | pingpong (one bidirectional
        call as a conversation: a message, then its answer, COUNT times) | suite (every kind of call
        at size: 1,000 messages each way, 100 round trips, 8 MiB each way, a deadline, a cancel,
        a custom status). Prints one line per result.
"""
import hashlib, os, sys, threading, time
from concurrent import futures

import grpc


class Gate(grpc.ServerInterceptor):
    """Lets through only calls whose token the test's token server issued and did not revoke."""

    def __init__(self, prefix, revoked_file):
        self.prefix, self.revoked_file = prefix, revoked_file

    def intercept_service(self, continuation, details):
        # Exactly one authorization: an app's own beside the injected one is refused too.
        values = [value for key, value in details.invocation_metadata if key == "authorization"]
        auth = values[0] if len(values) == 1 else ""
        try:
            with open(self.revoked_file) as f:
                revoked = set(line.strip() for line in f if line.strip())
        except FileNotFoundError:
            revoked = set()
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        if token.startswith(self.prefix) and token not in revoked:
            return continuation(details)

        def deny(request, context):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "token not accepted")

        return grpc.unary_unary_rpc_method_handler(deny)


def server(args):
    prefix = revoked_file = cert = key = directory = None
    while args:
        flag = args.pop(0)
        if flag == "--gate":
            prefix, revoked_file = args.pop(0), args.pop(0)
        elif flag == "--tls":
            cert, key = args.pop(0), args.pop(0)
        elif flag == "--dir":
            directory = args.pop(0)

    def mark(name):
        if directory:
            with open(os.path.join(directory, name), "w") as f:
                f.write("1")

    def get(request, context):
        metadata = dict(context.invocation_metadata())
        context.set_trailing_metadata((("x-order", "42"),))
        return ("auth=%s peer=%s via=%s" % (metadata.get("authorization", "-"), context.peer(), metadata.get("via", "-"))).encode()

    def watch(request, context):
        completed = []
        # Runs when the call ends, however: a call that ends before its last message was
        # abandoned by the client.
        context.add_callback(lambda: completed or mark("watch-cancelled"))
        for i in range(int(request or b"3")):
            if i >= 1000:
                time.sleep(0.001)
            yield b"update %d" % i
        completed.append(True)

    def missing(request, context):
        context.abort(grpc.StatusCode.NOT_FOUND, "no such order")

    def upload(requests, context):
        count = size = 0
        for r in requests:
            count += 1
            size += len(r)
        return b"messages=%d bytes=%d" % (count, size)

    def chat(requests, context):
        for r in requests:
            yield b"echo " + r

    def big(request, context):
        return hashlib.sha256(request).hexdigest().encode() + b"|" + b"y" * len(request)

    def custom(request, context):
        context.set_trailing_metadata((("x-reason", "closed"), ("x-data-bin", b"\x00\x01\x02")))
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, "order 42 is closed: früh")

    def expiring(request, context):
        yield b"first"
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "token expired mid-call")

    def slow(request, context):
        for _ in range(50):
            if not context.is_active():
                mark("slow-cancelled")
                return b"gone"
            time.sleep(0.1)
        return b"late"

    handlers = {
        "Get": grpc.unary_unary_rpc_method_handler(get),
        "Watch": grpc.unary_stream_rpc_method_handler(watch),
        "Missing": grpc.unary_unary_rpc_method_handler(missing),
        "Upload": grpc.stream_unary_rpc_method_handler(upload),
        "Slow": grpc.unary_unary_rpc_method_handler(slow),
        "Chat": grpc.stream_stream_rpc_method_handler(chat),
        "Expiring": grpc.unary_stream_rpc_method_handler(expiring),
        "Big": grpc.unary_unary_rpc_method_handler(big),
        "Custom": grpc.unary_unary_rpc_method_handler(custom),
    }
    interceptors = (Gate(prefix, revoked_file),) if prefix else ()
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=8), interceptors=interceptors, options=SIZES)
    srv.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Orders", handlers),))
    if cert:
        with open(cert, "rb") as c, open(key, "rb") as k:
            credentials = grpc.ssl_server_credentials(((k.read(), c.read()),))
        port = srv.add_secure_port("127.0.0.1:0", credentials)
    else:
        port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    print("PORT %d" % port, flush=True)
    srv.wait_for_termination(timeout=120)


SIZES = [("grpc.max_send_message_length", 16 << 20), ("grpc.max_receive_message_length", 16 << 20)]


def suite(channel, metadata):
    reply = channel.unary_unary("/test.Orders/Get")(b"order", metadata=metadata, timeout=10).decode()
    print("unary " + reply.split(" peer=")[0])
    replies = list(channel.unary_stream("/test.Orders/Watch")(b"1000", metadata=metadata, timeout=30))
    print("stream %d last=%s" % (len(replies), replies[-1].decode()))
    print("upload " + channel.stream_unary("/test.Orders/Upload")((b"m%04d" % i for i in range(1000)),
                                                                     metadata=metadata, timeout=30).decode())
    answers = list(channel.stream_stream("/test.Orders/Chat")((b"%d" % i for i in range(100)), metadata=metadata, timeout=30))
    print("chat %d ok=%s" % (len(answers), answers == [b"echo %d" % i for i in range(100)]))
    payload = bytes(range(256)) * (8 << 12)  # 8 MiB
    answer = channel.unary_unary("/test.Orders/Big")(payload, metadata=metadata, timeout=60)
    digest, _, echo = answer.partition(b"|")
    print("big ok=%s" % (digest.decode() == hashlib.sha256(payload).hexdigest() and len(echo) == len(payload)))
    started = time.monotonic()
    try:
        channel.unary_unary("/test.Orders/Slow")(b"x", metadata=metadata, timeout=1)
        print("deadline none")
    except grpc.RpcError as error:
        print("deadline %s within2s=%s" % (error.code().name, time.monotonic() - started < 2))
    call = channel.unary_stream("/test.Orders/Watch")(b"100000", metadata=metadata, timeout=30)
    seen = 0
    try:
        for _ in call:
            seen += 1
            if seen == 5:
                call.cancel()
    except grpc.RpcError as error:
        print("cancel %s after=%d" % (error.code().name, seen))
    try:
        channel.unary_unary("/test.Orders/Custom").with_call(b"x", metadata=metadata, timeout=10)
        print("custom none")
    except grpc.RpcError as error:
        trailers = dict(error.trailing_metadata())
        print("custom %s %s x-reason=%s x-data-bin=%s" % (error.code().name, error.details(), trailers.get("x-reason"),
                                                         trailers.get("x-data-bin", b"").hex()))


def pingpong(channel, metadata, rounds):
    """A bidirectional call used as a conversation: one message, then wait for its answer before
    the next, `rounds` times (a chat, a streaming pull). Returns "pingpong <answers> ok=<bool>"."""
    import queue
    outbox = queue.Queue()

    def messages():
        while True:
            message = outbox.get()
            if message is None:
                return
            yield message

    call = channel.stream_stream("/test.Orders/Chat")(messages(), metadata=metadata, timeout=30)
    answers = []
    for i in range(rounds):
        outbox.put(b"%d" % i)
        answers.append(next(call))
    outbox.put(None)
    rest = list(call)
    return "pingpong %d ok=%s" % (len(answers), answers == [b"echo %d" % i for i in range(rounds)] and rest == [])


def client(proxy_port, target, mode, count):
    kind, _, where = target.partition(":")
    options = [("grpc.enable_retries", 0)] + SIZES
    if kind == "tls":
        channel = grpc.secure_channel(where, grpc.ssl_channel_credentials(), options=options)
    elif kind == "direct":
        options.append(("grpc.default_authority", where))
        os.environ.pop("grpc_proxy", None)
        channel = grpc.insecure_channel("127.0.0.1:%d" % proxy_port, options=options)
    else:
        options.append(("grpc.http_proxy", "http://127.0.0.1:%d" % proxy_port))
        channel = grpc.insecure_channel(where, options=options)
    # The app's own authorization (GRPC_PEER_AUTHORIZATION: what an SDK holding a placeholder sends).
    metadata = (("authorization", os.environ.get("GRPC_PEER_AUTHORIZATION", "Bearer app-own")),)
    try:
        if mode == "unary":
            reply, call = channel.unary_unary("/test.Orders/Get").with_call(b"order", metadata=metadata, timeout=10)
            print(reply.decode())
            print("trailer x-order=%s" % dict(call.trailing_metadata()).get("x-order"))
        elif mode == "stream":
            for reply in channel.unary_stream("/test.Orders/Watch")(b"3", metadata=metadata, timeout=10):
                print(reply.decode())
        elif mode == "missing":
            channel.unary_unary("/test.Orders/Missing")(b"x", metadata=metadata, timeout=10)
            print("no error")
        elif mode == "upload":
            chunks = (b"x" * 100000 for _ in range(30))
            print(channel.stream_unary("/test.Orders/Upload")(chunks, metadata=metadata, timeout=20).decode())
        elif mode == "deadline":
            started = time.monotonic()
            try:
                channel.unary_unary("/test.Orders/Slow")(b"x", metadata=metadata, timeout=0.5)
                print("no error")
            except grpc.RpcError as error:
                print("error %s after %.1f" % (error.code().name, time.monotonic() - started))
        elif mode == "expiring":
            try:
                for reply in channel.unary_stream("/test.Orders/Expiring")(b"x", metadata=metadata, timeout=10):
                    print(reply.decode())
            except grpc.RpcError as error:
                print("error %s %s" % (error.code().name, error.details()))
        elif mode == "pingpong":
            print(pingpong(channel, metadata, count))
        elif mode == "suite":
            suite(channel, metadata)
        elif mode == "many":
            call = channel.unary_unary("/test.Orders/Get")
            peers, failures, lock = set(), [], threading.Lock()

            def one(_):
                try:
                    reply = call(b"order", metadata=metadata, timeout=10).decode()
                    with lock:
                        peers.add(reply.split(" peer=")[1])
                        if not reply.startswith("auth=Bearer ") or "app-own" in reply:
                            failures.append(reply)
                except grpc.RpcError as error:
                    with lock:
                        failures.append(error.code().name)

            with futures.ThreadPoolExecutor(max_workers=20) as pool:
                list(pool.map(one, range(count)))
            print("calls %d failures %d peers %d" % (count, len(failures), len(peers)))
            for failure in failures[:3]:
                print("failure", failure)
    except grpc.RpcError as error:
        print("error %s %s" % (error.code().name, error.details()))
    channel.close()


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(sys.argv[2:])
    else:
        client(int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]) if len(sys.argv) > 5 else 200)
