/// The status page at `/`: one small server-rendered HTML document, no script and no external
/// asset, refreshing itself every few seconds. Every value is HTML-escaped.
enum StatusPage {
    /// Seconds between the page's own refreshes.
    static let refreshSeconds = 5

    /// The page for `report`.
    static func html(_ report: StatusReport) -> String {
        var out = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta http-equiv="refresh" content="\(refreshSeconds)">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>token-sidecar status</title>
        <style>
        body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2430;background:#f7f8fa}
        h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:24px 0 8px}
        .sub{color:#5b6472}.tiles{display:flex;gap:12px;flex-wrap:wrap;margin-top:16px}
        .tile{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:10px 14px;min-width:120px}
        .tile b{display:block;font-size:20px}
        table{border-collapse:collapse;background:#fff;border:1px solid #dde1e7;width:100%}
        th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #eef0f3;vertical-align:top}
        th{background:#f0f2f5;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
        .ok{color:#137333}.warn{color:#b06000}.bad{color:#c5221f}code{font-size:13px}
        </style></head><body>
        <h1>token-sidecar</h1>

        """
        out += "<div class=\"sub\">\(escape(report.generatedAt.iso8601)) · up \(duration(report.uptimeSeconds)) · "
            + "refreshes every \(refreshSeconds) s · <a href=\"/metrics\">/metrics</a> · <a href=\"/tokens\">/tokens</a>"
            + " · <a href=\"/readyz\">/readyz</a></div>\n"
        out += "<div class=\"tiles\">"
        out += tile("requests", String(report.requests))
        out += tile("requests/s", formatRate(report.requestsPerSecond))
        out += tile("client connections", String(report.clientConnections))
        out += tile("errors", String(report.errors.reduce(0) { $0 + $1.count }))
        out += "</div>\n"

        if let configuration = report.configuration {
            out += "<h2>Configuration</h2>\n"
            out += table(["file", "version", "loaded", "reloads", "refused reloads", "last error"], [[
                "<code>\(escape(configuration.file))</code>", "<code>\(escape(configuration.version))</code>",
                escape(configuration.loadedAt.iso8601), number(configuration.reloads), number(configuration.failedReloads),
                configuration.lastError.map { error in
                    "<span class=\"bad\">\(escape(error))</span>" + (configuration.lastErrorAt.map { " <span class=\"sub\">\(escape($0.iso8601))</span>" } ?? "")
                } ?? "",
            ]], numeric: [3, 4])
        }

        out += "<h2>Credentials</h2>\n"
        out += table(["name", "kind", "state", "token", "expires in", "last fetch", "fetches", "failures", "401s", "last error"],
                     report.credentials.map { credential in
            [
                "<code>\(escape(credential.name))</code>", escape(credential.kind),
                "<span class=\"\(stateClass(credential.state))\">\(escape(credential.state))</span>",
                (credential.fingerprint.map { "<code>\(escape($0))</code>" } ?? "–")
                    + (credential.binding.map { " <span class=\"sub\">\(escape($0.summary))</span>" } ?? ""),
                credential.expiresInSeconds.map(duration) ?? "–",
                credential.lastFetch.map { escape($0.iso8601) } ?? "–",
                number(credential.fetches), number(credential.failures), number(credential.unauthorized),
                credential.lastError.map { "<span class=\"bad\">\(escape($0))</span>" } ?? "",
            ]
        }, numeric: [6, 7, 8])

        let shared = report.credentials.compactMap { credential in credential.sharedCache.map { (credential.name, $0) } }
        if !shared.isEmpty {
            out += "<h2>Shared token cache</h2>\n"
            out += table(["credential", "state", "hits", "misses", "leases won", "leases waited", "fallbacks", "errors"],
                         shared.map { name, cache in
                [
                    "<code>\(escape(name))</code>",
                    "<span class=\"\(cache.available ? "ok" : "bad")\">\(escape(cache.state))</span>",
                    number(cache.hits), number(cache.misses), number(cache.leasesWon), number(cache.leasesWaited),
                    number(cache.fallbacks), number(cache.errors),
                ]
            }, numeric: [2, 3, 4, 5, 6, 7])
        }

        out += "<h2>Routes</h2>\n"
        out += table(["host", "upstream", "credential", "client Authorization"], report.routes.map { route in
            ["<code>\(escape(route.host))</code>", escape(route.upstream),
             route.credential.map { "<code>\(escape($0))</code>" } ?? "–", escape(route.clientAuthorization)]
        }, numeric: [])

        if !report.limits.isEmpty {
            out += "<h2>Limits</h2>\n"
            out += table(["scope", "rate", "tokens", "budget", "left", "period ends in", "refused"], report.limits.map { limit in
                ["<code>\(escape(limit.scope))</code>", escape(limit.rate ?? "–"), limit.tokens.map(number) ?? "–",
                 escape(limit.budget ?? "–"),
                 limit.remaining.map { $0 == 0 ? "<span class=\"bad\">0</span>" : number($0) } ?? "–",
                 limit.resetsInSeconds.map(duration) ?? "–", number(limit.refused)]
            }, numeric: [2, 4, 6])
        }

        out += "<h2>Upstream pools</h2>\n"
        out += table(["upstream", "idle", "leased", "connecting"], report.pools.map { pool in
            [escape(pool.upstream), number(pool.idle), number(pool.leased), number(pool.connecting)]
        }, numeric: [1, 2, 3])

        out += "<h2>Traces</h2>\n"
        if report.tracing.enabled {
            let tracing = report.tracing
            out += table(["endpoint", "sampler", "spans exported", "dropped (queue full)", "dropped (export failed)", "queued"], [[
                "<code>\(escape(tracing.endpoint ?? "–"))</code>", escape(tracing.sampler ?? "–"), String(tracing.exported),
                tracing.droppedQueueFull > 0 ? "<span class=\"bad\">\(tracing.droppedQueueFull)</span>" : "0",
                tracing.droppedExportFailed > 0 ? "<span class=\"bad\">\(tracing.droppedExportFailed)</span>" : "0",
                String(tracing.queued),
            ]], numeric: [2, 3, 4, 5])
        } else {
            out += "<p class=\"sub\">off (no OTLP endpoint: set tracing.endpoint or OTEL_EXPORTER_OTLP_ENDPOINT)</p>\n"
        }

        out += "<h2>Errors by Proxy-Status</h2>\n"
        out += table(["type", "count"], report.errors.map { [escape($0.type), number($0.count)] }, numeric: [1])
        out += "</body></html>\n"
        return out
    }

    private static func tile(_ label: String, _ value: String) -> String {
        "<div class=\"tile\"><b>\(escape(value))</b>\(escape(label))</div>"
    }

    private static func table(_ headers: [String], _ rows: [[String]], numeric: Set<Int>) -> String {
        guard !rows.isEmpty else { return "<p class=\"sub\">none</p>\n" }
        var out = "<table><tr>" + headers.map { "<th>\(escape($0))</th>" }.joined() + "</tr>\n"
        for row in rows {
            out += "<tr>" + row.enumerated().map { index, cell in
                numeric.contains(index) ? "<td class=\"n\">\(cell)</td>" : "<td>\(cell)</td>"
            }.joined() + "</tr>\n"
        }
        return out + "</table>\n"
    }

    private static func number(_ value: Int) -> String { String(value) }

    private static func formatRate(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    private static func stateClass(_ state: String) -> String {
        switch state {
        case "valid", "static": return "ok"
        case "refreshing", "idle", "fetching": return "warn"
        default: return "bad"
        }
    }

    /// `1h 02m`, `3m 05s`, `42s` (negative: `expired`).
    static func duration(_ seconds: Int) -> String {
        if seconds < 0 { return "expired" }
        if seconds >= 3600 { return "\(seconds / 3600)h \(pad(seconds / 60 % 60))m" }
        if seconds >= 60 { return "\(seconds / 60)m \(pad(seconds % 60))s" }
        return "\(seconds)s"
    }

    private static func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }

    /// Escapes `&`, `<`, `>`, `"` and `'`.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }
}
