import Foundation
import XCTest

/// The verifying authorization server must refuse what a real one refuses, or every client-auth
/// test could pass for the wrong reason: its own self-test (87 cases, bad signatures, claims,
/// replays, certificates) runs here so CI runs it.
final class ClientAuthServerSelfTests: XCTestCase {
    func testTheVerifyingServerAcceptsGoodAndRefusesBadClientAuthentication() throws {
        try assertFixtureSelfTestPasses("client_auth_server_selftest.py")
    }
}
