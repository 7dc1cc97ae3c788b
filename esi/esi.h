// esi: the contract of the ESI engine, the one header other modules include. No I/O.
//
// What the rest of shellac may use (each header below says how; esi/README.md shows the flow):
//   Parser          esi/parser.h     body bytes, any chunking -> Template, once per stored object
//   Template        esi/template.h   the compiled page: instructions over spans of the stored body
//   Evaluate, Plan  esi/evaluate.h   one request's walk: variables, esi:choose, include URLs checked
//   Assembly        esi/assembly.h   a Plan run as its includes complete, output in document order
// esi/expr.h (variables and expressions) is internal; its request-facing types come through
// esi/evaluate.h.
#pragma once

#include "esi/assembly.h"
#include "esi/evaluate.h"
#include "esi/parser.h"
#include "esi/template.h"
