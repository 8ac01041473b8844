// The public header compiles as C++ (extern "C", no C-only constructs).
#include "raydex.h"

int raydex_header_cxx_check();
int raydex_header_cxx_check() {
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  rdx_array a = rdx_device_matrix(nullptr, 0, 2, RDX_U64);
  return static_cast<int>(o.size) + a.columns;
}
