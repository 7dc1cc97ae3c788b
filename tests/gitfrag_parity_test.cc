// Parity of gitfrag's pages with Debian's cgit 1.2.3 on a repository large enough that git
// abbreviates object ids to more than 7 hex digits. The fixture is made by git fast-import in a
// temp dir (a few hundred milliseconds): over 16,384 packed objects (git's abbreviation is then 8
// digits), two blobs whose ids share 8 digits (one of them needs 9 to be unique), merges (an
// octopus too), renames, binary files, a po-like file where git's minimal diff differs from its
// default one, hunk headers cut inside a UTF-8 sequence, Latin-1 text and messages, tags.
//
// Every page kind gitfrag renders is compared: commit, diff, log, index (visible text), patch and
// rawdiff (bytes, apart from the signature line naming the program).
//
// With SHELLAC_PARITY_REPO=/path/to/repo.git the SampleOfRepository test compares the same pages
// for SHELLAC_PARITY_N (20) random non-merge commits of that repository (SHELLAC_PARITY_SEED, 1),
// or for the commits in SHELLAC_PARITY_IDS, and writes a summary to SHELLAC_PARITY_OUT when set
// (bench/parity.sh runs it on git/git); TreeOfRepository compares tree pages and a plain file of
// its HEAD.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <tuple>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "conf/config.h"
#include "gitfrag/abbrev.h"
#include "gitfrag/blame.h"
#include "gitfrag/git.h"
#include "gitfrag/gitfrag.h"
#include "gitfrag/history.h"
#include "gitfrag/history_index.h"
#include "tests/harness.h"

namespace shellac::gitfrag {
namespace {

using test::FirstDifference;
using test::GitIdentity;
using test::MakeFixture;
using test::Shell;
using test::ShellQuote;
using test::TempDir;
using test::VisibleText;
using test::CgiBody;
using test::RunCgit;
using test::CgitInstalled;
using test::Trimmed;
using test::WriteFile;

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// The diffstat graph's widths, in order: "width='N%'" and "width: N%;" values.
std::string Widths(const std::string& html) {
  std::string out;
  for (size_t p = 0; (p = html.find("width", p)) != std::string::npos; p += 5) {
    size_t v = p + 5;
    if (html.compare(v, 2, "='") == 0)
      v += 2;
    else if (html.compare(v, 2, ": ") == 0)
      v += 2;
    else
      continue;
    const size_t end = html.find('%', v);
    if (end == std::string::npos || end - v > 8) continue;
    out += html.substr(v, end - v) + " ";
  }
  return out;
}

// Every title attribute's value, one a line (the blame's commit details are in them).
std::string Titles(const std::string& html) {
  std::string out;
  for (size_t p = 0; (p = html.find("title='", p)) != std::string::npos;) {
    p += 7;
    const size_t end = html.find('\'', p);
    if (end == std::string::npos) break;
    out += html.substr(p, end - p) + "\n";
    p = end;
  }
  return out;
}

// One repository served by both: gitfrag's Site and cgit run as a CGI with the same settings.
class Peers {
 public:
  // `blame`: enable-blame=1 on both sides. `max_stats`: cgit's max-stats for both (0: none), as a
  // number of periods (1 week .. 4 year).
  // `history_index`: history-index-memory for gitfrag's side (0: no in-memory index).
  // `log_counts`: enable-log-filecount=1 and enable-log-linecount=1 on both sides.
  Peers(std::string bare, std::string rc_dir, bool blame = false, unsigned max_stats = 0,
        uint64_t history_index = 0, bool log_counts = false)
      : bare_(std::move(bare)) {
    conf::Config c;
    conf::Config::Repository r;
    r.url = r.name = "repo";
    r.path = bare_;
    r.desc = "parity";
    r.enable_blame = blame;
    r.max_stats = max_stats;
    r.enable_log_filecount = r.enable_log_linecount = log_counts;
    c.repositories.push_back(r);
    c.css = "/cgit.css";
    c.history_index_memory = history_index;
    config_ = c;
    site_ = std::make_unique<Site>(c);
    rc_ = rc_dir + "/cgitrc";
    static constexpr const char* kPeriods[] = {"", "week", "month", "quarter", "year"};
    std::ofstream(rc_) << "virtual-root=/\n"
                       << (max_stats > 0 ? std::string("max-stats=") + kPeriods[max_stats] + "\n" : "")
                       << (blame ? "enable-blame=1\n" : "")
                       << (log_counts ? "enable-log-filecount=1\nenable-log-linecount=1\n" : "")
                       << "repo.url=repo\nrepo.path=" << bare_ << "\nrepo.desc=parity\n";
  }

  // renamelimit for both (cgit reads the last one anywhere in its cgitrc; a new Site).
  void SetRenameLimit(int limit) {
    std::ofstream(rc_, std::ios::app) << "renamelimit=" << limit << "\n";
    config_.rename_limit = limit;
    site_ = std::make_unique<Site>(config_);
  }

  // summary-branches and summary-tags for both (a new Site).
  void SetSummaryTables(unsigned branches, unsigned tags) {
    std::ofstream(rc_, std::ios::app)
        << "summary-branches=" << branches << "\nsummary-tags=" << tags << "\n";
    config_.summary_branches = branches;
    config_.summary_tags = tags;
    site_ = std::make_unique<Site>(config_);
  }

  // noplainemail=1 for both (a new Site).
  void SetNoPlainEmail() {
    std::ofstream(rc_, std::ios::app) << "noplainemail=1\n";
    config_.noplainemail = true;
    site_ = std::make_unique<Site>(config_);
  }

  // blame-timeout for gitfrag's side (a new Site).
  void SetBlameTimeout(std::chrono::milliseconds budget) {
    config_.blame_timeout = budget;
    site_ = std::make_unique<Site>(config_);
  }

  // cgit's status code for a page ("Status: 404 Not found" in its CGI head; 200 without one).
  int CgitStatus(const std::string& path_info, const std::string& query) const {
    const std::string whole = CgitWhole(path_info, query);
    const size_t head_end = whole.find("\n\n");
    const std::string head = whole.substr(0, head_end);
    const size_t at = head.find("Status: ");
    return at == std::string::npos ? 200 : std::atoi(head.c_str() + at + 8);
  }

  std::string CgitWhole(const std::string& path_info, const std::string& query) const {
    return RunCgit(rc_, path_info, query);
  }

  std::string Cgit(const std::string& path_info, const std::string& query) const {
    return CgiBody(CgitWhole(path_info, query));
  }

  // Empty when shellac's page equals cgit's; otherwise where they differ.
  std::string Difference(const std::string& path, const std::string& query) const {
    auto route = site_->Match(path, query);
    if (!route) return "no route";
    Page page = site_->RenderAssembled(*route);
    if (page.status != 200) return "status " + std::to_string(page.status) + ": " + page.reason;
    std::string ours, theirs = Cgit(path, query);
    if (route->kind == PageKind::kPatch || route->kind == PageKind::kRawDiff) {
      // Bytes, apart from each mail's signature, which names the program.
      auto unsigned_text = [](std::string s) {
        for (const std::string sig : {"-- \ncgit v1.2.3\n", "-- \nshellac " SHELLAC_VERSION "\n"}) {
          for (size_t p = 0; (p = s.find(sig, p)) != std::string::npos;)
            s.replace(p, sig.size(), "-- \nSIG\n");
        }
        return s;
      };
      ours = unsigned_text(page.body);
      theirs = unsigned_text(theirs);
    } else {
      // cgit leaves line numbers out of some side-by-side rows (see gitfrag/README.md).
      const bool ssdiff = query.find("dt=1") != std::string::npos;
      // The diffstat's graph is in attributes: its widths are compared too.
      ours = VisibleText(page.body, ssdiff) + "\nwidths:" + Widths(page.body);
      theirs = VisibleText(theirs, ssdiff) + "\nwidths:" + Widths(theirs);
    }
    return ours == theirs ? std::string() : FirstDifference(ours, theirs);
  }

  const Site& site() const { return *site_; }

 private:
  conf::Config config_;
  std::string bare_, rc_;
  std::unique_ptr<Site> site_;
};

// The pages compared for one commit.
std::vector<std::pair<std::string, std::string>> PagesOf(const std::string& id) {
  return {{"/repo/commit/", "id=" + id},
          {"/repo/diff/", "id=" + id},
          {"/repo/patch/", "id=" + id},
          {"/repo/rawdiff/", "id=" + id},
          {"/repo/log/", "id=" + id}};
}

// git's automatic abbreviation length: ceil((msb(N) + 1) / 2), at least 7.
TEST(GitfragAbbrev, LengthGrowsWithTheObjectCountAsGits) {
  EXPECT_EQ(AbbrevLength(0), 7);
  EXPECT_EQ(AbbrevLength(16383), 7);
  EXPECT_EQ(AbbrevLength(16384), 8);
  EXPECT_EQ(AbbrevLength(65535), 8);
  EXPECT_EQ(AbbrevLength(65536), 9);
  EXPECT_EQ(AbbrevLength(849000), 10);  // git/git
  EXPECT_EQ(AbbrevLength(10'000'000), 12);  // linux.git
}

// ---------------------------------------------------------------------------------------------
// The fixture

// A fast-import stream writer: deterministic content, fixed identities and dates.
class Stream {
 public:
  void Blob(int mark, const std::string& data) {
    s_ << "blob\nmark :" << mark << "\ndata " << data.size() << "\n" << data << "\n";
  }
  void Filler(const std::string& data) { s_ << "blob\ndata " << data.size() << "\n" << data << "\n"; }
  // `ops`: fast-import file commands ("M 100644 :1 path", "D path", "R a b"). `from`/`merges`
  // are marks or empty.
  void Commit(const std::string& branch, int mark, int64_t when, const std::string& tz,
              const std::string& message, const std::vector<std::string>& ops,
              const std::string& from = "", const std::vector<std::string>& merges = {},
              const std::string& encoding = "", const std::string& author = "A U Thor <a@example.org>") {
    s_ << "commit refs/heads/" << branch << "\nmark :" << mark << "\nauthor " << author << " "
       << when << " " << tz << "\ncommitter C O Mitter <c@example.org> " << when + 60 << " " << tz
       << "\n";
    if (!encoding.empty()) s_ << "encoding " << encoding << "\n";
    s_ << "data " << message.size() << "\n" << message << "\n";
    if (!from.empty()) s_ << "from " << from << "\n";
    for (const auto& m : merges) s_ << "merge " << m << "\n";
    for (const auto& op : ops) s_ << op << "\n";
    s_ << "\n";
  }
  void Tag(const std::string& name, const std::string& from, int64_t when,
           const std::string& message) {
    s_ << "tag " << name << "\nfrom " << from << "\ntagger T Agger <t@example.org> " << when
       << " +0000\ndata " << message.size() << "\n" << message << "\n";
  }
  void Reset(const std::string& ref, const std::string& from) {
    s_ << "reset " << ref << "\nfrom " << from << "\n\n";
  }
  std::string str() const { return s_.str(); }

