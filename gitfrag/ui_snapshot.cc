// The snapshot page: an archive of a commit's tree under cgit 1.2.3's URL rules, streamed.
//
// cgit maps "/REPO/snapshot/NAME.EXT" to a revision and a prefix: without h= or id=, NAME itself
// if it names a revision, else NAME without the repository's snapshot prefix (its basename) and
// the '-'/'_' after it, then that with "v" and "V" in front; the archive's folder is then NAME.
// With h= or id= the revision is id= (else h=) and the folder is the snapshot prefix.
#include <cstring>
#include <string>

#include "gitfrag/archive.h"
#include "gitfrag/archive_attributes.h"
#include "gitfrag/render.h"
#include "gitfrag/snapshot_cache.h"

namespace shellac::gitfrag {

namespace {

// The object `spec` names (ids and ref names, as ResolveCommit accepts), or false.
bool Names(git_repository* repo, const std::string& spec) {
  int status = 0;
  std::string reason;
  return ResolveObject(repo, spec, &status, &reason) != nullptr;
}

// cgit's get_ref_from_filename: the revision a snapshot's file name stands for, or "".
std::string RevisionFromName(git_repository* repo, std::string_view name,
                             std::string_view prefix) {
  std::string snapshot(name);
  if (Names(repo, snapshot)) return snapshot;
  if (snapshot.starts_with(prefix)) {
    size_t start = prefix.size();
    while (start < snapshot.size() && (snapshot[start] == '-' || snapshot[start] == '_')) ++start;
    snapshot.erase(0, start);
  }
  if (Names(repo, snapshot)) return snapshot;
  if (Names(repo, "v" + snapshot)) return "v" + snapshot;
  if (Names(repo, "V" + snapshot)) return "V" + snapshot;
  return {};
}

}  // namespace

std::string SnapshotPrefix(const conf::Config::Repository& repo) {
  if (!repo.snapshot_prefix.empty()) return repo.snapshot_prefix;
  // cgit's repo basename: the URL's last segment without a trailing ".git".
  std::string_view url = repo.url;
  if (url.size() >= 4 && url.ends_with(".git")) url.remove_suffix(4);
  while (url.size() > 1 && url.ends_with('/')) url.remove_suffix(1);
  const size_t slash = url.rfind('/');
  return std::string(slash == std::string_view::npos ? url : url.substr(slash + 1));
}

Page RenderSnapshot(const PageContext& ctx) {
  const Route& r = ctx.route;
  const std::string& filename = r.path;
  if (filename.empty()) return ErrorPage(400, "No snapshot name specified");
  const SnapshotFormat* format = SnapshotFormatOf(filename);
  if (!format || !(ctx.repo.snapshots & format->bit) || !format->rendered)
    return ErrorPage(400, "Unsupported snapshot format: " + filename);
  git_repository* repo = ctx.lease.repo();
  std::string revision = r.id;
  std::string prefix;
  if (revision.empty() && r.head.empty()) {
    const std::string name = filename.substr(0, filename.size() - strlen(format->suffix));
    revision = RevisionFromName(repo, name, SnapshotPrefix(ctx.repo));
    if (revision.empty()) return ErrorPage(404, "Not found: no revision is named by " + filename);
    prefix = name;
  }
  if (revision.empty()) revision = r.head;
  if (prefix.empty()) prefix = SnapshotPrefix(ctx.repo);
  int status = 0;
  std::string reason;
  ObjectPtr object = ResolveObject(repo, revision.empty() ? "HEAD" : revision, &status, &reason);
  if (!object) return ErrorPage(404, "Bad object id: " + (revision.empty() ? "HEAD" : revision));
  git_object* peeled = nullptr;
  if (git_object_peel(&peeled, object.get(), GIT_OBJECT_COMMIT) != 0)
    return ErrorPage(400, "Not a commit reference: " + revision);
  const ObjectPtr commit(peeled);
  // The archive depends on the commit (tree, id, time), the format, the folder and what outside
  // the tree can change it (archive_attributes.h): one kept copy serves every fork, branch and
  // spelling of the URL that have those in common (snapshot_cache.h).
  const git_oid& id = *git_object_id(commit.get());
  std::string key = OidHex(id) + " " + format->suffix + " " + prefix;
  const ArchiveSources sources(repo);
  if (const std::string digest = sources.Digest(); !digest.empty()) key += " " + digest;
  std::string error;
  std::unique_ptr<BodyStream> stream = Snapshots().Open(
      key,
      [&](std::string* why) {
        return MakeArchiveStream(ctx.repo.path, id, format->format, prefix, ctx.lease.abbrev(),
                                 sources, why);
      },
      &error);
  if (!stream) return ErrorPage(500, error);
  Page page;
  page.content_type = std::string(format->mimetype) + "; charset=UTF-8";  // cgit adds its charset
  page.stream = std::move(stream);
  page.headers.emplace_back("Content-Disposition",
                            "inline; filename=\"" + QuotedFilename(filename) + "\"");
  // cgit's validator, the object id, but weak: two makes of one archive hold the same files and
  // need not be the same compressed bytes (gitfrag/README.md, snapshots).
  page.headers.emplace_back("ETag", "W/\"" + OidHex(*git_object_id(object.get())) + "\"");
  return page;
}

}  // namespace shellac::gitfrag
