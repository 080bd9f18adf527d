/* fusegen.h must compile as C99 (it is the API for other languages). */
#include "fusegen.h"

int fusegen_header_is_c(void);
int fusegen_header_is_c(void) {
  fusegen_tensor tensor = {0};
  fusegen_runtime_options options;
  fusegen_runtime_options_init(&options);
  return tensor.rank + options.disk_cache;
}
