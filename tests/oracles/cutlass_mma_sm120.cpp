// CuTe's SM120 warp-level MMA atoms of the .kind:: forms (cute/atom/mma_traits_sm120.hpp and
// mma_traits_sm120_sparse.hpp), evaluated on the host from CUTLASS's headers and printed as one JSON document. Read
// by tests/test_mma_sync_sm120.py (through tests/oracles/cutlass_cpp.py). Only CuTe layouts are evaluated: no device
// code runs, and the atoms' asm strings are not evaluated here (the test reads those from the header's text).
//
//   atoms[]  name, m, n, k, vs (the traits' SFVecSize, 0 without scale factors), and each layout the atom has as
//            (thread, value) -> coordinate, thread-major: a = [[m, k], ...], b = [[n, k], ...], c = [[m, n], ...],
//            sfa = [[m, k], ...], sfb = [[n, k], ...], e = [[m, k], ...] (the sparse atoms' metadata)
#include <cstdio>
#include <string>

#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm120.hpp>
#include <cute/atom/mma_traits_sm120_sparse.hpp>

using namespace cute;
using cutlass::float_e2m1_t; using cutlass::float_e3m2_t; using cutlass::float_e4m3_t;
using cutlass::float_ue8m0_t; using cutlass::float_ue4m3_t;

static std::string out;
static void emitf(const char* fmt, long a = 0, long b = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  out += buf;
}

// (thread, value) -> (idx % rows, idx / rows) of a column-major rows x cols coordinate space
template <class L>
static void coords(const char* key, L layout, int rows) {
  out += std::string("\"") + key + "\":[";
  for (int t = 0; t < int(size<0>(layout)); ++t)
    for (int v = 0; v < int(size<1>(layout)); ++v) {
      int idx = int(layout(t, v));
      emitf("[%ld,%ld],", idx % rows, idx / rows);
    }
  out.pop_back();
  out += "],";
}

// whether the traits have scale-factor layouts (the block-scaled atoms) / a metadata layout (the sparse atoms)
template <class T, class = void> struct has_sf : std::false_type {};
template <class T> struct has_sf<T, std::void_t<typename T::SFALayout>> : std::true_type {};
template <class T, class = void> struct has_e : std::false_type {};
template <class T> struct has_e<T, std::void_t<typename T::ELayout>> : std::true_type {};

template <class Op>
static void atom(const char* name) {
  using T = MMA_Traits<Op>;
  constexpr int M = size<0>(typename T::Shape_MNK{});
  constexpr int N = size<1>(typename T::Shape_MNK{});
  constexpr int K = size<2>(typename T::Shape_MNK{});
  out += std::string("{\"name\":\"") + name + "\",";
  emitf("\"m\":%ld,\"n\":%ld,", M, N);
  emitf("\"k\":%ld,", K);
  if constexpr (has_sf<T>::value) emitf("\"vs\":%ld,", T::SFVecSize); else emitf("\"vs\":0,");
  coords("a", typename T::ALayout{}, M);
  coords("b", typename T::BLayout{}, N);
  coords("c", typename T::CLayout{}, M);
  if constexpr (has_sf<T>::value) {
    coords("sfa", typename T::SFALayout{}, M);
    coords("sfb", typename T::SFBLayout{}, N);
  }
  if constexpr (has_e<T>::value) coords("e", typename T::ELayout{}, M);
  out.pop_back();
  out += "},";
}

#define ATOM(...) atom<__VA_ARGS__>(#__VA_ARGS__)

int main() {
  out += "{\"atoms\":[";
  ATOM(SM120_16x8x32_TN<float_e2m1_t, float_e3m2_t, float>);
  ATOM(SM120::BLOCKSCALED::SM120_16x8x32_TN_VS<float_e4m3_t, float_e2m1_t, float, float_ue8m0_t, 32>);
  ATOM(SM120::BLOCKSCALED::SM120_16x8x64_TN_VS<float_e2m1_t, float_e2m1_t, float, float_ue8m0_t, 32>);
  ATOM(SM120::BLOCKSCALED::SM120_16x8x64_TN_VS<float_e2m1_t, float_e2m1_t, float, float_ue4m3_t, 16>);
  ATOM(SM120::SPARSE::SM120_SPARSE_16x8x64_TN<float_e3m2_t, float_e2m1_t, float>);
  ATOM(SM120::BLOCKSCALED::SPARSE::SM120_SPARSE_16x8x64_TN_VS<float_e4m3_t, float_e4m3_t, float, float_ue8m0_t, 64>);
  ATOM(SM120::BLOCKSCALED::SPARSE::SM120_SPARSE_16x8x128_TN_VS<float_e2m1_t, float_e2m1_t, float, float_ue4m3_t, 32>);
  out.pop_back();
  out += "]}";
  std::puts(out.c_str());
  return 0;
}