 private:
  std::ostringstream s_;
};

// A po-like catalogue: `n` entries, each msgid/msgstr pair; `variant` changes a pseudo-random
// part of the translations and moves some entries, the kind of change where git's default
// heuristic and its minimal diff give other hunks.
std::string Catalogue(int n, uint32_t variant) {
  std::string out = "# Translation\nmsgid \"\"\nmsgstr \"\"\n\"Content-Type: text/plain; charset=UTF-8\\n\"\n\n";
  std::mt19937 rng(variant);
  for (int i = 0; i < n; ++i) {
    const int k = variant == 0 ? i : (rng() % 5 == 0 ? static_cast<int>(rng() % n) : i);
    out += "#: src/file" + std::to_string(k % 97) + ".c:" + std::to_string(k * 7 % 1000) + "\n";
    out += "msgid \"message number " + std::to_string(k) + "\"\n";
    const bool changed = variant != 0 && rng() % 3 == 0;
    out += "msgstr \"сообщение номер " + std::to_string(k) + (changed ? " (исправлено)" : "") +
           "\"\n\n";
  }
  return out;
}

// A C-like file whose function lines are longer than git's 80-byte context and hold multi-byte
// characters across byte 80, so git cuts the hunk header inside a UTF-8 sequence.
std::string Functions(int edit) {
  std::string out;
  for (int f = 0; f < 6; ++f) {
    // 70 ASCII bytes, then 2-byte characters: byte 80 falls inside one for odd f.
    std::string name = "static int function_" + std::to_string(f) + "_";
    while (name.size() < 70 + static_cast<size_t>(f % 2)) name += 'x';
    for (int c = 0; c < 8; ++c) name += "é";
    out += name + "(void)   \n{\n";
    for (int l = 0; l < 12; ++l)
      out += "\tint v" + std::to_string(l) + " = " + std::to_string(l + (f == edit ? 100 : 0)) +
             ";\n";
    out += "}\n\n";
  }
  return out;
}

class ParityFixture {
 public:
  ParityFixture() {
    Stream s;
    // Filler: unreferenced packed objects, enough for git's 8-digit abbreviation.
    for (int i = 0; i < 17000; ++i) s.Filler("filler " + std::to_string(i) + "\n");
    const int64_t t0 = 1600000000;
    std::string bin1("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16), bin2 = bin1 + std::string("\0\1\2\3", 4);
    s.Blob(1, Catalogue(3000, 0));
    s.Blob(2, Functions(-1));
    s.Blob(3, "caf\xe9 au lait\nna\xefve\nline three\n");  // Latin-1
    s.Blob(4, bin1);
    s.Blob(5, "readme\n");
    s.Blob(6, "collide 26350\n");  // its id shares 8 digits with blob 30's
    std::string numbers;
    for (int i = 1; i <= 200; ++i) numbers += std::to_string(i) + "\n";
    s.Blob(7, numbers);
    s.Commit("master", 100, t0, "+0100", "root commit\n",
             {"M 100644 :1 po/ru.po", "M 100644 :2 src/funcs.c", "M 100644 :3 latin1.txt",
              "M 100644 :4 img/logo.png", "M 100644 :5 README", "M 100644 :6 keep.txt",
              "M 100644 :7 numbers.txt"});
    s.Blob(10, Catalogue(3000, 7));
    s.Commit("master", 101, t0 + 1000, "+0300", "po: update the catalogue\n", {"M 100644 :10 po/ru.po"},
             ":100");
    s.Blob(11, Functions(3));
    s.Blob(12, "caf\xe9 cr\xe8me\nna\xefve\nline three\nline four \xa9\n");
    s.Commit("master", 102, t0 + 2000, "-0700", "funcs and latin-1 text\n",
             {"M 100644 :11 src/funcs.c", "M 100644 :12 latin1.txt"}, ":101");
    s.Blob(13, numbers + "201\n");
    s.Blob(14, bin2);
    s.Commit("master", 103, t0 + 3000, "+0000",
             "rename with an edit, binary change, mode change\n\nBody line.\n",
             {"D numbers.txt", "M 100644 :13 nums/numbers.txt", "M 100644 :14 img/logo.png",
              "M 100755 :5 README"},
             ":102");
    s.Blob(30, "collide 62386\n");
    s.Commit("master", 104, t0 + 4000, "+0530", "add a file whose id needs 9 digits\n",
             {"M 100644 :30 collide.txt", "D keep.txt"}, ":103");
    // A Latin-1 message without an encoding header, and one that declares it.
    s.Blob(15, "one\ntwo\n");
    s.Commit("master", 105, t0 + 5000, "+0000", "caf\xe9 without a header\n\nbody \xe9t\xe9\n",
             {"M 100644 :15 two.txt"}, ":104", {}, "", "J\xf6rg Latin <j@example.org>");
    s.Blob(16, "one\ntwo\nthree\n");
    s.Commit("master", 106, t0 + 6000, "+0000", "caf\xe9 with a header\n", {"M 100644 :16 two.txt"},
             ":105", {}, "ISO-8859-1");
    // Side branches: a plain merge and an octopus.
    s.Blob(20, "side a\n");
    s.Commit("side-a", 200, t0 + 7000, "+0000", "side a\n", {"M 100644 :20 a.txt"}, ":106");
    s.Blob(21, "side b\n");
    s.Commit("side-b", 201, t0 + 7100, "+0000", "side b\n", {"M 100644 :21 b.txt"}, ":106");
    s.Blob(22, "side c\n");
    s.Commit("side-c", 202, t0 + 7200, "+0000", "side c\n", {"M 100644 :22 c.txt"}, ":106");
    s.Blob(23, "master d\n");
    s.Commit("master", 107, t0 + 7300, "+0000", "master work\n", {"M 100644 :23 d.txt"}, ":106");
    s.Commit("master", 108, t0 + 7400, "+0000", "Merge branch 'side-a'\n", {"M 100644 :20 a.txt"},
             ":107", {":200"});
    s.Commit("master", 109, t0 + 7500, "+0000", "Merge branches 'side-b' and 'side-c'\n",
             {"M 100644 :21 b.txt", "M 100644 :22 c.txt"}, ":108", {":201", ":202"});
    // Whitespace-only change, a subject longer than 80 bytes with a UTF-8 character at the cut.
    s.Blob(24, Functions(3) + "\n");
    std::string subject = "a subject that is longer than eighty bytes, so the log shortens it";
    while (subject.size() < 76) subject += '.';
    subject += "ééé tail\n";
    s.Commit("master", 110, t0 + 7600, "-0230", subject, {"M 100644 :24 src/funcs.c"}, ":109");
    // A UTF-8 author name with an ASCII message (no MIME headers in the patch), an empty message.
    s.Blob(25, "utf-8 author\n");
    s.Commit("master", 111, t0 + 7700, "+0000", "ascii message\n", {"M 100644 :25 u.txt"}, ":110",
             {}, "", "Ren\xc3\xa9 \xc3\x9cnicode <r@example.org>");
    s.Blob(26, "empty message\n");
    s.Commit("master", 112, t0 + 7800, "+0000", "", {"M 100644 :26 e.txt"}, ":111");
    // Empty files added (patch and rawdiff: no "---"/"+++" lines without a hunk), a mode change.
    s.Blob(27, "");
    s.Commit("master", 113, t0 + 7900, "+0000", "empty files\n",
             {"M 100644 :27 empty1", "M 100644 :27 dir/empty2", "M 100755 :26 e.txt"}, ":112");
    s.Tag("v1.0", ":103", t0 + 9000, "version one\n");
    s.Reset("refs/tags/light", ":105");
    // Refs cgit does not decorate with (a pull request's, a remote-tracking branch) and one it
    // does (the stash).
    s.Reset("refs/pull/1/head", ":104");
    s.Reset("refs/remotes/origin/master", ":104");
    s.Reset("refs/stash", ":102");
    std::ofstream(dir_.File("stream")) << s.str();
    bare_ = dir_.File("repo.git");
    Shell("git init -q --bare " + ShellQuote(bare_) + " && git -C " + ShellQuote(bare_) +
          " fast-import --quiet < " + ShellQuote(dir_.File("stream")) + " 2>&1 && git -C " +
          ShellQuote(bare_) + " symbolic-ref HEAD refs/heads/master && git -C " +
          ShellQuote(bare_) + " pack-refs --all");
  }

  std::string Git(const std::string& args) const {
    return Trimmed(Shell("git -C " + ShellQuote(bare_) + " " + args));
  }
  const std::string& bare() const { return bare_; }
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
  std::string bare_;
};

TEST(GitfragParity, EveryPageKindEqualsCgitOnALargeRepository) {
  ASSERT_TRUE(CgitInstalled());
  ParityFixture fx;
  // The fixture is what the test claims: git abbreviates to 8 digits, and 9 where needed.
  const std::string collide = fx.Git("rev-parse master:collide.txt");
  EXPECT_EQ(fx.Git("rev-parse --short master:README").size(), 8u);
  EXPECT_EQ(fx.Git("rev-parse --short master:collide.txt"), collide.substr(0, 9));
  // git's minimal diff of the catalogue differs from its default one.
  const std::string po = fx.Git("rev-parse ':/po: update the catalogue'");
  EXPECT_NE(fx.Git("diff --shortstat " + po + "^ " + po),
            fx.Git("diff --minimal --shortstat " + po + "^ " + po));

  Peers peers(fx.bare(), fx.dir().path());
  std::vector<std::pair<std::string, std::string>> pages;
  for (const std::string& id : Lines(fx.Git("rev-list --all"))) {
    for (auto& p : PagesOf(id)) pages.push_back(std::move(p));
  }
  const std::string funcs = fx.Git("rev-parse ':/funcs and latin-1'");
  const std::string octopus = fx.Git("rev-parse ':/Merge branches'");
  for (const std::string& q :
       {"id=" + po + "&dt=1", "id=" + funcs + "&dt=1", "id=" + funcs + "&context=1",
        "id=" + fx.Git("rev-parse ':/a subject that is longer'") + "&ignorews=1", "id=" + po + "&dt=2",
        "id=" + octopus + "&dt=1"})
    pages.push_back({"/repo/commit/", q});
  // h= is any revision: branch, tag (annotated or not), full or short id.
  for (const std::string& h : std::vector<std::string>{"side-a", "v1.0", "light", po, po.substr(0, 9)}) {
    pages.push_back({"/repo/log/", "h=" + h});
    pages.push_back({"/repo/commit/", "h=" + h});
    pages.push_back({"/repo/diff/", "h=" + h});
    pages.push_back({"/repo/commit/", "h=" + h + "&id=" + funcs});
  }
  pages.push_back({"/repo/diff/", "id=" + funcs + "&id2=" + po});
  pages.push_back({"/repo/commit/", "id=" + funcs.substr(0, 10)});
  pages.push_back({"/", ""});
  size_t equal = 0;
  for (const auto& [path, query] : pages) {
    const std::string diff = peers.Difference(path, query);
    EXPECT_TRUE(diff.empty()) << path << "?" << query << "\n" << diff;
    equal += diff.empty();
  }
  std::printf("%zu of %zu pages equal cgit's\n", equal, pages.size());
  // The octopus merge shows no diff on its commit page, as cgit's.
  const Page page = peers.site().RenderAssembled(*peers.site().Match("/repo/commit/", "id=" + octopus));
  EXPECT_EQ(page.body.find("diffstat"), std::string::npos);
}

// A bare repository made by `body` (sh, in a new work tree with the helpers below: c MESSAGE
// commits everything, ci MESSAGE the index alone, each 100 s after the last; lines N PREFIX
// prints N distinct 40-byte lines) and cloned to DIR/repo.git, whose path it returns.
std::string MakeBareFixture(const TempDir& dir, const std::string& body) {
  const std::string script = R"(set -e
git init -q -b master work
cd work
git config core.symlinks true
T=1600000000
c() { git add -A; T=$((T + 100)); GIT_AUTHOR_DATE="$T +0000" GIT_COMMITTER_DATE="$T +0000" git commit -q -m "$1"; }
ci() { T=$((T + 100)); GIT_AUTHOR_DATE="$T +0000" GIT_COMMITTER_DATE="$T +0000" git commit -q -m "$1"; }
lines() { awk -v n="$1" -v p="$2" 'BEGIN { for (i = 1; i <= n; i++) printf "%-6s line %03d of a fixture file, pad.\n", p, i }'; }
)";
  MakeFixture(dir, script + body + "\ncd \"$HOME\" && git clone -q --bare work repo.git\n");
  return dir.File("repo.git");
}

// git's output in the repository `bare`, without its trailing newline.
std::string GitIn(const std::string& bare, const std::string& args) {
  return Trimmed(Shell("git -C " + ShellQuote(bare) + " " + args));
}

using PageList = std::vector<std::pair<std::string, std::string>>;

// Each of `pages` (path, query) as shellac renders it equals cgit's.
void ExpectPagesEqualCgit(const Peers& peers, const PageList& pages) {
  for (const auto& [path, query] : pages)
    EXPECT_EQ(peers.Difference(path, query), "") << path << "?" << query;
}

// PagesOf every commit on master of `bare`, and its commit page with each of `options` ("dt=1")
// added to the query.
PageList PagesOfMaster(const std::string& bare, std::initializer_list<const char*> options) {
  PageList pages;
  for (const std::string& id : Lines(GitIn(bare, "rev-list master"))) {
    for (auto& p : PagesOf(id)) pages.push_back(std::move(p));
    for (const char* option : options)
      pages.push_back({"/repo/commit/", "id=" + id + "&" + option});
  }
  return pages;
}

// Kind changes (git diff-tree's 'T': a file becomes a symlink or a submodule, or back) against
// cgit: one file on the commit and diff pages (a `typ` row, one diff whose index line carries both
// modes, cgit's "Subproject" lines for a submodule's side), one line of patch's stat with a "mode
// change" and git's deletion and creation in its body and in rawdiff, one file in the log's
// counts; with a rename elsewhere in the commit, a copy of the old content beside it (a kind
// change is no rename source), the same blob on both sides, and path limits. A submodule moved to
// another commit is shown as cgit shows it too.
TEST(GitfragParity, KindChangesEqualCgit) {
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  const std::string bare = MakeBareFixture(dir, R"(
echo target > t.txt; printf 'one\ntwo\n' > f; printf 'x\n' > g; printf 'sub\n' > s
lines 40 ren > old.txt; printf 'hello\n' > h; printf 't.txt' > same; mkdir d; printf 'in d\n' > d/a
printf 'keep me\n' > k; c root
rm f; ln -s t.txt f; c 'file to symlink'
rm f; printf 'one\ntwo\nthree\n' > f; c 'symlink to file'
git rm -q --cached s; rm s; git update-index --add --cacheinfo 160000,1234567890123456789012345678901234567890,s; ci 'file to submodule'
git update-index --cacheinfo 160000,abcdefabcdefabcdefabcdefabcdefabcdefabcd,s; ci 'submodule moved'
git update-index --force-remove s; printf 'sub again\n' > s; c 'submodule to file'
git mv old.txt new.txt; echo more >> new.txt; rm g; ln -s new.txt g; c 'kind change beside a rename'
rm h; ln -s t.txt h; chmod +x f; c 'kind change beside a mode change'
rm same; ln -s t.txt same; c 'kind change with the same blob'
cp k k-copy; rm k; ln -s t.txt k; c 'kind change beside a copy of the old content'
rm -rf d; echo 'now a file' > d; c 'folder to file'
git update-index --add --cacheinfo 160000,fedcba9876543210fedcba9876543210fedcba98,s2; ci 'submodule added'
git update-index --force-remove s2; ci 'submodule removed'
)");
  auto git = [&](const std::string& args) { return GitIn(bare, args); };
  // The fixture is what the test means: git's one 'T' pair per kind change, no rename from it.
  auto raw = [&](const char* subject) {
    return git("diff-tree -r -M --name-status ':/" + std::string(subject) + "'");
  };
  ASSERT_NE(raw("file to symlink").find("T\tf"), std::string::npos);
  ASSERT_NE(raw("file to submodule").find("T\ts"), std::string::npos);
  ASSERT_NE(raw("kind change beside a rename").find("R099\told.txt\tnew.txt"), std::string::npos);
  ASSERT_NE(raw("kind change beside a copy").find("A\tk-copy"), std::string::npos);
  const std::string same = git("rev-parse ':/kind change with the same blob'");
  ASSERT_EQ(git("rev-parse " + same + "^:same"), git("rev-parse " + same + ":same"));
  TempDir rc;
  Peers peers(bare, rc.path(), false, 0, 0, /*log_counts=*/true);
  // Side by side too: a submodule's side is cgit's "Subproject" row, not a diff of texts.
  PageList pages = PagesOfMaster(bare, {"ignorews=1", "dt=2", "dt=1"});
  for (const std::string& id : Lines(git("rev-list master")))
    pages.push_back({"/repo/diff/", "id=" + id + "&dt=1"});
  const std::string to_link = git("rev-parse ':/file to symlink'");
  const std::string to_sub = git("rev-parse ':/file to submodule'");
  for (const char* path : {"f", "s", "k", "d", "g"}) {
    pages.push_back({std::string("/repo/log/") + path, ""});
    for (const std::string& id :
         {to_link, to_sub, git("rev-parse ':/kind change beside a copy'")}) {
      pages.push_back({std::string("/repo/commit/") + path, "id=" + id});
      pages.push_back({std::string("/repo/diff/") + path, "id=" + id});
    }
  }
  pages.push_back(
      {"/repo/diff/", "id=" + git("rev-parse master~2") + "&id2=" + git("rev-parse master~11")});
  ExpectPagesEqualCgit(peers, pages);
  // cgit's status class for the row (the visible text does not show it).
  const Page page =
      peers.site().RenderAssembled(*peers.site().Match("/repo/commit/", "id=" + to_link));
  EXPECT_NE(page.body.find("<td class='typ'>"), std::string::npos);
  EXPECT_NE(page.body.find("1 files changed"), std::string::npos);
}

// Tree entries with the modes old git wrote (100664, 100775, 100600, a symlink 120777) show git's
// canonical modes, as cgit shows them: 100644 or 100755 by the owner's execute bit, 120000. A
// change of the written mode alone (100644 to 100664, 120777 to 120000) is no change, on a whole
// commit and limited to the path; an edit under an odd mode, a change between odd modes, and files
// added and deleted with one are shown with the canonical modes on every diff page (index, "new
// mode"/"old mode" and "new file mode" lines, the diffstat's mode column), the tree listing and
// the file view.
TEST(GitfragParity, OddModesEqualCgit) {
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  const std::string bare = MakeBareFixture(dir, R"(
blob() { printf "$1" | git hash-object -w --stdin; }
a=$(blob 'alpha\n'); b=$(blob 'beta\n'); b2=$(blob 'beta two\n'); y=$(blob 'why\n'); n=$(blob 'new\n')
l=$(blob 'a.txt')
commit() { T=$((T + 100)); tree=$(printf "$2" | git mktree)
  c=$(GIT_AUTHOR_DATE="$T +0000" GIT_COMMITTER_DATE="$T +0000" git commit-tree $tree ${P:+-p $P} -m "$1")
  P=$c; }
P=
commit root "100644 blob $a\ta.txt\n100664 blob $b\tb.txt\n100775 blob $b\tx.sh\n120777 blob $l\tlink\n100700 blob $y\ty.sh\n"
commit 'written modes only' "100664 blob $a\ta.txt\n100664 blob $b\tb.txt\n100755 blob $b\tx.sh\n120000 blob $l\tlink\n100700 blob $y\ty.sh\n"
commit 'edit under an odd mode' "100664 blob $a\ta.txt\n100664 blob $b2\tb.txt\n100755 blob $b\tx.sh\n120000 blob $l\tlink\n100700 blob $y\ty.sh\n"
commit 'odd mode changes' "100600 blob $a\ta.txt\n100775 blob $b2\tb.txt\n100654 blob $b\tx.sh\n120755 blob $l\tlink\n100660 blob $n\tn.txt\n120777 blob $l\tlink2\n"
git update-ref refs/heads/master $P
)");
  auto git = [&](const std::string& args) { return GitIn(bare, args); };
  // The fixture is what the test means: the odd modes are in the trees, git sees no change in the
  // written modes alone.
  ASSERT_NE(git("cat-file tree master~3^{tree}").find("100664 b.txt"), std::string::npos);
  ASSERT_EQ(git("diff-tree -r master~2"), "");
  ASSERT_NE(git("diff-tree -r master").find(":100644 100755"), std::string::npos);
  TempDir rc;
  Peers peers(bare, rc.path(), false, 0, 0, /*log_counts=*/true);
  PageList pages = PagesOfMaster(bare, {"dt=1"});
  for (const std::string& id : Lines(git("rev-list master"))) {
    pages.push_back({"/repo/tree/", "id=" + id});
    pages.push_back({"/repo/commit/a.txt", "id=" + id});
    pages.push_back({"/repo/commit/link", "id=" + id});
  }
  pages.push_back({"/repo/tree/b.txt", "id=" + git("rev-parse master")});
  pages.push_back({"/repo/diff/", "id=" + git("rev-parse master") + "&id2=" + git("rev-parse master~3")});
  ExpectPagesEqualCgit(peers, pages);
}

// h= naming a tag of a blob or of a tree (git/git's junio-gpg-pub, whose tag page links its
// summary, refs, log and stats tabs with it): cgit checks h= with get_oid, so such a name is
// valid, and the pages that walk from it show no commits (the summary's, the log's and the
// stats' tables empty) where shellac answered 404; the pages that need a commit refuse it as
// cgit does, and so does each for a name of nothing.
TEST(GitfragParity, PagesAtTagsOfBlobsAndTreesEqualCgit) {
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  const std::string bare = MakeBareFixture(dir, R"sh(
echo one > a.txt; c first
echo two >> a.txt; mkdir d; echo in > d/f; c second
git tag v1 HEAD
git tag -a -m 'a key' key "$(echo key | git hash-object -w --stdin)"
git tag folder HEAD^{tree}
)sh");
  TempDir rc;
  Peers peers(bare, rc.path(), false, /*max_stats=*/3);
  // Tags of a blob, a tree and a commit, a name of nothing, and the ids of a blob and a tree
  // (full and short), which cgit's get_oid takes too.
  const std::string blob = GitIn(bare, "rev-parse key^{}");
  const std::string tree = GitIn(bare, "rev-parse folder^{}");
  const char* const paths[] = {"/repo/",          "/repo/summary/", "/repo/refs/", "/repo/log/",
                               "/repo/log/a.txt", "/repo/stats/",   "/repo/tag/",  "/repo/atom/",
                               "/repo/tree/",     "/repo/commit/",  "/repo/patch/"};
  for (const std::string& name : {std::string("key"), std::string("folder"), std::string("nothing"),
                                  std::string("v1"), blob, tree, blob.substr(0, 10)}) {
    for (const std::string path : paths) {
      const std::string query = "h=" + name;
      SCOPED_TRACE(path + "?" + query);
      const int theirs = peers.CgitStatus(path, query);
      if (theirs != 200) {
        EXPECT_EQ(peers.site().Render(*peers.site().Match(path, query)).status, theirs);
        continue;
      }
      EXPECT_EQ(peers.Difference(path, query), "");
    }
  }
  // Revision syntax, which cgit resolves, is refused on every page (gitfrag/README.md: `:/text`
  // would search all history on each request), not taken as a name of nothing to show (the
  // summary, log, stats and atom did that: they checked the name with git_revparse_single).
  for (const std::string name : {"master~1", "v1^{tree}", ":/first", "master@{0}"}) {
    for (const std::string path : paths) {
      SCOPED_TRACE(path + "?h=" + name);
      const Page page = peers.site().Render(*peers.site().Match(path, "h=" + name));
      EXPECT_EQ(page.status, 404);
      // (the tag page names a tag it cannot read as cgit's does)
      const char* reason = path == "/repo/tag/" ? "bad tag reference" : "malformed id";
      EXPECT_NE(page.body.find(reason), std::string::npos) << page.body.substr(0, 300);
    }
  }
}

// gitattributes as cgit 1.2.3 (git 2.39) reads them in a bare repository: only info/attributes
// (git reads a tree's .gitattributes from a work tree or the index, which a bare repository has
// not), and only where git's diff machinery runs: patch and rawdiff show a file `-diff` or `binary`
// there as binary and one `diff` there as text though it holds a NUL. The commit and diff pages
// (cgit's own xdiff call), the log's counts, the file view and plain read no attributes: a NUL in
// the first 8000 bytes alone makes a file binary. A driver's name with no diff.NAME in the config
// (`diff=none`) leaves git's own test: a NUL makes u.drv binary, none keeps t.drv text. The
// commit's own .gitattributes (`-diff`, `binary`) changes nothing anywhere.
TEST(GitfragParity, GitattributesAsCgitReadsThem) {
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  const std::string bare = MakeBareFixture(dir, R"(
printf 'a\nb\n' > x.dat; printf 'a\nb\n' > y.bin; printf 'a\nb\n' > w.txt; printf 'a\000\nb\n' > n.raw
printf 'a\nb\n' > v.txt; printf 'a\000\nb\n' > u.drv; printf 'a\nb\n' > t.drv; c root
printf '*.dat -diff\n*.txt binary\n' > .gitattributes
for f in x.dat y.bin w.txt v.txt t.drv; do printf 'a\nc\n' > $f; done; printf 'a\000\nc\n' > n.raw
printf 'a\000\nc\n' > u.drv; c 'attributes'
)");
  WriteFile(bare + "/info/attributes", "*.bin -diff\n*.raw diff\nv.txt binary\n*.drv diff=none\n");
  auto git = [&](const std::string& args) { return GitIn(bare, args); };
  // What git itself does in the bare repository: info/attributes counts, the tree's file not.
  const std::string patch = git("diff master~ master");
  ASSERT_NE(patch.find("Binary files a/y.bin and b/y.bin differ"), std::string::npos);
  ASSERT_NE(patch.find("Binary files a/v.txt and b/v.txt differ"), std::string::npos);
  ASSERT_NE(patch.find("+c"), std::string::npos);
  ASSERT_EQ(patch.find("Binary files a/x.dat"), std::string::npos);
  ASSERT_EQ(patch.find("Binary files a/n.raw"), std::string::npos);
  ASSERT_NE(patch.find("Binary files a/u.drv and b/u.drv differ"), std::string::npos);
  ASSERT_EQ(patch.find("Binary files a/t.drv"), std::string::npos);
  TempDir rc;
  Peers peers(bare, rc.path(), false, 0, 0, /*log_counts=*/true);
  PageList pages = PagesOfMaster(bare, {"dt=1"});
  for (const std::string& id : Lines(git("rev-list master"))) {
    for (const char* file : {"x.dat", "y.bin", "n.raw", "v.txt", "u.drv"}) {
      pages.push_back({std::string("/repo/tree/") + file, "id=" + id});
      pages.push_back({std::string("/repo/plain/") + file, "id=" + id});
    }
  }
  ExpectPagesEqualCgit(peers, pages);
}

// The cgitrc's renamelimit against cgit's: a commit with three edited renames (nine candidate
// pairs) pairs them at the default limit, 3 and 0 (none) and at -1 (git's default), and pairs none
// at 2 (2 x 2 < 9) or 1; the exact rename in it is paired at every limit. The commit, diff and log
// pages (with the Files and Lines counts) and the fragment's and log counts' keys follow the limit.
TEST(GitfragParity, RenameLimitEqualsCgit) {
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  const std::string bare = MakeBareFixture(dir, R"(
mkdir a; for i in 1 2 3; do lines 30 "f$i" > a/f$i.txt; done; lines 20 same > a/same.txt; c root
mkdir b; for i in 1 2 3; do sed 's/line 01/edited 1/' a/f$i.txt > b/g$i.txt; done; git mv a/same.txt b/same.txt
git rm -q a/f1.txt a/f2.txt a/f3.txt; c 'three edited renames and an exact one'
)");
  const std::string id =
      Trimmed(Shell("git -C " + ShellQuote(bare) + " rev-parse ':/three edited renames'"));
  TempDir rc;
  Peers peers(bare, rc.path(), false, 0, 0, /*log_counts=*/true);
  const std::vector<std::pair<std::string, std::string>> pages = {{"/repo/commit/", "id=" + id},
                                                                  {"/repo/diff/", "id=" + id},
                                                                  {"/repo/log/", ""},
                                                                  {"/repo/commit/b", "id=" + id},
                                                                  {"/repo/log/b", ""}};
  auto fragment = [&] {
    const auto route = peers.site().Match("/repo/commit/", "id=" + id);
    return peers.site().RenderAssembled(*route).body;
  };
  auto key = [&] { return peers.site().Match("/repo/esi-diff/", "id=" + id)->cache_key; };
  const std::string paired = fragment(), default_key = key();
  EXPECT_NE(paired.find("renamed from"), std::string::npos);
  std::map<int, std::string> keys;
  for (int limit : {3, 2, 1, 0, -1}) {
    peers.SetRenameLimit(limit);
    for (const auto& [path, query] : pages)
      EXPECT_EQ(peers.Difference(path, query), "") << path << "?" << query << " limit " << limit;
    const std::string page = fragment();
    // The exact rename is paired at any limit; the edited ones only within it.
    const bool within = limit != 1 && limit != 2;
    EXPECT_EQ(page.find("a/f1.txt)") != std::string::npos, within) << limit;
    EXPECT_NE(page.find("(renamed from a/same.txt)"), std::string::npos) << limit;
    keys[limit] = key();
  }
  // A limit that pairs otherwise has its own stored fragment; git's default keeps the old key.
  EXPECT_EQ(keys[-1], default_key);
  EXPECT_NE(keys[2], default_key);
  EXPECT_NE(keys[0], default_key);
  EXPECT_NE(keys[2], keys[1]);
}

// The blame page and the tree pages' blame links (enable-blame=1) against cgit's: files with
// hunks from several commits, Latin-1 text, a renamed file, a binary file (cgit's note), a file at
// an older commit and on another branch.
TEST(GitfragParity, BlameEqualsCgit) {
  ASSERT_TRUE(CgitInstalled());
  ParityFixture fx;
  Peers peers(fx.bare(), fx.dir().path(), /*blame=*/true);
  const std::string po = fx.Git("rev-parse ':/po: update the catalogue'");
  const std::string funcs = fx.Git("rev-parse ':/funcs and latin-1'");
  // src/funcs.c at master has lines from three commits in several hunks.
  EXPECT_GE(Lines(fx.Git("blame --porcelain master -- src/funcs.c | grep -E '^[0-9a-f]{40} ' | "
                         "cut -c1-40 | sort -u")).size(),
            3u);
  const std::vector<std::pair<std::string, std::string>> pages = {
      {"/repo/blame/src/funcs.c", ""},
      {"/repo/blame/src/funcs.c", "id=" + funcs},
      {"/repo/blame/src/funcs.c", "id=" + po.substr(0, 10)},
      {"/repo/blame/po/ru.po", ""},
      {"/repo/blame/latin1.txt", ""},
      {"/repo/blame/two.txt", ""},
      {"/repo/blame/nums/numbers.txt", ""},
      {"/repo/blame/README", "h=side-a"},
      {"/repo/blame/a.txt", ""},
      {"/repo/blame/dir/empty2", ""},
      {"/repo/blame/img/logo.png", ""},
      {"/repo/tree/", ""},
      {"/repo/tree/src", "h=side-b"},
      {"/repo/tree/src/funcs.c", ""},
      {"/repo/tree/img/logo.png", ""},
  };
  for (const auto& [path, query] : pages) {
    const std::string diff = peers.Difference(path, query);
    EXPECT_TRUE(diff.empty()) << path << "?" << query << "\n" << diff;
  }
  // Folders, unknown paths and revisions are 404s, as cgit's.
  for (const auto& [path, query] : std::vector<std::pair<std::string, std::string>>{
           {"/repo/blame/src", ""}, {"/repo/blame/", ""}, {"/repo/blame/nope.c", ""},
           {"/repo/blame/README", "id=nope"}}) {
    auto route = peers.site().Match(path, query);
    ASSERT_TRUE(route) << path;
    EXPECT_EQ(peers.site().Render(*route).status, 404) << path << "?" << query;
    EXPECT_NE(peers.CgitWhole(path, query).find("Status: 404"), std::string::npos) << path;
  }
}

// The feed's bytes against cgit's: cgit writes no links without a host, nor does gitfrag without
// Route::origin, so the bodies are equal byte for byte.
std::string AtomDifference(const Peers& peers, const std::string& path, const std::string& query) {
  auto route = peers.site().Match(path, query);
  if (!route) return "no route";
  const Page page = peers.site().RenderAssembled(*route);
  if (page.status != 200) return "status " + std::to_string(page.status) + ": " + page.reason;
  const std::string theirs = peers.Cgit(path, query);
  return page.body == theirs ? std::string() : FirstDifference(page.body, theirs);
}

// The Atom feed against cgit's, byte for byte, in git's default order: merges (a side branch
// merged twice, so the feed runs down both lines), commits of equal dates on both lines and on one,
// more commits than max-atom-items, XML's special characters, and path-limited feeds
// (/repo/atom/PATH, git log -- PATH: a merge TREESAME to one parent is left out, one that differs
// from both is shown; a folder with and without its slash, a file, a path never there). The same repository without a commit-graph, with
// one (changed-path Bloom filters), and a fork reading it through alternates whose own branch has a
// commit the graph lacks; and the large fixture's odd commits (Latin-1 with and without an encoding
// header, an empty message, a UTF-8 author, an octopus).
TEST(GitfragParity, AtomEqualsCgit) {
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  const std::string bare = MakeBareFixture(dir, R"(
m() { T=$((T + 100)); GIT_AUTHOR_DATE="$T +0000" GIT_COMMITTER_DATE="$T +0000" git merge -q --no-ff -m "$1" side; }
mkdir d; echo 1 > d/f; c 'root <&> "quoted"'
git checkout -q -b side
echo s1 > s; c 'side one'
git checkout -q master
echo 2 > d/f; c 'master two'
T=$((T - 100)); echo m > m; c 'same date as master two'
m 'Merge side'
git checkout -q side
echo s2 > d/g; c 'side two touches d'
git checkout -q master
T=$((T - 100)); echo 3 > e; c 'master three, same date as side two'
m 'Merge side again'
for i in 1 2 3 4 5 6 7 8; do echo $i > n; c "filler $i

body of filler $i & more"; done
T=$((T - 100)); echo x > d/f; c 'last, same date as filler 8'
)");
  Shell("git clone -q --bare " + ShellQuote(bare) + " " + ShellQuote(dir.File("graph.git")) +
        " && git -C " + ShellQuote(dir.File("graph.git")) +
        " commit-graph write --reachable --changed-paths 2>&1");
  const std::string fork = dir.File("fork.git");
  Shell("git clone -q --bare --shared " + ShellQuote(dir.File("graph.git")) + " " + ShellQuote(fork) +
        " && c=$(echo 'fork only' | GIT_AUTHOR_NAME=F GIT_AUTHOR_EMAIL=f@example.org "
        "GIT_COMMITTER_NAME=F GIT_COMMITTER_EMAIL=f@example.org "
        "GIT_AUTHOR_DATE='1700000000 +0000' GIT_COMMITTER_DATE='1700000000 +0000' git -C " +
        ShellQuote(fork) + " commit-tree master^{tree} -p master) && git -C " + ShellQuote(fork) +
        " update-ref refs/heads/forked $c");
  ASSERT_EQ(GitIn(fork, "rev-parse forked^"), GitIn(bare, "rev-parse master"));
  ASSERT_NE(Shell("ls " + ShellQuote(dir.File("graph.git/objects/info"))).find("commit-graph"),
            std::string::npos);
  const PageList pages = {{"/repo/atom/", ""},         {"/repo/atom/", "h=master"},
                          {"/repo/atom/", "h=side"},   {"/repo/atom/d", ""},
                          {"/repo/atom/d/", "h=master"}, {"/repo/atom/d/f", ""},
                          {"/repo/atom/d/g", "h=master"}, {"/repo/atom/m", ""},
                          {"/repo/atom/e", "h=side"},  {"/repo/atom/nowhere", ""},
                          {"/repo/atom/d", "h=forked"}, {"/repo/atom/", "h=forked"}};
  for (const std::string& repo : {bare, dir.File("graph.git"), fork}) {
    TempDir rc;
    Peers peers(repo, rc.path());
    for (const auto& [path, query] : pages) {
      // The branch with the fork's own commit is only in the fork.
      if (query == "h=forked" && repo != fork) continue;
      EXPECT_EQ(AtomDifference(peers, path, query), "") << repo << " " << path << "?" << query;
    }
  }
  // The feed shows max-atom-items (10) of the 18 commits, the path feeds fewer.
  {
    TempDir rc;
    Peers peers(bare, rc.path());
    const std::string body = peers.Cgit("/repo/atom/", "");
    size_t entries = 0;
    for (size_t p = 0; (p = body.find("<entry>", p)) != std::string::npos; ++p) ++entries;
    EXPECT_EQ(entries, 10u);
    EXPECT_NE(peers.Cgit("/repo/atom/d", "").find("<title>side two touches d</title>"),
              std::string::npos);
    EXPECT_EQ(peers.Cgit("/repo/atom/d", "").find("<title>Merge side</title>"), std::string::npos);
  }
  ParityFixture fx;
  Peers peers(fx.bare(), fx.dir().path());
  for (const char* h : {"master", "side-a", "v1.0", "light"})
    EXPECT_EQ(AtomDifference(peers, "/repo/atom/", std::string("h=") + h), "") << h;
  EXPECT_EQ(AtomDifference(peers, "/repo/atom/latin1.txt", ""), "");
}

// Feeds of tags (h=TAG), whose walk starts from what packed-refs says the tag peels to: an
// annotated tag, a lightweight one, a tag of a tag, a tag that shares its name with a branch (git
// takes the tag) and one that refs/NAME comes before in git's order; tags of a tree and of a blob
// (cgit's feed with no entries). The bodies equal cgit's.
TEST(GitfragParity, AtomOfTagsEqualsCgit) {
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  const std::string bare = MakeBareFixture(dir, R"(
for i in 1 2 3 4 5; do echo $i > f; c "commit $i"; done
git tag -a -m 'annotated' annotated HEAD~3
git tag light HEAD~2
git tag -a -m 'of a tag' nested annotated
git branch same HEAD~1
git tag -a -m 'tag named as a branch' same HEAD~4
git tag shadowed HEAD~1
git tag -a -m 'a tree' treetag HEAD^{tree}
git tag -a -m 'a blob' blobtag HEAD:f
)");
  // Only in the bare repository: refs/shadowed, before refs/tags/shadowed in git's order.
  Shell("git -C " + ShellQuote(bare) + " update-ref refs/shadowed master~3");
  // The clone packed the tags with the objects they peel to.
  ASSERT_NE(Shell("cat " + ShellQuote(bare + "/packed-refs")).find("refs/tags/nested\n^"),
            std::string::npos);
  TempDir rc;
  Peers peers(bare, rc.path());
  for (const char* h : {"annotated", "light", "nested", "same", "shadowed", "treetag", "blobtag"})
    EXPECT_EQ(AtomDifference(peers, "/repo/atom/", std::string("h=") + h), "") << h;
  // The feed of `same` is the tag's (commit 1), not the branch's.
  EXPECT_EQ(peers.Cgit("/repo/atom/", "h=same").find("<title>commit 4</title>"), std::string::npos);
  auto route = peers.site().Match("/repo/atom/", "h=nothing");
  ASSERT_TRUE(route);
  EXPECT_EQ(peers.site().Render(*route).status, 404) << "a name of nothing";
}

// The summary's newest branches and tags when the table's cut falls among refs of one age (it
// shows the first of them in name order, as cgit's stable sort does), and the refs page's whole
// lists in the same order.
TEST(GitfragParity, SummaryCutAmongEqualAgesEqualsCgit) {
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  const std::string bare = MakeBareFixture(dir, R"(
for i in 1 2 3; do echo $i > f; c "commit $i"; done
for t in t-d t-b t-e t-a t-c; do git tag $t HEAD~1; done
git tag newest HEAD
git tag oldest HEAD~2
for b in b-c b-a b-d b-b; do git branch $b HEAD~1; done
)");
  TempDir rc;
  Peers peers(bare, rc.path());
  for (const auto& [branches, tags] :
       std::vector<std::pair<unsigned, unsigned>>{{2, 3}, {3, 4}, {10, 10}}) {
    peers.SetSummaryTables(branches, tags);
    for (const char* path : {"/repo/", "/repo/refs/"})
      EXPECT_EQ(peers.Difference(path, ""), "") << branches << " " << tags << " " << path;
  }
}

// Messages git would never write itself (commit --cleanup=verbatim, as other tools make them):
// blank lines of spaces and tabs around the subject, a subject over two lines with trailing
// whitespace, tabs and a CR in the body, trailing blank lines, no final newline, an empty message;
// and noplainemail=1, with which cgit shows no address on the commit, tag and blame pages nor in
// the feed, and writes its patch with a format of its own (the author's name alone, the body as it
// is). The patch bytes, the pages' visible text and the blame's commit titles equal cgit's.
TEST(GitfragParity, MessagesAndNoPlainEmailEqualCgit) {
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  const std::string bare = MakeBareFixture(dir, R"(
v() { git add -A; T=$((T + 100)); printf "$1" > ../msg; GIT_AUTHOR_DATE="$T +0000" GIT_COMMITTER_DATE="$T +0000" git commit -q --allow-empty-message --cleanup=verbatim -F ../msg; }
echo 0 > f; c root
echo 1 > f; v '\n  \nfirst subject line  \nsecond\tsubject line\t\n \t \nbody\twith\ttabs and trailing \r\n\tleading tab\nabc\tdef\n \n\nend\n\n\n'
echo 2 > f; v 'subject only, no newline'
echo 3 > f; v 'subj\n\nend without newline'
echo 4 > f; v 'subj\n\nend\n \n'
echo 5 > f; v ''
echo 6 > f; v 'a subject long enough to be wrapped: it goes on and on well past the seventy-eight columns\n\nbody\n'
export GIT_AUTHOR_NAME='René "Q" Name' GIT_AUTHOR_EMAIL=rene@example.org
echo 7 > f; v 'quoted name\n'
GIT_COMMITTER_NAME=Tagger GIT_COMMITTER_EMAIL=tagger@example.org git tag -a -m 'tag message' v1 HEAD~2
)");
  for (const bool noplainemail : {false, true}) {
    TempDir rc;
    Peers peers(bare, rc.path(), /*blame=*/true);
    if (noplainemail) peers.SetNoPlainEmail();
    PageList pages = PagesOfMaster(bare, {});
    pages.push_back({"/repo/tag/", "h=v1"});
    pages.push_back({"/repo/atom/", ""});
    pages.push_back({"/repo/blame/f", ""});
    pages.push_back({"/repo/blame/f", "id=" + GitIn(bare, "rev-parse master~3")});
    for (const auto& [path, query] : pages) {
      EXPECT_EQ(peers.Difference(path, query), "")
          << "noplainemail=" << noplainemail << " " << path << "?" << query;
    }
    EXPECT_EQ(AtomDifference(peers, "/repo/atom/", ""), "") << "noplainemail=" << noplainemail;
    // The blame's commit links carry each commit's author and committer in their titles.
    for (const std::string& query :
         std::vector<std::string>{"", "id=" + GitIn(bare, "rev-parse master~3")}) {
      auto route = peers.site().Match("/repo/blame/f", query);
      ASSERT_TRUE(route);
      const std::string ours = peers.site().RenderAssembled(*route).body;
      const std::string theirs = peers.Cgit("/repo/blame/f", query);
      EXPECT_EQ(Titles(ours), Titles(theirs)) << "noplainemail=" << noplainemail;
      EXPECT_NE(Titles(theirs).find("committer"), std::string::npos);
    }
    // The address is there exactly when cgit shows it.
    const std::string commit = peers.Cgit("/repo/commit/", "");
    EXPECT_EQ(commit.find("rene@example.org") == std::string::npos, noplainemail);
  }
}

// The stats page against cgit's on a repository whose commits are dated relative to now (cgit
// counts the periods that end with the current one): twelve authors (the "Others" row), a
// Latin-1 name with its encoding header, a hostile name, merges (not counted), commits in every
// period and before the oldest shown, a path limit, h=, ofs= (authors shown, -1 all) and each
// max-stats; the tab appears only with max-stats; unknown and disabled periods are cgit's errors.
TEST(GitfragParity, StatsEqualCgit) {
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  const int64_t now = std::time(nullptr);
  std::ostringstream script;
  script << "set -e\ngit init -q -b master work\ncd work\n";
  // commit AUTHOR DAYS_AGO FILE [ENCODING]: one commit dated DAYS_AGO days and an hour before now.
  script << "c() { printf '%s\\n' \"$2\" >> \"$3\"; git add \"$3\"; "
            "d=$((NOW - $2 * 86400 - 3600)); "
            "GIT_AUTHOR_NAME=\"$1\" GIT_AUTHOR_DATE=\"$d +0000\" GIT_COMMITTER_DATE=\"$d +0000\" "
            "git ${4:+-c i18n.commitEncoding=$4} commit -q -m \"work $2\"; }\n";
  script << "mkdir dir\n";
  const std::vector<std::pair<std::string, std::vector<int>>> authors = {
      {"Alice", {0, 1, 2, 8, 15, 22, 40, 70, 100, 200, 400, 800, 1200, 2000}},
      {"Bob", {0, 3, 9, 16, 35, 95, 380}},
      {"<script>alert(1)</script> & Co", {1, 10, 50}},
      {"Zed", {2, 18, 25, 29, 300}},
      {"Ann", {4, 5, 6}},
      {"Carl", {7}},
      {"Dora", {11, 12}},
      {"Eve", {13}},
      {"Finn", {14, 60}},
      {"Gus", {17}},
      {"Hal", {19, 20}},
      {"Ivy", {21}},
  };
  std::vector<std::pair<int, std::string>> commits;  // days ago, command
  for (const auto& [name, days] : authors) {
    for (size_t i = 0; i < days.size(); ++i)
      commits.push_back({days[i], "c " + ShellQuote(name) + " " + std::to_string(days[i]) +
                                      (i % 2 == 0 ? " dir/f" : " top")});
  }
  // A Latin-1 name, declared by the commit's encoding header.
  commits.push_back({5, "c \"$(printf 'J\\366rg')\" 5 dir/latin ISO-8859-1"});
  std::sort(commits.begin(), commits.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < commits.size(); ++i) {
    script << commits[i].second << "\n";
    if (i == commits.size() / 2) {
      // A side branch merged back: the merge is not counted.
      const int days = commits[i].first;
      script << "git checkout -q -b side\nc Sidekick " << days << " side.txt\n"
             << "git checkout -q master\nd=$((NOW - " << days << " * 86400 - 1800))\n"
             << "GIT_AUTHOR_NAME=Merger GIT_AUTHOR_DATE=\"$d +0000\" GIT_COMMITTER_DATE=\"$d +0000\" "
                "git merge -q --no-ff --no-edit side\n";
    }
  }
  // Tags: a page viewed at h=TAG links the stats tab at it too (cgit's tabs keep h=).
  script << "git tag light HEAD~6\ngit tag -a -m release rel HEAD~3\n"
         // and tags of a blob and a tree (git/git's junio-gpg-pub): cgit's table, no commits
         << "git tag -a -m key key \"$(echo key | git hash-object -w --stdin)\"\n"
         << "git tag folder HEAD^{tree}\n";
  MakeFixture(dir, "NOW=" + std::to_string(now) + "\n" + script.str() +
                   "\ncd \"$HOME\" && git clone -q --bare work repo.git\n",
              GitIdentity{"", "C O Mitter"});
  const std::string bare = dir.File("repo.git");
  ASSERT_NE(Trimmed(Shell("git -C " + ShellQuote(bare) + " rev-list --merges HEAD")), "");

  const std::vector<std::pair<std::string, std::string>> pages = {
      {"/repo/stats/", ""},
      {"/repo/stats/", "period=w"},
      {"/repo/stats/", "period=m"},
      {"/repo/stats/", "period=month"},
      {"/repo/stats/", "period=q"},
      {"/repo/stats/", "period=y"},
      {"/repo/stats/", "period=y&ofs=-1"},
      {"/repo/stats/", "period=q&ofs=3"},
      {"/repo/stats/", "period=m&ofs=25"},
      {"/repo/stats/", "h=side&period=y"},
      {"/repo/stats/", "h=master&period=m"},
      {"/repo/stats/", "h=light&period=q"},
      {"/repo/stats/", "h=rel&period=m"},
      {"/repo/stats/", "h=rel"},
      {"/repo/stats/", "h=key&period=m"},
      {"/repo/stats/", "h=folder"},
      {"/repo/stats/", "h=nothing"},
      {"/repo/stats/dir", "period=y"},
      {"/repo/stats/dir/f", "period=m&ofs=-1"},
      {"/repo/", ""},
  };
  for (const unsigned max_stats : {4u, 3u, 1u}) {
    TempDir rc;
    Peers peers(bare, rc.path(), false, max_stats);
    for (const auto& [path, query] : pages) {
      SCOPED_TRACE(std::to_string(max_stats) + " " + path + "?" + query);
      const int theirs = peers.CgitStatus(path, query);
      if (theirs != 200) {
        const Page page = peers.site().Render(*peers.site().Match(path, query));
        EXPECT_EQ(page.status, theirs) << page.reason;
        continue;
      }
      EXPECT_EQ(peers.Difference(path, query), "");
    }
    // The tab, on every page of the repository.
    const Page summary = peers.site().Render(*peers.site().Match("/repo/", ""));
    EXPECT_NE(summary.body.find("<a href='/repo/stats/'>stats</a>"), std::string::npos);
    const Page stats = peers.site().Render(*peers.site().Match("/repo/stats/dir", "h=side"));
    ASSERT_EQ(stats.status, 200) << stats.reason;
    EXPECT_NE(stats.body.find("<a class='active' href='/repo/stats/dir?h=side'>stats</a>"),
              std::string::npos);
    EXPECT_EQ(stats.body.find("<script>"), std::string::npos) << "the hostile name is escaped";
    const Page master = peers.site().Render(*peers.site().Match("/repo/stats/", "ofs=-1"));
    EXPECT_NE(master.body.find("J\xc3\xb6rg"), std::string::npos) << "Latin-1 shown as UTF-8";
    // git keeps no angle brackets in a name; its ampersand is escaped.
    EXPECT_NE(master.body.find("/script &amp; Co"), std::string::npos);
  }
  // Without max-stats: no tab, and the page is cgit's 400; an unknown period is its 404.
  TempDir rc;
  Peers peers(bare, rc.path());
  EXPECT_EQ(peers.site().Render(*peers.site().Match("/repo/", "")).body.find("/stats/"),
            std::string::npos);
  EXPECT_EQ(peers.Difference("/repo/", ""), "");
  for (const auto& [query, status, reason] :
       std::vector<std::tuple<std::string, int, std::string>>{
           {"", 400, "Statistics type disabled: week"},
           {"period=x", 404, "Unknown statistics type: x"},
           {"period=years", 404, "Unknown statistics type: y"},
           {"h=nobranch", 404, ""}}) {
    SCOPED_TRACE(query);
    EXPECT_EQ(peers.CgitStatus("/repo/stats/", query), status);
    const Page page = peers.site().Render(*peers.site().Match("/repo/stats/", query));
    EXPECT_EQ(page.status, status);
    if (!reason.empty()) {
      EXPECT_EQ(page.reason, reason);
    }
  }
  Peers weekly(bare, dir.path(), false, 1);
  const Page disabled = weekly.site().Render(*weekly.site().Match("/repo/stats/", "period=m"));
  EXPECT_EQ(disabled.status, 400);
  EXPECT_EQ(disabled.reason, "Statistics type disabled: month");
  EXPECT_EQ(weekly.CgitStatus("/repo/stats/", "period=m"), 400);
}

// Commits dated after the current period (a clock set wrong) are walked and counted in their
// author's total, which orders the rows, but in no period shown: an author of two such commits
// comes first with empty columns, before one of a single commit this week.
TEST(GitfragParity, StatsOfFutureCommitsEqualCgit) {
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  const int64_t now = std::time(nullptr);
  const std::string script = R"(set -e
git init -q -b master work
cd work
c() { printf '%s\n' "$2" >> f; git add f; d=$((NOW + $2)); GIT_AUTHOR_NAME="$1" GIT_AUTHOR_DATE="$d +0000" GIT_COMMITTER_DATE="$d +0000" git commit -q -m "at $2"; }
c Now -3600
c Later 40000000
c Later 80000000
cd "$HOME" && git clone -q --bare work repo.git
)";
  MakeFixture(dir, "NOW=" + std::to_string(now) + "\n" + script, GitIdentity{"", "C O Mitter"});
  TempDir rc;
  Peers peers(dir.File("repo.git"), rc.path(), false, 4);
  for (const char* query : {"period=w", "period=m", "period=q", "period=y"}) {
    EXPECT_EQ(peers.Difference("/repo/stats/", query), "") << query;
    EXPECT_NE(peers.Cgit("/repo/stats/", query).find("<td class='left'>Later</td><td>0</td>"),
              std::string::npos)
        << query;
  }
}

// The blame table's links (commit and "^" links: ids and paths), which the visible text leaves
// out.
std::string BlameLinks(const std::string& html) {
  std::string out;
  const size_t begin = html.find("<table class='blame");
  const size_t end = html.find("</table>", begin);
  if (begin == std::string::npos || end == std::string::npos) return out;
  for (size_t p = begin; (p = html.find("href='", p)) != std::string::npos && p < end; p += 6)
    out += html.substr(p + 6, html.find('\'', p + 6) - p - 6) + "\n";
  return out;
}

// gitfrag::Blame of `path` at `commit` (hex) as text, one entry a line ("" when the path is no
// regular file there); `commits` gets the number of commits the blame was passed through.
std::string BlameText(git_repository* repo, const std::string& commit, const std::string& path,
                      BlameMemo memo, size_t* commits = nullptr, size_t* unchanged = nullptr) {
  git_oid id;
  git_commit* raw_commit = nullptr;
  if (git_oid_fromstr(&id, commit.c_str()) != 0 || git_commit_lookup(&raw_commit, repo, &id) != 0)
    return "no commit " + commit;
  const CommitPtr c(raw_commit);
  git_tree* raw_tree = nullptr;
  if (git_commit_tree(&raw_tree, c.get()) != 0) return "no tree";
  const TreePtr tree(raw_tree);
  git_tree_entry* raw_entry = nullptr;
  if (git_tree_entry_bypath(&raw_entry, tree.get(), path.c_str()) != 0) return "";
  const TreeEntryPtr entry(raw_entry);
  if (git_tree_entry_filemode(entry.get()) != GIT_FILEMODE_BLOB) return "";
  const BlameResult result = Blame(repo, id, path, *git_tree_entry_id(entry.get()),
                                   std::chrono::steady_clock::now() + std::chrono::seconds(60), memo);
  if (commits != nullptr) *commits = result.commits;
  if (unchanged != nullptr) *unchanged = result.unchanged;
  if (result.status != BlameResult::Status::kOk) return "failed: " + result.error;
  std::string out;
  for (const BlameEntry& e : result.entries) {
    char hex[GIT_OID_HEXSZ + 1];
    git_oid_tostr(hex, sizeof hex, &e.commit);
    out += std::string(hex) + " " + e.path + " " + std::to_string(e.lno) + " " +
           std::to_string(e.num_lines) + " " + std::to_string(e.s_lno) + "\n";
  }
  return out;
}

// shellac's own blame against cgit's (git's blame library) on histories that exercise each of
// its rules: a line from a merge's second parent and one made by the merge itself, both parents
// with the identical blob, a whole-file rename (exact, edited with the same basename, and to
// another name), a file deleted and added again, a line moved and a block copied (no -M/-C: blamed
// where they land), Latin-1 and CRLF lines, a last line without a newline, an empty file and a file
// emptied later. Visible text and every link of the table are compared.
TEST(GitfragParity, BlameHistoryEqualsCgit) {
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  const char* script = R"(set -e
git init -q -b master work
cd work
T=1600000000
c() { git add -A; T=$((T + 100)); GIT_AUTHOR_DATE="$T +0000" GIT_COMMITTER_DATE="$T +0000" git commit -q -m "$1"; }
m() { T=$((T + 100)); GIT_AUTHOR_DATE="$T +0000" GIT_COMMITTER_DATE="$T +0000" git merge -q --no-ff --no-edit "$@"; }
seq 1 40 > m.txt; printf 'alpha\nbeta\ngamma\n' > keep.txt; : > empty; printf 'x\ny\n' > gone.txt
seq 100 160 > moved.c; printf 'caf\351\r\nna\357ve\r\nend' > latin.txt
git add -A; c root
git checkout -q -b side
sed -i 's/^3$/three (side)/' m.txt; c 'side: three'
sed -i 's/^30$/thirty (side)/' m.txt; c 'side: thirty'
git checkout -q master
sed -i 's/^8$/eight (master)/' m.txt; c 'master: eight'
printf 'caf\351\r\nna\357ve\r\nend\nmore' > latin.txt; c 'latin: more'
m side
sed -i 's/^20$/twenty (evil)/' m.txt; git add m.txt; GIT_COMMITTER_DATE="$((T + 1)) +0000" git commit -q --amend --no-edit
git checkout -q -b same1; sed -i 's/^10$/ten (same)/' m.txt; c 'same change one'
git checkout -q master; sed -i 's/^10$/ten (same)/' m.txt; c 'same change two'
m same1
git rm -q gone.txt; c 'gone'
mkdir -p new; git mv moved.c new/moved.c; c 'exact rename'
sed -i 's/^130$/one-thirty/' new/moved.c; c 'edit after rename'
mkdir -p lib; git mv new/moved.c lib/moved.c; sed -i 's/^101$/hundred-one/' lib/moved.c; c 'rename with an edit'
git mv lib/moved.c lib/other.c; sed -i 's/^150$/one-fifty/' lib/other.c; c 'rename to another name'
printf 'x\nnew\ny\n' > gone.txt; git add gone.txt; c 'gone comes back'
sed -i '5d' m.txt; echo 5 >> m.txt; c 'move a line'
sed -n '11,16p' m.txt >> m.txt; c 'copy a block'
printf 'alpha\n' > keep.txt; c 'keep shrinks'
: > keep.txt; c 'keep emptied'
echo tail >> m.txt; printf 'no newline' >> m.txt; c 'last line without newline'
)";
  MakeFixture(dir, std::string(script) + "\ncd \"$HOME\" && git clone -q --bare work repo.git\n");
  const std::string bare = dir.File("repo.git");
  auto git = [&](const std::string& args) { return GitIn(bare, args); };
  // The history is what the test means: the merge line, the renames git follows.
  ASSERT_NE(git("blame --porcelain master -- m.txt | grep -c 'three (side)'"), "0");
  ASSERT_NE(git("blame --porcelain master -- lib/other.c | grep -c '^filename new/moved.c'"), "0")
      << git("log --oneline --name-status master");
  TempDir rc;
  Peers peers(bare, rc.path(), /*blame=*/true);
  const std::string side = git("rev-parse side");
  const std::string shrunk = git("rev-parse ':/keep shrinks'");
  const std::string renamed = git("rev-parse ':/rename with an edit'");
  const std::vector<std::pair<std::string, std::string>> pages = {
      {"/repo/blame/m.txt", ""},           {"/repo/blame/m.txt", "id=" + side},
      {"/repo/blame/lib/other.c", ""},     {"/repo/blame/gone.txt", ""},
      {"/repo/blame/latin.txt", ""},       {"/repo/blame/empty", ""},
      {"/repo/blame/keep.txt", ""},        {"/repo/blame/keep.txt", "id=" + shrunk},
      {"/repo/blame/lib/moved.c", "id=" + renamed},
  };
  for (const auto& [path, query] : pages) {
    SCOPED_TRACE(path + "?" + query);
    EXPECT_EQ(peers.Difference(path, query), "");
    auto route = peers.site().Match(path, query);
    ASSERT_TRUE(route);
    const Page page = peers.site().RenderAssembled(*route);
    const std::string ours = BlameLinks(page.body), theirs = BlameLinks(peers.Cgit(path, query));
    EXPECT_FALSE(theirs.empty());
    EXPECT_EQ(ours, theirs) << FirstDifference(ours, theirs);
  }
  // An unknown path or revision: 404 with a reason, as cgit's.
  for (const auto& [path, query] : std::vector<std::pair<std::string, std::string>>{
           {"/repo/blame/nope.txt", ""}, {"/repo/blame/m.txt", "id=nope"}}) {
    const Page page = peers.site().Render(*peers.site().Match(path, query));
    EXPECT_EQ(page.status, 404);
    EXPECT_FALSE(page.reason.empty());
    EXPECT_EQ(peers.CgitStatus(path, query), 404);
  }
  // Remembered blames change nothing: every file at every commit, oldest first (so merges and
  // renames reach the remembered blames of their parents), equals the blame worked out in full.
  ForgetBlames();
  EnsureLibgit2();
  git_repository* raw_repo = nullptr;
  ASSERT_EQ(git_repository_open(&raw_repo, bare.c_str()), 0);
  const RepositoryPtr repo(raw_repo);
  size_t compared = 0;
  for (const std::string& commit : Lines(git("rev-list --reverse --topo-order --all"))) {
    for (const std::string path : {"m.txt", "keep.txt", "empty", "gone.txt", "latin.txt", "moved.c",
                                   "new/moved.c", "lib/moved.c", "lib/other.c"}) {
      SCOPED_TRACE(commit + ":" + path);
      const std::string full = BlameText(repo.get(), commit, path, BlameMemo::kIgnore);
      const std::string remembered = BlameText(repo.get(), commit, path, BlameMemo::kUse);
      EXPECT_EQ(remembered, full) << FirstDifference(remembered, full);
      if (!full.empty()) ++compared;
    }
  }
  EXPECT_GT(compared, 100u);
  EXPECT_GT(Remembered().blames, 10u);
  // With a commit-graph and its changed-path Bloom filters (in a copy of the repository), every
  // blame is the same, and commits the filters clear pass their lines whole unread.
  const std::string graphed = dir.File("graphed.git");
  Shell("git clone -q --mirror " + ShellQuote(bare) + " " + ShellQuote(graphed) + " 2>&1 && git -C " +
        ShellQuote(graphed) + " commit-graph write --reachable --changed-paths 2>&1");
  git_repository* raw_graphed = nullptr;
  ASSERT_EQ(git_repository_open(&raw_graphed, graphed.c_str()), 0);
  const RepositoryPtr with_graph(raw_graphed);
  size_t skipped = 0;
  for (const std::string& commit : Lines(git("rev-list --topo-order --all"))) {
    for (const std::string path : {"m.txt", "keep.txt", "gone.txt", "latin.txt", "lib/other.c"}) {
      SCOPED_TRACE(commit + ":" + path);
      size_t unchanged = 0, none = 0, plain_commits = 0, fast_commits = 0;
      const std::string plain =
          BlameText(repo.get(), commit, path, BlameMemo::kIgnore, &plain_commits, &none);
      const std::string fast =
          BlameText(with_graph.get(), commit, path, BlameMemo::kIgnore, &fast_commits, &unchanged);
      EXPECT_EQ(fast, plain) << FirstDifference(fast, plain);
      EXPECT_EQ(none, 0u);
      // Lines passed whole along first parents without an origin per commit (PassUnchanged's
      // slide) go through the same commits as the scoreboard's queue takes them one by one.
      EXPECT_EQ(fast_commits, plain_commits);
      skipped += unchanged;
    }
  }
  EXPECT_GT(skipped, 100u);
}

