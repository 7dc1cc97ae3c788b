#include "render.h"

namespace shellac::gitfrag {
Page RenderDiffPage(const PageContext&) {
  return ErrorPage(404, "not implemented");
}
Page RenderLog(const PageContext&) {
  return ErrorPage(404, "not implemented");
}
Page RenderIndex(const Chrome&, const std::vector<conf::Config::Repository>&) {
  return ErrorPage(404, "not implemented");
}
}  // namespace shellac::gitfrag
