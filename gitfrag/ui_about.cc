// The about page: the repository's readme (cgitrc readme= / repo.readme=, from the repository at a
// revision or from a file), written as it is (cgit does not escape it: the forge renders it through
// its about-filter), or through the about-filter, run as cgit runs it and bounded (filter.h).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gitfrag/filter.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {

namespace {

// The readme's bytes. False with *reason when it cannot be read.
bool ReadReadme(const PageContext& ctx, const Readme& readme, std::string* bytes,
                std::string* reason) {
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
  bytes->assign(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                static_cast<size_t>(git_blob_rawsize(blob.get())));
  return true;
}

}  // namespace

Page RenderAbout(const PageContext& page_ctx) {
  const Route link_route = LinkRoute(page_ctx);
  const PageContext ctx{page_ctx.site, page_ctx.chrome, link_route, page_ctx.repo, page_ctx.lease,
                        page_ctx.out};
  const std::optional<Readme> readme = ChooseReadme(page_ctx);
  if (!readme) {
    return ErrorPage(404, ctx.repo.readme.empty() ? "no readme is configured for this repository"
                                                  : "no readme at this revision");
  }
  std::string bytes, reason;
  if (!ReadReadme(ctx, *readme, &bytes, &reason)) return ErrorPage(404, reason);
  Writer& out = ctx.out;
  PageStart(ctx, ctx.repo.name + " - " + (ctx.repo.desc.empty() ? "[no description]" : ctx.repo.desc),
            "about", ctx.route.id);
  out.Raw("<div id='summary'>");
  if (ctx.repo.about_filter.empty()) {
    out.Raw(bytes);
  } else {
    // What cgit tells its filters about the repository.
    const std::vector<std::string> env = {
        "CGIT_REPO_URL=" + ctx.repo.url,     "CGIT_REPO_NAME=" + ctx.repo.name,
        "CGIT_REPO_PATH=" + ctx.repo.path,   "CGIT_REPO_OWNER=" + ctx.repo.owner,
        "CGIT_REPO_DEFBRANCH=" + ctx.lease.refs().head_branch(),
        "CGIT_REPO_SECTION=" + ctx.repo.section, "CGIT_REPO_CLONE_URL=" + ctx.repo.clone_url,
    };
    const FilterResult result =
        RunFilter(ctx.repo.about_filter, readme->name, bytes, ctx.site.filter_limits(), env);
    out.Raw(result.output);
    if (!result.ok) out.Raw("<div class='error'>about-filter: ").Text(result.error).Raw("</div>");
  }
  out.Raw("</div>");
  PageEnd(out);
  return Page{};
}

}  // namespace shellac::gitfrag
