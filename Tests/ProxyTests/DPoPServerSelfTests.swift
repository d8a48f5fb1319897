import XCTest

/// The verifying DPoP authorization and resource server (Fixtures/dpop_server.py) must refuse
/// what a real one refuses — bad signatures, replayed or stale proofs, wrong `htm`/`htu`/`ath`,
/// another key, missing nonces, the wrong client certificate — or the sender-constrained token
/// tests built on it could pass for the wrong reason. Its self-test runs here so CI runs it.
final class DPoPServerSelfTests: XCTestCase {
    func testTheVerifyingDPoPServerAcceptsGoodAndRefusesBadProofs() throws {
        try assertFixtureSelfTestPasses("dpop_server_selftest.py")
    }
}
