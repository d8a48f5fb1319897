#!/usr/bin/env python3
"""standin-sidecar.py — TEST-ONLY stand-in for the token-sidecar binary, built on nginx.

Lets bench.sh / bigbody.sh be exercised before the real binary exists:
    SIDECAR_BIN=Benchmarks/standin-sidecar.py Benchmarks/bigbody.sh

Accepts the same command line (`run --config FILE`), reads the subset of the YAML
config the scripts generate (listen, credentials.<name>.token, routes host/upstream/
credential), writes an nginx config next to FILE and exec()s nginx as ONE foreground
process (master_process off), so $! / the PID is the proxy itself (RSS, strace,
valgrind all see the real proxy). nginx accepts absolute-form requests, injects
`Authorization: Bearer <token>` and `Via: 1.1 token-sidecar`, streams both ways
(proxy_buffering off, proxy_request_buffering off) and keeps upstream connections alive.
Unknown hosts get 403 (otherHosts: deny). It is NOT the product — numbers measure nginx.
"""

import os
import re
import sys


def parse_yaml_subset(text):
    listen, tokens, routes = None, {}, []
    section, cur_cred, cur_route = None, None, None
    for raw in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        s = line.strip()
        val = lambda x: x.split(":", 1)[1].strip().strip("\"'")  # noqa: E731
        if indent == 0:
            section = s.split(":", 1)[0]
            if section == "listen":
                listen = val(s)
            continue
        if section == "credentials":
            if indent == 2 and s.endswith(":"):
                cur_cred = s[:-1].strip("\"'")
            elif s.startswith("token:") and cur_cred:
                tokens[cur_cred] = val(s)
        elif section == "routes":
            if s.startswith("- "):
                cur_route = {}
                routes.append(cur_route)
                s = s[2:].strip()
            if cur_route is not None and ":" in s:
                cur_route[s.split(":", 1)[0].strip()] = val(s)
    return listen, tokens, routes


def main():
    if len(sys.argv) != 4 or sys.argv[1] != "run" or sys.argv[2] != "--config":
        sys.exit("usage: standin-sidecar.py run --config FILE")
    cfg = os.path.abspath(sys.argv[3])
    listen, tokens, routes = parse_yaml_subset(open(cfg).read())
    if not listen or not routes:
        sys.exit("standin-sidecar: config needs listen and routes")
    d = os.path.join(os.path.dirname(cfg), "standin-nginx")
    os.makedirs(d, exist_ok=True)
    servers, upstreams = [], []
    for i, r in enumerate(routes):
        up = re.sub(r"^http://", "", r["upstream"]).rstrip("/")
        tok = tokens.get(r.get("credential", ""), "")
        upstreams.append("upstream up%d { server %s; keepalive 32; }" % (i, up))
        servers.append("""
    server {
        listen %s;
        server_name %s;
        location / {
            proxy_pass http://up%d;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header Authorization "Bearer %s";
            proxy_set_header Via "1.1 token-sidecar";
            proxy_buffering off;
            proxy_request_buffering off;
        }
    }""" % (listen, r["host"], i, tok))
    user = "user root root;" if os.geteuid() == 0 else ""
    conf = """%s
daemon off;
master_process off;
worker_processes 1;
pid %s/nginx.pid;
error_log %s/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path %s/body;
    proxy_temp_path %s/proxy;
    fastcgi_temp_path %s/fastcgi;
    uwsgi_temp_path %s/uwsgi;
    scgi_temp_path %s/scgi;
    client_max_body_size 0;
    keepalive_requests 1000000;
    proxy_read_timeout 120s;
    proxy_send_timeout 120s;
    %s
    server { listen %s default_server; return 403 "host not allowed\\n"; }
    %s
}
""" % (user, d, d, d, d, d, d, d, "\n    ".join(upstreams), listen, "\n".join(servers))
    path = os.path.join(d, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    os.execv("/usr/sbin/nginx", ["nginx", "-p", d, "-e", d + "/error.log", "-c", path])


if __name__ == "__main__":
    main()
