/*
 * test_core_context.c: contexts, status names, messages and misuse: bad options, NULL
 * arguments, swapped enums, garbage and foreign handles, memory claimed in the wrong location, the
 * memory limit, and that a failed call leaves the index answering as before.
 */
#include "check.h"
#include "core/core.h"
#include "keys_check.h"

static void statuses(void) {
  CASE(status_names);
  CHECK(strcmp(rdx_status_name(RDX_OK), "RDX_OK") == 0);
  CHECK(strcmp(rdx_status_name(RDX_ERR_PARSE), "RDX_ERR_PARSE") == 0);
  CHECK(strcmp(rdx_status_name((rdx_status)999), "RDX_UNKNOWN_STATUS") == 0);
  CHECK(strlen(rdx_status_string(RDX_ERR_DEVICE_OUT_OF_MEMORY)) > 5);
  CHECK_EQ(RDX_ERR_INTERNAL, 11); /* numbers are part of the ABI */
  CHECK_EQ(rdx_version_number(), RDX_VERSION_NUMBER);
  CHECK(strcmp(rdx_kind_name(RDX_KIND_BTREE), "btree") == 0);
  CHECK(rdx_kind_name((rdx_kind)RDX_BACKEND_CPU) == NULL); /* a swapped enum is not a kind */
}

static void context_options(void) {
  CASE(context_bad_options);
  rdx_context *c = NULL;
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = (rdx_backend)RDX_KIND_SORTED; /* swapped enum */
  CHECK_STATUS(c, rdx_context_create(&o, &c), RDX_ERR_INVALID_ARGUMENT);
  CHECK(c != NULL && strstr(rdx_context_message(c), "backend") != NULL);
  rdx_context_destroy(c);
  o = (rdx_context_options)RDX_CONTEXT_OPTIONS_INIT;
  o.memory_limit = -1;
  CHECK_STATUS(c, rdx_context_create(&o, &c), RDX_ERR_INVALID_ARGUMENT);
  rdx_context_destroy(c);
  CHECK_EQ(rdx_context_create(NULL, NULL), RDX_ERR_INVALID_ARGUMENT);
  /* a smaller (older) options struct is read up to its size */
  o = (rdx_context_options)RDX_CONTEXT_OPTIONS_INIT;
  o.size = offsetof(rdx_context_options, device);
  o.backend = RDX_BACKEND_CPU;
  CHECK_OK(c, rdx_context_create(&o, &c));
  CHECK_EQ(rdx_context_backend(c), RDX_BACKEND_CPU);
  rdx_context_destroy(c);
  rdx_context_destroy(NULL); /* accepted */
  CASE(info);
  rdx_info info;
  info.size = sizeof info;
  CHECK_EQ(rdx_info_get(&info), RDX_OK);
  CHECK(info.version != NULL && info.cpu_threads >= 1);
  info.size = 3;
  CHECK_EQ(rdx_info_get(&info), RDX_ERR_INVALID_ARGUMENT);
}

