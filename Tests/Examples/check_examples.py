#!/usr/bin/env python3
"""Checks every example under config/ the way it would be used (`make test-examples`).

    check_examples.py [--binary PATH] [--kubernetes-validate PATH] [--kubernetes-version V] [FILE ...]

FILE defaults to every config/*.yaml. The binary is --binary, else $TOKEN_SIDECAR_BIN, else
.build/release/token-sidecar. A file whose YAML documents carry apiVersion and kind is a
Kubernetes manifest; any other is a sidecar configuration.

A sidecar configuration gets one case:
  check         `token-sidecar check --config FILE` exits 0. Placeholder secrets come through the
                environment (every secretEnv/tokenEnv, ${VAR}, VCAP_SERVICES for an MCA credential
                that leaves settings to discovery) or as files at the paths the file names (keys and
                certificates made with openssl), in a sandbox so nothing is written outside it.
A manifest without a token-sidecar container (the Redis of config/kubernetes-redis.yaml) gets
  schema        only.
A manifest with one gets four:
  schema        kubernetes-validate --strict against the Kubernetes API schema, offline.
  structure     a Deployment (not a bare Pod) whose token-sidecar is a native sidecar (initContainers,
                restartPolicy: Always) with startupProbe and readinessProbe on /readyz and
                livenessProbe on /healthz on the config's admin port; a loopback proxy port the app's
                HTTP_PROXY/http_proxy name (HTTPS_PROXY/https_proxy for routes with intercept: true),
                NO_PROXY for loopback; intercept.caCertFile and bundleFile on a writable emptyDir
                that every app container mounts; a read-only root; spool.directory
                on a writable emptyDir (not medium: Memory) whose sizeLimit covers spool.maxBytes;
                memory requests and limits; a grace period longer than drainTimeout.
  check-in-pod  the config in the ConfigMap, exactly as written, passes `check` inside a sandbox
                built from the pod spec: a copy-on-write view of / as the container's root,
                read-only when readOnlyRootFilesystem is set (so /tmp is too); each volumeMount of
                the sidecar at its mountPath (emptyDir: a tmpfs of its sizeLimit, writable;
                configMap: the manifest's data; secret/projected: placeholder files for what the
                config reads; these read-only); the binary at the image's ENTRYPOINT path; run as
                runAsUser/runAsGroup (else the Dockerfile's USER).
  run-in-pod    the same sandbox, with the config's upstreams and token endpoints rewritten to test
                servers on 127.0.0.1 and listen/admin to free loopback ports: `run` with the
                container's args; the startupProbe answers 200 within its budget (the kubelet's
                gate for the app), the other probes too; one request through the proxy reaches the
                backend with the token issued for the mounted secret; a response whose client
                reads slowly is spooled into the spool volume. A route with intercept: true gets
                its upstream as https on loopback (a TLS front for the test backend, verified with
                its caFile) and both requests as the app sends them: CONNECT, then TLS trusting
                the caCertFile the sidecar wrote in the volume (bundleFile must end with it), then
                origin-form requests inside the tunnel. SIGTERM exits 0 within the grace
                period; no placeholder secret and no token appears in any output. With sharedCache,
                a real redis-server on loopback (AUTH with the mounted password) stands in for the
                configured Redis, and the sealed entry the sidecar writes there must hold no token,
                secret or key. An aws credential's webIdentity gets the token server as its STS
                (XML answers): the request is signed with the placeholder keys as an AWS SDK signs,
                and must reach the backend signed with the temporary keys STS issued for the
                mounted token, the signature verified with their secret.
                With credentialEndpoints (a gce endpoint): the metadata endpoint answers the
                credential's placeholder, never a token, and a request carrying it reaches the
                backend with the issued token.

Everything runs in a private mount namespace (`unshare -m`, so root: `sudo`), in which the script
re-runs itself; nothing is mounted or written outside its temporary directory, and the namespace
takes every mount with it when the script exits.

Prints one line per case, then "N passed, M failed". Exit 0 when all pass, 1 when any fails,
2 on a usage problem. Needs python3 with PyYAML, kubernetes-validate (both in .build-k8s), openssl,
util-linux (unshare, mount) and coreutils (chroot). Network: 127.0.0.1 only. Secrets printed:
none (placeholder secrets and issued tokens are masked, and a case fails if the sidecar prints one).
"""

import argparse
import asyncio
import base64
import collections
import glob
import hashlib
import hmac
import http.client
import json
import os
import re
import secrets
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

try:
    import yaml
except ImportError:
    sys.stderr.write("check_examples: PyYAML is missing (run it with .build-k8s/bin/python3, `make test-examples`)\n")
    sys.exit(2)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BACKEND = os.path.join(ROOT, "Tests/ProxyTests/Fixtures/backend.py")
TOKEN_SERVER = os.path.join(ROOT, "Tests/TokenManagerTests/Fixtures/token_server.py")
NAMESPACE_FLAG = "CHECK_EXAMPLES_IN_NAMESPACE"
DEFAULT_KUBERNETES_VERSION = "1.37.0"
# Keys whose value is a file the sidecar reads, and what the test writes there.
FILE_KEYS = {"secretFile": "secret", "tokenFile": "token", "signingKeyFile": "key", "clientKey": "key",
             "clientCert": "cert", "caFile": "cert", "assertionFile": "jwt", "keyFile": "key",
             # sharedCache: the Redis password and user, and the key that seals cached tokens.
             "passwordFile": "secret", "usernameFile": "username", "encryptionKeyFile": "aeskey",
             # An aws credential's key files and a container credentials endpoint's token.
             "accessKeyIdFile": "token", "secretAccessKeyFile": "secret", "sessionTokenFile": "token",
             "authorizationTokenFile": "token",
             # A refresh-token grant's file (the sidecar rewrites it at each rotation).
             "refreshTokenFile": "token"}
SPOOL_PROBE_BYTES = 16 << 20   # a response large enough to fall behind a slow reader and spool
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
# Where run-in-pod puts the TLS front's certificate inside the sandbox (an intercepting route's caFile).
UPSTREAM_CA_PATH = "/etc/examples-check/upstream-ca.crt"


class CaseFailure(Exception):
    """A case failed; the message says why (one or more lines)."""


class Unsupported(CaseFailure):
    pass


# ---- small helpers ------------------------------------------------------------------------------

class Masker:
    """Replaces every placeholder secret (and issued token) with **** before anything is printed."""
    def __init__(self):
        self.values = set()

    def add(self, value):
        if value:
            self.values.add(value)
        return value

    def __call__(self, text):
        for value in sorted(self.values, key=len, reverse=True):
            text = text.replace(value, "****")
        return text

    def leaked(self, text):
        return sorted({v for v in self.values if v in text})


MASK = Masker()


