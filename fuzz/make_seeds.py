#!/usr/bin/env python3
"""Writes the seed corpora in fuzz/corpus/TARGET/ (deterministic: run it again and git shows no
change). Seeds are small, valid and nearly valid inputs in each target's input format (see the
comment at the top of fuzz/TARGET.cc); libFuzzer mutates from there. Nothing is downloaded: the
ESI seeds are the pages of tests/esi_corpus."""
import gzip
import hashlib
import os
import re
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def write(target, seeds):
    """Writes seed-NNN files; files of other names (inputs a fuzzer found, added by hand) stay."""
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        if re.fullmatch(r"seed-\d{3}", name):
            os.unlink(os.path.join(folder, name))
    for i, seed in enumerate(seeds):
        if isinstance(seed, str):
            seed = seed.encode("latin-1")
        with open(os.path.join(folder, "seed-%03d" % i), "wb") as f:
            f.write(seed)


def crlf(text):
    return text.replace("\n", "\r\n")


requests = [
    crlf("GET / HTTP/1.1\nHost: example.org\n\n"),
    crlf("GET /repo/commit/?id=abc&h=main HTTP/1.1\nHost: git.example.org\nAccept-Encoding: gzip\n"
         "Cookie: a=1; b=2\nConnection: keep-alive\n\n"),
    crlf("POST /form HTTP/1.1\nHost: h\nContent-Length: 5\n\nhello"),
    crlf("POST /upload HTTP/1.1\nHost: h\nTransfer-Encoding: chunked\nExpect: 100-continue\n\n"
         "5\nhello\n0\n\n"),
    crlf("GET http://example.org:8080/x?y=1 HTTP/1.1\nHost: ignored\n\n"),
    crlf("OPTIONS * HTTP/1.1\nHost: h\n\n"),
    crlf("HEAD /a HTTP/1.0\nConnection: keep-alive\n\n"),
    crlf("\n\nGET /after-empty-lines HTTP/1.1\nHost: h\n\n"),
    crlf("GET /a HTTP/1.1\nHost: h\n\nGET /b HTTP/1.1\nHost: h\nConnection: close\n\n"),
    crlf("GET /v HTTP/1.1\nHost: h\nX-Obs: caf\xe9\tvalue\nContent-Length: 0, 0\n\n"),
    # Refused shapes, so mutations start near each check.
    "GET / HTTP/1.1\nHost: h\n\n",
    crlf("GET / HTTP/1.1\nHost: h\n folded\n\n"),
    crlf("POST / HTTP/1.1\nHost: h\nContent-Length: 3\nTransfer-Encoding: chunked\n\n"),
    crlf("GET / HTTP/1.1\nHost: a\nHost: b\n\n"),
    crlf("GET / HTTP/2.0\nHost: h\n\n"),
    crlf("CONNECT h:443 HTTP/1.1\nHost: h\n\n"),
    crlf("GET /  HTTP/1.1\nHost: h\n\n"),
    crlf("GET / HTTP/1.1\nHost: h\nExpect: something\n\n"),
    crlf("GET / HTTP/1.1\nHost: h\nContent-Length: 1\nContent-Length: 2\n\n"),
    crlf("GET / HTTP/1.1\nHost: h\r\rX: y\n\n"),
]
write("http1_request", requests)

chunked = [
    crlf("5\nhello\n0\n\n"),
    crlf("5;name=value\nhello\n6 ; q=\"x\"\n world\n0\nTrailer: t\nOther: o\n\n"),
    crlf("A\n0123456789\n00000\n\nGET /next HTTP/1.1\n"),
    crlf("fFfF\n") + "x" * 40,
    crlf("1\na\n1\nb\n1\nc\n0\n\n"),
    "5\nhello\n0\n\n",
    crlf("5\nhelloXX0\n\n"),
    crlf("g\n"),
    crlf("ffffffffffffffff\n"),
    crlf("5\rX\nhello\n0\n\n"),
]
write("http1_chunked", chunked)

