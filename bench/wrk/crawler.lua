-- bench/wrk/crawler.lua: every request a different URL, never repeated within a run (a crawler).
--
-- Reads a list of request paths (one per line, e.g. "/forks/fork-0042.git/commit/?id=SHA&context=5",
-- written by bench/wrk/urls.py in a seeded random order) and walks it without repeating:
--   CRAWL_URLS=FILE   the list (required)
--   CRAWL_START=N     0-based line where this run starts (default 0); the runner passes the previous
--                     run's "next" so that successive runs against one target never repeat a URL
--   CRAWL_LANES=L     lanes the list is dealt into (default 2, wrk's thread count in bench/lib.sh):
--                     thread k takes lines START+k, START+k+L, START+k+2L, ... so threads never ask
--                     for the same URL either. With fewer threads than lanes some lines are skipped,
--                     never repeated.
-- Past the end of the list a thread wraps around to line 0 and every request from then on counts as
-- a repeat (reported, so a too-short list shows instead of silently turning into a hot-set test).
--
-- done() prints report.lua's BENCH line (shared code: report.lua is loaded from this folder), then
--   BENCH_CRAWL sent=N max_thread_sent=N next=N repeats=N urls=N
-- next = START + L * max_thread_sent: where the next run against the same target should start.
-- WRK_HEADERS works as in report.lua.

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "report.lua")
local report_done = done

local file = os.getenv("CRAWL_URLS")
assert(file and file ~= "", "crawler.lua: set CRAWL_URLS to a file of request paths")
local start = tonumber(os.getenv("CRAWL_START") or "0") or 0
local lanes = tonumber(os.getenv("CRAWL_LANES") or "2") or 2

local threads = {}
local counter = 0

setup = function(thread)
  thread:set("lane", counter)
  counter = counter + 1
  threads[#threads + 1] = thread
end

local paths, n, pos, sent, repeats

init = function(args)
  paths = {}
  for line in io.lines(file) do
    if line ~= "" then paths[#paths + 1] = line end
  end
  n = #paths
  assert(n > 0, "crawler.lua: no paths in " .. file)
  local lane = tonumber(wrk.thread:get("lane")) or 0
  pos = start + lane   -- 0-based index into the endless list; the line is pos % n
  sent, repeats = 0, 0
end

request = function()
  local i = pos
  pos = pos + lanes
  sent = sent + 1
  wrk.thread:set("sent", sent)
  if i >= n then
    repeats = repeats + 1
    wrk.thread:set("repeats", repeats)
  end
  return wrk.format(nil, paths[i % n + 1])
end

done = function(summary, latency, requests)
  report_done(summary, latency, requests)
  local total, most, rep = 0, 0, 0
  for _, t in ipairs(threads) do
    local s = tonumber(t:get("sent")) or 0
    total = total + s
    if s > most then most = s end
    rep = rep + (tonumber(t:get("repeats")) or 0)
  end
  local urls = 0
  for line in io.lines(file) do if line ~= "" then urls = urls + 1 end end
  io.write(string.format("BENCH_CRAWL sent=%d max_thread_sent=%d next=%d repeats=%d urls=%d\n",
    total, most, start + lanes * most, rep, urls))
end
