import Config
import Foundation
import XCTest

/// `tracing:` — OpenTelemetry trace export: the file's keys, the standard `OTEL_` variables
/// over them, the problems a user sees, and header values kept out of every message and rendering.
final class ConfigDecoderTracingTests: XCTestCase {
    // MARK: - On and off

    func testOffByDefault() throws {
        let tracing = try XCTUnwrap(parseOK("routes: []")?.tracing)
        XCTAssertEqual(tracing, TracingConfig())
        XCTAssertFalse(tracing.enabled)
        XCTAssertNil(tracing.tracesURL)
        XCTAssertEqual(tracing.serviceName, "token-sidecar")
        XCTAssertEqual(tracing.sampler, .parentBasedAlwaysOn)
        XCTAssertEqual(tracing.sampler.rawValue, "parentbased_always_on")
        XCTAssertEqual(tracing.samplerArg, 1.0)
        XCTAssertEqual(tracing.compression, .gzip)
        XCTAssertEqual(tracing.timeout, .seconds(10))
        XCTAssertEqual(tracing.maxQueueSize, 2048)
        XCTAssertEqual(tracing.scheduleDelay, .seconds(5))
        XCTAssertEqual(tracing.exportTimeout, .seconds(30))
        XCTAssertEqual(tracing.maxExportBatchSize, 512)
        XCTAssertEqual(tracing.tls, .default)
        XCTAssertEqual(parseOK("tracing: ~")?.tracing, TracingConfig())
        XCTAssertEqual(parseOK("tracing: {sampler: always_on}")?.tracing.enabled, false, "settings without an endpoint stay off")
    }