// blame-timeout: a blame that outlives its budget stops with a 503 that says so (a long history:
// 3000 commits, each changing one line between two the root wrote; a budget of 1 ms). With room, the same page renders.
TEST(GitfragParity, BlameStopsAtItsDeadline) {
  TempDir dir;
  test::MakeLongHistory(dir.File("repo.git"));
  ForgetBlames();  // a blame remembered by another test of this fixture would answer at once
  conf::Config c;
  conf::Config::Repository r;
  r.url = r.name = "repo";
  r.path = dir.File("repo.git");
  r.enable_blame = true;
  c.repositories.push_back(r);
  c.blame_timeout = std::chrono::milliseconds(1);
  Site tight(c);
  const Page late = tight.Render(*tight.Match("/repo/blame/f.txt", ""));
  EXPECT_EQ(late.status, 503);
  EXPECT_EQ(late.reason, "blame of f.txt took longer than 1 ms (blame-timeout)");
  c.blame_timeout = std::chrono::seconds(60);
  Site roomy(c);
  EXPECT_EQ(roomy.Render(*roomy.Match("/repo/blame/f.txt", "")).status, 200);
}

// A blame that reaches a remembered one (Blame's memo) is the blame worked out in full. On the
// long-history fixture, oldest first: every commit that touched g.txt (edits of every kind), and
// f.txt at every commit, compared with the full blame at every 50th; after the first, an f.txt
// blame passes blame through its own commit only (the rest is the parent's remembered blame), a
// g.txt blame only through the commits back to the last one that gave g.txt a new text.
TEST(GitfragParity, RememberedBlameEqualsFullBlame) {
  TempDir dir;
  test::MakeLongHistory(dir.File("repo.git"));
  ForgetBlames();
  EnsureLibgit2();
  git_repository* raw = nullptr;
  ASSERT_EQ(git_repository_open(&raw, dir.File("repo.git").c_str()), 0);
  const RepositoryPtr repo(raw);
  const std::vector<std::string> commits =
      Lines(Shell("git -C " + ShellQuote(dir.File("repo.git")) + " rev-list --reverse master"));
  ASSERT_EQ(commits.size(), 3000u);
  size_t entries = 0;
  size_t last_change = 1;  // the commit where g.txt last got a new text
  std::string last_blob;
  for (size_t i = 0; i < commits.size(); ++i) {
    const size_t n = i + 1;  // the fixture's commit number
    SCOPED_TRACE("commit " + std::to_string(n));
    size_t passed = 0;
    const std::string f = BlameText(repo.get(), commits[i], "f.txt", BlameMemo::kUse, &passed);
    if (n > 1) {
      EXPECT_EQ(passed, 1u);
    }
    if (n % 50 == 0 || n == commits.size()) {
      const std::string full = BlameText(repo.get(), commits[i], "f.txt", BlameMemo::kIgnore);
      EXPECT_EQ(f, full) << FirstDifference(f, full);
    }
    if (n == 1 || n % 5 == 0) {
      const std::string g = BlameText(repo.get(), commits[i], "g.txt", BlameMemo::kUse, &passed);
      // An edit may give g.txt the text it had: then the lines go back whole to where it last
      // changed.
      const std::string blob = Shell("git -C " + ShellQuote(dir.File("repo.git")) + " rev-parse " +
                                     commits[i] + ":g.txt");
      if (n > 1) {
        EXPECT_LE(passed, n - last_change);
      }
      if (blob != last_blob) last_change = n;
      last_blob = blob;
      const std::string full = BlameText(repo.get(), commits[i], "g.txt", BlameMemo::kIgnore);
      EXPECT_EQ(g, full) << FirstDifference(g, full);
      entries = std::count(full.begin(), full.end(), '\n');
    }
  }
  EXPECT_GT(entries, 20u) << "g.txt's last blame has lines of many commits";
}