static void misuse(rdx_context *ctx) {
  uint32_t keys[] = {3, 1, 2, 3};
  uint32_t q[] = {3, 9};
  uint64_t out[2];
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  rdx_index *idx = NULL;

  CASE(build_bad_arguments);
  CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_host_array(keys, 4, RDX_U32), rdx_no_array(), &bo, NULL), RDX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_host_array(NULL, 4, RDX_U32), rdx_no_array(), &bo, &idx), RDX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(rdx_context_message(ctx), "keys.data is NULL") != NULL);
  CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_host_array(keys, 4, RDX_F32), rdx_no_array(), &bo, &idx), RDX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_host_array(keys, -1, RDX_U32), rdx_no_array(), &bo, &idx), RDX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_host_array(keys, 4, RDX_U32), rdx_host_array(keys, 3, RDX_U32), &bo, &idx),
               RDX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(rdx_context_message(ctx), "row_ids.count 3 != keys.count 4") != NULL);
  bo.kind = (rdx_kind)RDX_BACKEND_CUDA; /* swapped enum */
  CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_host_array(keys, 4, RDX_U32), rdx_no_array(), &bo, &idx), RDX_ERR_INVALID_ARGUMENT);
  bo = (rdx_build_options)RDX_BUILD_OPTIONS_INIT;
  bo.load_factor = 1.5;
  CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_host_array(keys, 4, RDX_U32), rdx_no_array(), &bo, &idx), RDX_ERR_INVALID_ARGUMENT);
  bo = (rdx_build_options)RDX_BUILD_OPTIONS_INIT;
  bo.bucket_size = 70000;
  CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_host_array(keys, 4, RDX_U32), rdx_no_array(), &bo, &idx), RDX_ERR_INVALID_ARGUMENT);
  CHECK(idx == NULL);
  bo = (rdx_build_options)RDX_BUILD_OPTIONS_INIT;
  /* a device pointer claimed on a CPU context */
  if (rdx_context_backend(ctx) == RDX_BACKEND_CPU) {
    CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_device_array(keys, 4, RDX_U32), rdx_no_array(), &bo, &idx),
                 RDX_ERR_INVALID_ARGUMENT);
    CHECK(strstr(rdx_context_message(ctx), "device memory") != NULL);
  } else {
    /* a host pointer claimed as device memory is caught, not dereferenced */
    CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_device_array(keys, 4, RDX_U32), rdx_no_array(), &bo, &idx),
                 RDX_ERR_INVALID_ARGUMENT);
    CHECK(strstr(rdx_context_message(ctx), "claimed as device memory") != NULL);
  }

  CASE(lookup_bad_arguments);
  CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(keys, 4, RDX_U32), rdx_no_array(), &bo, &idx));
  CHECK_STATUS(ctx, rdx_index_lookup(ctx, idx, rdx_host_array(q, 2, RDX_U64), rdx_host_array(out, 2, RDX_U64)),
               RDX_ERR_INVALID_ARGUMENT); /* query dtype != key dtype */
  CHECK(strstr(rdx_context_message(ctx), "dtype") != NULL);
  CHECK_STATUS(ctx, rdx_index_lookup(ctx, idx, rdx_host_array(q, 2, RDX_U32), rdx_host_array(out, 1, RDX_U64)),
               RDX_ERR_INVALID_ARGUMENT); /* output too short */
  CHECK_STATUS(ctx, rdx_index_lookup(ctx, idx, rdx_host_array(q, 2, RDX_U32), rdx_host_array(out, 2, RDX_U32)),
               RDX_ERR_INVALID_ARGUMENT); /* outputs are u64 */
  CHECK_STATUS(ctx, rdx_index_range_count(ctx, idx, rdx_host_array(q, 2, RDX_U32), rdx_host_array(out, 2, RDX_U64)),
               RDX_ERR_INVALID_ARGUMENT); /* bounds need 2 columns */
  {
    uint64_t offsets[3] = {0, 5, 9}, rows[4];
    uint32_t b[4] = {1, 3, 2, 2};
    CHECK_STATUS(ctx, rdx_index_range_fill(ctx, idx, rdx_host_matrix(b, 2, 2, RDX_U32), rdx_host_array(offsets, 3, RDX_U64),
                                           rdx_host_array(rows, 4, RDX_U64)),
                 RDX_ERR_INVALID_ARGUMENT); /* offsets[2] = 9 > 4 row slots */
    CHECK(strstr(rdx_context_message(ctx), "row_ids.count 4 < offsets[2] = 9") != NULL);
  }
  /* the index still answers after every failure */
  CHECK_OK(ctx, rdx_index_lookup(ctx, idx, rdx_host_array(q, 2, RDX_U32), rdx_host_array(out, 2, RDX_U64)));
  CHECK_EQ(out[0], 0);
  CHECK_EQ(out[1], RDX_MISS);

  CASE(foreign_and_garbage_handles);
  rdx_context *other = NULL;
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = RDX_BACKEND_CPU;
  CHECK_OK(other, rdx_context_create(&o, &other));
  CHECK_STATUS(other, rdx_index_lookup(other, idx, rdx_host_array(q, 2, RDX_U32), rdx_host_array(out, 2, RDX_U64)),
               RDX_ERR_MISUSE);
  CHECK(strstr(rdx_context_message(other), "another context") != NULL);
  rdx_context_destroy(other);
  /* memory that is not a handle is caught by the magic word */
  uint64_t garbage[16];
  memset(garbage, 0x5A, sizeof garbage);
  CHECK_STATUS(ctx, rdx_index_lookup(ctx, (const rdx_index *)(void *)garbage, rdx_host_array(q, 2, RDX_U32),
                                     rdx_host_array(out, 2, RDX_U64)),
               RDX_ERR_MISUSE);
  CHECK(strstr(rdx_context_message(ctx), "is not an index") != NULL);
  CHECK_STATUS(ctx, rdx_context_set_memory_limit((rdx_context *)(void *)garbage, 0), RDX_ERR_MISUSE);
  CHECK_EQ(rdx_index_count((const rdx_index *)(void *)garbage), 0);
  /* the index still answers: neither call above touched it */
  CHECK_OK(ctx, rdx_index_lookup(ctx, idx, rdx_host_array(q, 2, RDX_U32), rdx_host_array(out, 2, RDX_U64)));
  CHECK_EQ(out[0], 0);

  /* NULL is no handle at all, an invalid argument; queries refuse it and destroys accept it.
   * A destroyed handle is not tested: its memory is freed, and raydex.h makes any use of it
   * undefined (the magic word cannot be read from freed memory). */
  CASE(null_handles);
  CHECK_STATUS(ctx, rdx_index_lookup(ctx, NULL, rdx_host_array(q, 2, RDX_U32), rdx_host_array(out, 2, RDX_U64)),
               RDX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(rdx_context_message(ctx), "idx is NULL") != NULL);
  CHECK_STATUS(NULL, rdx_index_lookup(NULL, idx, rdx_host_array(q, 2, RDX_U32), rdx_host_array(out, 2, RDX_U64)),
               RDX_ERR_INVALID_ARGUMENT);
  CHECK_EQ(rdx_index_count(NULL), 0);
  rdx_index_destroy(idx); /* the last use of idx: after this any use is undefined */
  rdx_index_destroy(NULL);
  rdx_result_free(ctx, NULL);
  rdx_free(ctx, NULL, RDX_HOST);
  rdx_npy_free(NULL);
  rdx_context_destroy(NULL);
}

