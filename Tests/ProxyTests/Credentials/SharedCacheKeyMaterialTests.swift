@testable import Credentials
import Config
import Foundation
import TestSupport
import XCTest

/// Which credentials of a fleet share one entry of the shared token cache: replicas of one client
/// do, other clients never do, even where their configurations read alike.
final class SharedCacheKeyMaterialTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "key-material-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func write(_ name: String, _ text: String) throws -> String {
        let path = directory + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func jwt(_ claims: String) -> String {
        func part(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return part(#"{"alg":"RS256"}"#) + "." + part(claims) + ".c2lnbmF0dXJl"
    }

    private func container(tokenFile: String?) -> CredentialConfig {
        let uri = EndpointURL(scheme: "http", host: "169.254.170.23", port: 80, path: "/v1/credentials")
        let aws = AWSCredentialConfig(placeholderAccessKeyId: "AKIDTOKENSIDECAR0001",
                                      source: .containerCredentials(AWSContainerCredentials(uri: uri, authorizationTokenFile: tokenFile)))
        return CredentialConfig(name: "aws", kind: .aws(aws))
    }

    /// EKS Pod Identity: every pod asks 169.254.170.23 with the token of its service account.
    /// Pods (and rotations) of one account share; another account at the same path never does.
    func testContainerCredentialsAreSharedByServiceAccountNotByEndpoint() throws {
        let issuer = "https://oidc.eks.us-east-1.amazonaws.com/id/EXAMPLE"
        let podA = try write("a", jwt(#"{"iss":"\#(issuer)","sub":"system:serviceaccount:shop:orders","iat":1}"#))
        let podB = try write("b", jwt(#"{"iss":"\#(issuer)","sub":"system:serviceaccount:shop:orders","iat":2}"#) + "\n")
        let other = try write("c", jwt(#"{"iss":"\#(issuer)","sub":"system:serviceaccount:shop:billing","iat":1}"#))
        let a = try XCTUnwrap(SharedCacheKeyMaterial.make(container(tokenFile: podA)))
        XCTAssertEqual(SharedCacheKeyMaterial.make(container(tokenFile: podB)), a, "another pod or rotation of one account")
        XCTAssertNotEqual(SharedCacheKeyMaterial.make(container(tokenFile: other)), a, "another service account")
        XCTAssertFalse(a.contains("c2lnbmF0dXJl"), "the token itself never goes into the key")

        // An opaque token (ECS): its holders alone; the text is a digest, never the token.
        let opaque = try write("d", "opaque-ecs-token-0001")
        let opaqueKey = try XCTUnwrap(SharedCacheKeyMaterial.make(container(tokenFile: opaque)))
        XCTAssertFalse(opaqueKey.contains("opaque-ecs-token"))
        XCTAssertNotEqual(SharedCacheKeyMaterial.make(container(tokenFile: try write("e", "opaque-ecs-token-0002"))), opaqueKey)

        // A token that cannot be read: this replica shares nothing rather than guess.
        XCTAssertNil(SharedCacheKeyMaterial.make(container(tokenFile: directory + "/missing")))
    }

    /// Two deployments mount their own Google key at one path: the account in the file decides.
    func testGoogleKeysAreSharedByAccountNotByPath() throws {
        func google(_ path: String) -> CredentialConfig {
            CredentialConfig(name: "gcp", kind: .googleServiceAccount(GoogleServiceAccountConfig(keyFile: path, scope: "s")))
        }
        let ca = try TestCA()
        let pem = try String(contentsOfFile: ca.localhostKey, encoding: .utf8)
        func keyFile(_ email: String) throws -> String {
            let object = ["client_email": email, "private_key": pem, "token_uri": "https://oauth2.googleapis.com/token"]
            return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        }
        let one = try write("one.json", try keyFile("a@p.iam.gserviceaccount.com"))
        let first = try XCTUnwrap(SharedCacheKeyMaterial.make(google(one)))
        XCTAssertFalse(first.contains("PRIVATE KEY"), "never the private key")
        _ = try write("one.json", try keyFile("b@p.iam.gserviceaccount.com"))
        XCTAssertNotEqual(SharedCacheKeyMaterial.make(google(one)), first)
        XCTAssertNil(SharedCacheKeyMaterial.make(google(directory + "/none.json")))
    }
}
