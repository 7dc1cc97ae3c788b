// The diff fragment (diffstat + diff) and the diff page around it.
//
// The fragment is repository-neutral: it depends only on the commit(s) and the diff options, and
// every link in it is relative to a page one level below the repository ("../tree/...",
// "../diff/..."), so the same bytes are right inside every fork's commit or diff page.
#include <cstdio>

#include "gitfrag/abbrev.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {
namespace {

struct FileStat {
  size_t added = 0, removed = 0;
  bool binary = false;
  uint64_t old_size = 0, new_size = 0;
};

uint64_t BlobSize(git_repository* repo, const git_diff_file& file) {
  if (git_oid_is_zero(&file.id)) return 0;
  git_odb* raw_odb = nullptr;
  if (git_repository_odb(&raw_odb, repo) != 0) return file.size;
  OdbPtr odb(raw_odb);
  size_t size = 0;
  git_object_t type;
  if (git_odb_read_header(&size, &type, odb.get(), &file.id) != 0) return file.size;
  return size;
}

const char* StatusClass(git_delta_t status) {
  switch (status) {
    case GIT_DELTA_ADDED:
      return "add";
    case GIT_DELTA_DELETED:
      return "del";
    case GIT_DELTA_RENAMED:
      return "mov";
    case GIT_DELTA_COPIED:
      return "cpy";
    case GIT_DELTA_TYPECHANGE:
      return "typ";
    default:
      return "upd";
  }
}

// "id=SHA[&amp;id2=SHA2]" plus the non-default diff options, for the fragment's links.
void FragmentArgs(Writer& out, const std::string& id, const std::string& id2,
                  const DiffOptions& o) {
  const std::string context = o.context != 3 ? std::to_string(o.context) : "";
  const std::string dt = o.dt != 0 ? std::to_string(o.dt) : "";
  QueryArgs(out, {{"id", id},
                  {"id2", id2},
                  {"context", context},
                  {"ignorews", o.ignorews ? "1" : ""},
                  {"dt", dt}});
}

void WriteDiffHead(Writer& out, const git_diff_delta& d, const std::string& id,
                   const std::string& old_id, std::string_view up, git_repository* repo,
                   git_odb* odb, int abbrev) {
  const bool added = d.status == GIT_DELTA_ADDED, deleted = d.status == GIT_DELTA_DELETED;
  out.Raw("<div class='head'>diff --git a/").Text(d.old_file.path).Raw(" b/").Text(d.new_file.path);
  char mode[16];
  if (added) {
    std::snprintf(mode, sizeof mode, "%06o", d.new_file.mode);
    out.Raw("<br/>new file mode ").Raw(mode);
  } else if (deleted) {
    std::snprintf(mode, sizeof mode, "%06o", d.old_file.mode);
    out.Raw("<br/>deleted file mode ").Raw(mode);
  }
  if (IsLinkChange(d)) {  // cgit writes no index and file lines for a submodule
    out.Raw("</div>");
    return;
  }
  out.Raw("<br/>index ")
      .Raw(UniqueAbbrev(repo, odb, d.old_file.id, abbrev))
      .Raw("..")
      .Raw(UniqueAbbrev(repo, odb, d.new_file.id, abbrev));
  if (!added && !deleted) {
    // cgit puts a mode change on the index line: "index a..b 100644..100755".
    std::snprintf(mode, sizeof mode, " %06o", d.old_file.mode);
    out.Raw(mode);
    if (d.old_file.mode != d.new_file.mode) {
      std::snprintf(mode, sizeof mode, "..%06o", d.new_file.mode);
      out.Raw(mode);
    }
  }
  if (added) {
    out.Raw("<br/>--- /dev/null");
  } else {
    out.Raw("<br/>--- a/<a href='").Raw(up).Raw("tree/").UrlPart(d.old_file.path, true);
    QueryArgs(out, {{"id", old_id}});
    out.Raw("'>").Text(d.old_file.path).Raw("</a>");
  }
  if (deleted) {
    out.Raw("<br/>+++ /dev/null");
  } else {
    out.Raw("<br/>+++ b/<a href='").Raw(up).Raw("tree/").UrlPart(d.new_file.path, true);
    QueryArgs(out, {{"id", id}});
    out.Raw("'>").Text(d.new_file.path).Raw("</a>");
  }
  out.Raw("</div>");
}

// The text cgit shows for a submodule's side of a change: "Subproject " and the commit's id
// without its last digit (cgit formats "-Subproject HEX" or "+Subproject HEX", 52 bytes, and cuts
// the last byte as if it were a newline).
std::string LinkLineText(const git_oid& id) {
  return "Subproject " + OidHex(id).substr(0, 39);
}

// Side-by-side rows (dt=1), cgit's ssdiff layout: context on both sides; a change block's deleted
// lines paired row by row with its added lines ("changed"), the shorter side padded with a dark
// cell; a block of only deletions or only additions as "del"/"add" against a dark cell. Tabs are
// expanded to 8 columns, and the part of a changed line between the common prefix and suffix is
// highlighted. A "\ No newline at end of file" marker joins the line it belongs to. Every line is
// numbered (cgit drops numbers in some hunks whose header omits a count, e.g. "@@ -1 +1 @@").
class SideBySide {
 public:
  SideBySide(Writer& out, const git_diff_delta& d, const std::string& old_id,
             const std::string& new_id, std::string_view up)
      : out_(out), d_(d), old_id_(old_id), new_id_(new_id), up_(up) {}

