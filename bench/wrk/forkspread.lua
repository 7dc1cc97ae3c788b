-- bench/wrk/forkspread.lua: the same few commits requested through many forks (repository-neutral).
--
-- The URL list (bench/wrk/urls.py forkspread) holds only a handful of commits, each under every
-- repository of the fork farm (base and forks) and every diff option, in a seeded random order. A
-- cache keyed by URL never hits (no URL repeats); a cache of repository-neutral diff fragments keyed by
-- commit SHA + options renders each commit once. Walked exactly like crawler.lua (same environment:
-- CRAWL_URLS, CRAWL_START, CRAWL_LANES; same BENCH and BENCH_CRAWL lines), so it is crawler.lua with
-- another list.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "crawler.lua")
