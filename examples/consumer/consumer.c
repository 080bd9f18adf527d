/* An outside consumer of the installed fusegen package through the C API:
 * loads a spec, lists its tensors, asks for output shapes and checks that
 * errors come back as statuses with messages. A call is attempted with a
 * fake (aligned) pointer only when there is no driver, where it must fail
 * with FUSEGEN_ERROR_NO_DRIVER after passing every argument check. */
#include "fusegen.h"

#include <stdio.h>
#include <string.h>

static const char* kSpec = "fusion scale_relu {\n"
                           "  input x : f32[N, 64]\n"
                           "  output y = relu(x) * 2.0\n"
                           "}\n";

static int check(fusegen_status status, const char* what) {
  if (status != FUSEGEN_OK) {
    fprintf(stderr, "consumer_c: %s failed (%s): %s\n", what, fusegen_status_name(status), fusegen_last_error());
    return 1;
  }
  return 0;
}

int main(void) {
  fusegen_runtime_options options;
  fusegen_runtime* rt = NULL;
  fusegen_program* prog = NULL;
  fusegen_function* fn = NULL;
  int32_t i, count, failed = 0;
  int64_t shape[2] = {5, 64}, out_shape[2] = {0, 0};
  fusegen_tensor arg;
  fusegen_status status;

  printf("consumer_c: fusegen %s, C API %d\n", fusegen_version(), (int)fusegen_c_api_version());
  fusegen_runtime_options_init(&options);
  options.disk_cache = 0;
  if (check(fusegen_runtime_create(0, &options, &rt), "fusegen_runtime_create"))
    return 1;

  /* A spec error: a status and a message with file:line:col. */
  status = fusegen_program_load_string(rt, "fusion broken {\n  input x : f32[N]\n  output y = nosuchop(x)\n}\n",
                                       "broken.fg", &prog);
  if (status != FUSEGEN_ERROR_SPEC || strstr(fusegen_last_error(), "broken.fg:3:") == NULL) {
    fprintf(stderr, "consumer_c: expected a spec error at broken.fg:3, got %s: %s\n", fusegen_status_name(status),
            fusegen_last_error());
    failed = 1;
  }

  if (check(fusegen_program_load_string(rt, kSpec, "consumer.fg", &prog), "load") ||
      check(fusegen_program_function(prog, "scale_relu", &fn), "function"))
    return 1;
  printf("consumer_c: %s\n", fusegen_function_signature(fn));
  count = fusegen_function_tensor_count(fn);
  for (i = 0; i < count; ++i) {
    fusegen_tensor_info info;
    if (check(fusegen_function_tensor_info(fn, i, &info), "tensor_info"))
      return 1;
    printf("consumer_c: tensor %s kind %d rank %d first dim %s\n", info.name, (int)info.kind, (int)info.rank,
           info.rank > 0 ? info.dims[0] : "-");
  }

  arg.name = "x";
  arg.data = NULL;
  arg.shape = shape;
  arg.rank = 2;
  arg.dtype = FUSEGEN_FLOAT32;
  if (check(fusegen_function_output_shapes(fn, &arg, 1, out_shape, 2), "output_shapes"))
    return 1;
  if (out_shape[0] != 5 || out_shape[1] != 64) {
    fprintf(stderr, "consumer_c: output shape [%lld, %lld], expected [5, 64]\n", (long long)out_shape[0],
            (long long)out_shape[1]);
    failed = 1;
  }

  /* Wrong rank: an argument error, before any driver call. */
  arg.rank = 1;
  status = fusegen_function_call(fn, &arg, 1, NULL, 0, NULL);
  if (status != FUSEGEN_ERROR_ARGUMENT) {
    fprintf(stderr, "consumer_c: expected an argument error, got %s\n", fusegen_status_name(status));
    failed = 1;
  } else {
    printf("consumer_c: bad call rejected: %s\n", fusegen_last_error());
  }

  if (fusegen_runtime_device(rt, NULL, NULL) == FUSEGEN_ERROR_NO_DRIVER)
    printf("consumer_c: no GPU here (%s)\n", fusegen_last_error());
  else
    printf("consumer_c: a GPU is present; the C++ consumer runs the fusion there\n");

  fusegen_function_destroy(fn);
  fusegen_program_destroy(prog);
  fusegen_runtime_destroy(rt);
  printf("consumer_c: %s\n", failed ? "FAILED" : "ok");
  return failed;
}