  // cgit's rows for a change with a submodule on a side: each submodule side's line
  // (LinkLineText) as a deletion or an addition without a line number, through the same pairing
  // as a hunk's lines (both sides: one "changed" row); the file on the other side of a kind change
  // shows none.
  void WriteLink() {
    if (d_.old_file.mode == GIT_FILEMODE_COMMIT) dels_.push_back(LinkLineText(d_.old_file.id));
    if (d_.new_file.mode == GIT_FILEMODE_COMMIT) adds_.push_back(LinkLineText(d_.new_file.id));
    numbered_ = false;
    Flush();
  }

  void Write(const FilePatch& patch, HunkHeaders& headers) {
    for (const PatchHunk& hunk : patch.hunks) {
      out_.Raw("<tr><td colspan='4' class='hunk'>").Text(headers.Next(hunk.hunk)).Raw("</td></tr>");
      old_no_ = hunk.hunk.old_start;
      new_no_ = hunk.hunk.new_start;
      for (size_t l = hunk.first; l < hunk.first + hunk.count; ++l) {
        const PatchLine& line = patch.lines[l];
        std::string_view content = line.content;
        if (content.ends_with('\n')) content.remove_suffix(1);
        switch (line.origin) {
          case GIT_DIFF_LINE_CONTEXT:
            Flush();
            Row("ctx", old_no_++, content, "ctx", new_no_++, content);
            break;
          case GIT_DIFF_LINE_DELETION:
            dels_.emplace_back(content);
            break;
          case GIT_DIFF_LINE_ADDITION:
            adds_.emplace_back(content);
            break;
          default: {
            // The marker follows the line it describes: the last one seen on its side.
            while (content.starts_with('\n')) content.remove_prefix(1);
            std::string* last = !adds_.empty()   ? &adds_.back()
                                : !dels_.empty() ? &dels_.back()
                                                 : nullptr;
            if (last != nullptr) last->append("\n").append(content);
            break;
          }
        }
      }
      Flush();
    }
  }

 private:
  void Flush() {
    const size_t rows = std::max(dels_.size(), adds_.size());
    const bool both = !dels_.empty() && !adds_.empty();
    for (size_t i = 0; i < rows; ++i) {
      const bool has_old = i < dels_.size(), has_new = i < adds_.size();
      std::string_view old_text = has_old ? std::string_view(dels_[i]) : std::string_view();
      std::string_view new_text = has_new ? std::string_view(adds_[i]) : std::string_view();
      const char* old_cls =
          both ? (has_old ? "changed" : "changed_dark") : (has_old ? "del" : "add_dark");
      const char* new_cls =
          both ? (has_new ? "changed" : "changed_dark") : (has_new ? "add" : "del_dark");
      Row(old_cls, has_old && numbered_ ? old_no_++ : -1, old_text, new_cls,
          has_new && numbered_ ? new_no_++ : -1, new_text, both && has_old && has_new);
    }
    dels_.clear();
    adds_.clear();
  }

