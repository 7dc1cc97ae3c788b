// conf: shellac's configuration, read from cgitrc-syntax files and the command line.
//
// Syntax (shared with cgit's cgitrc): one `key=value` per line, spaces around `=` allowed, `#` starts
// a comment line, blank lines ignored, `include=FILE` reads FILE in place (relative to the including
// file's folder). Scalar keys: the last value wins. List keys (listen, repo): values accumulate.
//
// A Config is an immutable snapshot: built once by Load(), then shared read-only by every thread
// through std::shared_ptr<const Config>. SIGHUP builds a new one and swaps the pointer; nothing
// mutates a published snapshot.
#pragma once

#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shellac::conf {

// A resolved socket address plus the text it was written as (for logs and messages).
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  std::string text;  // as configured, e.g. "127.0.0.1:8080", "[::1]:0", "localhost:80"
  std::string host;  // host part without brackets, e.g. "::1"
  uint16_t port = 0;
  bool tls = false;  // written as https:// (only a backend may be)
};

using Millis = std::chrono::milliseconds;

// A field below holds a key's value; the key's built-in default is not written here but in the
// key table (Keys(), conf/config.cc), and Config() applies it. Fields that are no key (sources,
// the cgit page chrome) have their defaults here.
struct Config {
  // The built-in defaults: each key's default from the table, parsed as a file's value would be.
  Config();

  // Files read to build this snapshot, in order (the main file first, then includes).
  std::vector<std::string> sources;
  // Where the main config file lives ("" when none was given); SIGHUP re-reads it.
  std::string config_file;

  std::vector<SocketAddress> listen;
  std::optional<SocketAddress> admin_listen;  // unset means "off"
  std::optional<SocketAddress> backend;       // unset: no upstream configured

  unsigned threads = 0;                  // 0 until Load() resolves "number of cores"

  // The store (cache/). Responses to GET and HEAD are cached by HTTP rules when cache=on.
  bool cache = false;
  uint64_t cache_size = 0;               // bytes; the store's budget (fixed at start)
  // Snapshot archives kept whole (gitfrag/snapshot_cache.h), taken out of cache_size (fixed at
  // start): their budget, and the largest archive kept (larger ones are streamed, not kept).
  uint64_t snapshot_cache_size = 0;
  uint64_t snapshot_max_stored = 0;
  // Resident pages kept whole as sent (proxy/page_memo.h), beside cache_size (fixed at start);
  // 0: none kept.
  uint64_t page_memo_size = 0;
  struct Rule {
    std::string text;    // "REGEX => TEMPLATE"
    std::string origin;  // "FILE:LINE" or "command line", for messages from the module that compiles it
  };
  std::vector<Rule> cache_keys;          // cache-key=REGEX => TEMPLATE, first match wins
  std::vector<Rule> ttl_rules;           // ttl=REGEX => DURATION, first match on the target wins
  std::vector<Rule> force_store;         // force-store=REGEX: stored despite no-store/private/Set-Cookie
  Millis default_ttl{};                  // freshness of a response that names none
  Millis grace{};                        // how long a stale object may stand in when the upstream fails
  std::optional<Millis> fragment_ttl;    // resident fragments, patches, rawdiffs; unset: for ever
  Millis single_flight_timeout{};        // a request waiting for another's fetch gives up (503) after this
  // Edge Side Includes (esi/, proxy/esi_response.h).
  enum class EsiMode { kOff, kSurrogate, kAlways };
  EsiMode esi = EsiMode::kOff;           // which upstream responses are processed as ESI by default
  std::vector<Rule> esi_urls;            // esi-url=REGEX: targets whose responses are always processed
  std::vector<Rule> esi_allow_hosts;     // esi-allow-host=REGEX: other hosts an include may name
  unsigned esi_max_depth = 0;            // nesting of included ESI fragments (the page is depth 0)
  unsigned esi_max_includes = 0;         // includes per page, nested ones counted
  unsigned esi_parallel = 0;             // include fetches in flight per page
  std::vector<std::string> repos;        // --repo PATH / repo=PATH / repo.path in a cgitrc
  std::string cgitrc;                    // cgit configuration imported as is ("" when none)

