// The about page: the repository's readme (cgitrc readme= / repo.readme=, from the repository at a
// revision or from a file), written as it is (cgit does not escape it: the forge renders it through
// its about-filter), or through the about-filter, run as cgit runs it and bounded (filter.h). A
// readme in the repository is the readme part, keyed by its blob id, that the page includes.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gitfrag/filter.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {

namespace {

// The readme's bytes. False with *reason when it cannot be read. *id (when given, for a readme
// in the repository): its blob's id.
bool ReadReadme(const PageContext& ctx, const Readme& readme, std::string* bytes,
                std::string* reason, git_oid* id) {
  if (!readme.in_repo) {
    std::ifstream in(readme.file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
      *reason = "cannot read the readme " + readme.file;
      return false;
    }
    *bytes = std::move(text).str();
    return true;
  }
  const std::string spec = readme.ref + ":" + readme.file;
  const PackedReadsScope packed_reads;  // inflated by the pack reader
  git_object* raw = nullptr;
  // The blob ChooseReadme found, else the revision's (its lookups of refs and trees again).
  if ((readme.blob ? git_object_lookup(&raw, ctx.lease.repo(), &*readme.blob, GIT_OBJECT_BLOB)
                   : git_revparse_single(&raw, ctx.lease.repo(), spec.c_str())) != 0 ||
      git_object_type(raw) != GIT_OBJECT_BLOB) {
    if (raw != nullptr) git_object_free(raw);
    *reason = "cannot read the readme " + spec;
    return false;
  }
  const BlobPtr blob(reinterpret_cast<git_blob*>(raw));
  if (id != nullptr) *id = *git_blob_id(blob.get());
  bytes->assign(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                static_cast<size_t>(git_blob_rawsize(blob.get())));
  return true;
}

// The readme's bytes as the page shows them: raw, or through the about-filter (bounded; a filter
// that fails leaves what it wrote, then says why, and marks the page not to be stored).
void WriteReadme(const PageContext& ctx, const Readme& readme, std::string_view bytes, Page* page) {
  Writer& out = ctx.out;
  if (ctx.repo.about_filter.empty()) {
    out.Raw(bytes);
    return;
  }
  // What cgit tells its filters about the repository.
  const std::vector<std::string> env = {
      "CGIT_REPO_URL=" + ctx.repo.url,     "CGIT_REPO_NAME=" + ctx.repo.name,
      "CGIT_REPO_PATH=" + ctx.repo.path,   "CGIT_REPO_OWNER=" + ctx.repo.owner,
      "CGIT_REPO_DEFBRANCH=" + ctx.lease.refs().head_branch(),
      "CGIT_REPO_SECTION=" + ctx.repo.section, "CGIT_REPO_CLONE_URL=" + ctx.repo.clone_url,
  };
  const FilterResult result =
      RunFilter(ctx.repo.about_filter, readme.name, bytes, ctx.site.filter_limits(), env);
  out.Raw(result.output);
  if (!result.ok || !result.error.empty()) page->no_store = true;
  if (!result.ok) out.Raw("<div class='error'>about-filter: ").Text(result.error).Raw("</div>");
}

}  // namespace

Page RenderAbout(const PageContext& page_ctx) {
  if (page_ctx.route.slashless) {
    // cgit sends "/REPO/about" (no path, no slash) to "/REPO/about/" for good, without the query.
    Page page = ErrorPage(301, "the about page's address ends with a slash");
    page.body.clear();
    page.headers.emplace_back(
        "Location", UrlPath(page_ctx.chrome.virtual_root + page_ctx.repo.url + "/about/"));
    return page;
  }
  const Route link_route = LinkRoute(page_ctx);
  const PageContext ctx{page_ctx.site, page_ctx.chrome, link_route, page_ctx.repo, page_ctx.lease,
                        page_ctx.out};
  const std::optional<Readme> readme = ChooseReadme(page_ctx);
  if (!readme) {
    // Where cgit sends the reader: the repository's homepage, else its own "URL../" (the page's
    // URL without its slash: a path that names no page, as cgit writes it).
    Page page = ErrorPage(302, ctx.repo.readme.empty() ? "no readme is configured for this repository"
                                                       : "no readme at this revision");
    page.body.clear();
    page.headers.emplace_back(
        "Location", UrlPath(!ctx.repo.homepage.empty()
                                ? ctx.repo.homepage
                                : ctx.chrome.virtual_root + ctx.repo.url + "/about../"));
    return page;
  }
  // A readme in the repository is a part kept by its blob id (and the about-filter and the name
  // it is given), which every fork and branch with that readme shares: the page is a frame
  // around its include. The blob ChooseReadme found is not read here; without one (a name git
  // could resolve to another revision) the revision's blob is looked up for its id.
  std::optional<git_oid> blob = readme->in_repo ? readme->blob : std::nullopt;
  std::string bytes, reason;
  if (readme->in_repo && !blob) {
    if (!ReadReadme(ctx, *readme, &bytes, &reason, &blob.emplace())) return ErrorPage(404, reason);
  } else if (!readme->in_repo && !ReadReadme(ctx, *readme, &bytes, &reason, nullptr)) {
    return ErrorPage(404, reason);
  }
  Writer& out = ctx.out;
  Page page;
  PageStart(ctx, ctx.repo.name + " - " + (ctx.repo.desc.empty() ? "[no description]" : ctx.repo.desc),
            "about", ctx.route.id);
  out.Raw("<div id='summary'>");
  if (blob) {
    out.Include(
        ctx.site.ReadmeUrl(ctx.route.repo, OidHex(*blob), readme->name, page_ctx.route.head));
    page.esi = true;
  } else {
    WriteReadme(ctx, *readme, bytes, &page);
  }
  out.Raw("</div>");
  PageEnd(out);
  return page;
}

Page RenderReadme(const PageContext& ctx) {
  git_oid oid;
  if (!IsFullSha(ctx.route.id) || git_oid_fromstr(&oid, ctx.route.id.c_str()) != 0)
    return ErrorPage(404, "the readme part takes a full object id");
  // Only the readme this repository shows at h= (and, with an about-filter, by the name it is
  // given): any other blob is no page of this repository's, and its bytes would go out unescaped.
  std::optional<Readme> readme = ChooseReadme(ctx);
  if (readme && readme->in_repo && !readme->blob) {
    std::string ignored, reason;
    git_oid found;
    if (ReadReadme(ctx, *readme, &ignored, &reason, &found)) readme->blob = found;
  }
  if (!readme || !readme->blob || !git_oid_equal(&*readme->blob, &oid) ||
      (!ctx.repo.about_filter.empty() && readme->name != ctx.route.path))
    return ErrorPage(404, "no such readme: " + ctx.route.id);
  std::string bytes, reason;
  if (!ReadReadme(ctx, *readme, &bytes, &reason, nullptr)) return ErrorPage(404, reason);
  Page page;
  WriteReadme(ctx, *readme, bytes, &page);
  return page;
}

}  // namespace shellac::gitfrag
