// The blame page ("/REPO/blame/PATH?h=&id="), as Debian's cgit 1.2.3 writes it: a table of three
// cells (each hunk's commit link with its author/committer/subject title and a "^" link to the
// blame of the parent it came through; the line numbers; a bar per hunk behind the whole text),
// rendered per request. The blame is gitfrag/blame.h's (git's, with cgit's options), bounded by
// blame-timeout.
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gitfrag/abbrev.h"
#include "gitfrag/blame.h"
#include "gitfrag/memo.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/render.h"
#include "gitfrag/raw_objects.h"

namespace shellac::gitfrag {

namespace {

// What a hunk's commit link shows of its commit: cgit's title (author and committer with their
// dates, then the subject) and the first parent (the "^" link). A commit's id fixes both, and a
// crawler blames file after file of one history, whose hunks name the same commits: they are
// remembered process-wide (memo.h), two generations of kTitles commits (~300 bytes each).
struct CommitTitle {
  std::string title;
  std::string previous;  // the first parent's id ("" for a root commit)
};
using TitlePtr = std::shared_ptr<const CommitTitle>;
constexpr size_t kTitles = 20000;

// One memo with the addresses in the titles and one without (noplainemail).
SharedMemo<git_oid, TitlePtr, OidHash, OidEqual>& Titles(bool plain_email) {
  static SharedMemo<git_oid, TitlePtr, OidHash, OidEqual> with(kTitles), without(kTitles);
  return plain_email ? with : without;
}

std::string Signature(const char* role, const git_signature* sig, const char* encoding,
                      bool plain_email) {
  std::string out = role;
  out += "  ";
  out += ToUtf8(sig->name, encoding);
  if (plain_email) {
    out += " <";
    out += ToUtf8(sig->email, encoding);
    out += '>';
  }
  out += "  ";
  out += FormatDate(sig->when);
  return out;
}

}  // namespace

Page RenderBlame(const PageContext& page_ctx) {
  const Route link_route = LinkRoute(page_ctx);
  const PageContext ctx{page_ctx.site, page_ctx.chrome, link_route, page_ctx.repo, page_ctx.lease,
                        page_ctx.out};
  const Route& r = ctx.route;
  git_repository* repo = ctx.lease.repo();
  if (!ctx.repo.enable_blame) return ErrorPage(403, "Blame is disabled (enable-blame)");
  if (BadPath(r.path))
    return ErrorPage(404, "bad path: it climbs out of the tree or has an empty segment");
  // Every libgit2 read of the page through the pack reader: the blamed lines' commits (their
  // titles, below) are in its cache once the blame has read them; libgit2's own packed backend
  // inflated each again with zlib (~50 K instructions a commit, ~1.1 M of a cold blame page).
  const PackedReadsScope packed_reads;
  int status = 200;
  std::string reason;
  CommitPtr commit = ResolveCommit(repo, r.id, r.head, &status, &reason);
  if (!commit) return ErrorPage(status, reason);
  if (r.path.empty()) return ErrorPage(404, "Blame is not available for folders.");
  // The path's entry and its blob read raw, as the blame reads its objects (raw_objects.h: the
  // trees' entries remembered process-wide, the blob from the pack reader, whose cache then has
  // it for the blame), not parsed into libgit2's object cache.
  RawObjects objects(repo);
  const TreeEntry entry = objects.PathEntry(*git_commit_tree_id(commit.get()), r.path);
  if (!entry.present) {
    if (objects.incomplete()) return ErrorPage(404, "the commit's tree cannot be read");
    return ErrorPage(404, "Not found: no such path in this revision: " + r.path);
  }
  const uint32_t mode = CanonicalMode(entry.mode);
  if ((mode & 0170000) == 0040000) return ErrorPage(404, "Blame is not available for folders.");
  // cgit blames regular files only: a symlink or a submodule is "Not found".
  if ((mode & 0170000) != 0100000) return ErrorPage(404, "Not found: not a regular file: " + r.path);
  const git_oid blob_id = entry.id;
  const BackendObject blob = objects.Read(blob_id, GIT_OBJECT_BLOB);
  if (!blob) return ErrorPage(404, "object missing from the repository: " + OidHex(blob_id));
  const std::string_view bytes = blob.bytes();

  Writer& out = ctx.out;
  std::string title;
  {
    std::string_view path = r.path;
    while (!path.empty()) {
      const size_t slash = path.rfind('/');
      if (!title.empty()) title += " \u00ab ";
      title += path.substr(slash == std::string_view::npos ? 0 : slash + 1);
      path = slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
    }
    title += " - " + ctx.repo.name + " - " +
             (ctx.repo.desc.empty() ? std::string("[no description]") : ctx.repo.desc);
  }
  const std::string hex = OidHex(blob_id);
  auto page_head = [&] {
    PageStart(ctx, title, "blame", r.id);
    out.Raw("blob: ").Raw(hex).Raw(" (<a href='");
    RepoUrl(ctx, "plain", r.path, {{"h", r.head}, {"id", r.id}});
    out.Raw("'>plain</a>) (<a href='");
    RepoUrl(ctx, "tree", r.path, {{"h", r.head}, {"id", r.id}});
    out.Raw("'>tree</a>)\n");
  };
  // cgit's notes for a blob it does not blame; it ends the page there, without its footer.
  const uint64_t limit = ctx.site.max_blob_size();
  if (limit != 0 && bytes.size() / 1024 > limit) {
    page_head();
    out.Raw("<div class='error'>blob size (").Number(bytes.size() / 1024);
    out.Raw("KB) exceeds display size limit (").Number(limit).Raw("KB).</div>");
    return Page{};
  }
  if (bytes.substr(0, 8000).find('\0') != std::string_view::npos) {
    page_head();
    out.Raw("<div class='error'>blob is binary.</div>\n");
    return Page{};
  }

  // The blame itself, within the time budget (blame-timeout): past it the page is a 503, as
  // cgit's would have been killed, and the render thread is free again.
  const auto budget = ctx.site.blame_timeout();
  const BlameResult blame =
      Blame(repo, *git_commit_id(commit.get()), r.path, blob_id, std::chrono::steady_clock::now() + budget);
  if (blame.status == BlameResult::Status::kDeadline) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(budget).count();
    const std::string budget_text = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
    return ErrorPage(503, "blame of " + r.path + " took longer than " + budget_text + " (blame-timeout)");
  }
  if (blame.status == BlameResult::Status::kError)
    return ErrorPage(500, "blame failed: " + blame.error);
  const std::vector<BlameEntry>& hunks = blame.entries;