  // Repositories the resident renderer (gitfrag/) serves, in configuration order: repo=PATH and
  // scan-path= in this file, then the cgitrc's repo.url stanzas and scan-path=. Load() resolves
  // scan paths once; nothing is discovered per request.
  struct Repository {
    std::string url;      // URL path below virtual-root, may contain '/', never starts/ends with '/'
    std::string path;     // the git directory (bare repository or a work tree's .git)
    std::string name;     // shown in titles and the header; cgit's repo.name (default: url)
    std::string desc;     // repo.desc
    std::string owner;    // repo.owner
    std::string section;  // section= in effect when the stanza began
    // The cgitrc's source-filter in effect when the stanza began, or its repo.source-filter: the
    // program a file view's lines go through ("exec:" or no prefix; "lua:" leaves the tree pages
    // to the upstream).
    std::string source_filter;
    // cgit's enable-html-serving (the cgitrc's when the stanza began, or its repo.* key): plain
    // sends every file with its mimetype.* type; off, text/ and application/ types (but PDF) are
    // sent as text/plain or application/octet-stream, with a Content-Security-Policy.
    bool enable_html_serving = false;
    // cgit's enable-log-filecount/-linecount (the log's Files and Lines columns): the cgitrc's
    // global value when the stanza began, or its repo.* key.
    bool enable_log_filecount = false;
    bool enable_log_linecount = false;
    // cgit's enable-blame (the blame page and its links): the cgitrc's global value when the
    // stanza began, or repo.enable-blame (Debian's cgit 1.2.3 reads both).
    bool enable_blame = false;
    // cgit's enable-commit-graph and commit-sort (the log's ASCII history graph, which brings
    // git's topological order, and date|topo order): shellac renders neither, so a repository
    // with either set has its log pages (every log: path, search, ofs=) answered by the upstream.
    // The cgitrc's global value when the stanza began, or the repo.* key.
    bool enable_commit_graph = false;
    int commit_sort = 0;  // 0: git's default order, 1: date, 2: topo
    // cgit's enable-follow-links: a path log shows a "follow" link, and its follow=1 follows the
    // file through renames (git log --follow), which shellac does not: such a repository's path
    // logs are answered by the upstream. Global when the stanza began, or the repo.* key.
    bool enable_follow_links = false;
    // cgit's branch-sort: the summary's and refs' branches by name (false, cgit's default) or
    // newest first (true, "age"). Global when the stanza began, or repo.branch-sort.
    bool branch_sort_age = false;
    std::string clone_url;      // repo.clone-url (or the cgitrc's clone-url when the stanza began)
    // repo.readme (or the cgitrc's readme= in effect when the stanza began): "[REF]:PATH" entries,
    // the first one present is the about page.
    std::vector<std::string> readme;
    std::string about_filter;   // repo.about-filter (or the cgitrc's about-filter likewise)
    // cgit's snapshot formats enabled, as its bit mask (gitfrag/archive.h): snapshots= in effect
    // when the stanza began, narrowed by repo.snapshots; repo.snapshot-prefix ("": the basename).
    unsigned snapshots = 0;
    std::string snapshot_prefix;
    // cgit's max-stats: the stats page's periods enabled, 1 (week) .. 4 (year: week, month,
    // quarter and year); 0: no stats tab. The cgitrc's max-stats when the stanza began, or
    // repo.max-stats.
    unsigned max_stats = 0;
    // repo.homepage: a "homepage" tab on every page, and where the about page sends a reader when
    // no readme is found.
    std::string homepage;
    // repo.hide: left off the index (and out of its count), its pages served as any other's.
    bool hide = false;
    // repo.ignore: dropped when the configuration is read, as cgit drops it (its URLs are the
    // upstream's; cgit answers them "No repositories found").
    bool ignore = false;
    std::string origin;   // "FILE:LINE" or "command line"
  };
  std::vector<Repository> repositories;
  std::string virtual_root;              // URL prefix of every rendered page; always ends with '/'
  unsigned max_open_repos = 0;           // repositories kept open at once (least recently used closed)
  unsigned render_threads = 0;           // 0 until Load() resolves "number of cores"
  unsigned render_reserve_threads = 1;   // more threads, only for clients with no render running
  // Admission to the render pool (gitfrag/render_queue.h): frames ahead of parts, clients served
  // round-robin, a wait bounded by count and by time.
  unsigned render_queue = 0;             // frame and part renders waiting; full: the largest client's newest refused
  Millis render_queue_timeout{};         // a render still waiting after this is refused: 503 + Retry-After
  Millis blame_timeout{};                // a blame page's budget: past it the render stops, 503
  uint64_t history_index_memory = 0;     // bytes for in-memory history indexes of repositories
  uint64_t pack_cache_size = 0;          // each render thread's delta-base cache (0: no own pack reader)
  Millis refs_check_interval{};          // a repository's refs looked at again after this (renders, page memo)
                                         // without a commit-graph (0: none built)
  Millis filter_timeout{};               // a cgitrc filter (about-, source-filter) is killed after this
  unsigned client_max_renders = 0;       // renders one client may have running at once (more wait); 0 = no cap
  unsigned client_prefix_v4 = 0;         // a client is its IPv4 address masked to this many bits
  unsigned client_prefix_v6 = 0;         // ... and its IPv6 address to this many
  // trusted-proxy=ADDR[/BITS]: requests from these peers name their client in X-Forwarded-For.
  struct Network {
    std::array<uint8_t, 16> address{};  // IPv6; an IPv4 network as ::ffff:a.b.c.d
    unsigned prefix = 128;              // bits of `address` that must match (IPv4 /N is N + 96)
    std::string text;                   // as configured
  };
  std::vector<Network> trusted_proxies;
  // Page chrome, as cgit's keys of the same name (taken from the cgitrc when one is imported).
  std::string css = "/cgit.css";
  std::string logo = "/cgit.png";
  std::string robots = "index, nofollow";  // the robots meta tag's content; empty: no tag
  std::string favicon = "/favicon.ico";
  bool enable_index_links = false;  // the index's Links column (summary, log, tree buttons)
  int max_repo_count = 50;          // the index's repositories per page (<= 0: all, as cgit's)
  std::string root_title = "Git repository browser";
  std::string root_desc = "a fast webinterface for the git dscm";
  // From an imported cgitrc: max-blob-size (KiB; 0: no limit) bounds the tree page's file view.
  uint64_t max_blob_size = 0;
  // From an imported cgitrc: max-commit-count, the log's commits per page (cgit's default 50), and
  // the global enable-log-filecount/-linecount that stanzas after them start with.
  unsigned max_commit_count = 50;
  // From an imported cgitrc: renamelimit (global only, the last one read wins, as cgit's): git's
  // rename limit on the commit and diff pages and the log's counts; negative (cgit's default -1):
  // git's default, 1000; 0: no limit.
  int rename_limit = -1;
  bool enable_log_filecount = false;
  bool enable_log_linecount = false;
  bool enable_blame = false;  // the global enable-blame stanzas after it start with
  bool enable_commit_graph = false;  // enable-commit-graph, commit-sort, branch-sort likewise
  bool enable_follow_links = false;  // and enable-follow-links
  int commit_sort = 0;
  bool branch_sort_age = false;
  std::string source_filter;       // source-filter= as last set (stanzas after it start with it)
  bool enable_html_serving = false;  // enable-html-serving= likewise
  // plain's content types: cgit's mimetype.EXT=TYPE keys (the extension as written, matched
  // case-sensitively; the last key for an extension wins) and mimetype-file= (a mime.types file,
  // read by gitfrag::Site when it is made, extensions matched ignoring case), tried in that order.
  std::map<std::string, std::string> mimetypes;
  std::string mimetype_file;
  // The summary page's tables (cgit's summary-branches, summary-tags, summary-log) and clone URLs
  // (clone-prefix: one "PREFIX/URL" per prefix, when a repository has no clone-url).
  unsigned summary_branches = 10;
  unsigned summary_tags = 10;
  unsigned summary_log = 10;
  unsigned max_atom_items = 10;  // cgit's max-atom-items: entries of the Atom feed
  std::string clone_prefix;
  unsigned snapshots = 0;          // snapshots= (cgit's format mask; none by default, as cgit)
  // From an imported cgitrc: enable-http-clone (on by default, as cgit): the dumb-HTTP clone paths
  // (info/refs, objects/..., HEAD) are served from the repositories' files.
  bool enable_http_clone = true;
  // cgit's noplainemail: the commit, tag and blame pages and the Atom feed show no e-mail address,
  // and the patch names its author without one.
  bool noplainemail = false;
  unsigned max_stats = 0;          // max-stats= (Repository::max_stats; off by default, as cgit)