/* Sizes past what the account can count are refused before rounding, in every location. */
static void malloc_sizes(rdx_context *ctx) {
  CASE(malloc_sizes_past_the_account);
  static const size_t sizes[] = {SIZE_MAX, SIZE_MAX - 63, (size_t)INT64_MAX + 1};
  const rdx_location where[] = {RDX_HOST, RDX_DEVICE};
  int64_t before = 0, after = 0;
  rdx_context_memory(ctx, &before, NULL);
  for (int w = 0; w < (rdx_context_backend(ctx) == RDX_BACKEND_CPU ? 1 : 2); w++)
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      void *p = &after;
      CHECK_STATUS(ctx, rdx_malloc(ctx, &p, sizes[i], where[w]),
                   where[w] == RDX_HOST ? RDX_ERR_HOST_OUT_OF_MEMORY : RDX_ERR_DEVICE_OUT_OF_MEMORY);
      CHECK(p == NULL);
      CHECK(strstr(rdx_context_message(ctx), "2^63 - 1") != NULL);
    }
  rdx_context_memory(ctx, &after, NULL);
  CHECK_EQ(after, before);
  void *p = NULL;
  CHECK_OK(ctx, rdx_malloc(ctx, &p, 0, RDX_HOST)); /* a valid pointer for 0 bytes */
  CHECK(p != NULL);
  rdx_free(ctx, p, RDX_HOST);
}

/* Each variable the library reads, set to a value it does not accept, makes context creation
 * fail with a message naming the variable and the value, escaped. */