  // Line starts: a last line without a newline is a line too.
  std::vector<size_t> starts;
  for (size_t i = 0; i < bytes.size(); ++i)
    if (i == 0 || bytes[i - 1] == '\n') starts.push_back(i);
  starts.push_back(bytes.size());

  git_odb* raw_odb = nullptr;
  if (git_repository_odb(&raw_odb, repo) != 0) return ErrorPage(500, "no object database");
  const OdbPtr odb(raw_odb);
  const int abbrev_len = EffectiveDiffOptions(ctx).abbrev;
  struct CommitInfo {
    TitlePtr title;
    std::string abbrev;  // unique in this repository: not remembered beyond the page
  };
  std::unordered_map<git_oid, CommitInfo, OidHash, OidEqual> infos;
  const bool plain_email = ctx.site.plain_email();
  auto info_of = [&](const BlameEntry& h) -> const CommitInfo& {
    auto it = infos.find(h.commit);
    if (it != infos.end()) return it->second;
    CommitInfo info;
    info.abbrev = UniqueAbbrev(repo, odb.get(), h.commit, abbrev_len);
    if (std::optional<TitlePtr> known = Titles(plain_email).Find(h.commit)) {
      info.title = std::move(*known);
    } else {
      auto made = std::make_shared<CommitTitle>();
      git_commit* raw = nullptr;
      if (git_commit_lookup(&raw, repo, &h.commit) == 0) {
        const CommitPtr c(raw);
        const char* encoding = git_commit_message_encoding(c.get());
        std::string_view subject, body;
        const char* message = git_commit_message(c.get());
        SplitMessage(message != nullptr ? message : "", &subject, &body);
        made->title =
            Signature("author", git_commit_author(c.get()), encoding, plain_email) + "\n" +
            Signature("committer", git_commit_committer(c.get()), encoding, plain_email) +
            "\n\n" + ToUtf8(subject.substr(0, subject.find('\n')), encoding);
        // cgit's "^" link: the blame of the same path at the first parent, whether or not the
        // parent has that path.
        if (git_commit_parentcount(c.get()) > 0)
          made->previous = OidHex(*git_commit_parent_id(c.get(), 0));
        Titles(plain_email).Add(h.commit, made);  // (a commit that cannot be read is not remembered)
      }
      info.title = std::move(made);
    }
    return infos.emplace(h.commit, std::move(info)).first->second;
  };

  page_head();
  out.Raw("<table class='blame blob'>\n<tr>\n<td class='hashes'>");
  for (const BlameEntry& h : hunks) {
    const CommitInfo& info = info_of(h);
    const CommitTitle& shown = *info.title;
    out.Raw("<div class='alt'><pre><span class='oid'><a title='").Text(shown.title).Raw("' href='");
    RepoUrl(ctx, "commit", h.path, {{"h", r.head}, {"id", OidHex(h.commit)}});
    out.Raw("'>").Raw(info.abbrev).Raw("</a></span>");
    if (!shown.previous.empty()) {
      out.Raw(" <a title='Blame the previous revision' href='");
      RepoUrl(ctx, "blame", h.path, {{"h", r.head}, {"id", shown.previous}});
      out.Raw("'>^</a>");
    }
    for (size_t i = 0; i < h.num_lines; ++i) out.Raw("\n");
    out.Raw("</pre></div>");
  }
  out.Raw("</td>\n<td class='linenumbers'>");
  for (const BlameEntry& h : hunks) {
    out.Raw("<div class='alt'><pre>");
    for (size_t n = h.lno + 1; n <= h.lno + h.num_lines; ++n)
      out.Raw("<a id='n").Number(n).Raw("' href='#n").Number(n).Raw("'>").Number(n).Raw("</a>\n");
    out.Raw("</pre></div>");
  }
  out.Raw("</td>\n<td class='lines'><div><div>");
  // The bar behind a hunk: a line break per line, then as many blanks as its widest line is long
  // (tabs to the next multiple of 8, the newline counted, bytes not characters), less one.
  for (const BlameEntry& h : hunks) {
    out.Raw("<div class='alt'><pre>");
    size_t widest = 2;
    for (size_t line = h.lno; line < h.lno + h.num_lines; ++line) {
      out.Raw("\n");
      size_t len = 0;
      for (size_t i = starts[line]; i < starts[line + 1]; ++i) {
        ++len;
        if (bytes[i] == '\t') len = (len + 7) & ~size_t{7};
      }
      widest = std::max(widest, len);
    }
    out.Raw(std::string(widest - 1, ' '));
    out.Raw("</pre></div>");
  }
  // cgit writes the text as a C string: a NUL ends it.
  out.Raw("</div><pre><code>").Text(bytes.substr(0, bytes.find('\0')));
  out.Raw("</code></pre></div></td>\n</tr>\n</table>\n");
  PageEnd(out);
  return Page{};
}

}  // namespace shellac::gitfrag
