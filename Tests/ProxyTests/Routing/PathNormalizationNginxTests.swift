import Foundation
import TestSupport
import XCTest
@testable import HTTP1
@testable import Proxy

/// The rules' path normalization against the upstream's own view: nginx decodes and normalizes
/// a request path (`$uri`) before it matches `location`s. For a list of tricky paths, every path
/// the sidecar accepts reaches nginx as a path whose `$uri` is exactly the normalized path
/// checked (decoded), and lands in the `location` the rule decision expects; every path it
/// refuses as ambiguous is one nginx would read differently from the path as written.
final class PathNormalizationNginxTests: XCTestCase {
    static let tricky = [
        "/v1/orders/7", "/v1//orders///7", "/v1/./orders/7", "/v1/orders/7/", "/v1/orders/../orders/7", "/v1/orders/%37",
        "/v1/%6Frders/7", "/v1/ORDERS/7", "/v1/orders/a%20b", "/v1/orders/%7e", "/v1/orders/7/..", "/v1/orders/7/../..",
        "/v1/orders/../../admin", "/v1/orders/..//..//admin", "/v1/orders/.%2e/admin", "/v1/orders/%2e%2e/admin",
        "/v1/orders/..%2Fadmin", "/v1/orders%2F..%2F..%2Fadmin", "/v1/orders/..%5Cadmin", "/v1/orders/..;/admin",
        "/v1/orders/;/../../admin", "/v1/orders/%2561dmin", "/v1/orders/%00", "/v1/orders/%zz", "/v1/orders/%",
        "/admin", "/admin/../v1/orders/1", "/./admin", "//admin", "/v1/orders/x;y=1",
    ]

    /// nginx's view: the location a path lands in and its `$uri`.
    private static let locations = #"""
        merge_slashes on;
        location /v1/orders/ { add_header X-Location orders; add_header X-Uri $uri; return 200 "orders\n"; }
        location = /v1/orders { add_header X-Location orders; add_header X-Uri $uri; return 200 "orders\n"; }
        location /admin { add_header X-Location admin; add_header X-Uri $uri; return 200 "admin\n"; }
        location / { add_header X-Location other; add_header X-Uri $uri; return 200 "other\n"; }
        """#

    private func ask(_ port: Int, _ path: String, absolute: Bool) throws -> TestResponse {
        let client = try RawClient(port: port)
        defer { client.close() }
        client.send("GET \(absolute ? "http://api.test" : "")\(path) HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
        return try client.readResponse()
    }

    func testEveryAcceptedPathIsWhatNginxSeesAndNoRefusedOneIsAmbiguityFree() throws {
        let nginx = try Nginx(locations: Self.locations)
        let proxy = try ProxyHarness(yaml: """
            listen: "127.0.0.1:0"
            credentials:
              partner: {type: static, token: differential}
            routes:
              - host: "api.test"
                upstream: "http://127.0.0.1:\(nginx.port)"
                credential: partner
                rules:
                  - {name: orders, methods: [GET], paths: ["/v1/orders/**"]}
            """)
        var accepted = 0, refused = 0
        for path in Self.tricky {
            let direct = try ask(nginx.port, path, absolute: false)
            let through = try ask(proxy.port, path, absolute: true)
            switch PathNormalization.normalize(path[...]) {
            case .normalized(let normalized):
                let decoded = normalized.removingPercentEncoding ?? normalized
                if through.status == 200 {
                    accepted += 1
                    XCTAssertEqual(through.header("x-location"), "orders", "\(path): allowed only into the rule's location")
                    XCTAssertEqual(through.header("x-uri"), decoded, "\(path): nginx sees the path that was checked")
                    XCTAssertEqual(direct.header("x-uri"), decoded, "\(path): the normalization agrees with nginx's own")
                } else {
                    refused += 1
                    XCTAssertEqual(through.status, 403, "\(path)")
                    XCTAssertNotEqual(direct.header("x-location"), "orders", "\(path): denied, and nginx does not read it as an order either")
                }
            case .refused:
                refused += 1
                XCTAssertEqual(through.status, 400, "\(path)")
                // Ambiguous: nginx (when it takes the path at all) reads it otherwise than as
                // written — but for `..;`, which nginx takes literally and Tomcat as `..`, and
                // for `\`, which nginx takes literally and IIS as `/`.
                let otherServers = path.contains("..;") || path.uppercased().contains("%5C")
                if direct.status == 200, let uri = direct.header("x-uri"), !otherServers {
                    XCTAssertNotEqual(uri, path.removingPercentEncoding, "\(path): refused, yet nginx reads it as written")
                }
            }
        }
        print("differential against nginx: \(accepted) accepted, \(refused) refused of \(Self.tricky.count) paths")
        XCTAssertGreaterThan(accepted, 8)
        XCTAssertGreaterThan(refused, 8)
    }
}
