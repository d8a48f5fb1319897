import HTTP1
import XCTest
@testable import Proxy

/// The `Via` entry's protocol: the version of the message as the sidecar received it.
final class ViaProtocolTests: XCTestCase {
    private func text(_ string: StaticString) -> String {
        String(decoding: UnsafeRawBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount), as: UTF8.self)
    }

    func testAnHTTP2MessageIsTwoWhateverItsHeadSaysAndHTTP1OnesTheirVersion() {
        XCTAssertEqual(ViaProtocol(.http1_1, http2: true), .http2)
        XCTAssertEqual(ViaProtocol(.http1_0, http2: true), .http2)
        XCTAssertEqual(ViaProtocol(.http1_1, http2: false), .http1_1)
        XCTAssertEqual(ViaProtocol(.http1_0, http2: false), .http1_0)
    }

    func testTheLineIsTheValueAsAFieldLineAndNoneIsLongerThanTheBound() {
        for via in [ViaProtocol.http1_0, .http1_1, .http2] {
            XCTAssertEqual(text(via.line), "Via: \(text(via.value))\r\n")
            XCTAssertLessThanOrEqual(via.line.utf8CodeUnitCount, ViaProtocol.longestLine)
            XCTAssertLessThanOrEqual(via.value.utf8CodeUnitCount, ViaProtocol.longestValue)
        }
        XCTAssertEqual(text(ViaProtocol.http2.value), "2 token-sidecar")
        XCTAssertEqual(ViaProtocol.longestLine, ViaProtocol.http1_1.line.utf8CodeUnitCount, "the bound is exact")
        XCTAssertEqual(ViaProtocol.longestValue, ViaProtocol.http1_1.value.utf8CodeUnitCount, "the bound is exact")
    }
}