// The long history with a commit-graph and changed-path Bloom filters: g.txt, changed by every 5th
// commit, is blamed at master passing the lines of the others whole on the filters' word (four
// in five of the commits its blame goes through), with the blame worked out without them.
TEST(GitfragParity, BlameWithBloomFiltersEqualsBlameWithout) {
  TempDir dir;
  test::MakeLongHistory(dir.File("repo.git"));
  Shell("git clone -q --mirror " + ShellQuote(dir.File("repo.git")) + " " +
        ShellQuote(dir.File("graphed.git")) + " 2>&1 && git -C " +
        ShellQuote(dir.File("graphed.git")) + " commit-graph write --reachable --changed-paths 2>&1");
  EnsureLibgit2();
  git_repository *raw = nullptr, *raw_graphed = nullptr;
  ASSERT_EQ(git_repository_open(&raw, dir.File("repo.git").c_str()), 0);
  const RepositoryPtr repo(raw);
  ASSERT_EQ(git_repository_open(&raw_graphed, dir.File("graphed.git").c_str()), 0);
  const RepositoryPtr graphed(raw_graphed);
  const std::string master =
      Trimmed(Shell("git -C " + ShellQuote(dir.File("repo.git")) + " rev-parse master"));
  for (const std::string path : {"g.txt", "f.txt"}) {
    SCOPED_TRACE(path);
    size_t unchanged = 0, none = 0, commits = 0, plain_commits = 0;
    const std::string plain =
        BlameText(repo.get(), master, path, BlameMemo::kIgnore, &plain_commits, &none);
    const std::string fast =
        BlameText(graphed.get(), master, path, BlameMemo::kIgnore, &commits, &unchanged);
    EXPECT_EQ(fast, plain) << FirstDifference(fast, plain);
    EXPECT_EQ(none, 0u);
    EXPECT_EQ(commits, plain_commits);  // the slide passes through the same commits
    if (path == "g.txt") {
      // One memo serves blame and the history walks: the blame without a graph left master's
      // links, its root tree with them, where a walk reads them.
      git_oid id;
      ASSERT_EQ(git_oid_fromstr(&id, master.c_str()), 0);
      const std::optional<CommitLinks> links = CommitLinksMemo().Find(id);
      ASSERT_TRUE(links.has_value());
      char tree[GIT_OID_HEXSZ + 1];
      git_oid_tostr(tree, sizeof tree, &links->tree);
      EXPECT_EQ(tree, Trimmed(Shell("git -C " + ShellQuote(dir.File("repo.git")) +
                                    " rev-parse master^{tree}")));
      EXPECT_EQ(links->parents.size(), 1u);
      EXPECT_GT(unchanged, 500u);
      EXPECT_GE(unchanged, commits * 3 / 4) << commits;
    }
  }
}

