"""gRPC peers for the tests, on grpcio (gRPC's C-core), with raw-bytes messages (no protobuf).

    grpc_peer.py server [ACCEPT_PREFIX REVOKED_FILE]
        A gRPC server in plaintext (h2c) on 127.0.0.1; prints "PORT <n>". With ACCEPT_PREFIX, an
        interceptor fails every call UNAUTHENTICATED (trailers-only) unless its authorization is
        "Bearer <ACCEPT_PREFIX>…" and not a token listed in REVOKED_FILE (re-read per call).
        Methods of test.Orders:
        Get (unary): answers "auth=<authorization metadata> peer=<connection's peer>", and
            trailing metadata "x-order: 42".
        Watch (server streaming): three messages "update <i>".
        Missing (unary): fails NOT_FOUND with the message "no such order".
        Upload (client streaming): answers the number of bytes received.
        Slow (unary): sleeps 5 s, then answers (for deadlines).

    grpc_peer.py client PROXY_PORT TARGET MODE [COUNT]
        Calls the server through the sidecar. TARGET "direct:<authority>": the channel goes to the
        sidecar's listener with prior knowledge and the authority set; "proxy:<host:port>": the
        channel targets host:port with grpc_proxy set to the sidecar (CONNECT, then h2c).
        MODE unary | stream | missing | upload | deadline | many (COUNT unary calls on one
        channel, printing how many distinct peers the server saw). Prints one line per result.
"""
import os, sys, threading, time
from concurrent import futures

import grpc


class Gate(grpc.ServerInterceptor):
    """Lets through only calls whose token the test's token server issued and did not revoke."""

    def __init__(self, prefix, revoked_file):
        self.prefix, self.revoked_file = prefix, revoked_file

    def intercept_service(self, continuation, details):
        auth = dict(details.invocation_metadata).get("authorization", "")
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


def server(prefix=None, revoked_file=None):
    def get(request, context):
        auth = dict(context.invocation_metadata()).get("authorization", "-")
        context.set_trailing_metadata((("x-order", "42"),))
        return ("auth=%s peer=%s" % (auth, context.peer())).encode()

    def watch(request, context):
        for i in range(3):
            yield b"update %d" % i

    def missing(request, context):
        context.abort(grpc.StatusCode.NOT_FOUND, "no such order")

    def upload(requests, context):
        return str(sum(len(r) for r in requests)).encode()

    def slow(request, context):
        time.sleep(5)
        return b"late"

    handlers = {
        "Get": grpc.unary_unary_rpc_method_handler(get),
        "Watch": grpc.unary_stream_rpc_method_handler(watch),
        "Missing": grpc.unary_unary_rpc_method_handler(missing),
        "Upload": grpc.stream_unary_rpc_method_handler(upload),
        "Slow": grpc.unary_unary_rpc_method_handler(slow),
    }
    interceptors = (Gate(prefix, revoked_file),) if prefix else ()
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=8), interceptors=interceptors)
    srv.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Orders", handlers),))
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    print("PORT %d" % port, flush=True)
    srv.wait_for_termination(timeout=120)


def client(proxy_port, target, mode, count):
    kind, _, where = target.partition(":")
    options = [("grpc.enable_retries", 0)]
    if kind == "direct":
        options.append(("grpc.default_authority", where))
        os.environ.pop("grpc_proxy", None)
        channel = grpc.insecure_channel("127.0.0.1:%d" % proxy_port, options=options)
    else:
        options.append(("grpc.http_proxy", "http://127.0.0.1:%d" % proxy_port))
        channel = grpc.insecure_channel(where, options=options)
    metadata = (("authorization", "Bearer app-own"),)
    try:
        if mode == "unary":
            reply, call = channel.unary_unary("/test.Orders/Get").with_call(b"order", metadata=metadata, timeout=10)
            print(reply.decode())
            print("trailer x-order=%s" % dict(call.trailing_metadata()).get("x-order"))
        elif mode == "stream":
            for reply in channel.unary_stream("/test.Orders/Watch")(b"w", metadata=metadata, timeout=10):
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
        server(*sys.argv[2:4])
    else:
        client(int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]) if len(sys.argv) > 5 else 200)