def run_cmd(argv, timeout, env=None, stdin=subprocess.DEVNULL):
    try:
        return subprocess.run(argv, env=env, stdin=stdin, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CaseFailure(f"{' '.join(argv[:3])}... did not finish within {timeout} s")


def must(argv, timeout=30):
    result = run_cmd(argv, timeout)
    if result.returncode != 0:
        raise CaseFailure(f"{' '.join(argv)} failed ({result.returncode}): {MASK(result.stderr.strip())}")
    return result


def tail(text, lines=15):
    chunks = MASK(text).strip().splitlines()
    shown = chunks[-lines:]
    prefix = [f"    ... ({len(chunks) - lines} earlier lines)"] if len(chunks) > lines else []
    return "\n".join(prefix + ["    " + line for line in shown])


def quantity(text):
    """A Kubernetes quantity (128Mi, 1G, 300M, 1024) in bytes."""
    match = re.fullmatch(r"\s*([0-9.]+)\s*(Ki|Mi|Gi|Ti|k|K|M|G|T)?\s*", str(text))
    if not match:
        raise CaseFailure(f"cannot read the quantity '{text}'")
    factor = {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
              "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[match.group(2)]
    return int(float(match.group(1)) * factor)


def byte_size(value):
    """spool.maxBytes as the sidecar reads it (Sources/Config/ByteSize.swift)."""
    if isinstance(value, int):
        return value
    match = re.fullmatch(r"\s*([0-9]+)\s*(GiB|G|MiB|M|KiB|K|B)?\s*", str(value))
    if not match:
        raise CaseFailure(f"cannot read spool.maxBytes '{value}'")
    return int(match.group(1)) * {None: 1, "B": 1, "K": 1 << 10, "KiB": 1 << 10, "M": 1 << 20,
                                  "MiB": 1 << 20, "G": 1 << 30, "GiB": 1 << 30}[match.group(2)]


def seconds(value):
    match = re.fullmatch(r"\s*([0-9.]+)\s*(ms|s|m|h)?\s*", str(value))
    if not match:
        raise CaseFailure(f"cannot read the duration '{value}'")
    return float(match.group(1)) * {"ms": 0.001, None: 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def host_port(address, default_port):
    """'127.0.0.1:8080', '[::1]:8080', 'name' -> (host, port)."""
    match = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?|([^:]+)(?::(\d+))?", str(address))
    if not match:
        raise CaseFailure(f"cannot read the address '{address}'")
    host = match.group(1) or match.group(3)
    port = match.group(2) or match.group(4)
    return host, int(port) if port else default_port


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fake_jwt():
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    now = int(time.time())
    claims = {"iss": "https://kubernetes.default.svc", "sub": "system:serviceaccount:examples:check",
              "aud": "examples-check", "iat": now, "exp": now + 3600}
    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.{part({'sig': 'placeholder'})}"


def http_get(port, path, timeout=2.0):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def metric(text, name):
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"{name}(?:\{{[^}}]*\}})?\s+(\S+)$", line)
        if match:
            total += float(match.group(1))
    return total


# ---- fixtures: placeholder files, loopback servers ----------------------------------------------

class Placeholders:
    """Placeholder secret, token, key and certificate contents (masked in all output)."""
    def __init__(self, workdir):
        self.secret = MASK.add("placeholder-secret-" + secrets.token_hex(8))
        self.token = MASK.add("placeholder-token-" + secrets.token_hex(8))
        key, cert = os.path.join(workdir, "key.pem"), os.path.join(workdir, "cert.pem")
        must(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
              "-subj", "/CN=examples-check", "-days", "2"], timeout=60)
        with open(key) as f:
            self.key = f.read()
        with open(cert) as f:
            self.cert = f.read()
        self.jwt = fake_jwt()
        self.aeskey = MASK.add(base64.b64encode(secrets.token_bytes(32)).decode())

    def content(self, key, path=""):
        """What the test writes for a file named by this configuration key (at `path`: a keyFile
        ending in .json is a Google service account's key file, the PEM key inside it)."""
        if key == "keyFile" and path.endswith(".json"):
            return json.dumps({"type": "service_account", "client_email": "examples-check@example.iam.gserviceaccount.com",
                               "private_key": self.key, "private_key_id": "examples-check",
                               "token_uri": "https://oauth2.googleapis.com/token"})
        return {"secret": self.secret + "\n", "token": self.token + "\n", "key": self.key, "cert": self.cert,
                "jwt": self.jwt, "username": "examples-check\n", "aeskey": self.aeskey + "\n"}[FILE_KEYS[key]]


class Server:
    """A fixture server on 127.0.0.1 that prints "PORT n" once listening."""
    def __init__(self, argv, logdir, name):
        self.stderr = open(os.path.join(logdir, f"{name}.stderr"), "w")
        self.process = subprocess.Popen([sys.executable] + argv, stdout=subprocess.PIPE, stderr=self.stderr,
                                        stdin=subprocess.DEVNULL, text=True)
        ready, _, _ = select.select([self.process.stdout], [], [], 15)
        line = self.process.stdout.readline() if ready else ""
        match = re.match(r"PORT (\d+)", line)
        if not match:
            self.stop()
            raise CaseFailure(f"fixture {name} did not start (no PORT line)")
        self.port = int(match.group(1))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.stderr.close()


class TokenServer(Server):
    def __init__(self, logdir):
        self.log = os.path.join(logdir, "token_requests.jsonl")
        control = os.path.join(logdir, "token_control.json")
        self.prefix = "examples-token-" + secrets.token_hex(6) + "-"
        with open(control, "w") as f:
            json.dump({"token_prefix": self.prefix, "expires_in": 3600}, f)
        super().__init__([TOKEN_SERVER, "--log", self.log, "--control", control], logdir, "token_server")

    def requests(self):
        try:
            with open(self.log) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []


class TLSFront:
    """TLS on 127.0.0.1 in front of the backend (a certificate for IP 127.0.0.1 made with openssl):
    the https upstream of an intercepting route. Each connection is piped to the backend as is.

    One asyncio loop on one thread does all of it: an `ssl.SSLSocket` read on one thread while
    another writes to it races inside OpenSSL when the socket has a timeout (CPython issue 77271),
    and now and then cut a response short (the sidecar then reports `http_response_incomplete`)."""
    def __init__(self, workdir, backend_port):
        key, self.cert_path = os.path.join(workdir, "front-key.pem"), os.path.join(workdir, "front-cert.pem")
        must(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
              "-keyout", key, "-out", self.cert_path, "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
              "-days", "2"], timeout=60)
        with open(self.cert_path) as f:
            self.cert = f.read()
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(self.cert_path, key)
        self.backend_port = backend_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        # The last connections' errors (on the loop's thread; read after a failure).
        self.errors = collections.deque(maxlen=8)
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, sock=self.listener, ssl=self.context, ssl_handshake_timeout=30))
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    async def _serve(self, client_reader, client_writer):
        try:
            backend_reader, backend_writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", self.backend_port), timeout=30)
        except (OSError, asyncio.TimeoutError) as error:    # refused, or timed out (not an OSError before 3.11)
            self.errors.append(f"backend connection: {error!r}")
            client_writer.close()
            return

        async def pipe(source, sink, direction):
            try:
                while data := await asyncio.wait_for(source.read(1 << 16), timeout=30):
                    sink.write(data)
                    await asyncio.wait_for(sink.drain(), timeout=30)
            except (OSError, asyncio.TimeoutError) as error:    # resets, TLS errors, timeouts
                self.errors.append(f"{direction}: {error!r}")
            # Either side's end ends both (as the backend's close ends its response).
            for writer in (client_writer, backend_writer):
                if not writer.is_closing():
                    writer.close()
        await asyncio.gather(pipe(backend_reader, client_writer, "backend to sidecar"),
                             pipe(client_reader, backend_writer, "sidecar to backend"))

    def stop(self):
        self.loop.call_soon_threadsafe(self.server.close)


def get_as_app(listen_port, host, cafile, path, headers):
    """GET `path` as the app sends it: absolute-form to `host` through the proxy, or with
    `cafile` CONNECT, TLS trusting it and origin-form inside the tunnel. Returns the response and
    its body as text."""
    conn = http.client.HTTPConnection("127.0.0.1", listen_port, timeout=10)
    if cafile:
        conn.sock = tunnel(listen_port, host, cafile)
    try:
        conn.request("GET", path if cafile else f"http://{host}{path}",
                     headers=dict(headers, Host=host_port(host, 443)[0] if cafile else host))
        response = conn.getresponse()
        return response, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def tunnel(listen_port, host, cafile, rcvbuf=None, timeout=10):
    """A TLS connection to host:port through the proxy's CONNECT, trusting only cafile (as an app
    with HTTPS_PROXY and the sidecar's CA does)."""
    name, port = host_port(host, 443)
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(timeout)
    try:
        sock.connect(("127.0.0.1", listen_port))
        sock.sendall(f"CONNECT {name}:{port} HTTP/1.1\r\nHost: {name}:{port}\r\n\r\n".encode())
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            byte = sock.recv(1)
            if not byte:
                raise CaseFailure(f"CONNECT {name}:{port}: the proxy closed the connection ({head[:200]!r})")
            head += byte
        if not head.startswith(b"HTTP/1.1 200"):
            raise CaseFailure(f"CONNECT {name}:{port}: {head.splitlines()[0].decode('latin-1')}")
        context = ssl.create_default_context(cafile=cafile)
        try:
            return context.wrap_socket(sock, server_hostname=name)
        except ssl.SSLError as error:
            raise CaseFailure(f"TLS to {name} through the tunnel, trusting {os.path.basename(cafile)}: {error}")
    except BaseException:
        sock.close()
        raise


# ---- the sandbox: a container's view of the file system -----------------------------------------

