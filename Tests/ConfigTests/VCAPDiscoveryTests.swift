import Config
import XCTest

/// Cloud Foundry discovery of `type: mca` fields from VCAP_SERVICES / VCAP_APPLICATION.
final class VCAPDiscoveryTests: XCTestCase {
    private let onlyType = "credentials:\n  mca:\n    type: mca\n"
    private let allVCAP = [
        "serverUrl": "https://mca.vcap.test/imf-authserver/",
        "tenantId": "vcap-tenant",
        "clientId": "vcap-client",
        "secret": "SENTINEL-SECRET-123",
    ]

    private func mca(_ yaml: String, _ environment: [String: String], file: StaticString = #filePath, line: UInt = #line) -> MCAConfig? {
        guard case .mca(let config) = parseOK(yaml, environment: environment, file: file, line: line)?.credentials.first?.kind else {
            return nil
        }
        return config
    }

    func testAllFieldsFromVCAPServices() throws {
        let config = try XCTUnwrap(mca(onlyType, ["VCAP_SERVICES": vcapServices(allVCAP)]))
        XCTAssertEqual(config, MCAConfig(
            serverUrl: EndpointURL(scheme: "https", host: "mca.vcap.test", port: 443, path: "/imf-authserver/"),
            tenantId: "vcap-tenant", clientId: "vcap-client", secret: .inline("SENTINEL-SECRET-123"),
            origins: ["serverUrl": vcapOrigin, "tenantId": vcapOrigin, "clientId": vcapOrigin, "secret": vcapOrigin]))
        XCTAssertEqual(config.tokenPath, "/imf-authserver/authorization/v1/apps/vcap-tenant/token")
    }

