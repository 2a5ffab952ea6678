// CuTe's warp-level MMA atoms (SM70 quad-pair f16, SM75, SM80, SM89, SM90 f64) and ldmatrix / stmatrix copy atoms,
// evaluated on the host from CUTLASS's headers and printed as one JSON document. Read by
// tests/test_mma_sync_vs_cutlass.py (through tests/oracles/cutlass_cpp.py). Only CuTe layouts are evaluated (no
// device code runs).
//
//   mma[]   name, M, N, K, thr (ThrID: logical thread -> lane), and for A, B, C each layout's (thread, value) ->
//           coordinate, flattened thread-major: a = [[m, k], ...], b = [[n, k], ...], c = [[m, n], ...]; an atom
//           whose ALayout does not compile has no "a"
//   copy[]  name, src / dst: (thread, value) -> bit of the 8x8 .b16 matrices, flattened thread-major, with values
//           per thread
//   sparse  SM120's sparse 16x8x64 f8 atom: A (logical (m, k) of each (thread, value)) and E (metadata), the only
//           CuTe atom of a warp-level mma.sp
#include <cstdio>
#include <string>

#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm70.hpp>
#include <cute/atom/mma_traits_sm75.hpp>
#include <cute/atom/mma_traits_sm80.hpp>
#include <cute/atom/mma_traits_sm89.hpp>
#include <cute/atom/mma_traits_sm90.hpp>
#include <cute/atom/mma_traits_sm120_sparse.hpp>
#include <cute/atom/copy_traits_sm75.hpp>
#include <cute/atom/copy_traits_sm90.hpp>

using namespace cute;

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

// with_a false: the atom's ALayout does not compile when evaluated (SM80_16x8x128_S32U1U1S32_TN_XORPOPC's stride is
// Stride<Stride<_16,_8>> against Shape<_32,_2>: one mode where the shape has two), so only its B and C are printed
template <class Op, bool with_a = true>
static void mma(const char* name) {
  using T = MMA_Traits<Op>;
  constexpr int M = size<0>(typename T::Shape_MNK{});
  constexpr int N = size<1>(typename T::Shape_MNK{});
  constexpr int K = size<2>(typename T::Shape_MNK{});
  out += std::string("{\"name\":\"") + name + "\",";
  emitf("\"m\":%ld,\"n\":%ld,", M, N);
  emitf("\"k\":%ld,\"thr\":[", K);
  typename T::ThrID thr{};
  for (int t = 0; t < int(size(thr)); ++t) emitf("%ld,", int(thr(t)));
  out.pop_back();
  out += "],";
  if constexpr (with_a) coords("a", typename T::ALayout{}, M);
  coords("b", typename T::BLayout{}, N);
  coords("c", typename T::CLayout{}, M);
  out.pop_back();
  out += "},";
}

template <class Op>
static void copy(const char* name) {
  using T = Copy_Traits<Op>;
  out += std::string("{\"name\":\"") + name + "\",";
  typename T::SrcLayout src{};
  typename T::DstLayout dst{};
  emitf("\"src_values\":%ld,\"dst_values\":%ld,", int(size<1>(src)), int(size<1>(dst)));
  for (int which = 0; which < 2; ++which) {
    out += which ? "\"dst\":[" : "\"src\":[";
    auto emit_all = [&](auto layout) {
      for (int t = 0; t < int(size<0>(layout)); ++t)
        for (int v = 0; v < int(size<1>(layout)); ++v) emitf("%ld,", int(layout(t, v)));
    };
    if (which) emit_all(dst); else emit_all(src);
    out.pop_back();
    out += "],";
  }
  out.pop_back();
  out += "},";
}

#define MMA(op) mma<op>(#op)
#define COPY(op) copy<op>(#op)

int main() {
  out += "{\"mma\":[";
  MMA(SM70_8x8x4_F16F16F16F16_TN); MMA(SM70_8x8x4_F16F16F16F16_NT); MMA(SM70_8x8x4_F16F16F16F16_NN);
  MMA(SM70_8x8x4_F16F16F16F16_TT); MMA(SM70_8x8x4_F32F16F16F32_TN); MMA(SM70_8x8x4_F32F16F16F32_NT);
  MMA(SM70_8x8x4_F32F16F16F32_NN); MMA(SM70_8x8x4_F32F16F16F32_TT);
  MMA(SM75_16x8x8_F32F16F16F32_TN); MMA(SM75_8x8x16_S32S8S8S32_TN);
  MMA(SM80_16x8x8_F16F16F16F16_TN); MMA(SM80_16x8x16_F16F16F16F16_TN);
  MMA(SM80_16x8x8_F32F16F16F32_TN); MMA(SM80_16x8x16_F32F16F16F32_TN);
  MMA(SM80_16x8x8_F32BF16BF16F32_TN); MMA(SM80_16x8x16_F32BF16BF16F32_TN);
  MMA(SM80_16x8x4_F32TF32TF32F32_TN); MMA(SM80_16x8x8_F32TF32TF32F32_TN);
  MMA(SM80_8x8x4_F64F64F64F64_TN);
  MMA(SM80_8x8x16_S32S8S8S32_TN); MMA(SM80_16x8x16_S32S8S8S32_TN); MMA(SM80_16x8x32_S32S8S8S32_TN);
  MMA(SM80_16x8x32_S32U8S8S32_TN_SATURATE);
  MMA(SM80_8x8x32_S32S4S4S32_TN); MMA(SM80_16x8x32_S32S4S4S32_TN); MMA(SM80_16x8x64_S32S4S4S32_TN);
  MMA(SM80_16x8x64_S32U4U4S32_TN_SATURATE);
  MMA(SM80_8x8x128_S32U1U1S32_TN_XORPOPC); mma<SM80_16x8x128_S32U1U1S32_TN_XORPOPC, false>("SM80_16x8x128_S32U1U1S32_TN_XORPOPC");
  MMA(SM80_16x8x256_S32U1U1S32_TN_XORPOPC); MMA(SM80_16x8x256_S32U1U1S32_TN_ANDPOPC);
  MMA(SM89_16x8x32_F32E4M3E4M3F32_TN); MMA(SM89_16x8x32_F16E5M2E4M3F16_TN);
  MMA(SM90_16x8x4_F64F64F64F64_TN); MMA(SM90_16x8x8_F64F64F64F64_TN); MMA(SM90_16x8x16_F64F64F64F64_TN);
  out.pop_back();
  out += "],\"copy\":[";
  COPY(SM75_U32x1_LDSM_N); COPY(SM75_U32x2_LDSM_N); COPY(SM75_U32x4_LDSM_N);
  COPY(SM75_U16x2_LDSM_T); COPY(SM75_U16x4_LDSM_T); COPY(SM75_U16x8_LDSM_T);
  COPY(SM90_U32x1_STSM_N); COPY(SM90_U32x2_STSM_N); COPY(SM90_U32x4_STSM_N);
  COPY(SM90_U16x2_STSM_T); COPY(SM90_U16x4_STSM_T); COPY(SM90_U16x8_STSM_T);
  out.pop_back();
  out += "],\"sparse\":{";
  using SP = MMA_Traits<SM120::SPARSE::SM120_SPARSE_16x8x64_TN<float_e4m3_t, float_e4m3_t, float>>;
  coords("a", typename SP::ALayout{}, 16);
  coords("b", typename SP::BLayout{}, 8);
  coords("e", typename SP::ELayout{}, 16);
  out.pop_back();
  out += "}}";
  std::puts(out.c_str());
  return 0;
}
