import HTTP1
import TokenManager
import XCTest
@testable import Proxy

final class PlaceholderPolicyTests: XCTestCase {
    private let scanner = PlaceholderScanner(["anthropic": "tsp_anthropicPlaceholder0001", "other": "tsp_otherPlaceholder00000001"])!

    private func decision(credential: String?, route: String? = "api.test:443") -> RouteDecision {
        RouteDecision(target: UpstreamTarget(host: "backend", port: 443, tls: nil, poolKey: "b", allowsLinkLocal: false),
                      hostField: "backend", credential: credential.map { StaticCredential(name: $0, token: "real") }, routeName: route)
    }

    private func decide(_ text: String, _ decision: RouteDecision) throws -> Result<RouteDecision, ProxyError> {
        PlaceholderPolicy.decide(try Array(text.utf8).withUnsafeBytes { try RequestHeadParser.parse($0) }, decision, scanner: scanner)
    }

    private let carrying = "GET / HTTP/1.1\r\nHost: a\r\nx-api-key: tsp_anthropicPlaceholder0001\r\n\r\n"

    func testTheRoutesOwnPlaceholderIsSwapped() throws {
        let routed = decision(credential: "anthropic")
        let result = try decide(carrying, routed)
        let swapped = try result.get()
        XCTAssertEqual(swapped.injection?.placeholder, Array("tsp_anthropicPlaceholder0001".utf8))
        XCTAssertNil(swapped.injection?.placement)
        XCTAssertEqual(swapped.placementLabel, "placeholder")
        XCTAssertTrue(try decide("GET / HTTP/1.1\r\nHost: a\r\n\r\n", routed).get() === routed, "nothing found: the same decision")
    }

    func testAnotherCredentialsPlaceholderANoCredentialRouteAndUnroutedAreRefusedNamingTheCredentialNotTheValue() throws {
        for (decision, place) in [(decision(credential: "other"), "route 'api.test:443'"),
                                  (decision(credential: nil), "route 'api.test:443'"),
                                  (decision(credential: nil, route: nil), "an unrouted destination")] {
            guard case .failure(let error) = try decide(carrying, decision) else { return XCTFail("forwarded to \(place)") }
            XCTAssertEqual(error.status, 403)
            XCTAssertEqual(error.type, "http_request_denied")
            XCTAssertTrue(error.message.contains("'anthropic'") && error.message.contains(place), error.message)
            XCTAssertFalse(error.message.contains("tsp_anthropic"), "never the value")
        }
    }

    func testAnUnknownTspValueAndTwoCredentialsAreRefused() throws {
        guard case .failure(let unknown) = try decide("GET /?k=tsp_nope HTTP/1.1\r\nHost: a\r\n\r\n", decision(credential: "anthropic")) else {
            return XCTFail("forwarded")
        }
        XCTAssertEqual(unknown.status, 403)
        XCTAssertFalse(unknown.message.contains("tsp_nope"))
        let both = "GET /?k=tsp_otherPlaceholder00000001 HTTP/1.1\r\nHost: a\r\nx-api-key: tsp_anthropicPlaceholder0001\r\n\r\n"
        guard case .failure(let several) = try decide(both, decision(credential: "anthropic")) else { return XCTFail("forwarded") }
        XCTAssertEqual(several.status, 403)
    }

    func testTwoPlacesWithoutAPlacementAndAnUndecodableBasicAreRefused() throws {
        let twice = "GET /?key=tsp_anthropicPlaceholder0001 HTTP/1.1\r\nHost: a\r\nx-api-key: tsp_anthropicPlaceholder0001\r\n\r\n"
        guard case .failure(let error) = try decide(twice, decision(credential: "anthropic")) else { return XCTFail("the secret would go twice") }
        XCTAssertTrue(error.message.contains("2 places"), error.message)
        let placed = RouteDecision(target: UpstreamTarget(host: "backend", port: 443, tls: nil, poolKey: "b", allowsLinkLocal: false),
                                   hostField: "backend", credential: StaticCredential(name: "anthropic", token: "real"), routeName: "r",
                                   injection: CredentialInjection(placement: .header(name: "x-api-key", prefix: "", suffix: "")))
        XCTAssertNotNil(try? decide(twice, placed).get(), "a placement writes the key once and removes the rest")
        guard case .failure = try decide("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic ###\r\n\r\n", decision(credential: "anthropic")) else {
            return XCTFail("an undecodable Basic value hides what it carries")
        }
    }
}