class RedisServer:
    """redis-server on a free loopback port, no persistence, AUTH with `password`."""
    def __init__(self, workdir, password):
        self.port, self.password = free_port(), password
        self.process = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                         "--appendonly", "no", "--dir", workdir, "--requirepass", password],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if self.command("PING") == b"+PONG":
                    return
            except OSError:
                time.sleep(0.05)
        raise CaseFailure(f"redis-server did not answer on port {self.port}")

    def command(self, *args):
        """One command (AUTH first); the raw first reply line, or the bulk string's bytes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
            def encode(parts):
                return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)
            sock.sendall(encode([b"AUTH", self.password.encode()]) + encode([a.encode() for a in args]))
            reader = sock.makefile("rb")
            reader.readline()   # +OK for AUTH
            line = reader.readline().rstrip(b"\r\n")
            if line.startswith(b"$"):
                length = int(line[1:])
                return None if length < 0 else reader.read(length + 2)[:-2]
            if line.startswith(b"*"):
                return [reader.readline() and reader.readline().rstrip(b"\r\n") for _ in range(int(line[1:]))]
            return line

    def entries(self):
        """(key, value bytes) for every key."""
        return [(key.decode(), self.command("GET", key.decode()) or b"") for key in self.command("KEYS", "*")]

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def mounts_under(path):
    path = os.path.realpath(path)
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].replace("\\040", " ")
            if point == path or point.startswith(path + "/"):
                found.append(point)
    return found


class Sandbox:
    """An overlay of / (writes land in a tmpfs, never on the host) used as a chroot, with volumes
    mounted at container paths and the root remounted read-only on request. Lives in this
    process's private mount namespace; close() unmounts everything."""
    def __init__(self, workdir, name):
        self.base = os.path.join(workdir, f"sandbox-{name}")
        os.mkdir(self.base)
        must(["mount", "-t", "tmpfs", "-o", "size=256m,mode=0755", "sandbox", self.base])
        for sub in ("upper", "work", "root", "volumes"):
            os.mkdir(os.path.join(self.base, sub))
        self.root = os.path.join(self.base, "root")
        try:
            must(["mount", "-t", "overlay", "overlay", "-o",
                  f"lowerdir=/,upperdir={self.base}/upper,workdir={self.base}/work", self.root])
        except CaseFailure:
            self.close()
            raise

    def path(self, container_path):
        """Where container_path is from outside: each symlink resolved inside the root."""
        parts = [p for p in container_path.split("/") if p]
        resolved, hops = [], 0
        while parts:
            part = parts.pop(0)
            if part == ".":
                continue
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = os.path.join(self.root, *resolved, part)
            if os.path.islink(candidate):
                hops += 1
                if hops > 40:
                    raise CaseFailure(f"too many symbolic links in {container_path}")
                target = os.readlink(candidate)
                if target.startswith("/"):
                    resolved = []
                parts = [p for p in target.split("/") if p] + parts
            else:
                resolved.append(part)
        return os.path.join(self.root, *resolved)

    def write(self, container_path, content, mode=0o644):
        target = self.path(container_path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as f:
            f.write(content)
        os.chmod(target, mode)

    def install_binary(self, binary, container_path):
        target = self.path(container_path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "w").close()
        must(["mount", "--bind", binary, target])
        must(["mount", "-o", "remount,ro,bind", target])

    def volume_dir(self, name):
        directory = os.path.join(self.base, "volumes", name)
        os.mkdir(directory)
        return directory

    def mount_dir(self, source, container_path, read_only):
        target = self.path(container_path)
        os.makedirs(target, exist_ok=True)
        must(["mount", "--bind", source, target])
        if read_only:
            must(["mount", "-o", "remount,ro,bind", target])
        return target

    def mount_tmpfs(self, container_path, size, read_only):
        target = self.path(container_path)
        os.makedirs(target, exist_ok=True)
        must(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "emptydir", target])
        if read_only:
            must(["mount", "-o", "remount,ro,bind", target])
        return target

    def seal(self, read_only_root):
        for special in ("/proc", "/dev", "/sys"):
            target = self.path(special)
            os.makedirs(target, exist_ok=True)
            must(["mount", "--rbind", special, target])
            must(["mount", "--make-rslave", target])
        if read_only_root:
            must(["mount", "-o", "remount,ro,bind", self.root])

    def command(self, argv, user):
        prefix = [shutil.which("chroot") or "/usr/sbin/chroot"]
        if user is not None:
            uid, gid, groups = user
            prefix.append(f"--userspec={uid}:{gid}")
            prefix.append("--groups=" + ",".join(str(g) for g in (groups or [gid])))
        return prefix + [self.root] + argv

    def close(self):
        result = run_cmd(["umount", "-R", self.base], timeout=30)
        if result.returncode != 0:
            run_cmd(["umount", "-R", "-l", self.base], timeout=30)
        if not mounts_under(self.base):
            os.rmdir(self.base)


# ---- reading configurations and manifests -------------------------------------------------------

def file_references(config, config_dir):
    """(key, absolute path) for every file the configuration names."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in FILE_KEYS and isinstance(value, str):
                    found.append((key, value if value.startswith("/") else os.path.normpath(os.path.join(config_dir, value))))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
    walk(config)
    return found


def placeholder_environment(config, placeholders):
    """Variables the configuration reads, set to placeholders."""
    env = {}

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("secretEnv", "tokenEnv") and isinstance(value, str):
                    env[value] = placeholders.secret if key == "secretEnv" else placeholders.token
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
    walk(config)
    for name in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", json.dumps(config)):   # values only, not comments
        env.setdefault(name, placeholders.secret)
    for credential in (config.get("credentials") or {}).values():
        if isinstance(credential, dict) and credential.get("type") == "mca" and "serverUrl" not in credential:
            env["VCAP_SERVICES"] = json.dumps({"AdvancedMobileAccess": [{
                "name": "examples-check", "label": "AdvancedMobileAccess",
                "credentials": {"serverUrl": "https://mca.example.com/imf-authserver", "clientId": "examples-check",
                                "secret": placeholders.secret, "tenantId": "00000000-0000-0000-0000-000000000000"}}]})
            env["VCAP_APPLICATION"] = json.dumps({"application_id": "examples-check", "application_name": "app"})
    return env


def load_documents(path):
    with open(path) as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


def is_manifest(documents):
    return any(isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc for doc in documents)


def runs_token_sidecar(documents):
    """Whether any workload in the manifest runs the token-sidecar image."""
    for doc in documents:
        spec = pod_spec(doc) if isinstance(doc, dict) else None
        for container in (spec or {}).get("initContainers", []) + (spec or {}).get("containers", []):
            if "token-sidecar" in container.get("image", ""):
                return True
    return False


def pod_spec(doc):
    kind, spec = doc.get("kind"), doc.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        return spec["jobTemplate"]["spec"]["template"]["spec"]
    if kind in WORKLOAD_KINDS + ("ReplicaSet", "Job"):
        return spec["template"]["spec"]
    return None


class Dockerfile:
    """The runtime stage's ENTRYPOINT, CMD and USER: what the image runs when the pod spec is silent."""
    def __init__(self, path):
        self.entrypoint, self.cmd, self.user = ["/usr/local/bin/token-sidecar"], [], (10001, 10001)
        with open(path) as f:
            for line in f:
                if line.startswith("FROM "):
                    self.entrypoint, self.cmd, self.user = None, [], (0, 0)
                elif line.startswith("ENTRYPOINT "):
                    self.entrypoint = json.loads(line[len("ENTRYPOINT "):])
                elif line.startswith("CMD "):
                    self.cmd = json.loads(line[len("CMD "):])
                elif line.startswith("USER "):
                    uid, _, gid = line.split()[1].partition(":")
                    self.user = (int(uid), int(gid or uid))
        if not self.entrypoint:
            raise CaseFailure(f"{path}: no ENTRYPOINT in the runtime stage")