# One control byte (bit 0: HEAD, bit 1: a 512-byte head limit), then the backend's bytes.
responses = [
    "\x00" + crlf("HTTP/1.1 200 OK\nContent-Type: text/html\nContent-Length: 5\n\nhello"),
    "\x00" + crlf("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\nSurrogate-Control: content=\"ESI/1.0\"\n\n"
                  "5\nhello\n0\n\n"),
    "\x00" + crlf("HTTP/1.1 204 No Content\n\n"),
    "\x00" + crlf("HTTP/1.1 304 Not Modified\nETag: \"x\"\n\n"),
    "\x01" + crlf("HTTP/1.1 200 OK\nContent-Length: 1000\n\n"),
    "\x00" + crlf("HTTP/1.1 100 Continue\n\nHTTP/1.1 200 OK\nContent-Length: 0\n\n"),
    "\x00" + "HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
    "\x00" + crlf("HTTP/1.0 200 OK\nConnection: keep-alive\nContent-Length: 2\n\nok"),
    "\x00" + crlf("HTTP/1.1 200\nConnection: close, X-Hop\nX-Hop: 1\n\nuntil close"),
    "\x02" + crlf("HTTP/1.1 503 Service Unavailable\nRetry-After: 5\nCache-Control: no-store\n\n"),
    "\x00" + crlf("HTTP/1.1 200 OK\nContent-Length: 5\nTransfer-Encoding: chunked\n\n"),
    "\x00" + crlf("HTTP/1.1 200 OK\nTransfer-Encoding: gzip, chunked\n\n"),
    "\x00" + crlf("HTTP/1.1 2000 OK\n\n"),
    "\x00" + crlf("HTTP/1.1 099 Low\n\n"),
    "\x00" + crlf("HTTP/1.1 200 OK\nContent-Length: 1, 2\n\n"),
]
write("http1_response", responses)

# Two bytes (status index, policy bits), then "Name: value" lines.
freshness = [
    "\x00\x10Cache-Control: max-age=60, stale-while-revalidate=30\nDate: Sun, 06 Nov 1994 08:49:37 GMT\n",
    "\x00\x00Cache-Control: s-maxage=10, max-age=99\nAge: 3\n",
    "\x00\x00Expires: Sun, 06 Nov 1994 08:50:37 GMT\nDate: Sun, 06 Nov 1994 08:49:37 GMT\n",
    "\x00\x00Expires: Sunday, 06-Nov-94 08:49:37 GMT\n",
    "\x00\x00Expires: Sun Nov  6 08:49:37 1994\n",
    "\x00\x00Expires: 0\n",
    "\x00\x01Cache-Control: private, no-cache=\"Set-Cookie, X\"\nSet-Cookie: a=b\n",
    "\x00\x00Cache-Control: no-store\n",
    "\x00\x00Vary: Accept-Encoding, Cookie\n",
    "\x06\x00Cache-Control: max-age=99999999999999999999\n",
    "\x00\x00Cache-Control: max-age=\"60\", stale-if-error=\"3600\"\n",
    "\x00\x00Surrogate-Control: max-age=60, content=\"ESI/1.0\";shellac\n",
    "\x0b\x00Cache-Control: max-age=60\n",
]
write("cache_control", freshness)

# The main file, then "@@ NAME" lines starting more files (see fuzz/config.cc).
configs = [
    "listen=127.0.0.1:8080\nadmin-listen=127.0.0.1:8081\nbackend=http://127.0.0.1:3000\n"
    "threads=2\ncache=on\ncache-size=64M\ndefault-ttl=2m\ngrace=10s\nfragment-ttl=forever\n",
    "# comment\n\n  cache-key = ^/([^/]+)/commit/ => /commit/\\1\nttl=^/static/ => 1d\n"
    "force-store=^/x\nesi=surrogate\nesi-url=\\.shtml$\nesi-allow-host=^cdn\\.\nesi-max-depth=3\n",
    "include=more.conf\nthreads=3\n@@ more.conf\nmax-body-size=1M\ninclude=/fuzz/last.conf\n"
    "@@ last.conf\nclient-header-timeout=500ms\n",
    "include=loop.conf\n@@ loop.conf\ninclude=loop.conf\n",
    "include=/etc/passwd\n",
    "cgitrc=/fuzz/cgitrc\nvirtual-root=/git/\n@@ cgitrc\ncss=/c.css\nsection=Main\n"
    "repo.url=one\nrepo.path=/fuzz/r/one.git\nrepo.desc=the first\nrepo.owner=me\nscan-path=/fuzz/r\n"
    "@@ r/one.git/HEAD\nref: refs/heads/main\n@@ r/one.git/objects/x\n@@ r/one.git/refs/x\n"
    "@@ r/two/.git/HEAD\n@@ r/two/.git/objects/x\n@@ r/two/.git/refs/x\n@@ r/two/.git/description\nTwo\n",
    "scan-path=/fuzz/r\nrepo=/fuzz/w\n@@ r/a.git/HEAD\n@@ r/a.git/objects/x\n@@ r/a.git/refs/x\n"
    "@@ r/n/b/HEAD\n@@ r/n/b/objects/x\n@@ r/n/b/refs/x\n@@ w/.git/HEAD\n@@ w/.git/objects/x\n"
    "@@ w/.git/refs/x\n",
    "repo.url=x\nrepo.path=/fuzz/x\nrepo.url=x/\n@@ x/HEAD\n",
    "listen-tls=127.0.0.1:8443 cert=/fuzz/c.pem key=/fuzz/k.pem ocsp=/fuzz/o.der\n"
    "tls-cert=*.example.org cert=/fuzz/c.pem key=/fuzz/k.pem\ntls-ciphers=HIGH\nhsts=max-age=60\n"
    "backend-ca=/fuzz/ca.pem\n@@ c.pem\n@@ k.pem\n@@ ca.pem\n",
    "listen=[::1]:80\nlisten=localhost:80\nadmin-listen=off\nbackend=https://[::1]:443/\n",
    "max-request-line=64\nmax-header-count=10000\nmax-header-bytes=256K\nupstream-max-idle=0\n"
    "tls-session-cache=10000000\nshutdown-timeout=1d\n",
    "threads=0\n",
    "no equals sign\n",
    "=value\n",
    "unknown-key=1\n",
    "repo=/fuzz/missing\n",
]
write("config", configs)

