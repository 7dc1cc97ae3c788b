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
-- Past the end of the list a thread stops (wrk's thread:stop()), so a list shorter than the run
-- ends the run early and its rate is that of the URLs walked, never of a hot set. wrk itself
-- divides by the whole -d duration whenever its threads stopped, so each thread notes (monotonic
-- clock, through LuaJIT's ffi) when it sent its first request and when it stopped; when every
-- thread stopped at the end, the BENCH line's duration is from the first of those to the last. The
-- request made when a thread stops is never counted (its event loop ends before the answer is
-- read). wrk's main thread sleeps out -d whatever its threads do, so with CRAWL_STOP_FILE (a file
-- of its own) and CRAWL_THREADS (wrk's -t) each thread that stops appends a byte to the file, and
-- the one that finds it holds a byte per thread interrupts wrk (SIGINT, which wrk takes as the end
-- of its run: it reports as it would at -d): the point ends with its walk. CRAWL_WRAP=1 keeps the
-- old walk: wrap around to line 0, every request from then on counted as a repeat.
--   CRAWL_ENOUGH=N    a thread also stops once it has sent N requests and has been sending for
--   CRAWL_MIN_US=U    at least U microseconds (bench/lib.sh sets both when a point has a page floor,
--                     --min-pages: N is the thread's share of the floor plus its connections, so the
--                     answers read reach the floor; -d is then the cap). A slow target is measured
--                     over enough pages that a few slow ones do not decide its rate, a fast one for
--                     its -d as before. Its rate is over the walk's time, as at the list's end.
--
-- done() prints report.lua's BENCH line (shared code: report.lua is loaded from this folder), then
--   BENCH_CRAWL sent=N max_thread_sent=N next=N repeats=N urls=N ended=E enough=G
-- next = START + L * max_thread_sent: where the next run against the same target should start;
-- ended = the threads that reached the end of the list (and stopped there), enough = those that
-- stopped at CRAWL_ENOUGH; when every thread stopped one way or the other, BENCH_CRAWL also gives
-- walked_us (the walk's time, the BENCH line's duration_us).
-- WRK_HEADERS works as in report.lua.

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "report.lua")
local report_done = done

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } crawl_timespec;
int clock_gettime(int clock, crawl_timespec *tp);
int getpid(void);
int gettid(void);
int kill(int pid, int sig);
int usleep(unsigned int usec);
]]
local function now_us()  -- CLOCK_MONOTONIC, in microseconds
  local ts = ffi.new("crawl_timespec")
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) * 1e6 + math.floor(tonumber(ts.tv_nsec) / 1e3)
end

local file = os.getenv("CRAWL_URLS")
assert(file and file ~= "", "crawler.lua: set CRAWL_URLS to a file of request paths")
local start = tonumber(os.getenv("CRAWL_START") or "0") or 0
local lanes = tonumber(os.getenv("CRAWL_LANES") or "2") or 2
local wrap = os.getenv("CRAWL_WRAP") == "1"
local enough = tonumber(os.getenv("CRAWL_ENOUGH") or "")
local min_us = tonumber(os.getenv("CRAWL_MIN_US") or "0") or 0
local stop_file = os.getenv("CRAWL_STOP_FILE")
local wrk_threads = tonumber(os.getenv("CRAWL_THREADS") or "")

-- wrk's main thread (its task id is the process id) is in its sleep: the system call it is in
-- (/proc) is clock_nanosleep or nanosleep.
local function wrk_sleeps(pid)
  local f = io.open("/proc/self/task/" .. pid .. "/syscall")
  if not f then return false end
  local nr = tonumber(((f:read("*l") or "")):match("^(%d+)"))
  f:close()
  return nr == 230 or nr == 35
end

-- This thread has stopped: when every thread has (a byte each in stop_file, appended whole), ends
-- wrk's sleep with SIGINT (the main thread, which does not block it, takes it). A short walk on a
-- busy machine can end before wrk's main thread has caught SIGINT (it would die of it) or gone to
-- sleep (the signal would be spent before): the signal waits until it sleeps (at most ~10 s).
local function all_stopped()
  if not stop_file or not wrk_threads then return end
  local f = io.open(stop_file, "a")
  if not f then return end
  f:write("x")
  f:close()
  f = io.open(stop_file, "r")
  if not f then return end
  local size = f:seek("end")
  f:close()
  if size < wrk_threads then return end
  local pid = ffi.C.getpid()
  for _ = 1, 10000 do
    if wrk_sleeps(pid) then break end
    ffi.C.usleep(1000)
  end
  ffi.C.kill(pid, 2)
end

local threads = {}
local counter = 0

setup = function(thread)
  thread:set("lane", counter)
  counter = counter + 1
  threads[#threads + 1] = thread
end

local paths, n, pos, sent, repeats, ended, t0

init = function(args)
  paths = {}
  for line in io.lines(file) do
    if line ~= "" then paths[#paths + 1] = line end
  end
  n = #paths
  assert(n > 0, "crawler.lua: no paths in " .. file)
  local lane = tonumber(wrk.thread:get("lane")) or 0
  pos = start + lane   -- 0-based index into the endless list; the line is pos % n
  sent, repeats, ended = 0, 0, false
end

-- Stops the thread (the end of the list: "ended", or CRAWL_ENOUGH: "enough"); the request it
-- returns (wrk needs one) is sent but its answer never read.
local function stop(why)
  if not ended then
    ended = true
    wrk.thread:set(why, 1)
    wrk.thread:set("t1", now_us())
    wrk.thread:stop()
    all_stopped()
  end
  return wrk.format(nil, paths[n])
end

request = function()
  -- wrk asks its first thread's script for a request once before the run, from its main thread
  -- (to count the requests it holds), and never sends it: that one walks nothing.
  if ffi.C.gettid() == ffi.C.getpid() then return wrk.format(nil, paths[1]) end
  local i = pos
  if sent == 0 and not ended then
    t0 = now_us()
    wrk.thread:set("t0", t0)
  end
  if i >= n and not wrap then return stop("ended") end
  if enough and sent >= enough and now_us() - t0 >= min_us then return stop("enough") end
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
  local total, most, rep, stopped, sated, first, last = 0, 0, 0, 0, 0, nil, nil
  for _, t in ipairs(threads) do
    local s = tonumber(t:get("sent")) or 0
    total = total + s
    if s > most then most = s end
    rep = rep + (tonumber(t:get("repeats")) or 0)
    stopped = stopped + (tonumber(t:get("ended")) or 0)
    sated = sated + (tonumber(t:get("enough")) or 0)
    local t0, t1 = tonumber(t:get("t0")), tonumber(t:get("t1"))
    if t0 and (not first or t0 < first) then first = t0 end
    if t1 and (not last or t1 > last) then last = t1 end
  end
  local walked = ""
  if stopped + sated == #threads and first and last and last > first then
    summary.duration = last - first
    walked = string.format(" walked_us=%d", last - first)
  end
  report_done(summary, latency, requests)
  local urls = 0
  for line in io.lines(file) do if line ~= "" then urls = urls + 1 end end
  io.write(string.format(
    "BENCH_CRAWL sent=%d max_thread_sent=%d next=%d repeats=%d urls=%d ended=%d enough=%d%s\n",
    total, most, start + lanes * most, rep, urls, stopped, sated, walked))
end
