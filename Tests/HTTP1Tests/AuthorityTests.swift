import HTTP1
import XCTest

final class AuthorityTests: XCTestCase {
    func testValid() {
        XCTAssertEqual(Authority.parse("example.com"), Authority(host: "example.com", port: nil))
        XCTAssertEqual(Authority.parse("Example.COM:8080"), Authority(host: "example.com", port: 8080))
        XCTAssertEqual(Authority.parse("1.2.3.4:80"), Authority(host: "1.2.3.4", port: 80))
        XCTAssertEqual(Authority.parse("[::1]:8080"), Authority(host: "::1", port: 8080))
        XCTAssertEqual(Authority.parse("[2001:DB8::1]"), Authority(host: "2001:db8::1", port: nil))
        XCTAssertEqual(Authority.parse("example.com.:443"), Authority(host: "example.com", port: 443))
        XCTAssertEqual(Authority.parse("a_b~c-d:65535"), Authority(host: "a_b~c-d", port: 65535))
        XCTAssertEqual(Authority.parse("a:1"), Authority(host: "a", port: 1))
        XCTAssertEqual(Authority.parse("GET x.test:8080/path".dropFirst(4).prefix(11)), Authority(host: "x.test", port: 8080))
    }

    func testInvalid() {
        for text in ["", "a@b", "user@host:80", ":80", "a:", "a:0", "a:65536", "a:123456", "a:8x", "a:+1", "a: 1",
                     "a b", "a/b", "a,b", "a!b", "a%20b", "::1", "[::1", "[::1]x", "[::1]:", "[]", "[1:2]", "[v1.x]",
                     "[::g]", ".", "a:80:90", "\u{e9}.test", "a..", "a..:443", "...", "api.t" + String(repeating: ".", count: 100) + ":200"] {
            XCTAssertNil(Authority.parse(text), text)
        }
    }

    func testEveryByteValueInAHostIsJudgedByTheRegNameRules() {
        // ALPHA DIGIT - . _ ~ are accepted anywhere in a host (a trailing dot is the FQDN's);
        // every other byte value, at the start, in the middle or at the end, is refused.
        for value in 0...255 {
            let byte = UInt8(value)
            let allowed = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
            guard byte != 0x3A, byte != 0x5B else { continue }  // ':' ends the host; '[' opens an IP literal
            for host in [[byte, 0x61], [0x61, byte, 0x62], [0x61, byte]] {
                let text = String(decoding: host, as: UTF8.self)
                guard Array(text.utf8) == host else { continue }  // not a whole UTF-8 string on its own
                XCTAssertEqual(Authority.parse(text + ":80") != nil, allowed, "byte \(value) in \(host)")
            }
        }
    }

    func testHostsOfAnyLengthAreLowercasedAtEveryPosition() {
        // Hosts are lowercased 8 bytes at a time, then byte by byte: every reg-name byte at
        // every position of hosts that end inside a word, on a word's end and in the tail.
        let bytes = Array("AZaz09-._~MQ".utf8) + (0x41...0x5A).map { UInt8($0) }
        for length in 1...19 {
            for position in 0..<length {
                for byte in bytes where !(byte == 0x2E && position == length - 1) {  // (a trailing dot is dropped)
                    var host = [UInt8](repeating: 0x61 + UInt8(position % 26), count: length)
                    host[position] = byte
                    if position + 1 < length { host[position + 1] = 0x5A }  // an uppercase neighbour
                    let text = String(decoding: host, as: UTF8.self)
                    let expected = String(decoding: host.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
                    XCTAssertEqual(Authority.parse(text + ":8080")?.host, expected, "\(text)")
                }
            }
        }
    }

    func testDescriptionAndDefaultPort() {
        XCTAssertEqual(Authority(host: "a.test", port: nil).description, "a.test")
        XCTAssertEqual(Authority(host: "a.test", port: 81).description, "a.test:81")
        XCTAssertEqual(Authority(host: "::1", port: 8080).description, "[::1]:8080")
        XCTAssertEqual(Authority(host: "::1", port: nil).description, "[::1]")
        XCTAssertEqual(Authority(host: "a", port: nil).port(default: 443), 443)
        XCTAssertEqual(Authority(host: "a", port: 8443).port(default: 443), 8443)
    }
}