    func testNewerBindingsAppIDAndMobileClientAccessAndUserProvidedServices() throws {
        let appID = #"{"AppID": [{"name": "my-appid", "label": "AppID", "credentials": {"oauthServerUrl": "https://us-south.appid.test/oauth/v4/t1", "tenantId": "t1", "appId": "ignored", "clientId": "app-client", "secret": "SENTINEL-1"}}]}"#
        let config = try XCTUnwrap(mca(onlyType, ["VCAP_SERVICES": appID]))
        XCTAssertEqual(config.serverUrl.description, "https://us-south.appid.test:443/oauth/v4/t1")
        XCTAssertEqual(config.tenantId, "t1", "tenantId wins over appId")
        XCTAssertEqual(config.origins["clientId"], .vcapServices(VCAPBinding(variable: "VCAP_SERVICES", label: "AppID", name: "my-appid")))
        let rendered = try XCTUnwrap(parseOK(onlyType, environment: ["VCAP_SERVICES": appID])).renderEffective()
        XCTAssertTrue(rendered.contains(#"clientId: "app-client"  # from VCAP_SERVICES binding "my-appid" (AppID)"#), rendered)
        XCTAssertFalse(rendered.contains("SENTINEL"))

        let both = #"{"Mobile Client Access-dev": [{"name": "mca", "credentials": {"serverUrl": "https://a.test", "oauthServerUrl": "https://b.test", "tenantId": "t", "clientId": "c", "secret": "s"}}]}"#
        let mobile = try XCTUnwrap(mca(onlyType, ["VCAP_SERVICES": both]))
        XCTAssertEqual(mobile.serverUrl.host, "a.test", "serverUrl wins over oauthServerUrl")
        XCTAssertEqual(mobile.origins["serverUrl"], .vcapServices(VCAPBinding(variable: "VCAP_SERVICES", label: "Mobile Client Access-dev", name: "mca")))

        // Nothing in VCAP_SERVICES: USER_PROVIDED_VCAP_SERVICES is read next.
        let userProvided = try XCTUnwrap(mca(onlyType, [
            "VCAP_SERVICES": #"{"cloudantNoSQLDB": []}"#,
            "USER_PROVIDED_VCAP_SERVICES": vcapServices(allVCAP, service: "AppID-ups"),
        ]))
        XCTAssertEqual(userProvided.clientId, "vcap-client")
        XCTAssertEqual(userProvided.origins["secret"],
                       .vcapServices(VCAPBinding(variable: "USER_PROVIDED_VCAP_SERVICES", label: "AppID-ups", name: "mca-instance")))
        // ... but a binding in VCAP_SERVICES comes first.
        let first = try XCTUnwrap(mca(onlyType, [
            "VCAP_SERVICES": vcapServices(allVCAP),
            "USER_PROVIDED_VCAP_SERVICES": vcapServices(["clientId": "other"], service: "AppID"),
        ]))
        XCTAssertEqual(first.clientId, "vcap-client")
    }

    func testACertificateCredentialTakesOnlyServerAndTenantFromVCAP() throws {
        let directory = try makeTemporaryDirectory(self)
        let cert = directory.appendingPathComponent("c.pem").path
        let key = directory.appendingPathComponent("k.pem").path
        try FakePEM.certificate.write(toFile: cert, atomically: true, encoding: .utf8)
        try FakePEM.key.write(toFile: key, atomically: true, encoding: .utf8)
        let config = try XCTUnwrap(mca(onlyType + "    auth: certificate\n    clientCert: \(cert)\n    clientKey: \(key)\n",
                                       ["VCAP_SERVICES": vcapServices(allVCAP)]))
        XCTAssertEqual(config.serverUrl.host, "mca.vcap.test")
        XCTAssertEqual(config.tenantId, "vcap-tenant")
        XCTAssertNil(config.clientId, "the certificate's CN, not the binding's clientId")
        XCTAssertNil(config.secret)
        XCTAssertEqual(config.origins["clientId"], .certificateSubject)
    }

    func testExplicitFileValuesWin() throws {
        let yaml = onlyType + "    clientId: file-client\n    tenantId: file-tenant\n    secretEnv: MY_SECRET\n"
        let environment = ["VCAP_SERVICES": vcapServices(allVCAP), "VCAP_APPLICATION": vcapApplication("app-id"), "MY_SECRET": "x"]
        let config = try XCTUnwrap(mca(yaml, environment))
        XCTAssertEqual(config.clientId, "file-client")
        XCTAssertEqual(config.tenantId, "file-tenant")
        XCTAssertEqual(config.secret, .env("MY_SECRET"))
        XCTAssertEqual(config.serverUrl.host, "mca.vcap.test")
        XCTAssertEqual(config.origins, [
            "serverUrl": vcapOrigin, "tenantId": .file, "clientId": .file, "secret": .environment("MY_SECRET"),
        ])
    }

    func testVCAPApplicationFallbackForTenantId() throws {
        var credentials = allVCAP
        credentials["tenantId"] = nil
        let config = try XCTUnwrap(mca(onlyType, [
            "VCAP_SERVICES": vcapServices(credentials), "VCAP_APPLICATION": vcapApplication("app-guid"),
        ]))
        XCTAssertEqual(config.tenantId, "app-guid")
        XCTAssertEqual(config.origins["tenantId"], .vcapApplication)
    }

    func testVCAPServicesTenantIdOrAppIdWinsOverVCAPApplication() throws {
        let application = vcapApplication("app-guid")
        XCTAssertEqual(mca(onlyType, ["VCAP_SERVICES": vcapServices(allVCAP), "VCAP_APPLICATION": application])?.tenantId, "vcap-tenant")
        var withAppId = allVCAP
        withAppId["tenantId"] = nil
        withAppId["appId"] = "vcap-app-id"
        let config = try XCTUnwrap(mca(onlyType, ["VCAP_SERVICES": vcapServices(withAppId), "VCAP_APPLICATION": application]))
        XCTAssertEqual(config.tenantId, "vcap-app-id")
        XCTAssertEqual(config.origins["tenantId"], vcapOrigin)
        var both = allVCAP
        both["appId"] = "vcap-app-id"
        XCTAssertEqual(mca(onlyType, ["VCAP_SERVICES": vcapServices(both)])?.tenantId, "vcap-tenant")
    }

    func testFileAppIdWinsOverVCAP() {
        XCTAssertEqual(mca(onlyType + "    appId: file-app\n", ["VCAP_SERVICES": vcapServices(allVCAP)])?.tenantId, "file-app")
    }

    func testFirstMatchingServiceInSortedOrderAndFirstInstance() throws {
        let json = """
            {"zzz": [], "AdvancedMobileAccess-b": [{"credentials": {"clientId": "b"}}],
             "AdvancedMobileAccess": [
               {"credentials": {"serverUrl": "https://first.test", "tenantId": "t", "clientId": "first", "secret": "s"}},
               {"credentials": {"serverUrl": "https://second.test", "tenantId": "t2", "clientId": "second", "secret": "s2"}}]}
            """
        let config = try XCTUnwrap(mca(onlyType, ["VCAP_SERVICES": json]))
        XCTAssertEqual(config.clientId, "first")
        XCTAssertEqual(config.serverUrl.host, "first.test")
    }

    func testNothingToDiscover() {
        XCTAssertEqual(problemLines(onlyType), [
            "c.yaml: credentials.mca.serverUrl: required key is missing, and VCAP_SERVICES did not provide it either (it is not set)",
            "c.yaml: credentials.mca.tenantId: required key is missing (alias: appId), and VCAP_SERVICES did not provide it "
                + "either (it is not set), nor did VCAP_APPLICATION (it is not set)",
            "c.yaml: credentials.mca.clientId: required key is missing, and VCAP_SERVICES did not provide it either (it is not set)",
            "c.yaml: credentials.mca.secret: required key is missing (or give secretFile or secretEnv), and VCAP_SERVICES "
                + "did not provide it either (it is not set)",
        ])
    }

    func testNoAdvancedMobileAccessService() {
        let environment = ["VCAP_SERVICES": "{\"cloudantNoSQLDB\": [{\"credentials\": {\"clientId\": \"x\"}}]}",
                           "VCAP_APPLICATION": "{\"name\": \"app\"}"]
        let yaml = onlyType + "    serverUrl: https://m.test\n    secret: s\n"
        XCTAssertEqual(problemLines(yaml, environment: environment), [
            "c.yaml: credentials.mca.tenantId: required key is missing (alias: appId), and VCAP_SERVICES did not provide it "
                + "either (it has no AdvancedMobileAccess, AppID, Mobile Client Access service), nor did VCAP_APPLICATION (it has no application_id)",
            "c.yaml: credentials.mca.clientId: required key is missing, and VCAP_SERVICES did not provide it either "
                + "(it has no AdvancedMobileAccess, AppID, Mobile Client Access service)",
        ])
    }

    func testServiceWithoutSomeFields() {
        XCTAssertEqual(problemLines(onlyType, environment: ["VCAP_SERVICES": vcapServices(["clientId": "c", "secret": "s"])]), [
            "c.yaml: credentials.mca.serverUrl: required key is missing, and VCAP_SERVICES did not provide it either "
                + "(its AdvancedMobileAccess service has no credentials.serverUrl or credentials.oauthServerUrl)",
            "c.yaml: credentials.mca.tenantId: required key is missing (alias: appId), and VCAP_SERVICES did not provide it "
                + "either (its AdvancedMobileAccess service has no credentials.tenantId or credentials.appId), "
                + "nor did VCAP_APPLICATION (it is not set)",
        ])
    }

    func testMalformedVCAPServices() {
        let cases: [(String, String)] = [
            ("{\"AdvancedMobileAccess\": [{\"credentials\": {\"secret\": \"SENTINEL-SECRET-123\"", "VCAP_SERVICES is not valid JSON"),
            ("[\"SENTINEL-SECRET-123\"]", "VCAP_SERVICES is not a JSON object"),
            ("{\"AdvancedMobileAccess\": {\"secret\": \"SENTINEL-SECRET-123\"}}",
             "VCAP_SERVICES.AdvancedMobileAccess is not a non-empty list of service instances"),
            ("{\"AdvancedMobileAccess\": []}", "VCAP_SERVICES.AdvancedMobileAccess is not a non-empty list of service instances"),
            ("{\"AdvancedMobileAccess\": [{\"name\": \"x\"}]}", "VCAP_SERVICES.AdvancedMobileAccess[0] has no credentials object"),
            ("{\"AdvancedMobileAccess\": [{\"credentials\": {\"secret\": 12345}}]}",
             "VCAP_SERVICES.AdvancedMobileAccess[0].credentials.secret is not a string"),
        ]
        for (json, reason) in cases {
            let lines = problemLines(onlyType, environment: ["VCAP_SERVICES": json])
            XCTAssertEqual(lines, [
                "c.yaml: credentials.mca: cannot discover serverUrl, tenantId, clientId, secret from the service bindings: \(reason)",
            ], json)
            XCTAssertFalse(lines.joined().contains("SENTINEL"))
        }
    }

    func testMalformedVCAPApplication() {
        var credentials = allVCAP
        credentials["tenantId"] = nil
        XCTAssertEqual(problemLines(onlyType, environment: [
            "VCAP_SERVICES": vcapServices(credentials), "VCAP_APPLICATION": "{oops",
        ]), ["c.yaml: credentials.mca: cannot discover tenantId from VCAP_APPLICATION: VCAP_APPLICATION is not valid JSON"])
    }

    func testVCAPIsIgnoredWhenTheFileHasEverything() {
        let yaml = onlyType + "    serverUrl: https://m.test\n    tenantId: t\n    clientId: c\n    secret: s\n"
        XCTAssertNotNil(mca(yaml, ["VCAP_SERVICES": "{broken", "VCAP_APPLICATION": "{broken"]))
    }

    func testInvalidDiscoveredValues() {
        var credentials = allVCAP
        credentials["serverUrl"] = "ftp://mca.test"
        credentials["clientId"] = ""
        credentials["secret"] = "SENTINEL-SECRET-123\r\nX: y"
        let lines = problemLines(onlyType, environment: ["VCAP_SERVICES": vcapServices(credentials)])
        XCTAssertEqual(lines, [
            "c.yaml: credentials.mca.serverUrl: invalid serverUrl in VCAP_SERVICES binding \"mca-instance\" (AdvancedMobileAccess): "
                + "unsupported scheme 'ftp': expected http:// or https://",
            "c.yaml: credentials.mca.clientId: the clientId in VCAP_SERVICES binding \"mca-instance\" (AdvancedMobileAccess) is empty",
            "c.yaml: credentials.mca.secret: secret in VCAP_SERVICES binding \"mca-instance\" (AdvancedMobileAccess) contains control characters "
                + "(such as a line break inside the secret)",
        ])
        XCTAssertFalse(lines.joined().contains("SENTINEL"))
    }

    func testTLSKeysCheckedAgainstDiscoveredServerURL() {
        var credentials = allVCAP
        credentials["serverUrl"] = "http://mca.test"
        XCTAssertEqual(problemLines(onlyType + "    insecureSkipVerify: false\n", environment: ["VCAP_SERVICES": vcapServices(credentials)]), [
            "c.yaml: credentials.mca.insecureSkipVerify: TLS settings need an https:// URL (serverUrl is http://mca.test:80/)",
        ])
    }
}
