# backend.sh — sourced by run.sh and peers-slowread.sh (after common.sh): starts the nginx
# backend every abuse scenario uses and sets BPORT.
#
# /canary and /: a 3-byte body. /big: a sparse file of SLOWREAD_SIZE (default 64 MiB), larger than every buffer on the
# way (nginx's and the proxy's socket buffers, the proxy's 256 KiB watermark), so a slow reader
# never finishes it within a scenario. /upload: proxied to nginx itself, because nginx then
# reads the WHOLE request body before answering (proxy_request_buffering) — like an app server;
# a bare `return` would answer before the body arrived.
BPORT="$(free_port)"
mkdir -p "$TMP/www"
truncate -s "${SLOWREAD_SIZE:-64M}" "$TMP/www/big"
nginx_conf backend "    server {
        listen 127.0.0.1:$BPORT;
        client_max_body_size 0;
        location = /upload { proxy_pass http://127.0.0.1:$BPORT/ok; }
        location = /big { root $TMP/www; }
        location / { default_type text/plain; return 200 \"ok\n\"; }
    }"
start_nginx backend "$BPORT"
