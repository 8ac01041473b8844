/* The public header compiles as strict C11, and twice in one translation unit. */
#include "raydex.h"
#include "raydex.h"

int raydex_header_c_check(void);
int raydex_header_c_check(void) {
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  rdx_build_options b = RDX_BUILD_OPTIONS_INIT;
  rdx_array a = rdx_host_array(0, 0, RDX_U32);
  return (int)o.size + (int)b.size + (int)a.count + RDX_VERSION_NUMBER;
}
