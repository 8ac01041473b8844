/*
 * test_core_staging.c: copies between host memory and the device (core/staging.cu): through a
 * staging ring whose slots are smaller than one row (3 bytes) and through one whose copies span
 * several slots and end inside one, against the driver's direct copy; from pageable and pinned
 * host memory; the ring in the memory account; a context whose memory limit is below the ring
 * copies without one. On cpu: no ring, and rdx_copy between host buffers still works.
 */
#include "check.h"

static unsigned char *random_bytes(size_t n) {
  unsigned char *p = (unsigned char *)malloc(n ? n : 1);
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)check_rand_();
  return p;
}

static rdx_context *gpu_context(size_t staging, int64_t limit, int mode) {
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = check_backend_;
  o.staging_bytes = staging;
  o.memory_limit = limit;
  rdx_context *c = NULL;
  rdx_status st = rdx_context_create(&o, &c);
  if (st != RDX_OK) {
    CHECK_FAIL_("context with a staging ring of %zu bytes: %s", staging, rdx_context_message(c));
    rdx_context_destroy(c);
    return NULL;
  }
  rdx_staging_force(c, mode);
  return c;
}

/* n bytes to the device from `from` (pageable or pinned) and back into pageable and pinned
 * memory, each compared byte for byte; device memory filled with a pattern first, so a chunk never
 * written shows. */
static void round_trip(rdx_context *c, size_t n, int pinned_src) {
  unsigned char *want = random_bytes(n), *src = want, *pin_src = NULL, *pin_dst = NULL;
  void *dev = NULL;
  if (pinned_src) {
    CHECK_OK(c, rdx_malloc(c, (void **)&pin_src, n, RDX_HOST_PINNED));
    if (pin_src) memcpy(pin_src, want, n);
    src = pin_src;
  }
  CHECK_OK(c, rdx_malloc(c, &dev, n, RDX_DEVICE));
  CHECK_OK(c, rdx_malloc(c, (void **)&pin_dst, n, RDX_HOST_PINNED));
  unsigned char *back = (unsigned char *)malloc(n ? n : 1);
  memset(back, 0xA5, n);
  if (src && dev && pin_dst) {
    CHECK_OK(c, rdx_copy(c, dev, RDX_DEVICE, back, RDX_HOST, n)); /* the pattern */
    CHECK_OK(c, rdx_copy(c, dev, RDX_DEVICE, src, pinned_src ? RDX_HOST_PINNED : RDX_HOST, n));
    CHECK_OK(c, rdx_copy(c, back, RDX_HOST, dev, RDX_DEVICE, n));
    if (memcmp(back, want, n) != 0) CHECK_FAIL_("%zu bytes from %s memory: pageable copy back differs", n, pinned_src ? "pinned" : "pageable");
    CHECK_OK(c, rdx_copy(c, pin_dst, RDX_HOST_PINNED, dev, RDX_DEVICE, n));
    if (memcmp(pin_dst, want, n) != 0) CHECK_FAIL_("%zu bytes: pinned copy back differs", n);
  }
  rdx_free(c, dev, RDX_DEVICE);
  rdx_free(c, pin_dst, RDX_HOST_PINNED);
  rdx_free(c, pin_src, RDX_HOST_PINNED);
  free(back);
  free(want);
}

static void tiny_ring(void) {
  CASE(ring_of_3_byte_slots);
  rdx_context *c = gpu_context(12, 0, 1 /* RDX_STAGING_RING */);
  if (!c) return;
  CHECK_EQ(rdx_staging_bytes(c), 12);
  int64_t in_use = 0;
  rdx_context_memory(c, &in_use, NULL);
  CHECK_EQ(in_use, 12); /* the account holds the ring */
  static const size_t sizes[] = {1, 2, 3, 4, 5, 7, 11, 12, 13, 24, 25, 100, 1001, 4099};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    round_trip(c, sizes[i], 0);
    round_trip(c, sizes[i], 1);
  }
  CHECK_EQ(check_held(c), 0);
  rdx_context_destroy(c);
}

static void chunked_ring(void) {
  CASE(ring_spanning_slots);
  /* slots of 1 MiB + 5: the copies below span up to ten and end inside one */
  for (int mode = 0; mode < 3; mode++) { /* AUTO, RING, DIRECT */
    rdx_context *c = gpu_context(4 * (((size_t)1 << 20) + 5), 0, mode);
    if (!c) return;
    static const size_t sizes[] = {((size_t)1 << 20) + 5, ((size_t)1 << 20) + 6, (size_t)3 << 20, ((size_t)10 << 20) + 7,
                                   ((size_t)256 << 10) - 1, 0};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      round_trip(c, sizes[i], 0);
      round_trip(c, sizes[i], 1);
    }
    CHECK_EQ(check_held(c), 0);
    rdx_context_destroy(c);
  }
}

static void default_and_limited(void) {
  CASE(ring_default_and_limited);
  rdx_context *c = gpu_context(0, 0, 0);
  if (c) {
    CHECK_EQ(rdx_staging_bytes(c), (size_t)64 << 20);
    round_trip(c, ((size_t)200 << 20) + 3, 0); /* more than three rings' worth */
    rdx_context_destroy(c);
  }
  /* a memory limit below the ring: no ring, and copies work as the driver does them */
  c = gpu_context(0, (int64_t)32 << 20, 0);
  if (c) {
    CHECK_EQ(rdx_staging_bytes(c), 0);
    int64_t in_use = -1;
    rdx_context_memory(c, &in_use, NULL);
    CHECK_EQ(in_use, 0);
    round_trip(c, ((size_t)5 << 20) + 1, 0);
    rdx_context_destroy(c);
  }
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  if (check_backend_ == RDX_BACKEND_CPU) {
    CASE(cpu_has_no_ring);
    CHECK_EQ(rdx_staging_bytes(ctx), 0);
    unsigned char *a = random_bytes(1000), b[1000];
    CHECK_OK(ctx, rdx_copy(ctx, b, RDX_HOST, a, RDX_HOST, 1000));
    CHECK(memcmp(a, b, 1000) == 0);
    free(a);
    return check_end(ctx);
  }
  tiny_ring();
  chunked_ring();
  default_and_limited();
  return check_end(ctx);
}