// With SHELLAC_PARITY_REPO: tree pages (the root, two folders, two files) and a plain file of the
// repository's HEAD, against cgit's.
TEST(GitfragParity, TreeOfRepository) {
  const char* repo = std::getenv("SHELLAC_PARITY_REPO");
  if (repo == nullptr || *repo == '\0') GTEST_SKIP() << "SHELLAC_PARITY_REPO is not set";
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  Peers peers(repo, dir.path());
  const std::string head = Trimmed(Shell("git -C " + ShellQuote(repo) + " rev-parse HEAD"));
  for (const std::string path : {"/repo/tree/", "/repo/tree/Documentation", "/repo/tree/t/helper",
                                 "/repo/tree/Makefile", "/repo/tree/builtin/add.c"}) {
    for (const std::string& query : {std::string(), "id=" + head}) {
      SCOPED_TRACE(path + "?" + query);
      EXPECT_EQ(peers.Difference(path, query), "");
    }
  }
  auto route = peers.site().Match("/repo/plain/Makefile", "");
  ASSERT_TRUE(route);
  const std::string cgit = peers.CgitWhole("/repo/plain/Makefile", "");
  EXPECT_EQ(peers.site().Render(*route).body, cgit.substr(cgit.find("\n\n") + 2));
}

// With SHELLAC_PARITY_REPO: blame pages of a few files at the repository's HEAD (enable-blame=1)
// against cgit's, with each side's time printed. SHELLAC_PARITY_BLAME (space-separated paths)
// replaces the default files (README.md, Makefile, po/de.po: a short, a long and a much-rewritten
// history on git/git). The budget is SHELLAC_PARITY_BLAME_TIMEOUT seconds (120).
TEST(GitfragParity, BlameOfRepository) {
  const char* repo = std::getenv("SHELLAC_PARITY_REPO");
  if (repo == nullptr || *repo == '\0') GTEST_SKIP() << "SHELLAC_PARITY_REPO is not set";
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  Peers peers(repo, dir.path(), /*blame=*/true);
  const char* budget = std::getenv("SHELLAC_PARITY_BLAME_TIMEOUT");
  peers.SetBlameTimeout(std::chrono::seconds(budget != nullptr ? std::atoi(budget) : 120));
  std::vector<std::string> files = {"README.md", "Makefile", "po/de.po"};
  if (const char* list = std::getenv("SHELLAC_PARITY_BLAME"); list != nullptr && *list != '\0') {
    files.clear();
    std::istringstream in(list);
    for (std::string f; in >> f;) files.push_back(f);
  }
  for (const std::string& file : files) {
    const std::string path = "/repo/blame/" + file;
    SCOPED_TRACE(path);
    const auto t0 = std::chrono::steady_clock::now();
    auto route = peers.site().Match(path, "");
    ASSERT_TRUE(route);
    const Page page = peers.site().Render(*route);
    const auto t1 = std::chrono::steady_clock::now();
    const std::string theirs = peers.Cgit(path, "");
    const auto t2 = std::chrono::steady_clock::now();
    ASSERT_EQ(page.status, 200) << page.reason;
    const std::string a = VisibleText(page.body), b = VisibleText(theirs);
    EXPECT_EQ(a, b) << FirstDifference(a, b);
    std::cout << "[ time     ] " << path << ": shellac "
              << std::chrono::duration<double>(t1 - t0).count() << " s, cgit "
              << std::chrono::duration<double>(t2 - t1).count() << " s\n";
  }
}