  std::string access_log;                // a file path, "stderr" or "off"

  // More than one machine.
  std::string store_snapshot;            // store-snapshot=FILE: read at start, written at stop; "" off
  std::vector<std::string> l2_servers;   // l2=memcached://HOST:PORT,...: "HOST:PORT" each; empty off
  std::string l2_trace;                  // l2-trace=FILE: a line per shared-tier lookup and write; "" off

  // Client side.
  Millis client_header_timeout{};        // from first byte (or end of previous response) to end of head
  Millis client_idle_timeout{};          // keep-alive wait between requests
  Millis client_body_timeout{};          // between two reads of a request body
  Millis send_timeout{};                 // between two writes to a slow client
  uint64_t max_request_line = 0;         // bytes; larger -> 414
  uint64_t max_header_count = 0;         // fields; more -> 431
  uint64_t max_header_bytes = 0;         // whole head; larger -> 431
  uint64_t max_body_size = 0;            // bytes; larger -> 413; 0 = unlimited

  // Upstream side.
  Millis upstream_connect_timeout{};
  Millis upstream_first_byte_timeout{};
  Millis upstream_between_bytes_timeout{};
  Millis upstream_idle_timeout{};        // an idle kept-alive upstream connection is closed after this
  unsigned upstream_max_idle = 0;        // idle connections kept per backend per worker thread

