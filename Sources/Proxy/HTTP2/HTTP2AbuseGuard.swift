/// What an HTTP/2 app sent that the proxy refused: the `reason` of
/// `token_sidecar_http2_refused_total`.
enum HTTP2Refusal: String, CaseIterable, Sendable {
    /// A stream the app reset before its response began (Rapid Reset, CVE-2023-44487).
    case rapidReset = "rapid_reset"
    /// A malformed request (RFC 9113 §8.1.1), reset by the codec.
    case malformed
    /// A stream the codec reset because of a frame the app sent on it (MadeYouReset,
    /// CVE-2025-8671: a zero `WINDOW_UPDATE`, `DATA` after the stream's end…).
    case provokedReset = "provoked_reset"
    /// A stream beyond the connection's `SETTINGS_MAX_CONCURRENT_STREAMS`.
    case concurrentStreams = "concurrent_streams"
    /// A stream refused because the worker serves its most HTTP/2 streams already.
    case workerStreams = "worker_streams"
    /// A header list over the limits (answered `431`).
    case headerList = "header_list"
    /// An empty `DATA` frame that does not end its stream (CVE-2019-9518).
    case emptyFrames = "empty_frames"
    /// A `PING` or `SETTINGS` frame beyond their rate (CVE-2019-9512, CVE-2019-9515).
    case controlFrames = "control_frames"
    /// Answers to control frames piled up while the app did not read (CVE-2019-9512/9515
    /// without reading): nghttp2 stopped at its queue limit.
    case outboundFlood = "outbound_flood"
    /// A header block continued over too many `CONTINUATION` frames (CVE-2024-27316).
    case continuationFlood = "continuation_flood"
    /// Another protocol error that ended the connection.
    case protocolError = "protocol_error"
}

/// The budgets of one app's HTTP/2 connection for what a well-behaved client rarely or never
/// does. What the proxy refuses (a malformed or provoked stream reset, a stream over a limit) is
/// counted each time; what it tolerates up to a rate (early resets, empty frames, pings) is
/// counted once, when the rate is exceeded. The first refusal on a connection is logged; one
/// past its budget tells the app to calm down (`GOAWAY ENHANCE_YOUR_CALM`: the open streams
/// finish, no new one is taken). nghttp2 (Debian's 1.52) frames and checks the protocol but leaves these to the
/// application: it counts the resets an app sends, not those it provokes, and nothing of what
/// it answers by itself.
///
/// Budgets are token buckets: `burst` at once, refilled at `perSecond` (so a long-lived
/// connection that cancels a call now and then never runs out). A plain value, fed the time.
struct HTTP2AbuseGuard: Sendable {
    /// What to do about one refusal.
    enum Action: Equatable, Sendable {
        /// Nothing: tolerated within its budget.
        case pass
        /// Count it.
        case count
        /// Count it and log it: the connection's first refusal.
        case countAndLog
        /// Count it, log it and send `GOAWAY ENHANCE_YOUR_CALM`: its budget is spent.
        case calm
    }

    /// A token bucket's size and refill rate.
    struct Budget: Equatable, Sendable {
        let burst: Double
        let perSecond: Double
    }

    /// The budget of `reason`; nil for refusals that end the connection by themselves.
    static func budget(for reason: HTTP2Refusal) -> Budget? {
        switch reason {
        // Twice the concurrent streams at once, a hundred a second: a browser or a gRPC client
        // cancelling calls stays far below; Rapid Reset opens and resets thousands a second.
        case .rapidReset: Budget(burst: 200, perSecond: 100)
        // A client that sends malformed requests is broken or probing: a hundred, for good.
        case .malformed: Budget(burst: 100, perSecond: 0)
        case .provokedReset, .concurrentStreams, .headerList, .emptyFrames, .workerStreams:
            Budget(burst: 100, perSecond: 10)
        // gRPC's keepalive and bandwidth probes are a few pings a second.
        case .controlFrames: Budget(burst: 1000, perSecond: 100)
        case .outboundFlood, .continuationFlood, .protocolError: nil
        }
    }

    /// Whether each `reason` is a refusal by itself (else only running out of its budget is).
    static func refusesEach(_ reason: HTTP2Refusal) -> Bool {
        switch reason {
        case .rapidReset, .emptyFrames, .controlFrames: false
        default: true
        }
    }

    private var tokens: [HTTP2Refusal: (level: Double, at: UInt64)] = [:]
    /// A refusal was logged on this connection.
    private(set) var logged = false
    /// The app was told to calm down.
    private(set) var calmed = false

    /// Records one `reason` at `now` (monotonic nanoseconds); returns what to do.
    mutating func record(_ reason: HTTP2Refusal, now: UInt64) -> Action {
        if !calmed, let budget = Self.budget(for: reason) {
            var bucket = tokens[reason] ?? (budget.burst, now)
            let elapsed = Double(now &- bucket.at) / 1e9
            bucket = (min(budget.burst, bucket.level + elapsed * budget.perSecond), now)
            bucket.level -= 1
            tokens[reason] = bucket
            if bucket.level < 0 {
                calmed = true
                logged = true
                return .calm
            }
        }
        guard Self.refusesEach(reason) else { return .pass }
        guard !logged else { return .count }
        logged = true
        return .countAndLog
    }
}