class Manifest:
    def __init__(self, path, documents, dockerfile):
        self.path = path
        self.documents = documents
        self.config_maps = {d["metadata"]["name"]: d for d in documents if d.get("kind") == "ConfigMap"}
        workloads = [d for d in documents if pod_spec(d) is not None]
        if len(workloads) != 1:
            raise Unsupported(f"expected one workload (Deployment, Pod, ...), found {len(workloads)}")
        self.workload = workloads[0]
        self.pod = pod_spec(self.workload)
        sidecars = [(c, True) for c in self.pod.get("initContainers") or [] if "token-sidecar" in c.get("image", "")]
        sidecars += [(c, False) for c in self.pod.get("containers") or [] if "token-sidecar" in c.get("image", "")]
        if len(sidecars) != 1:
            raise CaseFailure(f"expected one container running the token-sidecar image, found {len(sidecars)}")
        self.sidecar, self.sidecar_is_init = sidecars[0]
        self.apps = [c for c in self.pod.get("containers") or [] if c is not self.sidecar]
        self.volumes = {v["name"]: v for v in self.pod.get("volumes") or []}
        command = self.sidecar.get("command")
        self.argv = (command or dockerfile.entrypoint) + (self.sidecar.get("args") or ([] if command else dockerfile.cmd))
        if os.path.basename(self.argv[0]) != "token-sidecar" or not self.argv[0].startswith("/"):
            raise Unsupported(f"the sidecar's command must be an absolute path to token-sidecar, got {self.argv[0]}")
        if "--config" not in self.argv[1:-1] or self.argv[1] != "run":
            raise CaseFailure(f"the sidecar's arguments must be `run --config FILE`, got {self.argv[1:]}")
        self.config_path = self.argv[self.argv.index("--config") + 1]
        self.env = {}
        for item in self.sidecar.get("env") or []:
            if "value" in item:
                self.env[item["name"]] = str(item["value"])
            else:
                raise Unsupported(f"env {item['name']}: only value is modelled, not valueFrom")
        self.config_text = self._config_text()
        try:
            self.config = yaml.safe_load(self.config_text) or {}
        except yaml.YAMLError:
            self.config = {}    # check-in-pod shows the sidecar's own report
        pod_security = self.pod.get("securityContext") or {}
        security = self.sidecar.get("securityContext") or {}
        uid = security.get("runAsUser", pod_security.get("runAsUser", dockerfile.user[0]))
        gid = security.get("runAsGroup", pod_security.get("runAsGroup", dockerfile.user[1]))
        groups = [gid] + ([pod_security["fsGroup"]] if "fsGroup" in pod_security else []) \
            + list(pod_security.get("supplementalGroups") or [])
        self.user = (uid, gid, groups)
        self.uid = uid
        self.fs_group = pod_security.get("fsGroup")
        self.read_only_root = bool(security.get("readOnlyRootFilesystem"))

    def _mount_for(self, container_path):
        """The sidecar's volumeMount holding container_path (the deepest), with its volume."""
        best = None
        for mount in self.sidecar.get("volumeMounts") or []:
            point = mount["mountPath"].rstrip("/")
            if container_path == point or container_path.startswith(point + "/"):
                if best is None or len(point) > len(best[0]["mountPath"].rstrip("/")):
                    best = (mount, self.volumes.get(mount["name"]))
        return best

    def _config_text(self):
        found = self._mount_for(self.config_path)
        if not found or not found[1] or "configMap" not in found[1]:
            raise CaseFailure(f"--config {self.config_path} is not in a configMap volume the sidecar mounts")
        mount, volume = found
        name = volume["configMap"]["name"]
        if name not in self.config_maps:
            raise CaseFailure(f"ConfigMap {name} (volume {volume['name']}) is not in the manifest")
        relative = os.path.relpath(self.config_path, mount["mountPath"])
        files = self._config_map_files(volume["configMap"])
        if relative not in files:
            raise CaseFailure(f"ConfigMap {name} has no key for {self.config_path}")
        return files[relative][0]

    def _config_map_files(self, source):
        data = (self.config_maps.get(source["name"]) or {}).get("data") or {}
        mode = source.get("defaultMode", 0o644)
        if "items" in source:
            return {item["path"]: (data[item["key"]], item.get("mode", mode)) for item in source["items"]}
        return {key: (value, mode) for key, value in data.items()}

    def effective(self, key, default):
        variable = "TOKEN_SIDECAR_" + re.sub(r"([A-Z])", r"_\1", key).upper().replace(".", "_")
        if variable in self.env:
            return self.env[variable]
        node = self.config
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return default if node is None else node

    def spool(self):
        directory = self.effective("spool.directory", "/tmp")
        if not str(directory).startswith("/"):
            directory = os.path.normpath(os.path.join(os.path.dirname(self.config_path), directory))
        return directory, byte_size(self.effective("spool.maxBytes", "1GiB"))

    def build_sandbox(self, workdir, name, binary, placeholders, config_text, extra_files=None):
        """The sidecar container's file system as the manifest sets it up (plus extra_files, container
        path -> content, written into the root: what the test adds, like the TLS front's certificate)."""
        sandbox = Sandbox(workdir, name)
        try:
            sandbox.install_binary(binary, self.argv[0])
            for container_path, content in (extra_files or {}).items():
                sandbox.write(container_path, content)
            references = file_references(yaml.safe_load(config_text) or {}, os.path.dirname(self.config_path))
            mounts = sorted(self.sidecar.get("volumeMounts") or [], key=lambda m: m["mountPath"].count("/"))
            for mount in mounts:
                self._mount_volume(sandbox, mount, placeholders, config_text, references)
            sandbox.seal(self.read_only_root)
            return sandbox
        except BaseException:
            sandbox.close()
            raise

    def _mount_volume(self, sandbox, mount, placeholders, config_text, references):
        if "subPath" in mount or "subPathExpr" in mount:
            raise Unsupported(f"volumeMount {mount['name']}: subPath is not modelled")
        volume = self.volumes.get(mount["name"])
        if volume is None:
            raise CaseFailure(f"volumeMount {mount['name']}: no such volume in the pod")
        point = mount["mountPath"].rstrip("/")
        read_only = bool(mount.get("readOnly"))
        if "emptyDir" in volume:
            limit = (volume["emptyDir"] or {}).get("sizeLimit")
            sandbox.mount_tmpfs(point, quantity(limit) if limit else "1g", read_only)
            return
        files = {}    # relative path -> (content, mode)
        if "configMap" in volume:
            sources = [{"configMap": volume["configMap"]}]
        elif "secret" in volume:
            sources = [{"secret": volume["secret"]}]
        elif "projected" in volume:
            sources = volume["projected"].get("sources") or []
        else:
            raise Unsupported(f"volume {volume['name']}: only emptyDir, configMap, secret and projected are modelled")
        default_mode = next(iter(volume[k] for k in ("configMap", "secret", "projected") if k in volume)).get("defaultMode", 0o644)
        wanted = {os.path.relpath(path, point): key for key, path in references if path.startswith(point + "/")}
        for source in sources:
            if "configMap" in source:
                name = source["configMap"]["name"]
                if name not in self.config_maps and not source["configMap"].get("optional"):
                    raise CaseFailure(f"volume {volume['name']}: ConfigMap {name} is not in the manifest")
                files.update(self._config_map_files(dict(source["configMap"], defaultMode=source["configMap"].get("defaultMode", default_mode))))
            elif "secret" in source:
                # Made outside the manifest (kubectl create secret): the files the config reads.
                items = source["secret"].get("items")
                mode = source["secret"].get("defaultMode", default_mode)
                for relative, key in wanted.items():
                    if items is None or relative in [i["path"] for i in items]:
                        files[relative] = (placeholders.content(key, relative), mode)
            elif "serviceAccountToken" in source:
                files[source["serviceAccountToken"]["path"]] = (placeholders.jwt, default_mode)
            else:
                raise Unsupported(f"volume {volume['name']}: projected source {list(source)} is not modelled")
        if mount is self._mount_for(self.config_path)[0]:
            relative = os.path.relpath(self.config_path, point)
            files[relative] = (config_text, files[relative][1])
        staging = sandbox.volume_dir(volume["name"])
        for relative, (content, mode) in files.items():
            target = os.path.join(staging, relative)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w") as f:
                f.write(content)
            os.chmod(target, mode | (0o040 if self.fs_group is not None else 0))
            if self.fs_group is not None:
                os.chown(target, 0, self.fs_group)
        # configMap, secret and projected volumes are always read-only in Kubernetes.
        sandbox.mount_dir(staging, point, read_only=True)

# ---- the cases ----------------------------------------------------------------------------------