static void environment(void) {
  CASE(context_environment);
  static const struct {
    const char *name, *value, *shown;
  } bad[] = {{"RAYDEX_THREADS", "0", "'0'"},          {"RAYDEX_THREADS", "4097", "'4097'"},
             {"RAYDEX_THREADS", "8x", "'8x'"},        {"RAYDEX_THREADS", " 4", "' 4'"},
             {"RAYDEX_THREADS", "-1", "'-1'"},        {"RAYDEX_THREADS", "", "''"},
             {"RAYDEX_THREADS", "99999999999999999999", "'99999999999999999999'"},
             {"RAYDEX_TRACE", "yes", "'yes'"},
             {"RAYDEX_TRACE", "\x01\x7f\\", "'\\x01\\x7f\\\\'"}};
  /* the retired tuning knobs are no longer read: any value is ignored */
  static const struct {
    const char *name, *value;
  } good[] = {{"RAYDEX_THREADS", "1"},       {"RAYDEX_THREADS", "4096"},     {"RAYDEX_TRACE", ""},
              {"RAYDEX_SP_UPDATE", "merge"}, {"RAYDEX_SP_REACH", "0"},       {"RAYDEX_BVH", "3"},
              {"RAYDEX_CSR_SORT", "packedx"}, {"RAYDEX_FORK", "2"},          {"RAYDEX_STREAM_PRIO", "no"}};
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = RDX_BACKEND_CPU;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0] + sizeof good / sizeof good[0]; i++) {
    int is_bad = i < sizeof bad / sizeof bad[0];
    const char *name = is_bad ? bad[i].name : good[i - sizeof bad / sizeof bad[0]].name;
    const char *value = is_bad ? bad[i].value : good[i - sizeof bad / sizeof bad[0]].value;
    char *saved = getenv(name) ? strdup(getenv(name)) : NULL;
    setenv(name, value, 1);
    rdx_context *c = NULL;
    rdx_status st = rdx_context_create(&o, &c);
    if (is_bad) {
      char want[128];
      snprintf(want, sizeof want, "%s must be", name);
      if (st != RDX_ERR_INVALID_ARGUMENT || strstr(rdx_context_message(c), want) == NULL ||
          strstr(rdx_context_message(c), bad[i].shown) == NULL)
        CHECK_FAIL_("%s=%s: %s (%s)", name, bad[i].shown, rdx_status_name(st), rdx_context_message(c));
    } else if (st != RDX_OK) {
      CHECK_FAIL_("%s='%s' refused: %s", name, value, rdx_context_message(c));
    }
    rdx_context_destroy(c);
    if (saved) setenv(name, saved, 1);
    else unsetenv(name);
    free(saved);
  }
}

static void escape(void) {
  CASE(escape_untrusted_bytes);
  char e[16];
  CHECK(strcmp(rdx_escape(e, sizeof e, "ab\\c\x01\xff", 6), "ab\\\\c\\x01\\xff") == 0);
  CHECK(strcmp(rdx_escape(e, 8, "abcdefg", 7), "abcdefg") == 0);    /* exactly fits */
  CHECK(strcmp(rdx_escape(e, 8, "abcdefghij", 10), "abcd...") == 0); /* cut */
  CHECK(strcmp(rdx_escape(e, 8, "abc\x01", 4), "abc\\x01") == 0);
  CHECK(strcmp(rdx_escape(e, 8, "abcd\x01", 5), "abcd...") == 0);   /* no escape is split */
  CHECK(strcmp(rdx_escape(e, 8, "a\0b", 3), "a\\x00b") == 0);       /* NUL is a byte like any other */
  CHECK(strcmp(rdx_escape(e, 3, "abcdef", 6), "ab") == 0);          /* no room for "..." */
}