SHA = "0123456789abcdef0123456789abcdef01234567"
SHA2 = "fedcba9876543210fedcba9876543210fedcba98"
# One control byte (bits 0-1: virtual-root /, /git/, /a/, /cgit/x/; bit 2: a backend), then the
# request target.
routes = [
    "\x00/",
    "\x00/a/log/?ofs=50&h=main",
    "\x00/a/b/commit/?id=" + SHA,
    "\x00/a/b/commit/src/main.c?id=" + SHA + "&context=10&ignorews=1&dt=1",
    "\x00/c.git/diff/dir/?id=" + SHA + "&id2=" + SHA2,
    "\x00/deep/er/repo/esi-diff/x/y?id=" + SHA + "&id2=" + SHA2 + "&context=3&ignorews=0&dt=0",
    "\x00/sp%20ace/patch/?id=" + SHA,
    "\x00/x+y/rawdiff/?id=" + SHA,
    "\x00/log/log/",
    "\x00/a/",
    "\x04/a/",
    "\x01/git/a/commit/?id=main",
    "\x02/a/a/commit/?id=v1.0",
    "\x03/cgit/x/c.git/diff/%2e%2e/?id=" + SHA,
    "\x00/a/commit/../../etc/passwd?id=" + SHA,
    "\x00/a/esi-diff/?id=" + SHA + "&context=999&dt=7&ofs=-1",
    "\x00/unknown/log/",
    "\x00/a/summary/",
    "\x00/a%2Fb/log/?id=%zz&id2=%41",
]
write("routing", routes)

# One control byte (bits 0-1: gzip, x-gzip, deflate, GZIP; bit 2: 1 MiB limit; level = byte % 10),
# then the body.
text = b"<html><body>" + b"line of text, repeated. " * 40 + b"</body></html>"
decoding = [
    b"\x04" + text,
    b"\x06" + b"",
    b"\x00" + b"short",
    b"\x04" + gzip.compress(text, mtime=0),
    b"\x04" + gzip.compress(b"", mtime=0),
    b"\x06" + zlib.compress(text),
    b"\x06" + zlib.compress(text)[:-3],
    b"\x04" + gzip.compress(b"a", mtime=0) + gzip.compress(b"b", mtime=0),
    b"\x04" + gzip.compress(bytes(range(256)) * 8, mtime=0),
    b"\x0c" + bytes(range(256)),
]
write("content_decoding", decoding)

# One control byte (bit 0: Varnish dialect, bit 1: no XML check, the rest: chunk sizes), then a
# page: each page of the ESI differential corpus, in both dialects.
esi_dir = os.path.join(HERE, "..", "tests", "esi_corpus")
pages = []
for case in sorted(os.listdir(esi_dir)):
    page = os.path.join(esi_dir, case, "index.html")
    if os.path.isfile(page):
        with open(page, "rb") as f:
            body = f.read()
        pages.append(b"\x00" + body)
        pages.append(b"\x1d" + body)
write("esi_parser", pages)