class Runner:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.binary = args.binary
        self.passed = self.failed = self.sandboxes = 0
        self.backend = self.token_server = self.redis = self.tls_front = None

    def start(self):
        self.dockerfile = Dockerfile(os.path.join(ROOT, "Dockerfile"))
        self.placeholders = Placeholders(self.workdir)
        self.backend = Server([BACKEND, "--port", "0", "--host", "127.0.0.1"], self.workdir, "backend")
        self.token_server = TokenServer(self.workdir)

    def stop(self):
        for server in (self.backend, self.token_server, self.redis, self.tls_front):
            if server is not None:
                server.stop()

    def redis_server(self):
        """A redis-server on loopback (started once) whose password is the placeholder secret."""
        if self.redis is None:
            if shutil.which("redis-server") is None:
                raise Unsupported("sharedCache: redis-server is not installed (make deps)")
            self.redis = RedisServer(self.workdir, self.placeholders.secret)
        return self.redis

    def upstream_tls(self):
        """The TLS front for the backend (started once): intercepting routes send over https."""
        if self.tls_front is None:
            self.tls_front = TLSFront(self.workdir, self.backend.port)
        return self.tls_front

    def case(self, name, file, function, *args):
        label = f"{name:<13} {os.path.relpath(file, ROOT) if file.startswith(ROOT) else file}"
        started = time.monotonic()
        try:
            note = function(*args)
        except Exception as failure:   # an unexpected error fails its case, not the whole run
            if not isinstance(failure, CaseFailure):
                failure = CaseFailure(f"{type(failure).__name__}: {failure}\n{traceback.format_exc()}")
            self.failed += 1
            print(f"FAIL  {label}\n" + "\n".join("      " + line for line in MASK(str(failure)).splitlines()), flush=True)
            return False
        self.passed += 1
        print(f"ok    {label} ({time.monotonic() - started:.1f} s){': ' + note if note else ''}", flush=True)
        return True

    def sandbox_name(self):
        self.sandboxes += 1
        return str(self.sandboxes)

    def run_file(self, path):
        try:
            documents = load_documents(path)
        except yaml.YAMLError as error:
            self.case("yaml", path, fail, CaseFailure(f"not YAML: {error}"))
            return
        if not is_manifest(documents):
            self.case("check", path, self.check_config, path, documents[0] if documents else {})
            return
        self.case("schema", path, self.check_schema, path)
        if not runs_token_sidecar(documents):
            return    # a supporting manifest (a Redis for sharedCache): the schema is all there is to check
        try:
            manifest = Manifest(path, documents, self.dockerfile)
        except (CaseFailure, KeyError, TypeError, AttributeError, IndexError, ValueError) as error:
            failure = error if isinstance(error, CaseFailure) else CaseFailure(f"cannot read the pod spec: {type(error).__name__} {error}")
            self.case("pod", path, fail, failure)
            return
        self.case("structure", path, self.check_structure, manifest)
        self.case("check-in-pod", path, self.check_in_pod, manifest)
        self.case("run-in-pod", path, self.run_in_pod, manifest)

    # -- a sidecar configuration --

    def check_config(self, path, config):
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
        env.update(placeholder_environment(config, self.placeholders))
        sandbox = Sandbox(self.workdir, self.sandbox_name())
        try:
            written = []
            for key, file in file_references(config, os.path.dirname(os.path.abspath(path))):
                if key == "assertionFile":
                    continue    # read before each fetch and may appear after start: check does not need it
                sandbox.write(file, self.placeholders.content(key, file))
                written.append(file)
            sandbox.install_binary(self.binary, "/usr/local/bin/token-sidecar")
            sandbox.seal(read_only_root=False)
            result = run_cmd(sandbox.command(["/usr/local/bin/token-sidecar", "check", "--config", os.path.abspath(path)], None),
                             timeout=60, env=env)
        finally:
            sandbox.close()
        if result.returncode != 0:
            raise CaseFailure(f"token-sidecar check exited {result.returncode}:\n{tail(result.stderr)}")
        leaked = MASK.leaked(result.stdout + result.stderr)
        if leaked:
            raise CaseFailure(f"check printed {len(leaked)} placeholder secret(s)")
        supplied = sorted(env.keys() - {"PATH"}) + [os.path.basename(w) for w in written]
        return "with " + ", ".join(supplied) if supplied else ""

    # -- a manifest --

    def check_schema(self, path):
        result = run_cmd([self.args.kubernetes_validate, "--strict", "--quiet", "-k", self.args.kubernetes_version, path],
                         timeout=300)
        if result.returncode != 0 or "ERROR" in result.stdout + result.stderr:
            raise CaseFailure(f"kubernetes-validate --strict -k {self.args.kubernetes_version} exited {result.returncode}:\n"
                              + tail(result.stdout + result.stderr))
        return f"Kubernetes {self.args.kubernetes_version} schema, strict"

    def check_structure(self, manifest):
        problems = []
        kind = manifest.workload["kind"]
        if kind not in WORKLOAD_KINDS:
            problems.append(f"the workload is a {kind}: use a Deployment (a bare Pod is not rescheduled or rolled out)")
        sidecar = manifest.sidecar
        if not manifest.sidecar_is_init or sidecar.get("restartPolicy") != "Always":
            problems.append("token-sidecar is not a native sidecar: put it under initContainers with restartPolicy: Always,"
                            " so the app starts after it and stops before it")
        admin_host, admin_port = host_port(manifest.effective("admin", "127.0.0.1:9901"), 9901)
        listen_host, listen_port = host_port(manifest.effective("listen", "127.0.0.1:8080"), 8080)
        if admin_host in ("127.0.0.1", "localhost", "::1"):
            problems.append(f"admin listens on {admin_host}: the kubelet's probes and Prometheus reach the pod IP (use 0.0.0.0)")
        if listen_host not in ("127.0.0.1", "localhost", "::1"):
            problems.append(f"listen is {listen_host}: the proxy must stay on loopback (anything reaching it gets tokens)")
        ports = {p.get("name"): p["containerPort"] for p in sidecar.get("ports") or []}
        if set(ports.values()) - {admin_port}:
            problems.append(f"the sidecar declares ports {sorted(ports.values())}: declare only the admin port {admin_port}")
        for probe, path in (("startupProbe", "/readyz"), ("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
            get = (sidecar.get(probe) or {}).get("httpGet")
            if not get:
                problems.append(f"no {probe} (httpGet {path})")
                continue
            port = ports.get(get.get("port"), get.get("port"))
            if get.get("path") != path or port != admin_port:
                problems.append(f"{probe} is httpGet {get.get('path')} on port {get.get('port')}; expected {path} on the admin port {admin_port}")
        if not manifest.apps:
            problems.append("no app container")
        proxy = f"http://{listen_host}:{listen_port}"
        routes = [r for r in manifest.config.get("routes") or [] if isinstance(r, dict)]
        intercepting = [r for r in routes if r.get("intercept") is True]
        variables = (("HTTP_PROXY", "http_proxy") if len(intercepting) < len(routes) or not routes else ()) \
            + (("HTTPS_PROXY", "https_proxy") if intercepting else ())
        ca_volume = None
        if intercepting:
            intercept = manifest.config.get("intercept") or {}
            for key in ("caCertFile", "bundleFile"):
                if key not in intercept:
                    continue
                found = manifest._mount_for(str(intercept[key]))
                if not found or not found[1] or "emptyDir" not in found[1] or found[0].get("readOnly"):
                    problems.append(f"intercept.{key} {intercept[key]} is not on a writable emptyDir volume the sidecar mounts")
                else:
                    ca_volume = found[1]["name"]
        for app in manifest.apps:
            env = {e["name"]: e.get("value") for e in app.get("env") or []}
            if ca_volume and ca_volume not in [m["name"] for m in app.get("volumeMounts") or []]:
                problems.append(f"container {app['name']}: does not mount volume {ca_volume}, where the sidecar writes its CA certificate")
            for name in variables:
                if env.get(name) != proxy:
                    problems.append(f"container {app['name']}: {name} is {env.get(name)!r}, expected {proxy!r} (the sidecar's listen)")
            no_proxy = [h.strip() for h in (env.get("NO_PROXY") or "").split(",")]
            if not {"localhost", "127.0.0.1"} <= set(no_proxy):
                problems.append(f"container {app['name']}: NO_PROXY should list localhost and 127.0.0.1")
        if not (sidecar.get("securityContext") or {}).get("readOnlyRootFilesystem"):
            problems.append("the sidecar's securityContext should set readOnlyRootFilesystem: true")
        directory, max_bytes = manifest.spool()
        if max_bytes > 0:
            found = manifest._mount_for(directory)
            volume = found[1] if found else None
            if not volume or "emptyDir" not in volume or found[0].get("readOnly"):
                problems.append(f"spool.directory {directory} is not on a writable emptyDir volume the sidecar mounts")
            else:
                empty_dir = volume["emptyDir"] or {}
                if empty_dir.get("medium") == "Memory":
                    problems.append(f"volume {volume['name']}: medium: Memory puts spool files in the memory limit; use the node's disk")
                if "sizeLimit" not in empty_dir:
                    problems.append(f"volume {volume['name']}: no sizeLimit (spool.maxBytes is {max_bytes} bytes)")
                elif quantity(empty_dir["sizeLimit"]) < max_bytes:
                    problems.append(f"volume {volume['name']}: sizeLimit {empty_dir['sizeLimit']} is below spool.maxBytes ({max_bytes} bytes)")
        resources = sidecar.get("resources") or {}
        for part in ("requests", "limits"):
            if "memory" not in (resources.get(part) or {}):
                problems.append(f"the sidecar has no resources.{part}.memory")
        grace = manifest.pod.get("terminationGracePeriodSeconds", 30)
        drain = seconds(manifest.effective("drainTimeout", "15s"))
        if grace <= drain:
            problems.append(f"terminationGracePeriodSeconds {grace} is not above drainTimeout ({drain:g} s)")
        if problems:
            raise CaseFailure("\n".join(problems))
        return f"{kind}, native sidecar, spool {directory} on emptyDir" + (f", CA on emptyDir {ca_volume}" if ca_volume else "")

    def check_in_pod(self, manifest):
        result = self.check_in_sandbox(manifest, manifest.config_text)
        root = f"uid {manifest.uid}, root {'read-only' if manifest.read_only_root else 'writable'}"
        if result.returncode != 0:
            raise CaseFailure(f"token-sidecar check ({root}) exited {result.returncode}:\n{tail(result.stderr)}")
        if MASK.leaked(result.stdout + result.stderr):
            raise CaseFailure("check printed a placeholder secret")
        if not manifest.read_only_root:
            return root
        # The sandbox must be able to fail: the same config spooling to /tmp (the root) is refused.
        config = yaml.safe_load(manifest.config_text) or {}
        config["spool"] = dict(config.get("spool") or {}, directory="/tmp")
        refused = self.check_in_sandbox(manifest, yaml.safe_dump(config, sort_keys=False))
        if refused.returncode != 2 or "spool.directory" not in refused.stderr or "Read-only" not in refused.stderr:
            raise CaseFailure(f"the sandbox does not enforce the read-only root: check with spool.directory /tmp exited "
                              f"{refused.returncode}:\n{tail(refused.stderr)}")
        return root + "; spool.directory /tmp refused there (exit 2)"

    def check_in_sandbox(self, manifest, config_text):
        sandbox = manifest.build_sandbox(self.workdir, self.sandbox_name(), self.binary, self.placeholders, config_text)
        try:
            env = dict(manifest.env, PATH="/usr/local/bin:/usr/bin:/bin")
            return run_cmd(sandbox.command([manifest.argv[0], "check", "--config", manifest.config_path], manifest.user),
                           timeout=60, env=env)
        finally:
            sandbox.close()

    def loopback_config(self, manifest, listen_port, admin_port):
        """The manifest's config with every outside address replaced by a test server on 127.0.0.1."""
        config = yaml.safe_load(manifest.config_text) or {}
        config["listen"] = f"127.0.0.1:{listen_port}"
        config["admin"] = f"127.0.0.1:{admin_port}"
        if isinstance(config.get("credentialEndpoints"), dict):
            self.endpoints_port = free_port()
            config["credentialEndpoints"]["listen"] = f"127.0.0.1:{self.endpoints_port}"
        tls_keys = ("caFile", "clientCert", "clientKey", "insecureSkipVerify")
        for name, credential in (config.get("credentials") or {}).items():
            kind = credential.get("type")
            if kind == "oauth2":
                if credential.get("auth") == "tls_client_auth":
                    raise Unsupported(f"credential {name}: tls_client_auth needs an https token server")
                credential["tokenUrl"] = f"http://127.0.0.1:{self.token_server.port}/oauth/token"
            elif kind == "mca":
                credential["serverUrl"] = f"http://127.0.0.1:{self.token_server.port}/imf-authserver"
            elif kind == "aws":
                if "webIdentity" not in credential:
                    raise Unsupported(f"credential {name}: only an aws credential's webIdentity is modelled")
                credential["webIdentity"]["stsEndpoint"] = f"http://127.0.0.1:{self.token_server.port}/"
                for key in tls_keys:
                    credential["webIdentity"].pop(key, None)
            elif kind != "static":
                raise Unsupported(f"credential {name}: type {kind} is not modelled")
            for key in tls_keys:
                credential.pop(key, None)
        for route in config.get("routes") or []:
            route["upstream"] = f"http://127.0.0.1:{self.backend.port}"
            for key in tls_keys:
                route.pop(key, None)
            if route.get("intercept") is True:    # https upstreams only: the TLS front, verified
                route["upstream"] = f"https://127.0.0.1:{self.upstream_tls().port}"
                route["caFile"] = UPSTREAM_CA_PATH
        shared = config.get("sharedCache")
        if isinstance(shared, dict):
            if "usernameFile" in shared:
                raise Unsupported("sharedCache.usernameFile: ACL users are not modelled")
            database = re.sub(r"^rediss?://[^/]*", "", str(shared.get("url", ""))) or "/0"
            shared["url"] = f"redis://127.0.0.1:{self.redis_server().port}{database}"
            for key in tls_keys:
                shared.pop(key, None)
        return config

    def run_in_pod(self, manifest):
        listen_port, admin_port = free_port(), free_port()
        config = self.loopback_config(manifest, listen_port, admin_port)
        routes = [r for r in config.get("routes") or [] if r.get("credential")]
        if not routes:
            raise Unsupported("no route with a credential to send a request through")
        env = dict(manifest.env, PATH="/usr/local/bin:/usr/bin:/bin")
        for key in ("TOKEN_SIDECAR_LISTEN", "TOKEN_SIDECAR_ADMIN"):
            env.pop(key, None)
        extra = {UPSTREAM_CA_PATH: self.tls_front.cert} if self.tls_front else {}
        sandbox = manifest.build_sandbox(self.workdir, self.sandbox_name(), self.binary, self.placeholders,
                                         yaml.safe_dump(config, sort_keys=False), extra)
        stdout_path = os.path.join(self.workdir, f"run-{self.sandboxes}.stdout")
        stderr_path = os.path.join(self.workdir, f"run-{self.sandboxes}.stderr")
        process = None
        try:
            with open(stdout_path, "w") as out, open(stderr_path, "w") as err:
                process = subprocess.Popen(sandbox.command(manifest.argv, manifest.user), env=env, stdin=subprocess.DEVNULL,
                                           stdout=out, stderr=err)
            try:
                notes = self.exercise(manifest, process, sandbox, routes[0], listen_port, admin_port)
                process.send_signal(signal.SIGTERM)
                grace = min(manifest.pod.get("terminationGracePeriodSeconds", 30), 60)
                try:
                    code = process.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    raise CaseFailure(f"still running {grace} s (terminationGracePeriodSeconds) after SIGTERM")
                if code != 0:
                    raise CaseFailure(f"exited {code} after SIGTERM")
            except CaseFailure as failure:
                # The TLS front's errors too: a response it cut short shows there.
                # (`copy` is one step under the GIL: iterating the deque while the front's thread
                # appends to it could raise.)
                front = "".join(f"\n    {error}" for error in self.tls_front.errors.copy()) if self.tls_front else ""
                with open(stderr_path) as f:
                    raise CaseFailure(f"{failure}\nsidecar stderr:\n{tail(f.read())}"
                                      + (f"\nTLS front errors:{front}" if front else ""))
        finally:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=10)
            sandbox.close()
        with open(stdout_path) as out, open(stderr_path) as err:
            leaked = MASK.leaked(out.read() + err.read())
        if leaked:
            raise CaseFailure(f"the sidecar's output holds {len(leaked)} placeholder secret(s) or token(s)")
        return notes

    def exercise(self, manifest, process, sandbox, route, listen_port, admin_port):
        sidecar = manifest.sidecar
        # The kubelet's gate: the startupProbe, every periodSeconds up to failureThreshold times.
        startup = sidecar.get("startupProbe") or sidecar.get("readinessProbe") or {}
        path = (startup.get("httpGet") or {}).get("path", "/readyz")
        budget = min(startup.get("periodSeconds", 10) * startup.get("failureThreshold", 3), 30)
        deadline, status, body = time.monotonic() + budget, None, ""
        started = time.monotonic()
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise CaseFailure(f"`{' '.join(manifest.argv[1:])}` exited {process.returncode} before its startupProbe passed")
            try:
                status, body = http_get(admin_port, path)
                if status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        if status != 200:
            raise CaseFailure(f"startupProbe GET {path} did not answer 200 within {budget} s (last: {status} {body[:200]})")
        ready_after = time.monotonic() - started
        for probe in ("readinessProbe", "livenessProbe"):
            get = (sidecar.get(probe) or {}).get("httpGet")
            if get:
                status, body = http_get(admin_port, get["path"])
                if status != 200:
                    raise CaseFailure(f"{probe} GET {get['path']} answered {status}: {body[:200]}")

        # One request as the app sends it: absolute-form through HTTP_PROXY, or for an intercepting
        # route CONNECT through HTTPS_PROXY and TLS trusting the CA certificate the sidecar wrote.
        host = str(route["host"]).replace("*.", "examples-check.")
        cafile, trusted = self.written_ca(manifest, sandbox) if route.get("intercept") is True else (None, "")
        url = f"https://{host_port(host, 443)[0]}/examples-check" if cafile else f"http://{host}/examples-check"
        issued_before = len(self.token_server.requests())
        credential = (yaml.safe_load(manifest.config_text).get("credentials") or {})[route["credential"]]
        headers = self.app_headers(route, credential, host_port(host, 443)[0] if cafile else host, "/examples-check")
        response, body = get_as_app(listen_port, host, cafile, "/examples-check", headers)
        if response.status != 200:
            raise CaseFailure(f"GET {url} through the proxy: {response.status} {body[:300]}")
        echoed = json.loads(body)
        seen = [v for k, v in echoed["headers"] if k.lower() == "authorization"]
        if credential.get("type") == "aws":
            self.check_resigned(echoed, credential, issued_before)
            seen, expected = [], set()
        elif credential.get("type") == "static":
            expected = {f"Bearer {credential.get('token', self.placeholders.token)}"}
        else:
            tokens = [r for r in self.token_server.requests()]
            expected = {f"Bearer {r['token']}" for r in tokens}
            for r in tokens:
                MASK.add(r["token"])
            self.check_token_request(credential, tokens[issued_before:] or tokens)
        if credential.get("type") != "aws" and (len(seen) != 1 or seen[0] not in expected):
            raise CaseFailure(f"the backend saw {len(seen)} Authorization header(s), not exactly the issued token")

        if isinstance(manifest.config.get("credentialEndpoints"), dict):
            trusted += self.check_credential_endpoints(manifest, sandbox, route, listen_port, host, cafile, expected)
        shared = self.check_shared_cache() if "sharedCache" in manifest.config else ""
        spooled_mib = self.slow_reader(host, listen_port, admin_port, sandbox, manifest, cafile,
                                       self.app_headers(route, credential, host_port(host, 443)[0] if cafile else host,
                                                        f"/download?size={SPOOL_PROBE_BYTES}&mode=cl"))
        return (f"ready after {ready_after:.1f} s, token injected{trusted}{shared}, "
                f"{spooled_mib:.0f} MiB spooled in {manifest.spool()[0]}, SIGTERM -> exit 0")

    def check_credential_endpoints(self, manifest, sandbox, route, listen_port, host, cafile, expected):
        """The app's SDK as it finds its credential: the GCE metadata endpoint answers the
        route's credential's placeholder (never a token), and a request carrying it reaches the
        backend with exactly the issued token."""
        gce = manifest.config["credentialEndpoints"].get("gce")
        if not isinstance(gce, dict) or gce.get("credential") != route["credential"]:
            raise Unsupported("credentialEndpoints: only a gce endpoint serving the first route's credential is modelled")
        credential = (manifest.config.get("credentials") or {})[route["credential"]]
        placeholder_file = credential.get("placeholderFile")
        if not placeholder_file:
            raise Unsupported("credentialEndpoints: only a placeholderFile is modelled")
        with open(sandbox.path(str(placeholder_file))) as f:
            placeholder = f.read().strip()
        MASK.add(placeholder)
        conn = http.client.HTTPConnection("127.0.0.1", self.endpoints_port, timeout=10)
        try:
            conn.request("GET", "/computeMetadata/v1/instance/service-accounts/default/token", headers={"Metadata-Flavor": "Google"})
            response = conn.getresponse()
            answer = json.loads(response.read().decode("utf-8", "replace"))
        finally:
            conn.close()
        if response.status != 200 or answer.get("access_token") != placeholder:
            raise CaseFailure(f"the GCE metadata endpoint answered {response.status}, not the placeholder of {route['credential']}")
        if f"Bearer {answer['access_token']}" in expected:
            raise CaseFailure("the GCE metadata endpoint handed out a real token")
        response, body = get_as_app(listen_port, host, cafile, "/examples-check", {"Authorization": f"Bearer {placeholder}"})
        if response.status != 200:
            raise CaseFailure(f"a request with the placeholder through the proxy: {response.status} {body[:300]}")
        seen = [v for k, v in json.loads(body)["headers"] if k.lower() == "authorization"]
        if len(seen) != 1 or seen[0] not in expected:
            raise CaseFailure("the backend did not see exactly the issued token for the placeholder")
        return ", the GCE endpoint's placeholder swapped for the token"

    def written_ca(self, manifest, sandbox):
        """The CA certificate the sidecar wrote to intercept.caCertFile (on the host side of the
        sandbox), after checking that bundleFile, when set, ends with it."""
        intercept = manifest.config.get("intercept") or {}
        cafile = sandbox.path(str(intercept["caCertFile"]))
        try:
            with open(cafile) as f:
                certificate = f.read()
        except OSError as error:
            raise CaseFailure(f"intercept.caCertFile {intercept['caCertFile']} was not written: {error}")
        note = f" through CONNECT + TLS trusting {intercept['caCertFile']}"
        if "bundleFile" in intercept:
            with open(sandbox.path(str(intercept["bundleFile"]))) as f:
                if not f.read().endswith(certificate):
                    raise CaseFailure(f"intercept.bundleFile {intercept['bundleFile']} does not end with the CA certificate")
            note += f" (and {os.path.basename(str(intercept['bundleFile']))} ends with it)"
        return cafile, note

    def check_shared_cache(self):
        """The sidecar wrote its token to Redis, sealed: no token, secret or key in any key or value."""
        entries = self.redis.entries()
        if not any(":token:" in key for key, _ in entries):
            raise CaseFailure(f"sharedCache: no token entry in Redis (keys: {sorted(k for k, _ in entries)})")
        for key, value in entries:
            if MASK.leaked(key) or MASK.leaked(value.decode("latin-1")):
                raise CaseFailure(f"sharedCache: Redis key {MASK(key)} holds a placeholder secret or token")
        return f", sealed in Redis ({len(entries)} key(s), nothing readable)"

    def app_headers(self, route, credential, host, target):
        """What the app adds to a request: its own bearer token, or on a sigv4 route a SigV4
        signature with the placeholder keys (as an AWS SDK signs), for the route's first
        allowed region and service."""
        if credential.get("type") != "aws":
            return {"Authorization": "Bearer from-the-app"}
        settings = (route.get("inject") or {}).get("sigv4") or {}
        region = (settings.get("allowedRegions") or ["us-east-1"])[0]
        service = (settings.get("allowedServices") or ["s3"])[0]
        amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        headers = {"Host": host, "X-Amz-Date": amz_date, "X-Amz-Content-SHA256": hashlib.sha256(b"").hexdigest()}
        headers["Authorization"] = sigv4_authorization(credential["placeholderAccessKeyId"], "placeholder-not-a-secret",
                                                       "GET", target, headers, region, service)
        return headers

    def check_resigned(self, echoed, credential, issued_before):
        """The backend got the request signed with the temporary keys STS issued for the mounted
        web identity token (the signature verified here with their secret), never the placeholder."""
        tokens = self.token_server.requests()
        for r in tokens:
            for suffix in ("", "-secret", "-session"):
                MASK.add(r["token"] + suffix)
        fresh = tokens[issued_before:] or tokens
        if not fresh:
            raise CaseFailure("STS got no AssumeRoleWithWebIdentity request")
        form = urllib.parse.parse_qs(fresh[-1]["body"])
        # The projected service-account token (a JWT), or a placeholder token in a plain file.
        if form.get("Action") != ["AssumeRoleWithWebIdentity"] or form.get("WebIdentityToken", [""])[0] not in (self.placeholders.jwt,
                                                                                                            self.placeholders.token):
            raise CaseFailure("the STS request did not carry the mounted web identity token")
        if form.get("RoleArn") != [credential["webIdentity"]["roleArn"]]:
            raise CaseFailure("the STS request did not name the configured role")
        headers = echoed["headers"]
        values = lambda name: [v for k, v in headers if k.lower() == name]
        authorization = values("authorization")
        if len(authorization) != 1 or credential["placeholderAccessKeyId"] in json.dumps(headers):
            raise CaseFailure(f"the backend saw {len(authorization)} Authorization header(s), or the placeholder")
        found = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$",
                         authorization[0])
        keys = {r["token"] for r in tokens}
        if not found or found.group(1) not in keys:
            raise CaseFailure("the backend's request is not signed with a key STS issued")
        key = found.group(1)
        if values("x-amz-security-token") != [key + "-session"]:
            raise CaseFailure("the backend's request does not carry the session token STS issued")
        signed = {name: ",".join(values(name)) for name in found.group(4).split(";")}
        expected = sigv4_authorization(key, key + "-secret", echoed["method"], echoed["target"], signed, found.group(2),
                                       found.group(3), signed_names=found.group(4).split(";"))
        if expected != authorization[0]:
            raise CaseFailure("the backend's request signature does not verify with the issued secret")

    def check_token_request(self, credential, requests):
        """The token request carried the secret the test mounted (basic or post)."""
        if not requests:
            raise CaseFailure("the token server got no request")
        auth = credential.get("auth", "basic" if credential.get("type") == "oauth2" else "secret")
        last = requests[-1]
        if auth in ("basic", "secret"):
            header = next((v for k, v in last["headers"] if k.lower() == "authorization"), "")
            decoded = base64.b64decode(header.split(" ", 1)[-1]).decode("utf-8", "replace") if header.startswith("Basic ") else ""
            if urllib.parse.unquote_plus(decoded.partition(":")[2]) != self.placeholders.secret:
                raise CaseFailure("the token request did not carry the secret from the mounted file (Basic)")
        elif auth == "post":
            if urllib.parse.parse_qs(last["body"]).get("client_secret") != [self.placeholders.secret]:
                raise CaseFailure("the token request did not carry the secret from the mounted file (post)")

    def slow_reader(self, host, listen_port, admin_port, sandbox, manifest, cafile=None, app_headers=None):
        """A client that stops reading: the response must spool into spool.directory's volume."""
        directory, max_bytes = manifest.spool()
        if max_bytes == 0:
            return 0
        volume_path = sandbox.path(directory)

        def used_bytes():
            stats = os.statvfs(volume_path)
            return (stats.f_blocks - stats.f_bfree) * stats.f_frsize
        baseline = used_bytes()
        _, metrics_before = http_get(admin_port, "/metrics")
        before = metric(metrics_before, "token_sidecar_spooled_responses_total")
        used = 0
        if cafile:    # inside the tunnel: origin-form, Host the intercepted name
            sock = tunnel(listen_port, host, cafile, rcvbuf=4096)
            target, authority = f"/download?size={SPOOL_PROBE_BYTES}&mode=cl", host_port(host, 443)[0]
        else:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(10)
            target, authority = f"http://{host}/download?size={SPOOL_PROBE_BYTES}&mode=cl", host
        try:
            if not cafile:
                sock.connect(("127.0.0.1", listen_port))
            extra = "".join(f"{k}: {v}\r\n" for k, v in (app_headers or {}).items()
                            if k.lower() not in ("host", "authorization") or k.lower() == "authorization" and "AWS4" in v)
            sock.sendall(f"GET {target} HTTP/1.1\r\n"
                         f"Host: {authority}\r\n{extra}Connection: close\r\n\r\n".encode())
            # Spooled (the counter moved) into the volume (whose file system holds the unlinked file's
            # blocks while it is open: at least 1 MiB more than before).
            deadline, spooled = time.monotonic() + 15, False
            while time.monotonic() < deadline and not (spooled and used >= 1 << 20):
                time.sleep(0.1)
                _, text = http_get(admin_port, "/metrics")
                spooled = metric(text, "token_sidecar_spooled_responses_total") > before
                used = max(used, used_bytes() - baseline)
            if not spooled:
                raise CaseFailure(f"a {SPOOL_PROBE_BYTES >> 20} MiB response to a client that does not read was not spooled within 15 s")
            if used < 1 << 20:
                raise CaseFailure(f"the response was spooled, but not into the volume mounted at {directory}")
            received, digest, head = 0, hashlib.sha256(), b""
            deadline = time.monotonic() + 60
            while b"\r\n\r\n" not in head:
                chunk = sock.recv(65536)
                if not chunk:
                    raise CaseFailure("the slow reader's connection closed before a response head")
                head += chunk
            head, _, rest = head.partition(b"\r\n\r\n")
            digest.update(rest)
            received = len(rest)
            while received < SPOOL_PROBE_BYTES and time.monotonic() < deadline:
                chunk = sock.recv(1 << 20)
                if not chunk:
                    break
                digest.update(chunk)
                received += len(chunk)
        finally:
            sock.close()
        if not head.startswith(b"HTTP/1.1 200"):
            raise CaseFailure(f"the slowly read response: {head.splitlines()[0].decode('latin-1')}")
        if received != SPOOL_PROBE_BYTES:
            raise CaseFailure(f"the slowly read response had {received} bytes, expected {SPOOL_PROBE_BYTES}")
        status, expected = http_get(self.backend.port, f"/download-sha?size={SPOOL_PROBE_BYTES}")
        if digest.hexdigest() != expected.strip():
            raise CaseFailure("the slowly read response's SHA-256 differs from what the backend sent")
        return used / (1 << 20)


