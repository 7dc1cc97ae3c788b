-- bench/wrk/flood.lua: the crawler of the flood scenario. crawler.lua's walk over a list of cold
-- pages (CRAWL_URLS, CRAWL_START, CRAWL_LANES as there), plus a count of responses by status.
--
-- done() prints crawler.lua's lines, then
--   BENCH_STATUS 200=N 503=N ...
-- (every status seen, over all threads; responses wrk could not read are not in it).

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "crawler.lua")
local crawler_setup = setup
local crawler_done = done

local all_threads = {}
statuses = {}

setup = function(thread)
  crawler_setup(thread)
  all_threads[#all_threads + 1] = thread
end

response = function(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

done = function(summary, latency, requests)
  crawler_done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(all_threads) do
    local s = t:get("statuses") or {}
    for code, n in pairs(s) do total[code] = (total[code] or 0) + n end
  end
  local codes = {}
  for code in pairs(total) do codes[#codes + 1] = code end
  table.sort(codes)
  local parts = {}
  for _, code in ipairs(codes) do parts[#parts + 1] = string.format("%d=%d", code, total[code]) end
  io.write("BENCH_STATUS " .. table.concat(parts, " ") .. "\n")
end