# commit_graph: one commit-graph layer as git writes it (OIDF, OIDL, CDAT, EDGE, BIDX, BDAT, the
# trailing SHA-1), for four commits: a root, two children and an octopus merge of all three.
def commit_graph(commits, edges=(), bloom=None):
    """commits: (id, tree, parent1, parent2, time), sorted by id; bloom: (version, hashes, bits,
    one filter per commit)."""
    fanout = b"".join(struct.pack(">I", sum(1 for c in commits if c[0][0] <= i)) for i in range(256))
    cdat = b"".join(c[1] + struct.pack(">IIII", c[2], c[3], (1 << 2) | (c[4] >> 32), c[4] & 0xFFFFFFFF)
                    for c in commits)
    chunks = [(b"OIDF", fanout), (b"OIDL", b"".join(c[0] for c in commits)), (b"CDAT", cdat)]
    if edges:
        chunks.append((b"EDGE", b"".join(struct.pack(">I", e) for e in edges)))
    if bloom:
        version, hashes, bits, filters = bloom
        index, end = b"", 0
        for f in filters:
            end += len(f)
            index += struct.pack(">I", end)
        chunks.append((b"BIDX", index))
        chunks.append((b"BDAT", struct.pack(">III", version, hashes, bits) + b"".join(filters)))
    header = b"CGPH" + bytes([1, 1, len(chunks), 0])
    offset = len(header) + (len(chunks) + 1) * 12
    table = b""
    for name, body in chunks:
        table += name + struct.pack(">Q", offset)
        offset += len(body)
    table += b"\0\0\0\0" + struct.pack(">Q", offset)
    body = header + table + b"".join(body for _, body in chunks)
    return body + hashlib.sha1(body).digest()


NONE = 0x70000000
root, left, right, octopus = bytes([0x10] * 20), bytes([0x3a] * 20), bytes([0x80] * 20), bytes([0xf0] * 20)
graph_commits = [
    (root, bytes([0x21] * 20), NONE, NONE, 1600000000),
    (left, bytes([0x22] * 20), 0, NONE, 1600000100),
    (right, bytes([0x23] * 20), 0, NONE, (1 << 33) + 5),
    (octopus, bytes([0x24] * 20), 1, 0x80000000, 1600000300),
]
graph_edges = (2, 0x80000000 | 0)
filters = [b"\x5a", b"\x01\x80", b"", b"\xff"]
write("commit_graph", [
    commit_graph(graph_commits, graph_edges, (1, 7, 10, filters)),
    commit_graph(graph_commits, graph_edges, (2, 7, 10, filters)),
    commit_graph(graph_commits, graph_edges),
    commit_graph(graph_commits[:1]),
    commit_graph(graph_commits, graph_edges, (1, 7, 10, filters))[:700],
])


# pack_index: a version-2 pack index as git writes it (fan-out, sorted ids, CRCs, 31-bit offsets,
# the 64-bit table for an offset past 2 GiB, the two checksums), pack entry headers and loose
# object headers.
def pack_index(entries):
    """entries: (id, offset), sorted by id."""
    fanout = b"".join(struct.pack(">I", sum(1 for e in entries if e[0][0] <= i)) for i in range(256))
    large, offsets = [], b""
    for _, offset in entries:
        if offset < 0x80000000:
            offsets += struct.pack(">I", offset)
        else:
            offsets += struct.pack(">I", 0x80000000 | len(large))
            large.append(offset)
    body = (b"\377tOc" + struct.pack(">I", 2) + fanout + b"".join(e[0] for e in entries) +
            b"".join(struct.pack(">I", zlib.crc32(e[0])) for e in entries) + offsets +
            b"".join(struct.pack(">Q", o) for o in large) + bytes([0x5c] * 20))
    return body + hashlib.sha1(body).digest()


idx_entries = [(bytes([0x00] * 20), 12), (bytes([0x3a] * 20), 300), (bytes([0x3a] * 19 + [0x3b]), 5000),
               (bytes([0xf0] * 20), 1 << 33)]
write("pack_index", [
    pack_index(idx_entries),
    pack_index(idx_entries[:1]),
    pack_index([]),
    pack_index(idx_entries)[:1100],
    bytes([0xb5, 0x0a]),  # a blob of 165 bytes
    bytes([0xbf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f]),  # the largest 64-bit size
    bytes([0x6c, 0x80, 0x01]),  # an offset delta
    b"blob 1048577\0abc",
    b"commit 0\0",
    b"tree 00\0",
])


# pack_delta: a base's length byte, the base, then git's delta (source size, target size, copy ops
# with their offset and size bytes, insert ops).
def pack_delta(base, delta):
    return bytes([len(base)]) + base + delta


delta_base = b"0123456789abcdef"
write("pack_delta", [
    pack_delta(delta_base, b"\x10\x0c\x91\x02\x04\x02xy\x91\x0a\x06"),  # copy, insert, copy
    pack_delta(delta_base, b"\x10\x10\x90\x10"),  # the whole base
    pack_delta(delta_base, b"\x10\x05\x05hello"),  # inserts only
    pack_delta(b"", b"\x00\x00"),  # empty to empty
    pack_delta(delta_base, b"\x10\x80\x80\x04\x80"),  # a copy of 0x10000 bytes (too long)
    pack_delta(delta_base, b"\x10\x0c\x00"),  # the reserved op
    pack_delta(delta_base, b"\x10\x20\xff\x01\x00\x00\x00\x02\x00\x00"),  # all offset/size bytes
])
