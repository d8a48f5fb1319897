import HTTPMessage
import JSON
/// The admin endpoints (`/` the status page, `/healthz`, `/readyz`, `/metrics`, `/tokens`,
/// `POST /reload`) as a pure function of a request and an ``AdminProvider``, so they are
/// tested without sockets; ``AdminServer`` serves them through a ``LocalServer``.
enum AdminRoutes {
    /// The paths served, for 404 hints.
    static let paths = ["/", "/healthz", "/readyz", "/metrics", "/tokens", "/reload"]

    /// Answers `request` through `deliver` (called once, possibly from another thread).
    static func handle(_ request: LocalRequest, provider: AdminProvider,
                       deliver: @escaping @Sendable (LocalResponse) -> Void) {
        guard paths.contains(request.path) else {
            deliver(.json(status: 404, .object([
                ("error", .string("not found")),
                ("endpoints", .array(paths.map { .string($0) })),
            ])))
            return
        }
        if request.path == "/reload" {
            reload(request, provider: provider, deliver: deliver)
            return
        }
        // HEAD is GET without the body (the server leaves the body out).
        guard request.method == "GET" || request.method == "HEAD" else {
            deliver(.error(status: 405, "method not allowed", headers: [("Allow", "GET, HEAD")]))
            return
        }
        switch request.path {
        case "/healthz":
            deliver(provider.isServing()
                ? .json(.object([("status", .string("ok"))]))
                : .json(status: 503, .object([("status", .string("shutting down"))])))
        case "/readyz":
            guard provider.isServing() else {
                // Draining: take the pod out of rotation even if tokens are fine.
                deliver(.json(status: 503, Readiness(ready: false, missing: ["shutting down"]).json))
                return
            }
            provider.readiness { readiness in
                deliver(.json(status: readiness.ready ? 200 : 503, readiness.json))
            }
        case "/metrics":
            provider.metrics { families in
                deliver(LocalResponse(status: 200, headers: [("Content-Type", PrometheusRenderer.contentType)],
                                       body: Array(PrometheusRenderer.render(families).utf8)))
            }
        case "/":
            let wantsJSON = request.fields.first("Accept")?.lowercased().contains("application/json") ?? false
            provider.status { report in
                guard let report else {
                    deliver(.error(status: 503, "no status available yet"))
                    return
                }
                if wantsJSON {
                    deliver(.json(report.json, headers: [("Cache-Control", "no-store")]))
                } else {
                    deliver(LocalResponse(status: 200, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")],
                                           body: Array(StatusPage.html(report).utf8)))
                }
            }
        default:  // "/tokens"
            provider.tokens { reports in
                deliver(.json(.array(reports.map(\.json)), headers: [("Cache-Control", "no-store")]))
            }
        }
    }

    /// `POST /reload`: 200 with the configuration's state when the file applied, 400 with the
    /// problem (`FILE: key: problem`) when it was refused — the running configuration stays.
    private static func reload(_ request: LocalRequest, provider: AdminProvider, deliver: @escaping @Sendable (LocalResponse) -> Void) {
        guard request.method == "POST" else {
            deliver(.error(status: 405, "method not allowed", headers: [("Allow", "POST")]))
            return
        }
        provider.reload { outcome in
            guard let outcome else {
                deliver(.error(status: 503, "reload is not available"))
                return
            }
            let body = JSONValue.object([
                ("status", .string(outcome.applied ? "reloaded" : "refused")),
                ("configuration", outcome.report.json),
            ])
            deliver(.json(status: outcome.applied ? 200 : 400, body, headers: [("Cache-Control", "no-store")]))
        }
    }
}
