-- wrk script for Benchmarks/peers.sh (one static request, built once: no Lua call per request).
--   ABS_URL=http://api.test/1m   send the absolute-form target a forward proxy expects
--                                ("GET http://api.test/1m HTTP/1.1", Host: api.test)
--   UPLOAD_BYTES=1048576         POST a body of that many bytes (Content-Length) instead of GET
-- done() prints one machine-readable line that peers.sh parses (latencies in microseconds;
-- non2xx = responses that were not 2xx/3xx).
local abs = os.getenv("ABS_URL")
if abs and abs ~= "" then
  wrk.path = abs
  wrk.headers["Host"] = abs:match("^%a+://([^/]+)")
end
local up = tonumber(os.getenv("UPLOAD_BYTES") or "")
if up and up > 0 then
  wrk.method = "POST"
  wrk.body = string.rep("u", up)
  wrk.headers["Content-Type"] = "application/octet-stream"
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRK requests=%.0f duration_us=%.0f bytes=%.0f p50_us=%.1f p90_us=%.1f p99_us=%.1f"
      .. " err_connect=%.0f err_read=%.0f err_write=%.0f err_timeout=%.0f non2xx=%.0f\n",
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    e.connect, e.read, e.write, e.timeout, e.status))
end
