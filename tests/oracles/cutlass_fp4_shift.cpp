// Host program: what CUTLASS's fp4_shift_A / fp4_shift_B (cute/atom/mma_traits_sm120.hpp) do to A / B registers of
// kind::f8f6f4 MMAs, as one JSON document. CUTLASS's comment there: ld.matrix b4x16_p64 leaves an e2m1 value in the
// low four bits of its 8-bit container, "whereas MMA F8F6F4 expects the four-bit data to be in the middle of the
// eight-bit container", so CUTLASS shifts e2m1 registers left by two bits; "NOT needed for FP6 and FP8".
//
//   {"a": [[atype, btype, in, out], ...]}: for each pairing, one 32-bit A register holding four 8-bit containers
//   with the value's bits in the low bits (in) and the register after CUTLASS's fp4_shift_A (out).
// Nothing here re-implements NVIDIA's logic: fp4_shift_A/B are CUTLASS's; this file only enumerates inputs.
#include <cstdint>
#include <cstdio>

#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm120.hpp>

using namespace cute;
using cutlass::float_e2m1_t; using cutlass::float_e2m3_t; using cutlass::float_e3m2_t;
using cutlass::float_e4m3_t; using cutlass::float_e5m2_t;

template <class T> constexpr const char* tname();
template <> constexpr const char* tname<float_e2m1_t>() { return "e2m1"; }
template <> constexpr const char* tname<float_e2m3_t>() { return "e2m3"; }
template <> constexpr const char* tname<float_e3m2_t>() { return "e3m2"; }
template <> constexpr const char* tname<float_e4m3_t>() { return "e4m3"; }
template <> constexpr const char* tname<float_e5m2_t>() { return "e5m2"; }

static bool first = true;

template <class A, class B, bool IsA>
void one(uint32_t in) {
  using Op = SM120_16x8x32_TN<A, B, float>;
  uint32_t regs[4] = {in, in, in, in};
  auto t = make_tensor(&regs[0], Layout<_4>{});
  if constexpr (IsA) fp4_shift_A(Op{}, t); else fp4_shift_B(Op{}, t);
  printf("%s[\"%s\",\"%s\",%u,%u]", first ? "" : ",", tname<A>(), tname<B>(), in, regs[0]);
  first = false;
}

template <class A, class B, bool IsA>
void all_inputs() {
  // every 4-bit value in each of the four containers, and a few 6-bit ones (low bits of the byte)
  for (uint32_t v = 0; v < 16; ++v) one<A, B, IsA>(v | v << 8 | ((15 - v) << 16) | (v << 24));
  for (uint32_t v : {0x3Fu, 0x2Au, 0x15u}) one<A, B, IsA>(v | v << 8 | v << 16 | v << 24);
}

template <bool IsA>
void pairs() {
  all_inputs<float_e2m1_t, float_e2m1_t, IsA>();
  all_inputs<float_e2m1_t, float_e4m3_t, IsA>();
  all_inputs<float_e4m3_t, float_e2m1_t, IsA>();
  all_inputs<float_e2m3_t, float_e2m1_t, IsA>();
  all_inputs<float_e3m2_t, float_e3m2_t, IsA>();
  all_inputs<float_e4m3_t, float_e4m3_t, IsA>();
  all_inputs<float_e5m2_t, float_e2m3_t, IsA>();
}

int main() {
  printf("{\"a\": [");
  pairs<true>();
  printf("]}\n");
  return 0;
}
