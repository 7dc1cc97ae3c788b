#!/usr/bin/env python3
"""The exact re-render check of the cluster scenario (bench/scenarios/cluster.sh): after one node is
killed, did the survivors render any fragment that was already in memcached?

Reads the nodes' l2-trace= files (cache/l2.h: one line per shared-tier lookup and write,
"TIME get OUTCOME TIER-KEY KEY asked=TIME" and "TIME put OUTCOME TIER-KEY KEY", times in µs since
the epoch), the time of the kill (the crawler's, taken just before its SIGKILL) and what memcached
listed at the end (`lru_crawler metadump all` of every server: "key=K exp=.. la=.. ..." lines, K URL-encoded).

Every lookup of a surviving node that was taken off the tier's queue after the kill and was not a hit
is a render (the node renders on a miss, a corrupt value or an unavailable tier). Each is put in one
class, by the `put ok` lines of every node (the write acknowledged by memcached):
  already   a put ok of that key ended before the lookup was asked: the fragment was in memcached
            (target 0)
  racing    a put ok of that key ended while the lookup was under way (asked <= put <= answer):
            both happened at once; memcached answered before the write landed
  never     no put ok of that key before the answer: not in memcached when the node looked
            ... of which "lost": the killed node had looked it up (a miss) and never wrote it: its
            render was in flight or its write still queued when it died

Prints one line "BENCH key=value ..." and, with --details FILE, one line per render of the first two
classes (node, times, outcome, key) for the report.
"""
import argparse
import collections
import urllib.parse


def read_trace(path):
    """-> list of (time_us, event, outcome, tier_key, key, asked_us)"""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 5 or not parts[0].isdigit():
                continue  # a line cut short by the SIGKILL
            asked = 0
            for p in parts[5:]:
                if p.startswith("asked="):
                    asked = int(p[6:])
            out.append((int(parts[0]), parts[1], parts[2], parts[3], parts[4], asked))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", action="append", default=[], help="NODE=FILE (every node's, the killed one too)")
    ap.add_argument("--killed", required=True, help="the NODE that was killed")
    ap.add_argument("--kill-us", type=int, required=True, help="when (µs since the epoch)")
    ap.add_argument("--until-us", type=int, default=0, help="lookups after this are left out (the walk's end)")
    ap.add_argument("--start-us", type=int, default=0, help="the walk's start (walk_renders: the survivors' renders since)")
    ap.add_argument("--prefix", default="gitfrag/diff", help="only keys starting with this (the fragments)")
    ap.add_argument("--metadump", default="", help="memcached's key listing at the end")
    ap.add_argument("--details", default="")
    a = ap.parse_args()

    traces = {}
    for spec in a.trace:
        node, path = spec.split("=", 1)
        traces[node] = read_trace(path)
    keep = lambda key: key.startswith(a.prefix)

    first_put = {}       # tier key -> (time, node) of the first acknowledged write
    puts_ok = set()
    for node, lines in traces.items():
        for t, ev, outcome, tk, key, _ in lines:
            if ev == "put" and outcome == "ok" and keep(key):
                puts_ok.add(tk)
                if tk not in first_put or t < first_put[tk][0]:
                    first_put[tk] = (t, node)

    killed = traces.get(a.killed, [])
    killed_missed = {tk for t, ev, oc, tk, key, _ in killed if ev == "get" and oc != "hit" and keep(key)}
    killed_put = {tk for t, ev, oc, tk, key, _ in killed if ev == "put" and oc == "ok" and keep(key)}
    killed_after = sum(1 for t, *_ in killed if t > a.kill_us)

    c = collections.Counter()
    details = []
    for node, lines in sorted(traces.items()):
        if node == a.killed:
            continue
        c["walk_renders"] += sum(1 for t, ev, oc, tk, key, asked in lines
                                 if ev == "get" and oc != "hit" and keep(key) and asked >= a.start_us)
        for t, ev, outcome, tk, key, asked in lines:
            if ev != "get" or not keep(key) or asked < a.kill_us or (a.until_us and asked > a.until_us):
                continue
            c["lookups"] += 1
            if outcome == "hit":
                c["hits"] += 1
                if tk in first_put and first_put[tk][1] == a.killed:
                    c["hits_of_killed"] += 1
                continue
            c["renders"] += 1
            c["renders_" + outcome] += 1
            put = first_put.get(tk)
            if put and put[0] < asked:
                cls = "already"
            elif put and put[0] <= t:
                cls = "racing"
            else:
                cls = "never"
                if tk in killed_missed and tk not in killed_put:
                    c["never_lost"] += 1
            c[cls] += 1
            if cls != "never":
                details.append("%s %s: lookup asked %d, answered %d (%s); first put ok by %s at %d (%+d µs from the ask) %s" % (
                    cls, node, asked, t, outcome, put[1], put[0], put[0] - asked, key))

    listed = set()
    if a.metadump:
        with open(a.metadump, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("key="):
                    listed.add(urllib.parse.unquote(line.split()[0][4:]))  # metadump URL-encodes keys
    fields = [
        ("lookups", c["lookups"]), ("hits", c["hits"]), ("hits_of_killed", c["hits_of_killed"]),
        ("renders", c["renders"]), ("already", c["already"]), ("racing", c["racing"]), ("never", c["never"]),
        ("never_lost", c["never_lost"]), ("renders_miss", c["renders_miss"]),
        ("renders_unavailable", c["renders_unavailable"] + c["renders_busy"]), ("renders_corrupt", c["renders_corrupt"]),
        ("killed_puts", len(killed_put)), ("killed_lines_after_kill", killed_after),
        ("walk_renders", c["walk_renders"]), ("puts_ok", len(puts_ok)), ("puts_listed", len(puts_ok & listed) if a.metadump else -1),
    ]
    print("BENCH " + " ".join("%s=%d" % kv for kv in fields))
    if a.details:
        with open(a.details, "w", encoding="utf-8") as f:
            f.write("".join(d + "\n" for d in details))


if __name__ == "__main__":
    main()