def sigv4_authorization(key_id, secret, method, target, headers, region, service, signed_names=None):
    """An AWS Signature Version 4 `Authorization` (S3's canonical form: the path as sent) over
    `headers` (all of them unless `signed_names`), with the payload hash of x-amz-content-sha256."""
    lower = {k.lower(): str(v).strip() for k, v in headers.items()}
    names = sorted(signed_names or lower.keys())
    path, _, query = target.partition("?")
    pairs = sorted((urllib.parse.quote(urllib.parse.unquote(k), safe="-_.~"), urllib.parse.quote(urllib.parse.unquote(v), safe="-_.~"))
                   for k, _, v in (part.partition("=") for part in query.split("&") if part))
    canonical = "\n".join([method, path, "&".join(f"{k}={v}" for k, v in pairs),
                           "".join(f"{n}:{' '.join(lower[n].split())}\n" for n in names), ";".join(names),
                           lower["x-amz-content-sha256"]])
    amz_date = lower["x-amz-date"]
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in (amz_date[:8], region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"AWS4-HMAC-SHA256 Credential={key_id}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"


def fail(failure):
    raise failure


# ---- main ---------------------------------------------------------------------------------------

def enter_namespace(argv):
    """Re-runs this script in a private mount namespace: nothing it mounts is seen outside, and
    everything is unmounted when it exits."""
    if os.environ.get(NAMESPACE_FLAG) == "1":
        return
    if os.geteuid() != 0:
        sys.stderr.write("check_examples: needs root for a mount namespace, overlay mounts and chroot "
                         "(`sudo`; `make test-examples` does that)\n")
        sys.exit(2)
    for tool in ("unshare", "mount", "umount", "chroot", "openssl"):
        if shutil.which(tool) is None:
            sys.stderr.write(f"check_examples: {tool} is not installed\n")
            sys.exit(2)
    command = ["unshare", "-m", "--propagation", "private", sys.executable, os.path.abspath(__file__)] + argv
    try:
        os.execvpe(command[0], command, dict(os.environ, **{NAMESPACE_FLAG: "1"}))
    except OSError as error:
        sys.stderr.write(f"check_examples: cannot start a mount namespace ({error})\n")
        sys.exit(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="default: config/*.yaml")
    parser.add_argument("--binary", default=os.environ.get("TOKEN_SIDECAR_BIN", os.path.join(ROOT, ".build/release/token-sidecar")))
    parser.add_argument("--kubernetes-validate",
                        default=os.environ.get("KUBERNETES_VALIDATE",
                                               os.path.join(os.path.dirname(sys.executable), "kubernetes-validate")))
    parser.add_argument("--kubernetes-version", default=os.environ.get("KUBERNETES_VERSION", DEFAULT_KUBERNETES_VERSION))
    args = parser.parse_args()
    args.binary = os.path.abspath(args.binary)
    if not os.access(args.binary, os.X_OK):
        sys.stderr.write(f"check_examples: no token-sidecar binary at {args.binary} (--binary or TOKEN_SIDECAR_BIN)\n")
        return 2
    if not os.access(args.kubernetes_validate, os.X_OK) and shutil.which(args.kubernetes_validate) is None:
        sys.stderr.write(f"check_examples: kubernetes-validate not found at {args.kubernetes_validate} (make k8s-venv)\n")
        return 2
    files = [os.path.abspath(f) for f in args.files] or sorted(glob.glob(os.path.join(ROOT, "config", "*.yaml")))
    if not files:
        sys.stderr.write("check_examples: no files to check\n")
        return 2
    enter_namespace(sys.argv[1:])
    workdir = tempfile.mkdtemp(prefix="check-examples-")
    runner = Runner(args, workdir)
    try:
        runner.start()
        for path in files:
            runner.run_file(path)
    except Exception as error:    # the fixtures, the Dockerfile: nothing can be checked
        runner.failed += 1
        print(f"FAIL  setup: {MASK(str(error))}")
    finally:
        runner.stop()
        if mounts_under(workdir):
            print(f"note: {workdir} still has mounts; left in place")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"{runner.passed} passed, {runner.failed} failed")
    return 0 if runner.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