  void Row(const char* old_cls, int old_no, std::string_view old_text, const char* new_cls,
           int new_no, std::string_view new_text, bool highlight = false) {
    out_.Raw("<tr>");
    Cell(old_cls, old_no, d_.old_file.path, old_id_, old_text,
         highlight ? new_text : std::string_view(), "del", highlight);
    Cell(new_cls, new_no, d_.new_file.path, new_id_, new_text,
         highlight ? old_text : std::string_view(), "add", highlight);
    out_.Raw("</tr>");
  }

  void Cell(const char* cls, int no, const char* path, const std::string& id, std::string_view text,
            std::string_view other, const char* mark, bool highlight) {
    out_.Raw("<td class='lineno'>");
    if (no >= 0) {
      out_.Raw("<a href='").Raw(up_).Raw("tree/").UrlPart(path, true);
      QueryArgs(out_, {{"id", id}});
      out_.Raw("#n")
          .Number(static_cast<uint64_t>(no))
          .Raw("'>")
          .Number(static_cast<uint64_t>(no))
          .Raw("</a>");
    }
    out_.Raw("</td><td class='").Raw(cls).Raw("'>");
    const std::string expanded = ExpandTabs(text);
    if (!highlight) {
      out_.Text(expanded);
    } else {
      const std::string other_expanded = ExpandTabs(other);
      size_t prefix = 0;
      while (prefix < expanded.size() && prefix < other_expanded.size() &&
             expanded[prefix] == other_expanded[prefix])
        ++prefix;
      size_t suffix = 0;
      while (suffix < expanded.size() - prefix && suffix < other_expanded.size() - prefix &&
             expanded[expanded.size() - 1 - suffix] ==
                 other_expanded[other_expanded.size() - 1 - suffix])
        ++suffix;
      // Never split a UTF-8 sequence between the plain and the highlighted part.
      auto continuation = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; };
      while (prefix > 0 && prefix < expanded.size() && continuation(expanded[prefix])) --prefix;
      while (suffix > 0 && continuation(expanded[expanded.size() - suffix])) --suffix;
      const std::string_view all(expanded);
      out_.Text(all.substr(0, prefix));
      const std::string_view middle = all.substr(prefix, all.size() - prefix - suffix);
      if (!middle.empty())
        out_.Raw("<span class='").Raw(mark).Raw("'>").Text(middle).Raw("</span>");
      out_.Text(all.substr(all.size() - suffix));
    }
    out_.Raw("</td>");
  }

  static std::string ExpandTabs(std::string_view s) {
    std::string out;
    size_t column = 0;
    for (char c : s) {
      if (c == '\t') {
        const size_t n = 8 - column % 8;
        out.append(n, ' ');
        column += n;
      } else {
        out += c;
        column = c == '\n' ? 0 : column + 1;
      }
    }
    return out;
  }

  Writer& out_;
  const git_diff_delta& d_;
  const std::string& old_id_;
  const std::string& new_id_;
  std::string_view up_;
  int old_no_ = 0, new_no_ = 0;
  bool numbered_ = true;
  std::vector<std::string> dels_, adds_;
};

void WriteHunks(Writer& out, const FilePatch& patch, HunkHeaders& headers) {
  for (const PatchHunk& hunk : patch.hunks) {
    out.Raw("<div class='hunk'>").Text(headers.Next(hunk.hunk)).Raw("</div>");
    for (size_t l = hunk.first; l < hunk.first + hunk.count; ++l) {
      const PatchLine& line = patch.lines[l];
      std::string_view content = line.content;
      if (content.ends_with('\n')) content.remove_suffix(1);
      const char* cls;
      char origin;
      switch (line.origin) {
        case GIT_DIFF_LINE_ADDITION:
          cls = "add";
          origin = '+';
          break;
        case GIT_DIFF_LINE_DELETION:
          cls = "del";
          origin = '-';
          break;
        case GIT_DIFF_LINE_CONTEXT:
          cls = "ctx";
          origin = ' ';
          break;
        default:
          // "\ No newline at end of file" markers.
          while (content.starts_with('\n')) content.remove_prefix(1);
          out.Raw("<div class='ctx'>").Text(content).Raw("</div>");
          continue;
      }
      out.Raw("<div class='")
          .Raw(cls)
          .Raw("'>")
          .Raw(std::string_view(&origin, 1))
          .Text(content)
          .Raw("</div>");
    }
  }
}

