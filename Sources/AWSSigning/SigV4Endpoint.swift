/// The region and signing name of an AWS endpoint from its host name, for a request the app did
/// not sign (a route's `signUnsigned`): `dynamodb.us-east-1.amazonaws.com` → us-east-1,
/// dynamodb; `bucket.s3.eu-west-1.amazonaws.com` → eu-west-1, s3; the global endpoints without a
/// region (`s3.amazonaws.com`, `sts.amazonaws.com`, `iam.amazonaws.com`) → us-east-1. Hosts whose
/// signing name differs from their first label are mapped (`bedrock-runtime` → `bedrock`).
public enum SigV4Endpoint {
    /// Endpoint labels that are not the service's signing name.
    static let signingNames: [String: String] = [
        "bedrock-runtime": "bedrock", "bedrock-agent-runtime": "bedrock", "bedrock-agent": "bedrock",
        "runtime.sagemaker": "sagemaker", "email": "ses", "streams.dynamodb": "dynamodb", "data-ats.iot": "iotdata",
    ]

    /// `(region, service)` for `host` (a port and a trailing dot are ignored); nil when it is not
    /// an AWS endpoint this recognizes.
    public static func scope(forHost host: String) -> (region: String, service: String)? {
        var name = host.lowercased()
        if name.hasPrefix("["), let end = name.firstIndex(of: "]") { name = String(name[...end]) }
        if let colon = name.lastIndex(of: ":"), !name.hasPrefix("[") { name = String(name[..<colon]) }
        if name.hasSuffix(".") { name.removeLast() }
        var labels: [Substring]
        if name.hasSuffix(".amazonaws.com") {
            labels = name.dropLast(".amazonaws.com".count).split(separator: ".")
        } else if name.hasSuffix(".amazonaws.com.cn") {
            labels = name.dropLast(".amazonaws.com.cn".count).split(separator: ".")
        } else {
            return nil
        }
        labels.removeAll { $0 == "dualstack" || $0 == "fips" }
        guard !labels.isEmpty else { return nil }
        if let regionAt = labels.lastIndex(where: isRegion), regionAt > 0 {
            // The label before the region names the service; S3's virtual-host buckets come first.
            var service = String(labels[regionAt - 1])
            if service.hasPrefix("s3-") || service == "s3" { service = "s3" }
            if regionAt >= 2, let mapped = signingNames[labels[regionAt - 2] + "." + service] { service = mapped }
            return (String(labels[regionAt]), signingNames[service] ?? service)
        }
        // A global endpoint: `s3`, `sts`, `iam`, or a bucket before `s3`.
        guard let last = labels.last else { return nil }
        let service = last == "s3" || last.hasPrefix("s3-external") ? "s3" : String(last)
        return ("us-east-1", signingNames[service] ?? service)
    }

    /// `us-east-1`, `ap-southeast-2`, `us-gov-west-1`, `cn-north-1`: letters, dashes, and a final number.
    static func isRegion(_ label: Substring) -> Bool {
        let parts = label.split(separator: "-")
        guard parts.count >= 3, let last = parts.last, last.allSatisfy(\.isNumber) else { return false }
        return parts.dropLast().allSatisfy { $0.count >= 2 && $0.allSatisfy { $0.isLetter } }
    }
}
