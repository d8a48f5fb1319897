import Yams

extension ConfigDecoder {
    /// The discoverable fields of an mca credential as found so far.
    struct MCADraft {
        var serverUrl: EndpointURL?
        var tenantId: String?
        var clientId: String?
        var secret: SecretSource?
        var origins: [String: ValueOrigin] = [:]
        /// Fields neither given (validly or not) in the file nor discovered yet, in render order.
        var missing: [String] = []

        /// Records `value` for the field named by `keyPath` and where it came from.
        mutating func set<Value>(_ keyPath: WritableKeyPath<MCADraft, Value?>, _ value: Value, origin: ValueOrigin) {
            self[keyPath: keyPath] = value
            found(MCADraft.fieldName(keyPath), origin)
        }

        /// The config key of a discoverable field (also its render name).
        private static func fieldName(_ keyPath: PartialKeyPath<MCADraft>) -> String {
            switch keyPath {
            case \MCADraft.serverUrl: return "serverUrl"
            case \MCADraft.tenantId: return "tenantId"
            case \MCADraft.clientId: return "clientId"
            default: return "secret"
            }
        }

        private mutating func found(_ field: String, _ origin: ValueOrigin) {
            origins[field] = origin
            missing.removeAll { $0 == field }
        }
    }

    /// Fills `draft.missing` from `VCAP_SERVICES` (the first
    /// AdvancedMobileAccess instance; tenantId or else appId) and then a
    /// still-missing tenantId from `VCAP_APPLICATION`'s application_id.
    /// Reports what is malformed or still missing; false when anything was.
    mutating func discoverMCA(_ draft: inout MCADraft, path: String, node: Node) -> Bool {
        var valid = true
        let services = VCAPDiscovery.services(environment: environment)
        switch services {
        case .unset, .noService:
            break
        case .malformed(let reason):
            report(path, "cannot discover \(draft.missing.joined(separator: ", ")) from the service bindings: \(reason)", at: node)
            return false
        case .found(let binding, let values):
            for field in draft.missing {
                // tenantId wins over appId; serverUrl over App ID's oauthServerUrl.
                let raw: String?
                switch field {
                case "tenantId": raw = values["tenantId"] ?? values["appId"]
                case "serverUrl": raw = values["serverUrl"] ?? values["oauthServerUrl"]
                default: raw = values[field]
                }
                guard let raw else { continue }
                if !adoptDiscovered(raw, field: field, into: &draft, binding: binding, path: path, node: node) {
                    draft.missing.removeAll { $0 == field }
                    valid = false
                }
            }
        }

        var application: VCAPDiscovery.Application?
        if draft.missing.contains("tenantId") {
            let found = VCAPDiscovery.application(environment: environment)
            application = found
            switch found {
            case .unset, .noApplicationId:
                break
            case .malformed(let reason):
                report(path, "cannot discover tenantId from VCAP_APPLICATION: \(reason)", at: node)
                draft.missing.removeAll { $0 == "tenantId" }
                valid = false
            case .found(let id):
                if let problem = Self.plainTextProblem(id) {
                    report(Self.join(path, "tenantId"), "the application_id in VCAP_APPLICATION \(problem)", at: node)
                    draft.missing.removeAll { $0 == "tenantId" }
                    valid = false
                } else {
                    draft.set(\.tenantId, id, origin: .vcapApplication)
                }
            }
        }

        for field in draft.missing {
            report(Self.join(path, field), Self.missingMessage(field, services: services, application: application), at: node)
            valid = false
        }
        return valid
    }

    /// Validates a value from VCAP_SERVICES and stores it; false (with a
    /// problem reported, never showing a secret) when it is unusable.
    private mutating func adoptDiscovered(
        _ raw: String, field: String, into draft: inout MCADraft, binding: VCAPBinding, path: String, node: Node
    ) -> Bool {
        let fieldPath = Self.join(path, field)
        let source = binding.description
        let origin = ValueOrigin.vcapServices(binding)
        switch field {
        case "serverUrl":
            switch EndpointURL.parse(raw, allowQuery: false) {
            case .success(let url):
                draft.set(\.serverUrl, url, origin: origin)
            case .failure(let error):
                report(fieldPath, "invalid serverUrl in \(source): \(error.message)", at: node)
                return false
            }
        case "secret":
            switch SecretSource.validate(raw, what: "secret in \(source)", noun: "secret") {
            case .success(let secret):
                draft.set(\.secret, .inline(secret), origin: origin)
            case .failure(let error):
                report(fieldPath, error.message, at: node)
                return false
            }
        default:
            if let problem = Self.plainTextProblem(raw) {
                report(fieldPath, "the \(field) in \(source) \(problem)", at: node)
                return false
            }
            if field == "tenantId" {
                draft.set(\.tenantId, raw, origin: origin)
            } else {
                draft.set(\.clientId, raw, origin: origin)
            }
        }
        return true
    }

    /// "required key is missing, and VCAP_SERVICES did not provide it either (...)".
    static func missingMessage(_ field: String, services: VCAPDiscovery.Services, application: VCAPDiscovery.Application?) -> String {
        let lead: String
        switch field {
        case "tenantId": lead = "required key is missing (alias: appId)"
        case "secret": lead = "required key is missing (or give secretFile or secretEnv)"
        default: lead = "required key is missing"
        }
        let servicesWhy: String
        switch services {
        case .unset: servicesWhy = "it is not set"
        case .noService, .malformed:
            servicesWhy = "it has no " + VCAPDiscovery.serviceLabelPrefixes.joined(separator: ", ") + " service"
        case .found(let binding, _):
            switch field {
            case "tenantId": servicesWhy = "its \(binding.label) service has no credentials.tenantId or credentials.appId"
            case "serverUrl": servicesWhy = "its \(binding.label) service has no credentials.serverUrl or credentials.oauthServerUrl"
            default: servicesWhy = "its \(binding.label) service has no credentials.\(field)"
            }
        }
        var message = "\(lead), and VCAP_SERVICES did not provide it either (\(servicesWhy))"
        if field == "tenantId" {
            switch application {
            case .unset, .none: message += ", nor did VCAP_APPLICATION (it is not set)"
            case .noApplicationId, .malformed, .found: message += ", nor did VCAP_APPLICATION (it has no application_id)"
            }
        }
        return message
    }
}