// The diff sections after the diffstat, as cgit's dt= picks them.
enum class DiffLayout { kUnified, kSideBySide, kStatOnly };

DiffLayout LayoutOf(const DiffOptions& options) {
  switch (options.dt) {
    case 1:
      return DiffLayout::kSideBySide;
    case 2:
      return DiffLayout::kStatOnly;
    default:
      return DiffLayout::kUnified;
  }
}

// What the sections of one diff fragment share: the commits' ids, the links' way back up, and
// each file's patch (FileDiff::own, libgit2's converted where it made it; not made: the file is
// left out everywhere) and line counts.
struct DiffFragment {
  Writer& out;
  git_repository* repo;
  const DiffOptions& options;
  std::string up;      // from the including page (…/REPO/PAGE/PATH) back up to …/REPO/
  std::string id;      // the commit
  std::string id2;     // the other commit, or empty
  std::string old_id;  // what the diff is against: id2, else the first parent
  OdbPtr odb;
  int abbrev = 7;
  CommitFiles files;
  std::vector<FileStat> stats;
  size_t max_changes = 0, total_added = 0, total_removed = 0;
};

void WriteDiffstatHeader(const DiffFragment& f, std::string_view path) {
  Writer& out = f.out;
  out.Raw("<div class='diffstat-header'><a href='").Raw(f.up).Raw("diff/");
  FragmentArgs(out, f.id, f.id2, f.options);
  out.Raw("'>Diffstat</a>");
  if (!path.empty()) out.Raw(" (limited to '").Text(path).Raw("')");
  out.Raw("</div>");
}

// Counts each file's lines (or, for a binary file, the blobs' sizes).
void CountChanges(DiffFragment& f) {
  const size_t n = f.files.files.size();
  f.stats.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const FilePatch& patch = f.files.files[i].own;
    if (!patch.made) continue;
    const git_diff_delta* d = &f.files.files[i].delta;
    FileStat& s = f.stats[i];
    if (IsLinkChange(*d)) {
      const LinkCounts c = CountLinkChange(f.repo, *d, f.options.ignorews);
      s = FileStat{c.added, c.removed, c.binary, c.old_size, c.new_size};
    } else if (patch.binary) {
      s.binary = true;
      s.old_size = BlobSize(f.repo, d->old_file);
      s.new_size = BlobSize(f.repo, d->new_file);
    } else {
      s.added = patch.added;
      s.removed = patch.removed;
    }
    f.max_changes = std::max(f.max_changes, s.added + s.removed);
    f.total_added += s.added;
    f.total_removed += s.removed;
  }
}

// The graph cell of one file's diffstat row: bars scaled to the file with the most changes.
void WriteDiffstatGraph(const DiffFragment& f, const FileStat& s) {
  Writer& out = f.out;
  if (f.max_changes == 0) {
    // Only files without changed lines (empty, mode change, -w): cgit divides by zero and
    // prints what glibc prints for 0.0 / 0 (a width browsers ignore).
    out.Raw(
        "<table summary='file diffstat' width='0%'><tr><td class='add' style='width: -nan%;'/>"
        "<td class='rem' style='width: -nan%;'/><td class='none' style='width: -nan%;'/></tr>"
        "</table></td></tr>\n");
    return;
  }
  char buf[256];
  const double total = static_cast<double>(f.max_changes);
  const double add = 100.0 * static_cast<double>(s.added) / total;
  const double rem = 100.0 * static_cast<double>(s.removed) / total;
  // The rest from the counts, as cgit: 100 - add - rem can round to -0.0.
  const double none = 100.0 * static_cast<double>(f.max_changes - s.added - s.removed) / total;
  std::snprintf(buf, sizeof buf,
                "<table summary='file diffstat' width='%zu%%'><tr><td class='add' style='width: "
                "%.1f%%;'/><td class='rem' style='width: %.1f%%;'/><td class='none' style='width: "
                "%.1f%%;'/></tr></table>",
                std::min<size_t>(f.max_changes, 100), add, rem, none);
  out.Raw(buf).Raw("</td></tr>\n");
}

