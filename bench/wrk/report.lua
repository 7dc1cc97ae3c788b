-- bench/wrk/report.lua: wrk script shared by shellac's benchmark scenarios.
--
-- done() prints one machine-readable line after wrk's own summary (bench/lib.sh parses it):
--   BENCH requests=N duration_us=N rps=N.N bytes=N mean_us=N.N stdev_us=N.N max_us=N
--         p50_us=N p90_us=N p95_us=N p99_us=N p999_us=N
--         err_connect=N err_read=N err_write=N err_status=N err_timeout=N
-- Latencies are wrk's per-request latencies in microseconds (percentiles over every thread);
-- err_status counts responses with status >= 400.
--
-- Optional, for scenarios that need more than one URL (crawler, esi, ...):
--   WRK_PATHS=FILE   one request path per line ("/repo/commit/?id=..."); each thread walks the list
--                    from its own offset, round robin. Without it no request() is defined, so wrk
--                    keeps its static (fastest) request path.
--   WRK_HEADERS=FILE one "Name: value" per line, added to every request.

local headers_file = os.getenv("WRK_HEADERS")
if headers_file and headers_file ~= "" then
  for line in io.lines(headers_file) do
    local name, value = line:match("^([^:]+):%s*(.*)$")
    if name then wrk.headers[name] = value end
  end
end

local paths_file = os.getenv("WRK_PATHS")
if paths_file and paths_file ~= "" then
  local paths = {}
  for line in io.lines(paths_file) do
    if line ~= "" then paths[#paths + 1] = line end
  end
  assert(#paths > 0, "WRK_PATHS: no paths in " .. paths_file)
  local counter = 0
  local requests = {}

  setup = function(thread)
    thread:set("offset", counter)
    counter = counter + 1
  end

  init = function(args)
    for i, p in ipairs(paths) do requests[i] = wrk.format(nil, p) end
    local n = tonumber(wrk.thread:get("offset")) or 0
    position = (n * 7919) % #requests
  end

  request = function()
    position = position % #requests + 1
    return requests[position]
  end
end

done = function(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  local rps = secs > 0 and summary.requests / secs or 0
  io.write(string.format(
    "BENCH requests=%d duration_us=%d rps=%.1f bytes=%d mean_us=%.1f stdev_us=%.1f max_us=%d " ..
    "p50_us=%d p90_us=%d p95_us=%d p99_us=%d p999_us=%d " ..
    "err_connect=%d err_read=%d err_write=%d err_status=%d err_timeout=%d\n",
    summary.requests, summary.duration, rps, summary.bytes, latency.mean, latency.stdev, latency.max,
    latency:percentile(50), latency:percentile(90), latency:percentile(95), latency:percentile(99),
    latency:percentile(99.9),
    e.connect, e.read, e.write, e.status, e.timeout))
end