// With SHELLAC_PARITY_REPO: path-limited logs (files and folders, a second page, showmsg=1) and
// searches of the repository's HEAD against cgit's, with each side's time printed.
TEST(GitfragParity, HistoryOfRepository) {
  const char* repo = std::getenv("SHELLAC_PARITY_REPO");
  if (repo == nullptr || *repo == '\0') GTEST_SKIP() << "SHELLAC_PARITY_REPO is not set";
  ASSERT_TRUE(CgitInstalled());
  TempDir dir;
  // SHELLAC_PARITY_INDEX=1: the in-memory history index (history_index.h) is built first, and the
  // pages are rendered with it (for a repository without a commit-graph).
  const bool index = std::getenv("SHELLAC_PARITY_INDEX") != nullptr;
  Peers peers(repo, dir.path(), false, 0, index ? uint64_t{1} << 30 : 0);
  if (index) {
    const auto t0 = std::chrono::steady_clock::now();
    peers.site().Render(*peers.site().Match("/repo/log/", ""));  // asks for the index
    ASSERT_TRUE(HistoryIndex::WaitIdle(std::chrono::minutes(30)));
    const HistoryIndexMetrics m = HistoryIndexTotals();
    std::cout << "[ index    ] built in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
              << " s (build " << static_cast<double>(m.build_us) / 1e6 << " s): " << m.commits
              << " commits, " << m.bytes << " bytes, "
              << (m.commits ? static_cast<double>(m.bytes) / static_cast<double>(m.commits) : 0.0)
              << " bytes per commit; failed " << m.failed << "\n";
  }
  const std::vector<std::pair<std::string, std::string>> pages = {
      {"/repo/log/Makefile", ""},
      {"/repo/log/Makefile", "ofs=50&showmsg=1"},
      {"/repo/log/builtin/add.c", ""},
      {"/repo/log/t/helper", ""},
      {"/repo/log/README.md", ""},
      {"/repo/log/", "qt=grep&q=rebase"},
      {"/repo/log/", "qt=author&q=junio"},
      {"/repo/log/", "ofs=500"},
      {"/repo/log/", "ofs=18100"},  // past kWalkOrderFrom: the walk's order
      {"/repo/log/", "ofs=18150"},  // the same order, remembered
      {"/repo/log/", "ofs=1000000"},  // past the end
  };
  for (const auto& [path, query] : pages) {
    SCOPED_TRACE(path + "?" + query);
    const auto t0 = std::chrono::steady_clock::now();
    auto route = peers.site().Match(path, query);
    ASSERT_TRUE(route);
    const Page page = peers.site().Render(*route);
    const auto t1 = std::chrono::steady_clock::now();
    const std::string theirs = peers.Cgit(path, query);
    const auto t2 = std::chrono::steady_clock::now();
    ASSERT_EQ(page.status, 200) << page.reason;
    // A walk past its time limit (a rarely touched path on a busy machine) says so and shows
    // fewer commits than cgit: noted, not compared.
    if (page.body.find("[stopped: the search read") != std::string::npos) {
      std::cout << "[ stopped  ] " << path << "?" << query << ": the walk's time limit\n";
      EXPECT_TRUE(page.no_store) << "a cut walk is neither stored nor kept whole";
      continue;
    }
    const std::string a = VisibleText(page.body), b = VisibleText(theirs);
    EXPECT_EQ(a, b) << FirstDifference(a, b);
    std::cout << "[ time     ] " << path << "?" << query << ": shellac "
              << std::chrono::duration<double>(t1 - t0).count() << " s, cgit "
              << std::chrono::duration<double>(t2 - t1).count() << " s\n";
  }
}

