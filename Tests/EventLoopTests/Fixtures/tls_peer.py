"""A TLS server peer for TLSLayerTests: Python's ssl (OpenSSL), one connection at a time.

Usage: tls_peer.py CERT KEY BYTES
After the handshake the server has sent its TLS 1.3 session tickets (OpenSSL's server sends two
right away, as nginx does). It then waits for one byte from the client, answers with BYTES bytes
of a counting pattern, sends close_notify and keeps the TCP connection open until the client
leaves (so the end the client sees is the close_notify, not a FIN).
"""
import socket
import ssl
import sys

cert, key, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(4)
print("PORT", listener.getsockname()[1], flush=True)
pattern = bytes(i % 251 for i in range(size))
while True:
    raw, _ = listener.accept()
    raw.settimeout(20)
    try:
        conn = context.wrap_socket(raw, server_side=True)
        if conn.recv(1):
            conn.sendall(pattern)
            conn.unwrap()  # close_notify; then waits for the client's close
    except (OSError, ssl.SSLError):
        pass
    finally:
        raw.close()