void WriteDiffstatRow(const DiffFragment& f, const git_diff_delta& d, const FileStat& s) {
  Writer& out = f.out;
  const bool deleted = d.status == GIT_DELTA_DELETED;
  const char* file = deleted ? d.old_file.path : d.new_file.path;
  out.Raw("<tr><td class='mode'>").Raw(ModeString(deleted ? d.old_file.mode : d.new_file.mode));
  if (!deleted && d.status != GIT_DELTA_ADDED && d.old_file.mode != d.new_file.mode) {
    out.Raw("<span class='modechange'>[").Raw(ModeString(d.old_file.mode)).Raw("]</span>");
  }
  out.Raw("</td><td class='")
      .Raw(StatusClass(d.status))
      .Raw("'><a href='")
      .Raw(f.up)
      .Raw("diff/")
      .UrlPart(file, true);
  FragmentArgs(out, f.id, f.id2, f.options);
  out.Raw("'>").Text(file).Raw("</a>");
  if (d.status == GIT_DELTA_RENAMED) out.Raw(" (renamed from ").Text(d.old_file.path).Raw(")");
  out.Raw("</td>");
  if (s.binary) {
    out.Raw("<td class='right'>bin</td><td class='graph'>").Number(s.old_size).Raw(" -&gt; ");
    out.Number(s.new_size).Raw(" bytes</td></tr>\n");
    return;
  }
  out.Raw("<td class='right'>").Number(s.added + s.removed).Raw("</td><td class='graph'>");
  WriteDiffstatGraph(f, s);
}

// The diffstat table and its summary line.
void WriteDiffstat(const DiffFragment& f) {
  Writer& out = f.out;
  out.Raw("<table summary='diffstat' class='diffstat'>");
  for (size_t i = 0; i < f.files.files.size(); ++i) {
    if (!f.files.files[i].own.made) continue;
    WriteDiffstatRow(f, f.files.files[i].delta, f.stats[i]);
  }
  out.Raw("</table><div class='diffstat-summary'>")
      .Number(f.files.files.size())
      .Raw(" files changed, ");
  out.Number(f.total_added).Raw(" insertions, ").Number(f.total_removed).Raw(" deletions</div>");
}

void WriteSideBySideDiff(const DiffFragment& f) {
  Writer& out = f.out;
  out.Raw("<table summary='ssdiff' class='ssdiff'>");
  for (size_t i = 0; i < f.files.files.size(); ++i) {
    if (!f.files.files[i].own.made) continue;
    const git_diff_delta* d = &f.files.files[i].delta;
    out.Raw(
        "<tr><td class='space' colspan='4'><div></div></td></tr><tr><td class='head' "
        "colspan='4'>");
    WriteDiffHead(out, *d, f.id, f.old_id, f.up, f.repo, f.odb.get(), f.abbrev);
    out.Raw("</td></tr>");
    if (IsLinkChange(*d)) {
      SideBySide{out, *d, f.old_id, f.id, f.up}.WriteLink();
    } else if (f.stats[i].binary) {
      out.Raw("<tr><td colspan='4'>Binary files differ</td></tr>");
    } else {
      SideBySide ss{out, *d, f.old_id, f.id, f.up};
      HunkHeaders headers(f.repo, *d, f.files.files[i].OldText());
      ss.Write(f.files.files[i].own, headers);
    }
    out.Raw("<tr><td class='foot' colspan='4'></td></tr>");
  }
  out.Raw("</table>");
}

// cgit's lines for a submodule's side instead of a diff: "-" or "+" and LinkLineText. The file
// on the other side of a kind change shows no lines.
void WriteLinkLines(Writer& out, const git_diff_delta& d) {
  if (d.old_file.mode == GIT_FILEMODE_COMMIT)
    out.Raw("<div class='del'>-").Raw(LinkLineText(d.old_file.id)).Raw("</div>");
  if (d.new_file.mode == GIT_FILEMODE_COMMIT)
    out.Raw("<div class='add'>+").Raw(LinkLineText(d.new_file.id)).Raw("</div>");
}

