import Foundation
import TestSupport
import XCTest
@testable import Proxy

/// AWS requests re-signed by the sidecar, end to end against a real SigV4 verifier: moto in
/// server mode with IAM authentication on, whose IAM user's keys are the real credentials (in
/// files the sidecar reads). boto3 and the AWS CLI, unchanged and given only placeholder keys,
/// send `https://` AWS URLs through the sidecar as `HTTPS_PROXY`; moto must see every request
/// signed with the real key id and never the placeholder.
final class AWSSigningProxyTests: XCTestCase {
    private var directory: URL!
    private var moto: FixtureProcess!
    private var ca: TestCA!
    private var proxy: ProxyHarness!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("aws-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        ca = try TestCA()
        moto = try FixtureProcess(script: "ProxyTests/Fixtures/moto_server.py", arguments: ["{dir}", ca.localhostCert, ca.localhostKey],
                                  python: AWSPython.path)
        proxy = try ProxyHarness(yaml: config())
    }

    override func tearDown() {
        proxy = nil
        moto = nil
        try? FileManager.default.removeItem(at: directory)
    }

    private var caFile: String { directory.appendingPathComponent("ca.crt").path }

    /// The sidecar's configuration: the real keys from moto's files, S3, DynamoDB, SQS and STS
    /// in us-east-1 allowed; `extra` goes into the route's sigv4 settings.
    private func config(extra: String = "", keys: (id: String, secret: String)? = nil) -> String {
        """
        listen: "127.0.0.1:0"
        timeouts: {connect: 5s, responseHeaders: 20s}
        intercept:
          caCertFile: \(caFile)
        credentials:
          aws: {type: aws, placeholderAccessKeyId: AKIDTOKENSIDECAR0001,
                accessKeyIdFile: \(keys?.id ?? moto.file("real.id").path), secretAccessKeyFile: \(keys?.secret ?? moto.file("real.secret").path)}
        routes:
          - host: "*.amazonaws.com:443"
            intercept: true
            upstream: "https://localhost:\(moto.port)"
            caFile: \(ca.caCert)
            preserveHost: true
            credential: aws
            inject: {sigv4: {allowedRegions: [us-east-1], allowedServices: [s3, dynamodb, sqs, sts]\(extra)}}
        """
    }

    /// The environment of an app using the sidecar: its proxy, its CA the only trust, no keys.
    private var appEnvironment: [String: String] {
        let proxyURL = "http://127.0.0.1:\(proxy.port)"
        return ["HTTPS_PROXY": proxyURL, "HTTP_PROXY": proxyURL, "NO_PROXY": "", "no_proxy": "", "AWS_CA_BUNDLE": caFile,
                "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_EC2_METADATA_DISABLED": "true",
                "HOME": directory.path]
    }

    /// Runs the boto3 app (Fixtures/aws_app.py) with `arguments`; its JSON output.
    private func app(_ arguments: [String]) throws -> [String: Any] {
        let outcome = try Command.run([AWSPython.path, FixtureProcess.testsDirectory.appendingPathComponent("ProxyTests/Fixtures/aws_app.py").path]
                                      + arguments, environment: appEnvironment)
        XCTAssertEqual(outcome.status, 0, "\(arguments): \(outcome.err.suffix(1500))\nmoto saw: \(motoLog().suffix(3))")
        return (try? JSONSerialization.jsonObject(with: Data(outcome.out.utf8)) as? [String: Any]) ?? [:]
    }

