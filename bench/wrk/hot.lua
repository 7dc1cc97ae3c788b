-- bench/wrk/hot.lua: a small set of pages (~10) requested over and over: a fully cached working set.
--
--   HOT_URLS=FILE   the pages, one request path per line (bench/wrk/urls.py hot)
-- Each wrk thread cycles through the list from its own offset. done() is report.lua's (one BENCH
-- line; loaded from this folder). WRK_HEADERS works as in report.lua.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "report.lua")

local file = os.getenv("HOT_URLS")
assert(file and file ~= "", "hot.lua: set HOT_URLS to a file of request paths")

local counter = 0
setup = function(thread)
  thread:set("offset", counter)
  counter = counter + 1
end

local requests, position

init = function(args)
  requests = {}
  for line in io.lines(file) do
    if line ~= "" then requests[#requests + 1] = wrk.format(nil, line) end
  end
  assert(#requests > 0, "hot.lua: no paths in " .. file)
  -- threads start at different pages, so they do not walk the set in lockstep
  local k = tonumber(wrk.thread:get("offset")) or 0
  position = (k * 3) % #requests
end

request = function()
  position = position % #requests + 1
  return requests[position]
end