  Millis shutdown_timeout{};             // SIGTERM: in-flight requests get this long to finish

  // TLS termination. Certificate and key files are read (and checked) by proxy/tls, not here.
  struct TlsCertificate {
    std::string host;    // SNI name for tls-cert= ("*.example.org" allowed); "" for a listener's own
    std::string cert;    // PEM: the certificate, then its chain
    std::string key;     // PEM private key
    std::string ocsp;    // DER OCSP response to staple ("" for none)
    std::string origin;  // "FILE:LINE" or "command line"
  };
  struct TlsListener {
    SocketAddress address;
    TlsCertificate certificate;  // the default, served when SNI names no tls-cert= host
  };
  std::vector<TlsListener> listen_tls;      // listen-tls=ADDR:PORT cert=FILE key=FILE [ocsp=FILE]
  std::vector<TlsCertificate> tls_certs;    // tls-cert=HOSTNAME cert=FILE key=FILE [ocsp=FILE]
  std::string tls_ocsp;                     // staple for every listen-tls certificate naming no ocsp=
  // OpenSSL cipher strings: TLS 1.2 (tls-ciphers) and TLS 1.3 (tls-ciphersuites).
  std::string tls_ciphers;
  std::string tls_ciphersuites;
  Millis tls_handshake_timeout{};           // accept to finished handshake
  uint64_t tls_session_cache = 0;           // sessions kept per worker process for resumption; 0 = off
  Millis tls_ticket_rotation{};             // a new session-ticket key this often; 0 = no tickets
  std::string hsts;                         // Strict-Transport-Security value on TLS responses ("" = none)
  std::string backend_ca;                   // CA file for an https:// backend ("" = the system store)
};

// Settings given on the command line; they override the file. Each is (key, value) as in a file,
// e.g. {"listen", "127.0.0.1:0"}. A repeated list key from the command line replaces the file's list.
using Overrides = std::vector<std::pair<std::string, std::string>>;

// What loading reads from the machine: files (the config, its includes, a cgitrc, repository
// descriptions), folders (repo=, scan-path=) and host names (addresses). Load() uses the real ones
// (SystemEnvironment); LoadFrom() takes another, such as MemoryEnvironment, with which a parse
// reads nothing but its input (the fuzz target, tests). Every key goes through the same code.
class Environment {
 public:
  virtual ~Environment() = default;
  // The whole file. False with *error_number set (an errno value) when it cannot be read.
  virtual bool ReadFile(const std::string& path, std::string* text, int* error_number) const = 0;
  // As access(2) with F_OK or R_OK: 0, or an errno value.
  virtual int Access(const std::string& path, int mode) const = 0;
  virtual bool IsDirectory(const std::string& path) const = 0;
  // The names in a folder, without "." and "..", in any order; empty when it cannot be read.
  virtual std::vector<std::string> List(const std::string& folder) const = 0;
  // False: addresses must be numeric (no name lookups).
  virtual bool ResolvesNames() const = 0;
};

// The machine's files, folders and resolver.
const Environment& SystemEnvironment();