// bench/parity.sh: random non-merge commits of a real repository (SHELLAC_PARITY_REPO,
// SHELLAC_PARITY_N, SHELLAC_PARITY_SEED or SHELLAC_PARITY_IDS), each commit's pages and its tree, a
// file it touched (folder, file view, plain bytes, history), and the repository's summary, refs,
// atom, stats and five tags; a summary by page kind to SHELLAC_PARITY_OUT. The log's Files and
// Lines columns are on (cgit's count of its minimal diff, on every log, path log and summary).
TEST(GitfragParity, SampleOfRepository) {
  const char* repo = std::getenv("SHELLAC_PARITY_REPO");
  if (repo == nullptr || *repo == '\0') GTEST_SKIP() << "SHELLAC_PARITY_REPO is not set";
  ASSERT_TRUE(CgitInstalled());
  const int n = std::getenv("SHELLAC_PARITY_N") ? std::atoi(std::getenv("SHELLAC_PARITY_N")) : 20;
  const unsigned seed =
      std::getenv("SHELLAC_PARITY_SEED") ? std::atoi(std::getenv("SHELLAC_PARITY_SEED")) : 1;
  TempDir dir;
  Peers peers(repo, dir.path(), /*blame=*/false, /*max_stats=*/2, /*history_index=*/0,
              /*log_counts=*/true);
  const std::string git = "git -C " + ShellQuote(repo) + " ";
  std::vector<std::string> all = Lines(Shell(git + "rev-list --no-merges --all"));
  std::sort(all.begin(), all.end());
  std::mt19937 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(std::min<size_t>(all.size(), static_cast<size_t>(n)));
  // SHELLAC_PARITY_IDS: these commits (full ids, space-separated) instead of a sample.
  if (const char* ids = std::getenv("SHELLAC_PARITY_IDS"); ids != nullptr && *ids != '\0') {
    all.clear();
    std::istringstream in(ids);
    for (std::string id; in >> id;) all.push_back(id);
  }
  std::map<std::string, std::pair<int, int>> by_kind;  // page kind -> equal, compared
  std::ostringstream failures;
  int stopped = 0;
  // One page against cgit's, counted under `kind`; false when it differs.
  auto compare = [&](const std::string& kind, const std::string& path, const std::string& query) {
    std::string diff;
    auto route = peers.site().Match(path, query);
    if (route && route->kind == PageKind::kPlain) {
      // A file's bytes, compared as bytes (cgit's head aside).
      const std::string whole = peers.CgitWhole(path, query);
      const Page page = peers.site().Render(*route);
      if (page.body != whole.substr(whole.find("\n\n") + 2)) diff = "the bytes differ";
    } else if (route && route->kind == PageKind::kLog && !route->path.empty()) {
      // A path walk past its time limit says so and shows fewer commits than cgit: not compared.
      const Page page = peers.site().RenderAssembled(*route);
      if (page.body.find("[stopped: the search read") != std::string::npos) {
        ++stopped;
        return true;
      }
      diff = peers.Difference(path, query);
    } else {
      diff = peers.Difference(path, query);
    }
    auto& [eq, total] = by_kind[kind];
    ++total;
    eq += diff.empty();
    if (!diff.empty())
      failures << "- " << path << "?" << query << ": " << test::Printable(diff, 700) << "\n";
    return diff.empty();
  };
  int commits_equal = 0;
  for (const std::string& id : all) {
    bool all_equal = true;
    for (const auto& [path, query] : PagesOf(id)) all_equal &= compare(path, path, query);
    // The tree pages of the commit: its root, and a file it added or changed (with a plain name),
    // the file's folder, its bytes and its history from there.
    all_equal &= compare("/repo/tree/ (root)", "/repo/tree/", "id=" + id);
    // A submodule it moved is left out: its tree page ends once where cgit ends it twice, and its
    // plain page is shellac's 404 with a reason (gitfrag/README.md; GitfragTree.TreePagesEqualCgit
    // compares the tree page's text).
    for (const std::string& raw :
         Lines(Shell(git + "diff-tree --no-commit-id -r --diff-filter=AM " + id))) {
      const size_t tab = raw.find('\t');
      if (tab == std::string::npos || tab < 15 || raw.compare(8, 7, "160000 ") == 0) continue;
      const std::string file = raw.substr(tab + 1);
      if (file.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") !=
          std::string::npos)
        continue;
      const size_t slash = file.rfind('/');
      if (slash != std::string::npos)
        all_equal &= compare("/repo/tree/DIR", "/repo/tree/" + file.substr(0, slash), "id=" + id);
      all_equal &= compare("/repo/tree/FILE", "/repo/tree/" + file, "id=" + id);
      all_equal &= compare("/repo/plain/FILE", "/repo/plain/" + file, "id=" + id);
      all_equal &= compare("/repo/log/FILE", "/repo/log/" + file, "id=" + id);
      break;
    }
    commits_equal += all_equal;
  }
  // The repository's own pages, once: summary, refs, feed, stats, and five of its tags.
  int repository_equal = 0, repository_pages = 0;
  std::vector<std::pair<std::string, std::string>> once = {
      {"/repo/", ""}, {"/repo/refs/", ""}, {"/repo/atom/", ""}, {"/repo/stats/", "period=month"}};
  std::vector<std::string> tags = Lines(Shell(git + "for-each-ref --format='%(refname:short)' refs/tags"));
  std::shuffle(tags.begin(), tags.end(), rng);
  for (size_t i = 0; i < tags.size() && i < 5; ++i) once.push_back({"/repo/tag/", "h=" + tags[i]});
  for (const auto& [path, query] : once) {
    ++repository_pages;
    repository_equal += compare(path == "/repo/tag/" ? "/repo/tag/ (5 tags)" : path, path, query);
  }
  std::ostringstream summary;
  summary << commits_equal << " of " << all.size()
          << " commits equal on every page kind (seed " << seed << "); " << repository_equal << " of "
          << repository_pages << " of the repository's own pages equal\n\n";
  for (const auto& [kind, counts] : by_kind)
    summary << "- `" << kind << "`: " << counts.first << " of " << counts.second << " equal\n";
  if (stopped > 0)
    summary << "\n" << stopped << " path logs stopped at the walk's time limit were not compared.\n";
  summary << "\n" << failures.str();
  std::printf("%s", summary.str().c_str());
  if (const char* out = std::getenv("SHELLAC_PARITY_OUT")) std::ofstream(out) << summary.str();
  EXPECT_EQ(commits_equal, static_cast<int>(all.size()));
  EXPECT_EQ(repository_equal, repository_pages);
}

}  // namespace
}  // namespace shellac::gitfrag