    func testEndpointSwitchesOnWithV1TracesAppended() throws {
        let cases = [
            ("http://collector:4318", "http://collector:4318/v1/traces"),
            ("http://collector:4318/", "http://collector:4318/v1/traces"),
            ("https://otlp.example.com/otlp", "https://otlp.example.com/otlp/v1/traces"),
            ("https://otlp.example.com/otlp/", "https://otlp.example.com/otlp/v1/traces"),
        ]
        for (endpoint, url) in cases {
            let tracing = try XCTUnwrap(parseOK("tracing: {endpoint: '\(endpoint)'}")?.tracing)
            XCTAssertTrue(tracing.enabled, endpoint)
            XCTAssertEqual(tracing.endpoint, endpoint)
            XCTAssertEqual(tracing.tracesURL, url)
            let fromVariable = try XCTUnwrap(parseOK("routes: []", environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": endpoint])?.tracing)
            XCTAssertEqual(fromVariable.tracesURL, url, "the variable follows the same rule")
        }
        let parsed = try XCTUnwrap(parseOK("tracing: {endpoint: 'http://collector:4318'}")?.tracing.tracesEndpointURL)
        XCTAssertEqual(parsed.host, "collector")
        XCTAssertEqual(parsed.port, 4318)
        XCTAssertEqual(parsed.requestTarget, "/v1/traces")
        XCTAssertFalse(parsed.isTLS)
    }

    func testTracesEndpointIsUsedAsIsAndWinsOverEndpoint() throws {
        let tracing = try XCTUnwrap(parseOK("""
            tracing:
              endpoint: http://collector:4318
              tracesEndpoint: https://ingest.example.com/api/traces?tenant=a
            """)?.tracing)
        XCTAssertTrue(tracing.enabled)
        XCTAssertEqual(tracing.tracesURL, "https://ingest.example.com/api/traces?tenant=a")
        XCTAssertEqual(tracing.tracesEndpointURL?.requestTarget, "/api/traces?tenant=a")
        let env = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:9999/traces"]
        XCTAssertEqual(parseOK("routes: []", environment: env)?.tracing.tracesURL, "http://b:9999/traces")
        XCTAssertEqual(parseOK("tracing: {tracesEndpoint: 'http://file/t'}", environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318"])?
            .tracing.tracesURL, "http://file/t", "a traces endpoint wins over a base endpoint wherever each is set")
    }

    // MARK: - The file

    func testEveryFileKey() throws {
        let ca = try writeTemporaryFile(self, "ca.pem", FakePEM.certificate)
        let cert = try writeTemporaryFile(self, "cert.pem", FakePEM.certificate)
        let key = try writeTemporaryFile(self, "key.pem", FakePEM.key)
        let tracing = try XCTUnwrap(parseOK("""
            tracing:
              endpoint: https://collector.example.com:4318
              headers:
                X-Api-Key: ${API_KEY}
                x-tenant: "  blue  "
              serviceName: payments-sidecar
              resourceAttributes:
                deployment.environment: prod
                k8s.namespace.name: payments
              sampler: parentbased_traceidratio
              samplerArg: 0.25
              disabled: false
              compression: none
              timeout: 3s
              batch:
                maxQueueSize: 4096
                scheduleDelay: 500ms
                exportTimeout: 1m
                maxExportBatchSize: 1024
              caFile: \(ca)
              clientCert: \(cert)
              clientKey: \(key)
              insecureSkipVerify: false
            """, environment: ["API_KEY": "SENTINEL-API-KEY"])?.tracing)
        XCTAssertEqual(tracing, TracingConfig(
            endpoint: "https://collector.example.com:4318",
            headers: [TracingHeader(name: "X-Api-Key", value: "SENTINEL-API-KEY"), TracingHeader(name: "x-tenant", value: "blue")],
            serviceName: "payments-sidecar",
            resourceAttributes: [TracingAttribute(key: "deployment.environment", value: "prod"),
                                 TracingAttribute(key: "k8s.namespace.name", value: "payments")],
            sampler: .parentBasedTraceIDRatio, samplerArg: 0.25, compression: .none, timeout: .seconds(3),
            maxQueueSize: 4096, scheduleDelay: .milliseconds(500), exportTimeout: .seconds(60), maxExportBatchSize: 1024,
            tls: TLSSettings(caFile: ca, clientCert: cert, clientKey: key)))
        XCTAssertTrue(tracing.enabled)
        XCTAssertEqual(tracing.tracesURL, "https://collector.example.com:4318/v1/traces")
    }

    func testTypos() {
        XCTAssertEqual(problemLines("tracing: {endpont: 'http://c:4318'}"), [
            "c.yaml: tracing.endpont: unknown key (did you mean 'endpoint'?)",
        ])
        XCTAssertEqual(problemLines("tracing: {batch: {maxQueSize: 10}}"), [
            "c.yaml: tracing.batch.maxQueSize: unknown key (did you mean 'maxQueueSize'?)",
        ])
        XCTAssertEqual(problemLines("tracng: {}"), ["c.yaml: tracng: unknown key (did you mean 'tracing'?)"])
        XCTAssertEqual(problemLines("tracing: http://c:4318"), [
            "c.yaml: tracing: expected a mapping with endpoint, headers, sampler and the other tracing settings, got a scalar value",
        ])
    }

    func testBadFileValues() {
        XCTAssertEqual(problemLines("tracing: {endpoint: 'collector:4318'}"), [
            "c.yaml: tracing.endpoint: invalid URL: expected a URL like https://host[:port]/path",
        ])
        XCTAssertEqual(problemLines("tracing: {endpoint: 'grpc://collector:4317'}"), [
            "c.yaml: tracing.endpoint: invalid URL: unsupported scheme 'grpc': expected http:// or https://",
        ])
        XCTAssertEqual(problemLines("tracing: {endpoint: 'http://c:4318/?a=b'}"), [
            "c.yaml: tracing.endpoint: invalid URL: URL must not have a query (v1/traces is appended to the endpoint's path; give the full URL as tracesEndpoint instead)",
        ])
        XCTAssertEqual(problemLines("tracing: {tracesEndpoint: 'http:///v1/traces'}"), [
            "c.yaml: tracing.tracesEndpoint: invalid URL: URL has no host",
        ])
        XCTAssertEqual(problemLines("tracing: {sampler: traceidratoi}"), [
            "c.yaml: tracing.sampler: 'traceidratoi' is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio (did you mean 'traceidratio'?)",
        ])
        XCTAssertEqual(problemLines("tracing: {sampler: traceidratio, samplerArg: 1.5}"), [
            "c.yaml: tracing.samplerArg: must be a ratio between 0 and 1 for sampler traceidratio (got 1.5)",
        ])
        XCTAssertEqual(problemLines("tracing: {samplerArg: half}"), [
            "c.yaml: tracing.samplerArg: expected a number such as 0.25 (the share of traces the ratio samplers keep), got 'half'",
        ])
        XCTAssertNotNil(parseOK("tracing: {sampler: always_on, samplerArg: 7}"), "only the ratio samplers read the argument")
        XCTAssertEqual(problemLines("tracing: {compression: br}"), ["c.yaml: tracing.compression: 'br' is not one of gzip, none"])
        XCTAssertEqual(problemLines("tracing: {timeout: 0s}"), ["c.yaml: tracing.timeout: must be greater than 0"])
        XCTAssertEqual(problemLines("tracing: {serviceName: ''}"), ["c.yaml: tracing.serviceName: must not be empty"])
        XCTAssertEqual(problemLines("tracing: {batch: {maxQueueSize: 100, maxExportBatchSize: 200}}"), [
            "c.yaml: tracing.batch.maxExportBatchSize: 200 is more than tracing.batch.maxQueueSize 100: a batch must fit in the queue",
        ])
        XCTAssertEqual(problemLines("tracing: {batch: {maxQueueSize: 0, scheduleDelay: 0ms}}"), [
            "c.yaml: tracing.batch.maxQueueSize: must be between 1 and 1000000 (got 0)",
            "c.yaml: tracing.batch.scheduleDelay: must be greater than 0",
        ], "an invalid queue size is not compared with the batch size as well")
        XCTAssertEqual(problemLines("tracing: {batch: {maxQueueSize: 256}}"), [
            "c.yaml: tracing.batch.maxExportBatchSize: 512 is more than tracing.batch.maxQueueSize 256: a batch must fit in the queue",
        ], "the default batch size counts too")
    }

    func testBadFileHeaders() {
        XCTAssertEqual(problemLines("tracing: {headers: {\"X Key\": v}}"), [
            "c.yaml: tracing.headers.X Key: is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~, e.g. X-Api-Key)",
        ])
        XCTAssertEqual(problemLines("tracing: {headers: {Content-Type: text/plain}}"), [
            "c.yaml: tracing.headers.Content-Type: Content-Type is a header the exporter writes itself",
        ])
        let withCR = problemLines("tracing: {headers: {X-Api-Key: \"SENTINEL-1\\r\\nX-Evil: 1\"}}")
        XCTAssertEqual(withCR, [
            "c.yaml: tracing.headers.X-Api-Key: the value must not contain CR, LF, NUL or other control characters",
        ])
        XCTAssertEqual(problemLines("tracing: {headers: {X-Key: a, x-key: SENTINEL}}"), [
            "c.yaml: tracing.headers.x-key: the same header as X-Key (header names are case-insensitive)",
        ])
        XCTAssertEqual(problemLines("tracing: {headers: [X-Key]}"), [
            "c.yaml: tracing.headers: expected a mapping of header names to values, got a list",
        ])
    }

    // MARK: - The variables

    func testEveryVariable() throws {
        let ca = try writeTemporaryFile(self, "ca.pem", FakePEM.certificate)
        let cert = try writeTemporaryFile(self, "cert.pem", FakePEM.certificate)
        let key = try writeTemporaryFile(self, "key.pem", FakePEM.key)
        let environment = [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=SENTINEL-KEY,x-tenant=blue",
            "OTEL_SERVICE_NAME": "edge",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,team=tokens",
            "OTEL_TRACES_SAMPLER": "traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0.1",
            "OTEL_SDK_DISABLED": "false",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "none",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
            "OTEL_EXPORTER_OTLP_CERTIFICATE": ca,
            "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": cert,
            "OTEL_EXPORTER_OTLP_CLIENT_KEY": key,
            "OTEL_BSP_SCHEDULE_DELAY": "200",
            "OTEL_BSP_EXPORT_TIMEOUT": "10000",
            "OTEL_BSP_MAX_QUEUE_SIZE": "100",
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "50",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        ]
        let tracing = try XCTUnwrap(parseOK("routes: []", environment: environment)?.tracing)
        let origins: [String: ValueOrigin] = [
            "endpoint": .environment("OTEL_EXPORTER_OTLP_ENDPOINT"),
            "headers.api-key": .environment("OTEL_EXPORTER_OTLP_HEADERS"),
            "headers.x-tenant": .environment("OTEL_EXPORTER_OTLP_HEADERS"),
            "serviceName": .environment("OTEL_SERVICE_NAME"),
            "resourceAttributes.deployment.environment": .environment("OTEL_RESOURCE_ATTRIBUTES"),
            "resourceAttributes.team": .environment("OTEL_RESOURCE_ATTRIBUTES"),
            "sampler": .environment("OTEL_TRACES_SAMPLER"),
            "samplerArg": .environment("OTEL_TRACES_SAMPLER_ARG"),
            "disabled": .environment("OTEL_SDK_DISABLED"),
            "compression": .environment("OTEL_EXPORTER_OTLP_COMPRESSION"),
            "timeout": .environment("OTEL_EXPORTER_OTLP_TIMEOUT"),
            "caFile": .environment("OTEL_EXPORTER_OTLP_CERTIFICATE"),
            "clientCert": .environment("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"),
            "clientKey": .environment("OTEL_EXPORTER_OTLP_CLIENT_KEY"),
            "batch.scheduleDelay": .environment("OTEL_BSP_SCHEDULE_DELAY"),
            "batch.exportTimeout": .environment("OTEL_BSP_EXPORT_TIMEOUT"),
            "batch.maxQueueSize": .environment("OTEL_BSP_MAX_QUEUE_SIZE"),
            "batch.maxExportBatchSize": .environment("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
        ]
        XCTAssertEqual(tracing, TracingConfig(
            endpoint: "https://collector:4318",
            headers: [TracingHeader(name: "api-key", value: "SENTINEL-KEY"), TracingHeader(name: "x-tenant", value: "blue")],
            serviceName: "edge",
            resourceAttributes: [TracingAttribute(key: "deployment.environment", value: "prod"), TracingAttribute(key: "team", value: "tokens")],
            sampler: .traceIDRatio, samplerArg: 0.1, disabled: false, compression: .none, timeout: .milliseconds(2500),
            maxQueueSize: 100, scheduleDelay: .milliseconds(200), exportTimeout: .seconds(10), maxExportBatchSize: 50,
            tls: TLSSettings(caFile: ca, clientCert: cert, clientKey: key), origins: origins))
        XCTAssertTrue(tracing.enabled)
    }

    func testVariablesWinOverTheFile() throws {
        let yaml = """
            tracing:
              endpoint: http://file:4318
              serviceName: from-file
              sampler: always_off
              samplerArg: 0.5
              compression: gzip
              timeout: 1s
              batch: {maxQueueSize: 10, maxExportBatchSize: 5, scheduleDelay: 1s, exportTimeout: 2s}
            """
        let environment = [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318",
            "OTEL_SERVICE_NAME": "from-env",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0.01",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "none",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "750",
            "OTEL_BSP_MAX_QUEUE_SIZE": "4000",
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1000",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_BSP_EXPORT_TIMEOUT": "5000",
        ]
        let tracing = try XCTUnwrap(parseOK(yaml, environment: environment)?.tracing)
        XCTAssertEqual(tracing.tracesURL, "http://env:4318/v1/traces")
        XCTAssertEqual(tracing.serviceName, "from-env")
        XCTAssertEqual(tracing.sampler, .parentBasedTraceIDRatio)
        XCTAssertEqual(tracing.samplerArg, 0.01)
        XCTAssertEqual(tracing.compression, .none)
        XCTAssertEqual(tracing.timeout, .milliseconds(750))
        XCTAssertEqual(tracing.maxQueueSize, 4000)
        XCTAssertEqual(tracing.maxExportBatchSize, 1000)
        XCTAssertEqual(tracing.scheduleDelay, .milliseconds(100))
        XCTAssertEqual(tracing.exportTimeout, .seconds(5))
        XCTAssertEqual(tracing.origins["endpoint"], .environment("OTEL_EXPORTER_OTLP_ENDPOINT"))
        let empty = environment.mapValues { _ in "" }
        XCTAssertEqual(parseOK(yaml, environment: empty)?.tracing.serviceName, "from-file", "an empty variable counts as unset")
        XCTAssertEqual(parseOK(yaml, environment: empty)?.tracing.origins, [:])
    }

    func testTracesVariablesWinOverGenericOnes() throws {
        let ca = try writeTemporaryFile(self, "ca.pem", FakePEM.certificate)
        let tracesCA = try writeTemporaryFile(self, "traces-ca.pem", FakePEM.certificate)
        let tracing = try XCTUnwrap(parseOK("routes: []", environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4318",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "1000",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2000",
            "OTEL_EXPORTER_OTLP_CERTIFICATE": ca,
            "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": tracesCA,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        ])?.tracing)
        XCTAssertEqual(tracing.compression, .none)
        XCTAssertEqual(tracing.timeout, .seconds(2))
        XCTAssertEqual(tracing.tls.caFile, tracesCA)
        XCTAssertEqual(tracing.origins["caFile"], .environment("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"))
    }

    func testHeaderVariables() throws {
        let tracing = try XCTUnwrap(parseOK("""
            tracing:
              endpoint: http://c:4318
              headers: {X-Tenant: file-tenant, X-File-Only: kept}
            """, environment: [
                "OTEL_EXPORTER_OTLP_HEADERS": " api-key = SENTINEL%20KEY%2C1 , x-tenant=generic,,x-scope=a%3Db ",
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "X-Scope=traces%2Fonly,x-unicode=gr%C3%BC%C3%9F",
            ])?.tracing)
        XCTAssertEqual(tracing.headers, [
            TracingHeader(name: "x-tenant", value: "generic"),
            TracingHeader(name: "X-File-Only", value: "kept"),
            TracingHeader(name: "api-key", value: "SENTINEL KEY,1"),
            TracingHeader(name: "X-Scope", value: "traces/only"),
            TracingHeader(name: "x-unicode", value: "grüß"),
        ], "per name (case-insensitively): the traces variable over the generic one over the file; values percent-decoded")
        XCTAssertEqual(tracing.origins["headers.x-tenant"], .environment("OTEL_EXPORTER_OTLP_HEADERS"))
        XCTAssertEqual(tracing.origins["headers.X-Scope"], .environment("OTEL_EXPORTER_OTLP_TRACES_HEADERS"))
        XCTAssertNil(tracing.origins["headers.x-scope"])
        XCTAssertNil(tracing.origins["headers.X-File-Only"])
    }

    func testServiceNameAndResourceAttributes() throws {
        let attributes = "service.name=from-attributes,deployment.environment=prod,k%3Dx=a%2Cb"
        let fromAttributes = try XCTUnwrap(parseOK("routes: []", environment: ["OTEL_RESOURCE_ATTRIBUTES": attributes])?.tracing)
        XCTAssertEqual(fromAttributes.serviceName, "from-attributes")
        XCTAssertEqual(fromAttributes.origins["serviceName"], .environment("OTEL_RESOURCE_ATTRIBUTES"))
        XCTAssertEqual(fromAttributes.resourceAttributes, [
            TracingAttribute(key: "deployment.environment", value: "prod"), TracingAttribute(key: "k=x", value: "a,b"),
        ], "service.name is the service name, not a second attribute; keys and values percent-decoded")
        XCTAssertEqual(parseOK("tracing: {serviceName: file}", environment: ["OTEL_RESOURCE_ATTRIBUTES": attributes])?
            .tracing.serviceName, "file", "the serviceName key wins over a service.name attribute")
        XCTAssertEqual(parseOK("routes: []", environment: ["OTEL_RESOURCE_ATTRIBUTES": attributes, "OTEL_SERVICE_NAME": "env"])?
            .tracing.serviceName, "env")
        XCTAssertEqual(parseOK("tracing: {resourceAttributes: {service.name: attr-in-file, team: a}}")?.tracing,
                       TracingConfig(serviceName: "attr-in-file", resourceAttributes: [TracingAttribute(key: "team", value: "a")]))
        let merged = try XCTUnwrap(parseOK("tracing: {resourceAttributes: {team: file, region: eu}}",
                                           environment: ["OTEL_RESOURCE_ATTRIBUTES": "team=env"])?.tracing)
        XCTAssertEqual(merged.resourceAttributes, [TracingAttribute(key: "team", value: "env"), TracingAttribute(key: "region", value: "eu")])
    }

    func testSDKDisabled() throws {
        let on = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"]
        for value in ["true", "TRUE", "True"] {
            let tracing = try XCTUnwrap(parseOK("routes: []", environment: on.merging(["OTEL_SDK_DISABLED": value]) { $1 })?.tracing)
            XCTAssertTrue(tracing.disabled, value)
            XCTAssertFalse(tracing.enabled, "\(value): an endpoint does not switch a disabled SDK on")
            XCTAssertEqual(tracing.tracesURL, "http://c:4318/v1/traces", "the values that would apply are still there")
        }
        for value in ["false", "1", "yes", "on"] {
            XCTAssertEqual(parseOK("routes: []", environment: on.merging(["OTEL_SDK_DISABLED": value]) { $1 })?.tracing.enabled, true, value)
        }
        XCTAssertEqual(parseOK("tracing: {disabled: true}", environment: on)?.tracing.enabled, false, "the file can disable")
        XCTAssertEqual(parseOK("tracing: {disabled: true}", environment: on.merging(["OTEL_SDK_DISABLED": "false"]) { $1 })?
            .tracing.enabled, true, "the variable wins over the file")
        XCTAssertEqual(parseOK("tracing: {disabled: true}", environment: on.merging(["OTEL_SDK_DISABLED": ""]) { $1 })?
            .tracing.enabled, false, "an empty variable counts as unset")
    }

    // MARK: - Bad variables: one problem each, at the key, naming the variable

    func testBadVariables() {
        let cases: [(String, String, String)] = [
            ("OTEL_TRACES_SAMPLER", "always",
             "c.yaml: tracing.sampler: OTEL_TRACES_SAMPLER: unknown sampler 'always'; expected one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER", "parentbased_alwayson",
             "c.yaml: tracing.sampler: OTEL_TRACES_SAMPLER: unknown sampler 'parentbased_alwayson'; expected one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio (did you mean 'parentbased_always_on'?)"),
            ("OTEL_TRACES_SAMPLER_ARG", "ten percent",
             "c.yaml: tracing.samplerArg: OTEL_TRACES_SAMPLER_ARG: expected a number such as 0.25 (the share of traces the ratio samplers keep), got 'ten percent'"),
            ("OTEL_TRACES_SAMPLER_ARG", "nan",
             "c.yaml: tracing.samplerArg: OTEL_TRACES_SAMPLER_ARG: expected a number such as 0.25 (the share of traces the ratio samplers keep), got 'nan'"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318",
             "c.yaml: tracing.endpoint: OTEL_EXPORTER_OTLP_ENDPOINT: invalid URL: expected a URL like https://host[:port]/path"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://c/v1/traces",
             "c.yaml: tracing.tracesEndpoint: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: invalid URL: unsupported scheme 'ftp': expected http:// or https://"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd",
             "c.yaml: tracing.compression: OTEL_EXPORTER_OTLP_COMPRESSION: 'zstd' is not one of gzip, none"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "10s",
             "c.yaml: tracing.timeout: OTEL_EXPORTER_OTLP_TIMEOUT: expected a whole number of milliseconds greater than 0, got '10s'"),
            ("OTEL_BSP_SCHEDULE_DELAY", "0",
             "c.yaml: tracing.batch.scheduleDelay: OTEL_BSP_SCHEDULE_DELAY: expected a whole number of milliseconds greater than 0, got '0'"),
            ("OTEL_BSP_EXPORT_TIMEOUT", "-5",
             "c.yaml: tracing.batch.exportTimeout: OTEL_BSP_EXPORT_TIMEOUT: expected a whole number of milliseconds greater than 0, got '-5'"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "lots",
             "c.yaml: tracing.batch.maxQueueSize: OTEL_BSP_MAX_QUEUE_SIZE: expected a whole number from 1 to 1000000, got 'lots'"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096",
             "c.yaml: tracing.batch.maxExportBatchSize: OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 4096 is more than tracing.batch.maxQueueSize 2048: a batch must fit in the queue"),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem",
             "c.yaml: tracing.caFile: OTEL_EXPORTER_OTLP_CERTIFICATE: cannot read CA file /nonexistent/ca.pem: no such file"),
            ("OTEL_RESOURCE_ATTRIBUTES", "team",
             "c.yaml: tracing.resourceAttributes: OTEL_RESOURCE_ATTRIBUTES: entry 1 is not key=value (entries are separated by commas); expected key=value pairs such as deployment.environment=prod,team=tokens"),
        ]
        for (variable, value, expected) in cases {
            XCTAssertEqual(problemLines("routes: []", environment: [variable: value]), [expected], "\(variable)=\(value)")
        }
    }

    /// Another protocol is refused only where spans would be sent with it: an operator that
    /// injects the variable into every container must not stop a sidecar that traces nothing.
    func testAnotherProtocolIsRefusedOnlyWhenTracingIsOn() {
        let endpoint = "http://collector:4318"
        XCTAssertEqual(problemLines("routes: []", environment: ["OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint]), [
            "c.yaml: tracing: OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' is not supported; token-sidecar exports OTLP over HTTP with protobuf bodies only (http/protobuf)",
        ])
        XCTAssertEqual(problemLines("routes: []", environment: ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
                                                                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint + "/v1/traces"]), [
            "c.yaml: tracing: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' is not supported; token-sidecar exports OTLP over HTTP with protobuf bodies only (http/protobuf)",
        ])
        XCTAssertFalse(parseOK("routes: []", environment: ["OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"])?.tracing.enabled ?? true)
        XCTAssertFalse(parseOK("routes: []", environment: ["OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
                                                           "OTEL_SDK_DISABLED": "true"])?.tracing.enabled ?? true)
    }

    func testRatioOutOfRangeNamesTheVariables() {
        XCTAssertEqual(problemLines("routes: []", environment: ["OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"]), [
            "c.yaml: tracing.samplerArg: OTEL_TRACES_SAMPLER_ARG: must be a ratio between 0 and 1 for sampler OTEL_TRACES_SAMPLER = traceidratio (got 1.5)",
        ])
        XCTAssertEqual(problemLines("tracing: {sampler: parentbased_traceidratio}", environment: ["OTEL_TRACES_SAMPLER_ARG": "-0.1"]), [
            "c.yaml: tracing.samplerArg: OTEL_TRACES_SAMPLER_ARG: must be a ratio between 0 and 1 for sampler parentbased_traceidratio (got -0.1)",
        ])
        XCTAssertNotNil(parseOK("routes: []", environment: ["OTEL_TRACES_SAMPLER_ARG": "5"]), "the default sampler takes no ratio")
        XCTAssertEqual(problemLines("tracing: {batch: {maxExportBatchSize: 300}}", environment: ["OTEL_BSP_MAX_QUEUE_SIZE": "200"]), [
            "c.yaml: tracing.batch.maxExportBatchSize: 300 is more than OTEL_BSP_MAX_QUEUE_SIZE = 200: a batch must fit in the queue",
        ])
    }

    func testBadHeaderVariablesNeverShowTheirText() {
        let cases: [(String, String)] = [
            ("Authorization: Bearer SENTINEL", "entry 1 is not key=value (entries are separated by commas); expected name=value pairs such as api-key=secret,tenant=a"),
            ("a=1,=SENTINEL", "entry 2 has no key before '='; expected name=value pairs such as api-key=secret,tenant=a"),
            ("api-key=SENTINEL%zz", "entry 1 has a value that is not valid percent-encoded UTF-8; expected name=value pairs such as api-key=secret,tenant=a"),
            ("api-key=SENTINEL%0D%0AX-Evil: 1", "header 1: the value must not contain CR, LF, NUL or other control characters"),
            ("ok=1,Bearer SENTINEL=x", "header 2 has a name that is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~) or is one the exporter writes itself"),
            ("content-length=SENTINEL", "header 1 has a name that is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~) or is one the exporter writes itself"),
        ]
        for (value, message) in cases {
            for variable in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
                let lines = problemLines("routes: []", environment: [variable: value])
                XCTAssertEqual(lines, ["c.yaml: tracing.headers: \(variable): \(message)"], value)
                XCTAssertFalse(lines.joined().contains("SENTINEL"), value)
            }
        }
    }

    // MARK: - TLS

    func testTLSKeysNeedAnHTTPSEndpoint() throws {
        let ca = try writeTemporaryFile(self, "ca.pem", FakePEM.certificate)
        let key = try writeTemporaryFile(self, "key.pem", FakePEM.key)
        XCTAssertEqual(problemLines("tracing: {endpoint: 'http://c:4318', caFile: \(ca)}"), [
            "c.yaml: tracing.caFile: TLS settings need an https:// URL (spans go to http://c:4318/v1/traces)",
        ])
        XCTAssertEqual(problemLines("tracing: {endpoint: 'http://c:4318'}", environment: ["OTEL_EXPORTER_OTLP_CERTIFICATE": ca]), [
            "c.yaml: tracing.caFile: OTEL_EXPORTER_OTLP_CERTIFICATE: TLS settings need an https:// URL (spans go to http://c:4318/v1/traces)",
        ])
        XCTAssertEqual(parseOK("tracing: {caFile: \(ca)}")?.tracing.tls.caFile, ca, "kept for an endpoint given later")
        XCTAssertEqual(problemLines("tracing: {endpoint: 'https://c:4318'}", environment: ["OTEL_EXPORTER_OTLP_CLIENT_KEY": key]), [
            "c.yaml: tracing.clientKey: OTEL_EXPORTER_OTLP_CLIENT_KEY: a client certificate needs its certificate as well (OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE or tracing.clientCert)",
        ])
        XCTAssertEqual(problemLines("tracing: {endpoint: 'https://c:4318', clientCert: \(ca)}"), [
            "c.yaml: tracing.clientCert: clientCert needs clientKey as well (a client certificate and its key go together)",
        ])
        XCTAssertEqual(problemLines("tracing: {endpoint: 'https://c:4318', clientCert: \(ca)}",
                                    environment: ["OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": key]), [
            "c.yaml: tracing.clientCert: clientCert needs clientKey as well (a client certificate and its key go together)",
        ], "the file's own pair is checked as written")
    }

    // MARK: - Secrets and the rendering

    func testHeaderValuesNeverAppearInProblemsOrRenderingOrDescriptions() throws {
        let environment = [
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=SENTINEL-ENV",
            "SECRET": "SENTINEL-FILE",
        ]
        let yaml = "tracing: {endpoint: 'http://c:4318', headers: {X-Key: '${SECRET}'}}\n"
        let lines = problemLines(yaml + "cacheSize: 0\n", environment: environment.merging(["OTEL_TRACES_SAMPLER": "x"]) { $1 })
        XCTAssertEqual(lines.count, 2)
        XCTAssertFalse(lines.joined().contains("SENTINEL"))
        let config = try XCTUnwrap(parseOK(yaml, environment: environment))
        XCTAssertEqual(config.tracing.headers.map(\.value), ["SENTINEL-FILE", "SENTINEL-ENV"])
        let text = config.renderEffective()
        XCTAssertFalse(text.contains("SENTINEL"), text)
        XCTAssertTrue(text.contains("  headers:\n    \"X-Key\": \"****\"\n    \"api-key\": \"****\"  # from OTEL_EXPORTER_OTLP_HEADERS\n"), text)
        var dumped = ""
        dump(config.tracing, to: &dumped)
        XCTAssertFalse("\(config.tracing)".contains("SENTINEL"))
        XCTAssertFalse(String(reflecting: config).contains("SENTINEL"))
        XCTAssertFalse(dumped.contains("SENTINEL"), dumped)
    }

    func testRenderWhenOff() throws {
        let config = try XCTUnwrap(parseOK("routes: []"))
        XCTAssertTrue(config.renderEffective().contains("""

            tracing:  # enabled: false (no endpoint; set endpoint or OTEL_EXPORTER_OTLP_ENDPOINT to export spans)
              endpoint: null
              tracesEndpoint: null
              headers: {}
              serviceName: "token-sidecar"
              resourceAttributes: {}
              sampler: parentbased_always_on
              samplerArg: 1.0  # unused by parentbased_always_on
              disabled: false
              compression: gzip
              timeout: 10s
              batch:
                maxQueueSize: 2048
                scheduleDelay: 5s
                exportTimeout: 30s
                maxExportBatchSize: 512
            credentials: {}

            """), config.renderEffective())
        let disabled = try XCTUnwrap(parseOK("tracing: {endpoint: 'http://c:4318'}", environment: ["OTEL_SDK_DISABLED": "true"]))
        XCTAssertTrue(disabled.renderEffective().contains("""
            tracing:  # enabled: false (disabled by OTEL_SDK_DISABLED)
              endpoint: "http://c:4318"
              tracesEndpoint: null  # endpoint + /v1/traces

            """), disabled.renderEffective())
        XCTAssertTrue(disabled.renderEffective().contains("\n  disabled: true  # from OTEL_SDK_DISABLED\n"))
    }

    func testRenderWhenOnSaysWhereValuesCameFrom() throws {
        let config = try XCTUnwrap(parseOK("""
            tracing:
              endpoint: http://file:4318
              sampler: traceidratio
              resourceAttributes: {team: tokens}
            """, environment: [
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
                "OTEL_TRACES_SAMPLER_ARG": "0.5",
                "OTEL_RESOURCE_ATTRIBUTES": "service.name=edge,region=eu",
                "OTEL_BSP_MAX_QUEUE_SIZE": "1000",
            ]))
        XCTAssertTrue(config.renderEffective().contains("""
            tracing:  # enabled: true, spans go to "http://collector:4318/v1/traces"
              endpoint: "http://collector:4318/"  # from OTEL_EXPORTER_OTLP_ENDPOINT
              tracesEndpoint: null  # endpoint + /v1/traces
              headers: {}
              serviceName: "edge"  # from OTEL_RESOURCE_ATTRIBUTES (service.name)
              resourceAttributes:
                "team": "tokens"
                "region": "eu"  # from OTEL_RESOURCE_ATTRIBUTES
              sampler: traceidratio
              samplerArg: 0.5  # from OTEL_TRACES_SAMPLER_ARG
              disabled: false
              compression: gzip
              timeout: 10s
              batch:
                maxQueueSize: 1000  # from OTEL_BSP_MAX_QUEUE_SIZE
                scheduleDelay: 5s
                exportTimeout: 30s
                maxExportBatchSize: 512
            credentials: {}
            """), config.renderEffective())
    }

    func testRenderingLoadsBack() throws {
        let ca = try writeTemporaryFile(self, "ca.pem", FakePEM.certificate)
        let environment = [
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://ingest.example.com/v1/traces?x=$1",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "https://unused:4318",
            "OTEL_EXPORTER_OTLP_CERTIFICATE": ca,
            "OTEL_SERVICE_NAME": "edge \"one\"",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0.00001",
            "OTEL_BSP_SCHEDULE_DELAY": "1500",
            "OTEL_RESOURCE_ATTRIBUTES": "a=1",
        ]
        let config = try XCTUnwrap(parseOK("tracing: {compression: none, batch: {exportTimeout: 1m}}", environment: environment))
        let text = config.renderEffective()
        XCTAssertTrue(text.contains("  endpoint: \"https://unused:4318\"  # from OTEL_EXPORTER_OTLP_ENDPOINT; unused: tracesEndpoint wins\n"), text)
        XCTAssertTrue(text.contains("  caFile: \"\(ca)\"  # from OTEL_EXPORTER_OTLP_CERTIFICATE\n  clientCert: null  # no client certificate\n"), text)
        let reparsed = try XCTUnwrap(parseOK(text))
        var expected = config.tracing
        expected.origins = [:]
        XCTAssertEqual(reparsed.tracing, expected, "every value loads back, as written in the file")
    }
}
