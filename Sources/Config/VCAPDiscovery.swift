import Foundation

/// Reads Cloud Foundry's `VCAP_SERVICES` (then `USER_PROVIDED_VCAP_SERVICES`) and
/// `VCAP_APPLICATION` variables for `type: mca` credentials. Failure reasons never contain the
/// JSON text (it holds the client secret).
enum VCAPDiscovery {
    /// What the services variables say about a Mobile Client Access / App ID binding.
    enum Services {
        /// The variable is not set (or blank).
        case unset
        /// The variable is set but unusable; the reason names what is wrong.
        case malformed(String)
        /// No service label starting with one of ``serviceLabelPrefixes``.
        case noService
        /// The first instance of the binding: its string credential fields.
        case found(binding: VCAPBinding, values: [String: String])
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

    /// Service labels are matched by these prefixes: the classic service, plus the newer
    /// App ID and Mobile Client Access bindings (and their plan-specific variants).
    static let serviceLabelPrefixes = ["AdvancedMobileAccess", "AppID", "Mobile Client Access"]
    /// The variables searched, in order.
    static let servicesVariables = ["VCAP_SERVICES", "USER_PROVIDED_VCAP_SERVICES"]
    /// The fields read from the instance's `credentials` object (`oauthServerUrl` is App ID's
    /// name for the server URL).
    static let credentialFields = ["serverUrl", "oauthServerUrl", "clientId", "secret", "tenantId", "appId"]

    /// The first instance under the first (in sorted order) matching service label of
    /// `VCAP_SERVICES`, else of `USER_PROVIDED_VCAP_SERVICES`. A malformed variable is reported
    /// even when the other one would match: a broken binding should not be papered over.
    static func services(environment: [String: String]) -> Services {
        var sawVariable = false
        for variable in servicesVariables {
            switch services(in: variable, environment: environment) {
            case .unset: continue
            case .noService: sawVariable = true
            case let other: return other
            }
        }
        return sawVariable ? .noService : .unset
    }

    private static func services(in variable: String, environment: [String: String]) -> Services {
        guard let json = parse(environment[variable]) else { return .unset }
        guard let object = json else { return .malformed("\(variable) is not valid JSON") }
        guard let root = object as? [String: Any] else { return .malformed("\(variable) is not a JSON object") }
        let labels = root.keys.sorted()
        guard let key = serviceLabelPrefixes.lazy.compactMap({ prefix in labels.first { $0.hasPrefix(prefix) } }).first else {
            return .noService
        }
        guard let instances = root[key] as? [Any], let first = instances.first else {
            return .malformed("\(variable).\(key) is not a non-empty list of service instances")
        }
        guard let instance = first as? [String: Any], let credentials = instance["credentials"] as? [String: Any] else {
            return .malformed("\(variable).\(key)[0] has no credentials object")
        }
        var values: [String: String] = [:]
        for field in credentialFields {
            guard let value = credentials[field], !(value is NSNull) else { continue }
            guard let text = value as? String else {
                return .malformed("\(variable).\(key)[0].credentials.\(field) is not a string")
            }
            values[field] = text
        }
        return .found(binding: VCAPBinding(variable: variable, label: key, name: instance["name"] as? String), values: values)
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
