// The diff fragment (diffstat + diff) and the diff page around it.
//
// The fragment is repository-neutral: it depends only on the commit(s) and the diff options, and
// every link in it is relative to a page one level below the repository ("../tree/...",
// "../diff/..."), so the same bytes are right inside every fork's commit or diff page.
#include <cstdio>

#include "render.h"

namespace shellac::gitfrag {
namespace {

struct FileStat {
  size_t added = 0, removed = 0;
  bool binary = false;
  uint64_t old_size = 0, new_size = 0;
};

std::string Abbrev(const git_oid& oid) {
  char hex[8];
  git_oid_tostr(hex, sizeof hex, &oid);
  return hex;
}

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
                   const std::string& old_id, std::string_view up) {
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
  out.Raw("<br/>index ").Raw(Abbrev(d.old_file.id)).Raw("..").Raw(Abbrev(d.new_file.id));
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

void WriteHunks(Writer& out, git_patch* patch) {
  const size_t hunks = git_patch_num_hunks(patch);
  for (size_t h = 0; h < hunks; ++h) {
    const git_diff_hunk* hunk = nullptr;
    size_t lines = 0;
    if (git_patch_get_hunk(&hunk, &lines, patch, h) != 0) continue;
    std::string_view header(hunk->header, hunk->header_len);
    while (header.ends_with('\n') || header.ends_with('\r')) header.remove_suffix(1);
    out.Raw("<div class='hunk'>").Text(header).Raw("</div>");
    for (size_t l = 0; l < lines; ++l) {
      const git_diff_line* line = nullptr;
      if (git_patch_get_line_in_hunk(&line, patch, h, l) != 0) continue;
      std::string_view content(line->content, line->content_len);
      if (content.ends_with('\n')) content.remove_suffix(1);
      const char* cls;
      char origin;
      switch (line->origin) {
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

}  // namespace

void WriteDiffFragment(Writer& out, git_repository* repo, git_commit* commit, git_commit* other,
                       const DiffOptions& options, std::string_view path) {
  // From the including page (…/REPO/PAGE/PATH) back up to …/REPO/.
  std::string up = "../";
  for (char c : path) {
    if (c == '/') up += "../";
  }
  const std::string id = OidHex(*git_commit_id(commit));
  const std::string id2 = other != nullptr ? OidHex(*git_commit_id(other)) : "";
  std::string old_id = id2;
  if (other == nullptr && git_commit_parentcount(commit) > 0)
    old_id = OidHex(*git_commit_parent_id(commit, 0));

  std::string reason;
  DiffPtr diff = CommitDiff(repo, commit, other, options, /*detect_renames=*/true, &reason, path);
  out.Raw("<div class='diffstat-header'><a href='").Raw(up).Raw("diff/");
  FragmentArgs(out, id, id2, options);
  out.Raw("'>Diffstat</a>");
  if (!path.empty()) out.Raw(" (limited to '").Text(path).Raw("')");
  out.Raw("</div>");
  if (!diff) {
    out.Raw("<div class='error'>").Text(reason).Raw("</div>");
    return;
  }
  const size_t n = git_diff_num_deltas(diff.get());
  std::vector<PatchPtr> patches(n);
  std::vector<FileStat> stats(n);
  size_t max_changes = 0, total_added = 0, total_removed = 0;
  for (size_t i = 0; i < n; ++i) {
    git_patch* raw = nullptr;
    if (git_patch_from_diff(&raw, diff.get(), i) != 0 || raw == nullptr) continue;
    patches[i].reset(raw);
    const git_diff_delta* d = git_patch_get_delta(raw);
    FileStat& s = stats[i];
    s.binary = (d->flags & GIT_DIFF_FLAG_BINARY) != 0;
    if (s.binary) {
      s.old_size = BlobSize(repo, d->old_file);
      s.new_size = BlobSize(repo, d->new_file);
    } else {
      size_t context = 0;
      git_patch_line_stats(&context, &s.added, &s.removed, raw);
    }
    max_changes = std::max(max_changes, s.added + s.removed);
    total_added += s.added;
    total_removed += s.removed;
  }

  out.Raw("<table summary='diffstat' class='diffstat'>");
  for (size_t i = 0; i < n; ++i) {
    if (!patches[i]) continue;
    const git_diff_delta* d = git_patch_get_delta(patches[i].get());
    const FileStat& s = stats[i];
    const bool deleted = d->status == GIT_DELTA_DELETED;
    const char* file = deleted ? d->old_file.path : d->new_file.path;
    out.Raw("<tr><td class='mode'>").Raw(ModeString(deleted ? d->old_file.mode : d->new_file.mode));
    if (!deleted && d->status != GIT_DELTA_ADDED && d->old_file.mode != d->new_file.mode) {
      out.Raw("<span class='modechange'>[").Raw(ModeString(d->old_file.mode)).Raw("]</span>");
    }
    out.Raw("</td><td class='")
        .Raw(StatusClass(d->status))
        .Raw("'><a href='")
        .Raw(up)
        .Raw("diff/")
        .UrlPart(file, true);
    FragmentArgs(out, id, id2, options);
    out.Raw("'>").Text(file).Raw("</a>");
    if (d->status == GIT_DELTA_RENAMED) out.Raw(" (renamed from ").Text(d->old_file.path).Raw(")");
    out.Raw("</td>");
    if (s.binary) {
      out.Raw("<td class='right'>bin</td><td class='graph'>").Number(s.old_size).Raw(" -&gt; ");
      out.Number(s.new_size).Raw(" bytes</td></tr>\n");
      continue;
    }
    out.Raw("<td class='right'>").Number(s.added + s.removed).Raw("</td><td class='graph'>");
    char buf[256];
    const double total = static_cast<double>(max_changes == 0 ? 1 : max_changes);
    const double add = 100.0 * static_cast<double>(s.added) / total;
    const double rem = 100.0 * static_cast<double>(s.removed) / total;
    std::snprintf(
        buf, sizeof buf,
        "<table summary='file diffstat' width='%zu%%'><tr><td class='add' style='width: "
        "%.1f%%;'/><td class='rem' style='width: %.1f%%;'/><td class='none' style='width: "
        "%.1f%%;'/></tr></table>",
        std::min<size_t>(max_changes, 100), add, rem, 100.0 - add - rem);
    out.Raw(buf).Raw("</td></tr>\n");
  }
  out.Raw("</table><div class='diffstat-summary'>").Number(n).Raw(" files changed, ");
  out.Number(total_added).Raw(" insertions, ").Number(total_removed).Raw(" deletions</div>");
  if (options.dt == 2) return;  // "stat only"

  out.Raw("<table summary='diff' class='diff'><tr><td>");
  for (size_t i = 0; i < n; ++i) {
    if (!patches[i]) continue;
    const git_diff_delta* d = git_patch_get_delta(patches[i].get());
    WriteDiffHead(out, *d, id, old_id, up);
    if (stats[i].binary) {
      out.Raw("Binary files differ");
      continue;
    }
    WriteHunks(out, patches[i].get());
  }
  out.Raw("</td></tr></table>");
}

Page RenderFragment(const PageContext& ctx) {
  int status = 200;
  std::string reason;
  git_repository* repo = ctx.lease.repo();
  CommitPtr commit =
      ResolveCommit(repo, ctx.lease.refs(), ctx.route.id, ctx.route.head, &status, &reason);
  if (!commit) return ErrorPage(status, reason);
  CommitPtr other;
  if (!ctx.route.id2.empty()) {
    other = ResolveCommit(repo, ctx.lease.refs(), ctx.route.id2, "", &status, &reason);
    if (!other) return ErrorPage(status, reason);
  }
  WriteDiffFragment(ctx.out, repo, commit.get(), other.get(), ctx.route.diff, ctx.route.path);
  return Page{};
}

}  // namespace shellac::gitfrag

namespace shellac::gitfrag {

// The diff page: the options panel and the fragment, for `id` against `id2` (or its first parent).
Page RenderDiffPage(const PageContext& ctx) {
  int status = 200;
  std::string reason;
  git_repository* repo = ctx.lease.repo();
  // Both commits must exist in this repository before the shared fragment is included.
  CommitPtr commit =
      ResolveCommit(repo, ctx.lease.refs(), ctx.route.id, ctx.route.head, &status, &reason);
  if (!commit) return ErrorPage(status, reason);
  CommitPtr other;
  if (!ctx.route.id2.empty()) {
    other = ResolveCommit(repo, ctx.lease.refs(), ctx.route.id2, "", &status, &reason);
    if (!other) return ErrorPage(status, reason);
  }
  const std::string title =
      ctx.repo.name + " - " + (ctx.repo.desc.empty() ? "[no description]" : ctx.repo.desc);
  PageStart(ctx, title, "diff", ctx.route.id);
  WriteOptionsPanel(ctx, ctx.route.id);
  ctx.out.Raw("<esi:include src=\"")
      .Raw(ctx.site.FragmentUrl(ctx.route.repo, OidHex(*git_commit_id(commit.get())),
                                other ? OidHex(*git_commit_id(other.get())) : "", ctx.route.diff,
                                ctx.route.path))
      .Raw("\"/>");
  PageEnd(ctx.out);
  Page page;
  page.esi = true;
  return page;
}

}  // namespace shellac::gitfrag