static void memory_limit(rdx_context *ctx) {
  CASE(memory_limit);
  enum { N = 100000 };
  uint32_t *keys = (uint32_t *)malloc(N * 4);
  for (int i = 0; i < N; i++) keys[i] = (uint32_t)check_rand_();
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  rdx_index *small = NULL, *big = NULL;
  CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(keys, 100, RDX_U32), rdx_no_array(), &bo, &small));
  int64_t before = 0;
  rdx_context_memory(ctx, &before, NULL);
  CHECK_OK(ctx, rdx_context_set_memory_limit(ctx, before + 4096));
  rdx_status st = rdx_index_build(ctx, rdx_host_array(keys, N, RDX_U32), rdx_no_array(), &bo, &big);
  CHECK(st == RDX_ERR_HOST_OUT_OF_MEMORY || st == RDX_ERR_DEVICE_OUT_OF_MEMORY);
  CHECK(big == NULL);
  CHECK(strstr(rdx_context_message(ctx), "limit") != NULL);
  int64_t after = 0;
  rdx_context_memory(ctx, &after, NULL);
  CHECK_EQ(after, before); /* nothing leaked by the failed build */
  uint64_t out[1];
  CHECK_OK(ctx, rdx_index_lookup(ctx, small, rdx_host_array(keys, 1, RDX_U32), rdx_host_array(out, 1, RDX_U64)));
  CHECK(out[0] < 100);
  CHECK_OK(ctx, rdx_context_set_memory_limit(ctx, 0));
  CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(keys, N, RDX_U32), rdx_no_array(), &bo, &big));
  int64_t resident = 0, peak = 0;
  CHECK_OK(ctx, rdx_index_bytes(ctx, big, &resident, &peak));
  CHECK(resident >= N * 8 && peak >= resident);
  rdx_index_destroy(big);
  rdx_index_destroy(small);
  free(keys);
}

/* RAYDEX_TRACE's lines go through the context's log function at debug level (no log_fn: stderr),
 * and a context's stream may be given a priority (GPU contexts; CPU contexts ignore it). */
typedef struct log_seen {
  int lines, level;
  char last[256];
} log_seen;
static void log_to(int level, const char *msg, void *user) {
  log_seen *s = (log_seen *)user;
  s->lines++;
  s->level = level;
  snprintf(s->last, sizeof s->last, "%s", msg);
}
static void trace_and_priority(void) {
  CASE(context_trace_to_log);
  setenv("RAYDEX_TRACE", "1", 1); /* read at the process's first mark: none came before */
  log_seen seen = {0, 0, ""};
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = check_backend_;
  o.log_fn = log_to;
  o.log_user = &seen;
  o.stream_priority = -1; /* greater than the default where the device has priorities */
  rdx_context *c = NULL;
  CHECK_OK(c, rdx_context_create(&o, &c));
  if (c != NULL) {
    rdx_trace(c, "a mark");
    CHECK_EQ(seen.lines, 1);
    CHECK_EQ(seen.level, RDX_LOG_DEBUG);
    CHECK(strncmp(seen.last, "[raydex trace]", 14) == 0 && strstr(seen.last, "a mark") != NULL);
  }
  rdx_context_destroy(c);
  unsetenv("RAYDEX_TRACE");
}

/* rdx_context_wait_stream: the legacy default stream (1) and the thread's (2) on a GPU, nothing to
 * wait for on a CPU; a destroyed or NULL context refused. */
static void wait_stream(rdx_context *ctx) {
  CASE(wait_stream);
  CHECK_OK(ctx, rdx_context_wait_stream(ctx, (void *)1));
  CHECK_OK(ctx, rdx_context_wait_stream(ctx, (void *)2));
  CHECK_OK(ctx, rdx_context_wait_stream(ctx, NULL));
  CHECK(rdx_context_wait_stream(NULL, (void *)1) != RDX_OK);
  /* the context still answers afterwards */
  uint32_t keys[4] = {9, 2, 7, 2};
  uint64_t got[2] = {0, 0};
  uint32_t q[2] = {2, 5};
  rdx_index *idx = NULL;
  CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(keys, 4, RDX_U32), rdx_no_array(), NULL, &idx));
  CHECK_OK(ctx, rdx_index_lookup(ctx, idx, rdx_host_array(q, 2, RDX_U32), rdx_host_array(got, 2, RDX_U64)));
  CHECK_EQ(got[0], 1);
  CHECK_EQ(got[1], RDX_MISS);
  rdx_index_destroy(idx);
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  wait_stream(ctx);
  if (getenv("RAYDEX_TRACE") == NULL) trace_and_priority(); /* it sets the variable itself */
  statuses();
  context_options();
  misuse(ctx);
  malloc_sizes(ctx);
  environment();
  escape();
  memory_limit(ctx);
  return check_end(ctx);
}