void WriteUnifiedDiff(const DiffFragment& f) {
  Writer& out = f.out;
  out.Raw("<table summary='diff' class='diff'><tr><td>");
  for (size_t i = 0; i < f.files.files.size(); ++i) {
    if (!f.files.files[i].own.made) continue;
    const git_diff_delta* d = &f.files.files[i].delta;
    WriteDiffHead(out, *d, f.id, f.old_id, f.up, f.repo, f.odb.get(), f.abbrev);
    if (IsLinkChange(*d)) {
      WriteLinkLines(out, *d);
      continue;
    }
    if (f.stats[i].binary) {
      out.Raw("Binary files differ");
      continue;
    }
    HunkHeaders headers(f.repo, *d, f.files.files[i].OldText());
    WriteHunks(out, f.files.files[i].own, headers);
  }
  out.Raw("</td></tr></table>");
}

}  // namespace

void WriteDiffFragment(Writer& out, git_repository* repo, git_commit* commit, git_commit* other,
                       const DiffOptions& options, std::string_view path, FileDiffPath how) {
  DiffFragment f{out, repo, options};
  f.up = "../";
  for (char c : path) {
    if (c == '/') f.up += "../";
  }
  f.id = OidHex(*git_commit_id(commit));
  f.id2 = other != nullptr ? OidHex(*git_commit_id(other)) : "";
  f.old_id = f.id2;
  if (other == nullptr && git_commit_parentcount(commit) > 0)
    f.old_id = OidHex(*git_commit_parent_id(commit, 0));

  std::string reason;
  // The own line diff's patches, but for libgit2's whole reference path (the tests').
  f.files.own_patches = how != FileDiffPath::kLibgit2;
  const bool ok = CommitFileDiffs(repo, commit, other, options, path, &f.files, &reason, how);
  // The files libgit2 diffed (ignorews, context 0, submodules) in the same form.
  for (FileDiff& file : f.files.files)
    if (!file.own.made && file.patch) file.own = PatchLinesOf(file.patch.get());
  git_odb* raw_odb = nullptr;
  f.odb.reset(git_repository_odb(&raw_odb, repo) == 0 ? raw_odb : nullptr);
  f.abbrev = options.abbrev != 0 ? options.abbrev : 7;

  WriteDiffstatHeader(f, path);
  if (!ok) {
    out.Raw("<div class='error'>").Text(reason).Raw("</div>");
    return;
  }
  CountChanges(f);
  WriteDiffstat(f);
  switch (LayoutOf(options)) {
    case DiffLayout::kStatOnly:
      break;
    case DiffLayout::kSideBySide:
      WriteSideBySideDiff(f);
      break;
    case DiffLayout::kUnified:
      WriteUnifiedDiff(f);
      break;
  }
}

Page RenderFragment(const PageContext& ctx) {
  git_repository* repo = ctx.lease.repo();
  CommitPtr commit, other;
  if (Page error; !ResolveCommits(repo, ctx.route, &commit, &other, &error)) return error;
  // The trees read raw by the pack reader (as the log's counts), the blobs through libgit2 from it.
  WriteDiffFragment(ctx.out, repo, commit.get(), other.get(), EffectiveDiffOptions(ctx),
                    ctx.route.path, FileDiffPath::kOwnRaw);
  return Page{};
}

}  // namespace shellac::gitfrag

namespace shellac::gitfrag {

// The diff page: the options panel and the fragment, for `id` against `id2` (or its first parent).
Page RenderDiffPage(const PageContext& ctx) {
  git_repository* repo = ctx.lease.repo();
  // Both commits must exist in this repository before the shared fragment is included.
  CommitPtr commit, other;
  if (Page error; !ResolveCommits(repo, ctx.route, &commit, &other, &error)) return error;
  const std::string title =
      ctx.repo.name + " - " + (ctx.repo.desc.empty() ? "[no description]" : ctx.repo.desc);
  PageStart(ctx, title, "diff", ctx.route.id);
  WriteOptionsPanel(ctx, ctx.route.id);
  ctx.out.Include(ctx.site.FragmentUrl(ctx.route.repo, OidHex(*git_commit_id(commit.get())),
                                       other ? OidHex(*git_commit_id(other.get())) : "",
                                       EffectiveDiffOptions(ctx), ctx.route.path));
  PageEnd(ctx.out);
  Page page;
  page.esi = true;
  return page;
}

}  // namespace shellac::gitfrag
