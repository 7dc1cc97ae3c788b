// The embedded stylesheet and logo (assets.cc).
#pragma once

#include <string_view>

namespace shellac::proxy {

extern const std::string_view kStylesheet;  // text/css
extern const std::string_view kLogo;        // image/svg+xml

}  // namespace shellac::proxy
