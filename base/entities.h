// base/entities: the five predefined XML entities, as ESI decodes them in attribute values
// (an include's src, a when's test). Varnish decodes exactly these; numeric references (&#38;)
// and any other name are left as written. One pass: "&amp;lt;" becomes "&lt;", never "<".
#pragma once

#include <string>
#include <string_view>

namespace shellac::base {

// Appends `s` to `out` with &amp; &lt; &gt; &quot; &apos; replaced by their characters.
void AppendXmlDecoded(std::string_view s, std::string* out);
// `s` with the five entities decoded.
std::string XmlDecoded(std::string_view s);

}  // namespace shellac::base
