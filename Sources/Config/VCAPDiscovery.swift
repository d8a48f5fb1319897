import Foundation

/// Reads Cloud Foundry's `VCAP_SERVICES` and `VCAP_APPLICATION` variables
/// for `type: mca` credentials. Failure reasons never contain the JSON
/// text (it holds the client secret).
enum VCAPDiscovery {
    /// What `VCAP_SERVICES` says about the AdvancedMobileAccess binding.
    enum Services {
        /// The variable is not set (or blank).
        case unset
        /// The variable is set but unusable; the reason names what is wrong.
        case malformed(String)
        /// No key starting with `AdvancedMobileAccess`.
        case noService
        /// The first instance of service `service`: its string credential fields.
        case found(service: String, values: [String: String])
    }

    /// What `VCAP_APPLICATION` says about the application id.
    enum Application {
        /// The variable is not set (or blank).
        case unset
        /// The variable is set but unusable; the reason names what is wrong.
        case malformed(String)
        /// Valid JSON without a string `application_id`.
        case noApplicationId
        /// The `application_id`.
        case found(String)
    }

    /// Service keys are matched by this prefix (`AdvancedMobileAccess`, plus plan-specific variants).
    static let servicePrefix = "AdvancedMobileAccess"
    /// The fields read from the instance's `credentials` object.
    static let credentialFields = ["serverUrl", "clientId", "secret", "tenantId", "appId"]

    /// The first instance under the first (in sorted order) service key
    /// starting with `AdvancedMobileAccess`.
    static func services(environment: [String: String]) -> Services {
        guard let json = parse(environment["VCAP_SERVICES"]) else { return .unset }
        guard let object = json else { return .malformed("VCAP_SERVICES is not valid JSON") }
        guard let root = object as? [String: Any] else { return .malformed("VCAP_SERVICES is not a JSON object") }
        guard let key = root.keys.sorted().first(where: { $0.hasPrefix(servicePrefix) }) else { return .noService }
        guard let instances = root[key] as? [Any], let first = instances.first else {
            return .malformed("VCAP_SERVICES.\(key) is not a non-empty list of service instances")
        }
        guard let instance = first as? [String: Any], let credentials = instance["credentials"] as? [String: Any] else {
            return .malformed("VCAP_SERVICES.\(key)[0] has no credentials object")
        }
        var values: [String: String] = [:]
        for field in credentialFields {
            guard let value = credentials[field], !(value is NSNull) else { continue }
            guard let text = value as? String else {
                return .malformed("VCAP_SERVICES.\(key)[0].credentials.\(field) is not a string")
            }
            values[field] = text
        }
        return .found(service: key, values: values)
    }

    /// `application_id` from `VCAP_APPLICATION`.
    static func application(environment: [String: String]) -> Application {
        guard let json = parse(environment["VCAP_APPLICATION"]) else { return .unset }
        guard let object = json else { return .malformed("VCAP_APPLICATION is not valid JSON") }
        guard let root = object as? [String: Any] else { return .malformed("VCAP_APPLICATION is not a JSON object") }
        guard let id = root["application_id"] as? String else { return .noApplicationId }
        return .found(id)
    }

    /// nil when unset or blank; `.some(nil)` when not JSON.
    private static func parse(_ text: String?) -> Any?? {
        guard let text, !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return nil }
        return .some(try? JSONSerialization.jsonObject(with: Data(text.utf8)))
    }
}