// A set of files in memory; a folder exists when a file lies below it. Resolves numeric addresses
// only. Nothing outside `files` is read.
class MemoryEnvironment : public Environment {
 public:
  explicit MemoryEnvironment(std::map<std::string, std::string> files) : files_(std::move(files)) {}
  bool ReadFile(const std::string& path, std::string* text, int* error_number) const override;
  int Access(const std::string& path, int mode) const override;
  bool IsDirectory(const std::string& path) const override;
  std::vector<std::string> List(const std::string& folder) const override;
  bool ResolvesNames() const override { return false; }

 private:
  std::map<std::string, std::string> files_;  // absolute path -> contents
};

// Reads `config_file` (may be empty: built-in defaults), then applies `overrides`.
// On success returns the snapshot and leaves *error empty. On failure returns nullptr and sets
// *error to one line: "FILE:LINE: key: what is wrong" ("command line: --key: ..." for overrides,
// "FILE: what is wrong" for a file that cannot be read).
std::shared_ptr<const Config> Load(const std::string& config_file, const Overrides& overrides,
                                   std::string* error);
// Load() reading through `environment`.
std::shared_ptr<const Config> LoadFrom(const Environment& environment,
                                       const std::string& config_file, const Overrides& overrides,
                                       std::string* error);

// Parses "10s", "500ms", "2m", "1h", "1d" or a bare number of seconds. False on bad input.
bool ParseDuration(std::string_view text, Millis* out);
// Parses "512", "64K", "256M", "2G" (binary multiples, case-insensitive, optional B). False on bad input.
bool ParseSize(std::string_view text, uint64_t* out);
// Parses "HOST:PORT", "[V6]:PORT", "http://HOST:PORT[/]" or "https://HOST:PORT[/]" (sets tls) and
// resolves HOST (`resolve_names` false: HOST must be a numeric address). False with *why set.
bool ParseAddress(std::string_view text, SocketAddress* out, std::string* why,
                  bool resolve_names = true);
// Parses "ADDR" or "ADDR/BITS" (IPv4 or IPv6, numeric). False on bad input.
bool ParseNetwork(std::string_view text, Config::Network* out);
// Whether the numeric address `ip` ("192.0.2.1", "2001:db8::1", "::ffff:192.0.2.1") is in `net`.
bool InNetwork(const Config::Network& net, std::string_view ip);

// The key table: one entry per key Load() accepts. The parser, the built-in defaults (Config()),
// --help's key list (HelpText()) and the reload's restart warning (RestartKeysChanged()) are all
// made from it; shellac.conf(5) and conf/shellac.conf describe every entry (a test checks).
class Builder;  // conf/config.cc: applies one key=value to a Config being built
struct Key {
  enum class Apply { kOnReload, kOnRestart };  // a reload applies the new value, or keeps the old one
  enum class Repeat { kOne, kList };           // the last value wins, or values accumulate
  // How a value is parsed into a Config, and whether two snapshots hold the same value (`same`
  // is set for every restart-only key; the reload's warning compares with it).
  struct Handler {
    std::function<void(Builder&, std::string_view)> set;
    std::function<bool(const Config&, const Config&)> same;
  };
  // The built-in default: `value` is given to the parser before any file is read (nullptr: the
  // key starts unset or empty); `note` describes it instead where it is no value ("number of cores").
  struct Default {
    Default(const char* v) : value(v) {}  // NOLINT(google-explicit-constructor): rows write "10s"
    Default(const char* v, const char* n) : value(v), note(n) {}
    const char* value = nullptr;
    const char* note = nullptr;
  };

  std::string_view name;
  Default initial;
  Apply apply;
  Repeat repeat;
  Handler handler;
  std::string_view doc;  // one line, for --help

  // The default as --help and the packaged file show it.
  std::string_view DefaultText() const { return initial.note ? initial.note : initial.value; }
  bool NeedsRestart() const { return apply == Apply::kOnRestart; }
  bool Repeatable() const { return repeat == Repeat::kList; }
};
const std::vector<Key>& Keys();
// The table entry named `name`; nullptr when there is none.
const Key* FindKey(std::string_view name);
// --help's list: every key with its default and its documentation line.
std::string HelpText();
// The keys that only a restart applies whose values differ between two snapshots, in table order
// (what a reload from `before` to `after` must warn about).
std::vector<std::string> RestartKeysChanged(const Config& before, const Config& after);

}  // namespace shellac::conf
