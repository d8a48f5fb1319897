import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// HTTPS interception end to end: real clients (curl, Python requests and urllib, wget, Node)
/// send `https://` URLs through the proxy as `HTTPS_PROXY`, trusting only the sidecar's CA; the
/// sidecar terminates TLS for the intercepted name, injects the token and sends the request on
/// to nginx over a TLS connection it verifies against nginx's own test CA.
final class InterceptionTests: XCTestCase {
    private static let echo = #"location / { return 200 "auth=$http_authorization host=$host\n"; }"#
    private static let upload = #"location /upload { client_max_body_size 10m; proxy_pass https://127.0.0.1:$server_port/sink; } location /sink { return 200 "got=$content_length\n"; }"#

    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("intercept-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    private var caFile: String { directory.appendingPathComponent("ca.crt").path }

    /// A proxy intercepting `localhost:<nginx port>`, verifying nginx with `upstreamCA` (none: the system store).
    private func proxy(nginx: Nginx, upstreamCA: String?, timeouts: String = "connect: 5s, responseHeaders: 10s",
                       extra: String = "", host: String = "localhost") throws -> ProxyHarness {
        try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            timeouts: {\(timeouts)}
            intercept:
              caCertFile: \(caFile)
              bundleFile: \(directory.appendingPathComponent("bundle.pem").path)
            credentials:
              api: {type: static, token: "abc"}
            routes:
              - host: "\(host):\(nginx.port)"
                intercept: true
                credential: api
            \(upstreamCA.map { "    caFile: \($0)" } ?? "")
            \(extra)
            """)
    }

    private func url(_ nginx: Nginx, _ path: String = "/x") -> String { "https://localhost:\(nginx.port)\(path)" }

    func testCurlWithAnHTTPSURLGetsTheTokenInjectedAndKeepsTheTunnelAlive() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        let proxy = try proxy(nginx: nginx, upstreamCA: ca.caCert)
        let result = try Curl.run(["-v", "--http1.1", "--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", caFile,
                                   "-H", "Authorization: Bearer app-own", url(nginx, "/a"), url(nginx, "/b")])
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertEqual(result.out, "auth=Bearer abc host=localhost\nauth=Bearer abc host=localhost\n")
        XCTAssertTrue(result.err.contains("ALPN: server accepted http/1.1"), "ALPN picks http/1.1 when the app offers only it")
        XCTAssertTrue(result.err.contains("Re-using existing connection") || result.err.contains("Reusing existing"),
                      "the second request goes through the same tunnel")
        let lines = nginx.waitForLogLines(2)
        XCTAssertEqual(lines.count, 2)
        XCTAssertTrue(lines.allSatisfy { $0.contains("\"Bearer abc\"") }, "\(lines)")
        let bundle = try String(contentsOfFile: directory.appendingPathComponent("bundle.pem").path, encoding: .utf8)
        XCTAssertTrue(bundle.hasSuffix(try String(contentsOfFile: caFile, encoding: .utf8)), "the bundle ends with the CA")
    }

    func testPythonRequestsUrllibAndWgetThroughHTTPSProxy() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        let proxy = try proxy(nginx: nginx, upstreamCA: ca.caCert)
        let proxyURL = "http://127.0.0.1:\(proxy.port)"
        let requests = try run(["python3", "-c", """
            import requests, sys
            r = requests.get(sys.argv[1], proxies={"https": sys.argv[2]}, verify=sys.argv[3], headers={"Authorization": "Bearer app"})
            print(r.status_code, r.text, end="")
            """, url(nginx, "/requests"), proxyURL, caFile])
        XCTAssertEqual(requests.out, "200 auth=Bearer abc host=localhost\n", requests.err)
        let urllib = try run(["python3", "-c", """
            import ssl, sys, urllib.request
            context = ssl.create_default_context(cafile=sys.argv[3])
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({"https": sys.argv[2]}),
                                                 urllib.request.HTTPSHandler(context=context))
            print(opener.open(sys.argv[1], timeout=20).read().decode(), end="")
            """, url(nginx, "/urllib"), proxyURL, caFile])
        XCTAssertEqual(urllib.out, "auth=Bearer abc host=localhost\n", urllib.err)
        let wget = try run(["wget", "-q", "-O", "-", "--ca-certificate=\(caFile)", url(nginx, "/wget")],
                           environment: ["https_proxy": proxyURL])
        XCTAssertEqual(wget.out, "auth=Bearer abc host=localhost\n", wget.err)
        XCTAssertEqual(nginx.waitForLogLines(3).count, 3)
    }

    /// A route by address alone: its CA permits that address and only the reserved `.invalid`
    /// DNS subtree, and clients still verify the leaf (an IP SAN, no subject).
    func testClientsVerifyTheLeafOfAnAddressRoute() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        let proxy = try proxy(nginx: nginx, upstreamCA: ca.caCert, host: "127.0.0.1")
        let target = "https://127.0.0.1:\(nginx.port)/ip"
        let curl = try Curl.run(["--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", caFile, target])
        XCTAssertEqual(curl.out, "auth=Bearer abc host=127.0.0.1\n", curl.err)
        let requests = try run(["python3", "-c", """
            import requests, sys
            r = requests.get(sys.argv[1], proxies={"https": sys.argv[2]}, verify=sys.argv[3])
            print(r.status_code, r.text, end="")
            """, target, "http://127.0.0.1:\(proxy.port)", caFile])
        XCTAssertEqual(requests.out, "200 auth=Bearer abc host=127.0.0.1\n", requests.err)
        let text = try run(["openssl", "x509", "-in", caFile, "-noout", "-text"]).out
        XCTAssertTrue(text.contains("DNS:invalid") && text.contains("IP:127.0.0.1/255.255.255.255"), text)
    }

    func testNodeHTTPSThroughAConnectAgentWithExtraCACerts() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        let proxy = try proxy(nginx: nginx, upstreamCA: ca.caCert)
        // Node has no proxy support of its own: a minimal CONNECT agent, as the https-proxy-agent package does.
        let script = """
            const http = require('http'), https = require('https'), tls = require('tls');
            const [proxyPort, target] = process.argv.slice(1);
            const url = new URL(target);
            class ConnectAgent extends https.Agent {
              createConnection(options, callback) {
                http.request({host: '127.0.0.1', port: +proxyPort, method: 'CONNECT', path: `${url.hostname}:${url.port}`})
                  .on('connect', (res, socket) => {
                    if (res.statusCode !== 200) return callback(new Error('CONNECT ' + res.statusCode));
                    callback(null, tls.connect({socket, servername: url.hostname}));
                  }).on('error', callback).end();
              }
            }
            https.get(target, {agent: new ConnectAgent({keepAlive: true})}, res => {
              let body = ''; res.on('data', d => body += d); res.on('end', () => { process.stdout.write(res.statusCode + ' ' + body); process.exit(0); });
            }).on('error', e => { console.error(e.message); process.exit(1); });
            """
        let node = try run(["node", "-e", script, String(proxy.port), url(nginx, "/node")],
                           environment: ["NODE_EXTRA_CA_CERTS": caFile])
        XCTAssertEqual(node.out, "200 auth=Bearer abc host=localhost\n", node.err)
    }

    func testBodiesArriveWhole() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.upload + " " + Self.echo)
        let proxy = try proxy(nginx: nginx, upstreamCA: ca.caCert)
        let body = Data(repeating: 0x61, count: 300_000)
        let posted = try Curl.run(["--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", caFile, "--data-binary", "@-",
                                   url(nginx, "/upload")], stdin: body)
        XCTAssertEqual(posted.out, "got=300000\n", posted.err)
        let chunked = try Curl.run(["--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", caFile, "--data-binary", "@-",
                                    "-H", "Transfer-Encoding: chunked", url(nginx, "/upload")], stdin: body)
        XCTAssertEqual(chunked.out, "got=300000\n", "nginx reassembles the chunked upload: \(chunked.err)")
    }

    func testAClientThatDoesNotTrustTheCAGetsATLSFailureAndNothingIsForwarded() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        let proxy = try proxy(nginx: nginx, upstreamCA: ca.caCert)
        let result = try Curl.run(["--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", ca.caCert, url(nginx)])
        XCTAssertEqual(result.status, 60, "curl: certificate problem: \(result.err)")
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(nginx.logLines(), [], "nothing reaches the backend")
        let failures = proxy.server.interceptHandshakeFailures()
        XCTAssertEqual(failures.values.reduce(0, +), 1, "\(failures)")
        XCTAssertEqual(failures.keys.first?.host, "localhost")
    }

    func testARequestForAnotherHostInsideTheTunnelIs421() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        let proxy = try proxy(nginx: nginx, upstreamCA: ca.caCert)
        // The same refusal whether the app speaks HTTP/1.1 or HTTP/2 in the tunnel.
        for (option, statusLine) in [("--http1.1", "HTTP/1.1 421 "), ("--http2", "HTTP/2 421 ")] {
            let result = try Curl.run(["-i", option, "--suppress-connect-headers", "--proxy", "http://127.0.0.1:\(proxy.port)",
                                       "--cacert", caFile, "-H", "Host: other.test", url(nginx)])
            XCTAssertTrue(result.out.hasPrefix(statusLine), result.out + result.err)
            XCTAssertTrue(result.out.lowercased().contains("proxy-status: token-sidecar; error=http_request_denied"), result.out)
        }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(nginx.logLines(), [])
    }

    func testAnUpstreamThatDoesNotVerifyIs502InsideTheTunnel() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        let proxy = try proxy(nginx: nginx, upstreamCA: nil)  // nginx's test CA is not in the system store
        for (option, statusLine) in [("--http1.1", "HTTP/1.1 502 "), ("--http2", "HTTP/2 502 ")] {
            let result = try Curl.run(["-i", option, "--suppress-connect-headers", "--proxy", "http://127.0.0.1:\(proxy.port)",
                                       "--cacert", caFile, url(nginx)])
            XCTAssertTrue(result.out.hasPrefix(statusLine), result.out + result.err)
            XCTAssertTrue(result.out.contains("error=tls_certificate_error"), result.out)
        }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(nginx.logLines(), [], "nothing is sent to a backend that did not verify")
    }

    func testTheCAIsNameConstrainedSoALeafForAnotherNameDoesNotVerify() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        _ = try proxy(nginx: nginx, upstreamCA: ca.caCert)
        let text = try run(["openssl", "x509", "-in", caFile, "-noout", "-text"])
        XCTAssertTrue(text.out.contains("X509v3 Name Constraints: critical"), text.out)
        XCTAssertTrue(text.out.contains("DNS:localhost"), text.out)
        let mode = try FileManager.default.attributesOfItem(atPath: caFile)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o644)
    }

    func testAnOperatorCAIsReReadWhenItsFilesChange() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        let (certA, keyA) = try operatorCA("a")
        let (certB, keyB) = try operatorCA("b")
        let cert = directory.appendingPathComponent("ca.pem").path, key = directory.appendingPathComponent("ca.key").path
        try FileManager.default.copyItem(atPath: certA, toPath: cert)
        try FileManager.default.copyItem(atPath: keyA, toPath: key)
        let proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            intercept: {caCertFile: \(cert), caKeyFile: \(key)}
            routes:
              - host: "localhost:\(nginx.port)"
                intercept: true
                caFile: \(ca.caCert)
            """)
        let first = try Curl.run(["--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", certA, url(nginx)])
        XCTAssertEqual(first.status, 0, "the operator's CA signs the leaf: \(first.err)")
        for (from, to) in [(certB, cert), (keyB, key)] {
            try FileManager.default.removeItem(atPath: to)
            try FileManager.default.copyItem(atPath: from, toPath: to)
        }
        Thread.sleep(forTimeInterval: 2.2)
        let second = try Curl.run(["--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", certB, url(nginx)])
        XCTAssertEqual(second.status, 0, "the renewed CA signs new leaves: \(second.err)")
        XCTAssertEqual(try Curl.run(["--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", certA, url(nginx)]).status, 60,
                       "the old CA no longer")
        XCTAssertEqual(proxy.server.interceptLeavesMinted, 2)
    }

    /// A CA certificate and key made with the openssl CLI.
    private func operatorCA(_ name: String) throws -> (String, String) {
        let cert = directory.appendingPathComponent("\(name).crt").path, key = directory.appendingPathComponent("\(name).key").path
        _ = try run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", key, "-out", cert, "-subj", "/CN=operator \(name)", "-days", "2",
                     "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        return (cert, key)
    }

    func testConnectToOtherHostsStillFollowsTheConnectPolicy() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        let proxy = try proxy(nginx: nginx, upstreamCA: ca.caCert)
        let client = try RawClient(port: proxy.port)
        client.send("CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n")
        XCTAssertEqual(try client.readResponse().status, 403, "connect: deny still applies to other hosts")
    }

    /// The token path is the plain one: a 401 inside the tunnel is replayed once, with the whole
    /// body, with a new token; a credential without a token answers 503 inside the tunnel.
    func testA401InsideTheTunnelIsReplayedWithTheBodyAndANewTokenAndNoTokenIs503() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: """
            location /upload { client_max_body_size 10m; if ($http_authorization = "Bearer tok-1") { return 401; } \
            proxy_pass https://127.0.0.1:$server_port/sink; proxy_set_header X-Auth $http_authorization; }
            location /sink { return 200 "auth=$http_x_auth got=$content_length\n"; }
            """)
        let tokens = try TokenServer()
        let proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            intercept: {caCertFile: \(caFile)}
            credentials:
              partner:
                type: oauth2
                tokenUrl: "http://127.0.0.1:\(tokens.port)/oauth/token"
                clientId: "client-1"
                secret: "s3cret"
                tokenWait: 300ms
            routes:
              - host: "localhost:\(nginx.port)"
                intercept: true
                credential: partner
                caFile: \(ca.caCert)
            """)
        let body = Data(repeating: 0x62, count: 20_000)
        let replayed = try Curl.run(["--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", caFile, "--data-binary", "@-",
                                     url(nginx, "/upload")], stdin: body)
        XCTAssertEqual(replayed.out, "auth=Bearer tok-2 got=20000\n", replayed.err)
        XCTAssertEqual(tokens.requests().count, 2, "one refetch for the rejected token")

        let noTokens = try TokenServer(control: ["status": 500])
        let starved = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            intercept: {caCertFile: \(directory.appendingPathComponent("ca2.crt").path)}
            credentials:
              partner:
                type: oauth2
                tokenUrl: "http://127.0.0.1:\(noTokens.port)/oauth/token"
                clientId: "client-1"
                secret: "s3cret"
                tokenWait: 200ms
            routes:
              - host: "localhost:\(nginx.port)"
                intercept: true
                credential: partner
                caFile: \(ca.caCert)
            """)
        for (option, statusLine) in [("--http1.1", "HTTP/1.1 503 "), ("--http2", "HTTP/2 503 ")] {
            let unavailable = try Curl.run(["-i", option, "--suppress-connect-headers", "--proxy", "http://127.0.0.1:\(starved.port)",
                                            "--cacert", directory.appendingPathComponent("ca2.crt").path, url(nginx, "/upload")])
            XCTAssertTrue(unavailable.out.hasPrefix(statusLine), unavailable.out + unavailable.err)
            XCTAssertTrue(unavailable.out.lowercased().contains("retry-after: 1"), unavailable.out)
        }
    }

    func testEverySmugglingVectorInsideTheTunnelIs400ClosedAndNeverForwarded() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        let proxy = try proxy(nginx: nginx, upstreamCA: ca.caCert)
        let authority = "localhost:\(nginx.port)"
        let vectors = MalformedRequests.vectors.map { vector in
            (vector.name, vector.raw.replacingOccurrences(of: "api.test", with: authority), vector.status)
        }
        let input = directory.appendingPathComponent("vectors.json")
        try JSONSerialization.data(withJSONObject: vectors.map { Data($0.1.utf8).base64EncodedString() })
            .write(to: input)
        // Each vector on its own tunnel, as an app's TLS connection would carry it.
        let result = try run(["python3", "-c", Self.tunnelClient, String(proxy.port), authority, caFile, input.path])
        let answers = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [[Any]], result.err)
        XCTAssertEqual(answers.count, vectors.count, result.err)
        for (vector, answer) in zip(vectors, answers) {
            XCTAssertEqual(answer.first as? Int, vector.2, vector.0)
            XCTAssertEqual(answer.last as? Bool, true, "\(vector.0): the tunnel is closed after the error")
        }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(nginx.logLines(), [], "no malformed request reaches the backend")
    }

    func testACONNECTInsideTheTunnelIs421AndAnAppThatNeverHandshakesIsCutAndCounted() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        let proxy = try proxy(nginx: nginx, upstreamCA: ca.caCert, timeouts: "connect: 5s, clientHeader: 300ms",
                              extra: "connect: {allow: [\"127.0.0.1:\(nginx.port)\"]}")
        let authority = "localhost:\(nginx.port)"
        let input = directory.appendingPathComponent("nested.json")
        let nested = "CONNECT 127.0.0.1:\(nginx.port) HTTP/1.1\r\nHost: 127.0.0.1:\(nginx.port)\r\n\r\n"
        try JSONSerialization.data(withJSONObject: [Data(nested.utf8).base64EncodedString()]).write(to: input)
        let result = try run(["python3", "-c", Self.tunnelClient, String(proxy.port), authority, caFile, input.path])
        XCTAssertEqual(result.out.trimmingCharacters(in: .whitespacesAndNewlines), "[[421, true]]",
                       "no tunnel inside a tunnel, even to an allowed destination: \(result.err)")

        let silent = try RawClient(port: proxy.port)
        silent.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        XCTAssertEqual(try silent.readResponse().status, 200)
        XCTAssertTrue(silent.waitForClose(), "no handshake within clientHeader: closed")
        let failures = proxy.server.interceptHandshakeFailures()
        XCTAssertEqual(failures[InterceptFailureKey(host: "localhost", reason: "timeout")], 1, "\(failures)")
    }

    func testAServerNameForAnotherHostIs421() throws {
        let ca = try TestCA()
        let nginx = try Nginx(certificate: ca.localhostCert, key: ca.localhostKey, locations: Self.echo)
        let proxy = try proxy(nginx: nginx, upstreamCA: ca.caCert)
        let authority = "localhost:\(nginx.port)"
        let input = directory.appendingPathComponent("one.json")
        // `Connection: close` so the client sees the end at once rather than after its 10 s timeout
        // (a 421 leaves the connection open, as for any answer the client may act on).
        try JSONSerialization.data(withJSONObject: [
            Data("GET /x HTTP/1.1\r\nHost: \(authority)\r\nConnection: close\r\n\r\n".utf8).base64EncodedString(),
        ]).write(to: input)
        let result = try run(["python3", "-c", Self.tunnelClient, String(proxy.port), authority, caFile, input.path, "other.test"])
        XCTAssertEqual(result.out.trimmingCharacters(in: .whitespacesAndNewlines), "[[421, true]]", result.err)
        XCTAssertEqual(nginx.logLines(), [])
    }

    /// Sends each raw request (base64, from a JSON file) through its own intercepted tunnel and
    /// prints `[[status, closed], ...]`. Arguments: proxy port, authority, CA file, JSON file,
    /// optional TLS server name (then the certificate's name is not checked).
    private static let tunnelClient = """
        import base64, json, socket, ssl, sys
        port, authority, cafile, path = sys.argv[1:5]
        server_name = sys.argv[5] if len(sys.argv) > 5 else authority.rsplit(":", 1)[0]
        context = ssl.create_default_context(cafile=cafile)
        if len(sys.argv) > 5:
            context.check_hostname = False
        answers = []
        for raw in json.load(open(path)):
            sock = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
            sock.sendall(f"CONNECT {authority} HTTP/1.1\\r\\nHost: {authority}\\r\\n\\r\\n".encode())
            head = b""
            while b"\\r\\n\\r\\n" not in head:
                head += sock.recv(1)
            tls = context.wrap_socket(sock, server_hostname=server_name)
            tls.sendall(base64.b64decode(raw))
            data = b""
            closed = False
            try:
                while True:
                    chunk = tls.recv(65536)
                    if not chunk:
                        closed = True
                        break
                    data += chunk
            except (socket.timeout, ssl.SSLError, ConnectionResetError):
                closed = not isinstance(sys.exc_info()[1], socket.timeout)
            status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
            answers.append([status, closed])
            tls.close()
        print(json.dumps(answers))
        """

    /// Runs a real client (bounded in time, no proxy settings from the environment).
    private func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (out: String, err: String) {
        let outcome = try Command.run(arguments, environment: environment)
        return (outcome.out, outcome.err)
    }
}