    /// moto's log: one line per request it answered.
    private func motoLog() -> [[String: Any]] {
        let text = (try? String(contentsOf: moto.file("log.jsonl"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    private var realKeyId: String {
        (try? String(contentsOf: moto.file("real.id"), encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
    }

    /// Every request moto saw was signed with the real key, verified, and free of the placeholder.
    private func checkEverySignatureVerified(file: StaticString = #filePath, line: UInt = #line) {
        let lines = motoLog()
        XCTAssertFalse(lines.isEmpty, file: file, line: line)
        let refused = lines.filter { ($0["status"] as? Int ?? 500) >= 400 }
        XCTAssertEqual(refused.map { "\($0["method"] ?? "") \($0["path"] ?? "") \($0["error"] ?? "")" }, [], "0 signature errors",
                       file: file, line: line)
        XCTAssertEqual(lines.filter { $0["placeholder"] as? Bool == true }.count, 0, "the placeholder never reaches moto", file: file, line: line)
        XCTAssertEqual(Set(lines.compactMap { $0["signedWith"] as? String }), [realKeyId], file: file, line: line)
    }

    func testS3WithAwkwardKeysAndAStreamingMultipartUploadIsSignedWithTheRealKeys() throws {
        let result = try app(["s3", "tsb-bucket"])
        XCTAssertEqual(result["got"] as? [String], (0..<6).map { "body \($0)" })
        XCTAssertEqual(result["listed"] as? [String], ["double//slash", "per%cent", "plain.txt", "plus+sign", "with space.txt", "ünïcode/ключ"])
        let big = try XCTUnwrap(result["big"] as? [String: Any])
        XCTAssertEqual(big["size"] as? Int, 20 * 1024 * 1024)
        XCTAssertEqual(big["got"] as? String, big["sent"] as? String, "the 20 MiB object came back whole")
        XCTAssertEqual(result["left"] as? Int, 0)
        let parts = motoLog().filter { ($0["query"] as? String ?? "").contains("partNumber=") }
        XCTAssertEqual(parts.count, 3, "a multipart upload of three parts")
        XCTAssertEqual(Set(parts.compactMap { $0["payload"] as? String }), ["STREAMING-UNSIGNED-PAYLOAD-TRAILER"],
                       "botocore's default upload: aws-chunked with a checksum trailer, streamed")
        checkEverySignatureVerified()
    }

    func testDynamoDBSQSAndSTSNameTheRealUser() throws {
        let db = try app(["dynamodb"])
        XCTAssertEqual(db["item"] as? String, "7")
        XCTAssertEqual(db["count"] as? Int, 1)
        XCTAssertEqual(try app(["sqs"])["received"] as? [String], ["hello & welcome = 1+1"])
        XCTAssertEqual(try app(["sts"])["arn"] as? String, "arn:aws:iam::123456789012:user/app-user")
        checkEverySignatureVerified()
    }

    func testAnAppWithAPlainBaseURLIsSignedForTheUpstreamsHost() throws {
        // The app's endpoint is http://sts.aws.local (through HTTP_PROXY); the route sends it to
        // the upstream over TLS, whose authority is the Host the signature must cover.
        proxy = try ProxyHarness(yaml: config() + """

              - host: "sts.aws.local"
                upstream: "https://localhost:\(moto.port)"
                caFile: \(ca.caCert)
                credential: aws
                inject: {sigv4: {allowedRegions: [us-east-1], allowedServices: [sts]}}
            """)
        let outcome = try Command.run([AWSPython.path, "-c", """
            import boto3
            print(boto3.client("sts", region_name="us-east-1", endpoint_url="http://sts.aws.local").get_caller_identity()["Arn"])
            """], environment: appEnvironment.merging(["AWS_ACCESS_KEY_ID": "AKIDTOKENSIDECAR0001", "AWS_SECRET_ACCESS_KEY": "placeholder"]) { $1 })
        XCTAssertEqual(outcome.out, "arn:aws:iam::123456789012:user/app-user\n", outcome.err.suffix(800).description)
        XCTAssertEqual(motoLog().last?["host"] as? String, "localhost:\(moto.port)")
        checkEverySignatureVerified()
    }

    func testTheAWSCLIUnchanged() throws {
        let file = directory.appendingPathComponent("upload.txt")
        try "from the cli\n".write(to: file, atomically: true, encoding: .utf8)
        for command in [["s3", "mb", "s3://cli-bucket"], ["s3", "cp", file.path, "s3://cli-bucket/some key.txt"]] {
            let outcome = try Command.run(AWSPython.cli + command + ["--region", "us-east-1"],
                                          environment: appEnvironment.merging(["AWS_ACCESS_KEY_ID": "AKIDTOKENSIDECAR0001",
                                                                               "AWS_SECRET_ACCESS_KEY": "placeholder"]) { $1 })
            XCTAssertEqual(outcome.status, 0, "\(command): \(outcome.err.suffix(800))")
        }
        let identity = try Command.run(AWSPython.cli + ["sts", "get-caller-identity", "--region", "us-east-1", "--output", "text",
                                                        "--query", "Arn"],
                                       environment: appEnvironment.merging(["AWS_ACCESS_KEY_ID": "AKIDTOKENSIDECAR0001",
                                                                            "AWS_SECRET_ACCESS_KEY": "placeholder"]) { $1 })
        XCTAssertEqual(identity.out, "arn:aws:iam::123456789012:user/app-user\n", identity.err)
        checkEverySignatureVerified()
    }

    /// Sends a request through the sidecar with curl (HTTP/2 unless `http1`): its status and
    /// `Proxy-Status`. (curl 7.88 reports an HTTP/2 response that comes before its upload ended,
    /// and the RST_STREAM NO_ERROR after it that RFC 9113 §8.1 prescribes, as a framing error:
    /// requests with a body are refused over HTTP/1.1 here, and over HTTP/2 by Node below.)
    private func curl(_ url: String, method: String = "GET", headers: [String] = [], body: String? = nil,
                      http1: Bool = false, extra: [String] = []) throws -> (status: Int, proxyStatus: String, body: String) {
        let bodyFile = directory.appendingPathComponent("answer-\(UUID().uuidString)").path
        var command = ["curl", "-sS", "-o", bodyFile, "-D", "-", "--proxy", "http://127.0.0.1:\(proxy.port)", "--cacert", caFile,
                       http1 ? "--http1.1" : "--http2", "-X", method, url] + extra
        for header in headers { command += ["-H", header] }
        if let body { command += ["--data-binary", body] }
        let outcome = try Command.run(command)
        // The last head: the CONNECT's `200 Connection established` comes first.
        let heads = outcome.out.components(separatedBy: "\r\n\r\n").filter { $0.hasPrefix("HTTP/") }
        let lines = (heads.last ?? "").split(separator: "\r\n")
        let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        let proxyStatus = lines.first { $0.lowercased().hasPrefix("proxy-status:") }.map { String($0.dropFirst(13)).trimmingCharacters(in: .whitespaces) }
            ?? outcome.out + outcome.err
        return (status, proxyStatus, (try? String(contentsOfFile: bodyFile, encoding: .utf8)) ?? "")
    }

    private func scope(key: String = "AKIDTOKENSIDECAR0001", region: String = "us-east-1", service: String = "s3",
                       scheme: String = "AWS4-HMAC-SHA256") -> String {
        "Authorization: \(scheme) Credential=\(key)/20261128/\(region)/\(service)/aws4_request, SignedHeaders=host;x-amz-date, Signature=00"
    }

    func testRefusalsNameTheirReasonAndForwardNothing() throws {
        let before = motoLog().count
        let url = "https://tsb-bucket.s3.us-east-1.amazonaws.com/k"
        let date = "X-Amz-Date: 20261128T120000Z"
        let presigned = "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDTOKENSIDECAR0001%2F20261128%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=00"
        var cases: [(String, (status: Int, proxyStatus: String, body: String), Int, String)] = []
        for http1 in [false, true] {
            let over = http1 ? " (HTTP/1.1)" : " (HTTP/2)"
            cases += [
                ("foreign key id" + over, try curl(url, headers: [scope(key: "AKIAOTHERKEY00000000"), date], http1: http1), 403, "another access key id"),
                ("region" + over, try curl(url, headers: [scope(region: "eu-west-1"), date], http1: http1), 403, "region eu-west-1"),
                ("service" + over, try curl("https://sns.us-east-1.amazonaws.com/", headers: [scope(service: "sns"), date], http1: http1), 403, "service sns"),
                ("presigned" + over, try curl(url + presigned, http1: http1), 400, "presigned URLs"),
                ("SigV4A" + over, try curl(url, headers: [scope(scheme: "AWS4-ECDSA-P256-SHA256"), date], http1: http1), 400, "SigV4A"),
                ("unsigned" + over, try curl(url, http1: http1), 400, "not signed"),
            ]
        }
        cases += [
            ("per-chunk", try curl(url, method: "PUT", headers: [scope(), date, "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD"],
                                   body: "x", http1: true), 400, "per-chunk signatures"),
            ("body to hash without a length", try curl("https://sqs.us-east-1.amazonaws.com/", method: "POST",
                                                       headers: [scope(service: "sqs"), date, "Transfer-Encoding: chunked"], body: "Action=ListQueues",
                                                       http1: true), 411, "needs a Content-Length"),
        ]
        for (name, answer, status, reason) in cases {
            XCTAssertEqual(answer.status, status, "\(name): \(answer.proxyStatus)")
            XCTAssertTrue(answer.proxyStatus.hasPrefix("token-sidecar; error="), "\(name): \(answer.proxyStatus)")
            XCTAssertTrue(answer.proxyStatus.contains(reason), "\(name): \(answer.proxyStatus)")
        }
        let large = directory.appendingPathComponent("large")
        try Data(repeating: 0x61, count: (1 << 20) + 1).write(to: large)
        let tooLarge = try curl("https://sqs.us-east-1.amazonaws.com/", method: "POST", headers: [scope(service: "sqs"), date], body: "@" + large.path,
                                http1: true)
        XCTAssertEqual(tooLarge.status, 413)
        XCTAssertTrue(tooLarge.proxyStatus.contains("x-amz-content-sha256"), tooLarge.proxyStatus)
        XCTAssertEqual(motoLog().count, before, "nothing was forwarded")

        // A route that allows larger bodies (maxHashedBody) hashes and signs such a body: a
        // query of 1.5 MiB (a form moto verifies as it parses it).
        proxy = try ProxyHarness(yaml: config(extra: ", maxHashedBody: 2MiB"))
        let form = "Action=ListQueues&Version=2012-11-05&QueueNamePrefix=" + String(repeating: "q", count: 3 << 19)
        try Data(form.utf8).write(to: large)
        let raised = try curl("https://sqs.us-east-1.amazonaws.com/", method: "POST",
                              headers: ["Content-Type: application/x-www-form-urlencoded"],
                              body: "@" + large.path, http1: true, extra: ["--aws-sigv4", "aws:amz:us-east-1:sqs", "--user", "AKIDTOKENSIDECAR0001:placeholder"])
        XCTAssertEqual(raised.status, 200, raised.body.prefix(300).description)
        XCTAssertEqual(motoLog().last?["bodyBytes"] as? Int, form.utf8.count, "the whole body reached moto, signed")
    }

    /// The verifier these tests rely on verifies: straight to moto (no sidecar), the real key id
    /// with a wrong secret is refused for S3 (whose check the fixture patches to read the path as
    /// sent) and STS, and the right secret is taken.
    func testMotoRefusesAWrongSignatureSoTheseTestsCanFail() throws {
        let secret = try String(contentsOf: moto.file("real.secret"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        func direct(_ service: String, secret: String) throws -> Int {
            var command = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca.caCert, "--noproxy", "*",
                           "--aws-sigv4", "aws:amz:us-east-1:\(service)", "--user", "\(realKeyId):\(secret)"]
            command += service == "sts" ? ["-d", "Action=GetCallerIdentity&Version=2011-06-15", "-H", "Host: sts.us-east-1.amazonaws.com"]
                                        : ["-H", "Host: s3.us-east-1.amazonaws.com", "-H", "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"]
            return Int(try Command.run(command + ["https://localhost:\(moto.port)/"]).out) ?? 0
        }
        for service in ["s3", "sts"] {
            XCTAssertEqual(try direct(service, secret: "wrong" + secret.dropFirst(5)), 403, service)
            XCTAssertEqual(try direct(service, secret: secret), 200, service)
        }
        let refused = motoLog().filter { ($0["status"] as? Int ?? 0) == 403 }.compactMap { $0["error"] as? String }
        XCTAssertEqual(refused, ["SignatureDoesNotMatch", "SignatureDoesNotMatch"])
    }

    func testAnUnsignedRequestIsSignedWhereTheRouteOptsIn() throws {
        proxy = try ProxyHarness(yaml: config(extra: ", signUnsigned: true"))
        let answer = try curl("https://sts.us-east-1.amazonaws.com/", method: "POST",
                              headers: ["Content-Type: application/x-www-form-urlencoded"], body: "Action=GetCallerIdentity&Version=2011-06-15")
        XCTAssertEqual(answer.status, 200)
        XCTAssertTrue(answer.body.contains("user/app-user"), answer.body)
        // S3 verifies only with the payload's hash in x-amz-content-sha256: the sidecar sends the one it signed.
        let buckets = try curl("https://s3.us-east-1.amazonaws.com/", http1: true)
        XCTAssertEqual(buckets.status, 200, buckets.body)
        XCTAssertTrue(buckets.body.contains("ListAllMyBucketsResult"), buckets.body)
        XCTAssertEqual(motoLog().last?["payload"] as? String, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        checkEverySignatureVerified()
    }

    func testAnHTTP2AppsSignedRequestIsReSignedToo() throws {
        // curl signs with the placeholder keys itself (--aws-sigv4) and speaks HTTP/2 to the sidecar.
        let answer = try curl("https://sts.us-east-1.amazonaws.com/", method: "POST", body: "Action=GetCallerIdentity&Version=2011-06-15",
                              extra: ["--aws-sigv4", "aws:amz:us-east-1:sts", "--user", "AKIDTOKENSIDECAR0001:placeholder-secret"])
        XCTAssertEqual(answer.status, 200, answer.proxyStatus)
        XCTAssertTrue(answer.body.contains("user/app-user"), answer.body)
        // A body the sidecar hashes (no x-amz-content-sha256), larger than what it collects by default.
        let form = directory.appendingPathComponent("form")
        try Data(("Action=ListQueues&Version=2012-11-05&Pad=" + String(repeating: "p", count: 200_000)).utf8).write(to: form)
        let listed = try curl("https://sqs.us-east-1.amazonaws.com/", method: "POST", body: "@" + form.path,
                              extra: ["--aws-sigv4", "aws:amz:us-east-1:sqs", "--user", "AKIDTOKENSIDECAR0001:placeholder-secret"])
        XCTAssertEqual(listed.status, 200, listed.proxyStatus + listed.body.prefix(300))
        checkEverySignatureVerified()
    }

    func testRotatedKeyFilesAreSignedWithWithoutARestart() throws {
        // The keys as Kubernetes mounts a secret: files in a directory reached through a symlink,
        // which an update swaps at once for a directory holding both new files.
        let manager = FileManager.default
        func keyDirectory(_ name: String, id: String, secret: String) throws -> URL {
            let folder = directory.appendingPathComponent(name)
            try manager.createDirectory(at: folder, withIntermediateDirectories: true)
            try manager.copyItem(at: moto.file(id), to: folder.appendingPathComponent("id"))
            try manager.copyItem(at: moto.file(secret), to: folder.appendingPathComponent("secret"))
            return folder
        }
        _ = try keyDirectory("keys-1", id: "real.id", secret: "real.secret")
        _ = try keyDirectory("keys-2", id: "container.id", secret: "container.secret")
        let link = directory.appendingPathComponent("keys")
        try manager.createSymbolicLink(atPath: link.path, withDestinationPath: "keys-1")
        proxy = try ProxyHarness(yaml: config(keys: (link.path + "/id", link.path + "/secret")))
        XCTAssertEqual(try app(["sts"])["arn"] as? String, "arn:aws:iam::123456789012:user/app-user")
        let next = directory.appendingPathComponent("keys-next")
        try manager.createSymbolicLink(atPath: next.path, withDestinationPath: "keys-2")
        XCTAssertEqual(rename(next.path, link.path), 0)
        let second = try String(contentsOf: moto.file("container.id"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let deadline = Date().addingTimeInterval(10)
        var signedWith: String?
        repeat {
            Thread.sleep(forTimeInterval: 0.5)
            _ = try app(["sts"])
            signedWith = motoLog().last?["signedWith"] as? String
        } while signedWith != second && Date() < deadline
        XCTAssertEqual(signedWith, second, "the new key is used")
        let lines = motoLog()
        XCTAssertEqual(lines.filter { ($0["status"] as? Int ?? 500) >= 400 }.count, 0, "no request failed across the rotation")
        XCTAssertEqual(lines.filter { $0["placeholder"] as? Bool == true }.count, 0)
    }
}
